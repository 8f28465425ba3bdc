// Package admintest is a fake isolad admin server for tests: a unixpacket
// listener that answers the admin protocol from an in-memory tenant table,
// with the admission control and attach sockets isolad implements.
package admintest

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
)

// Server is a fake isolad admin socket.
type Server struct {
	Path string
	ln   *net.UnixListener

	mu       sync.Mutex
	engines  []admin.Engine
	tenants  map[string]*tenant
	nextID   uint32
	Requests []string // every request's type, in order
}

type tenant struct {
	id       uint32
	keys     map[string]any
	reserved map[string]admin.Rates // per engine
	attach   *net.UnixListener
}

// Start serves a fake admin socket at path with these engines.
func Start(path string, engines []admin.Engine) (*Server, error) {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	s := &Server{Path: path, ln: ln, engines: engines, tenants: map[string]*tenant{}}
	go s.serve()
	return s, nil
}

// Close stops the server and removes its attach sockets.
func (s *Server) Close() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tenants {
		if t.attach != nil {
			_ = t.attach.Close()
		}
	}
}

// Tenants returns the names of the tenants it holds, sorted.
func (s *Server) Tenants() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.tenants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Keys returns a tenant's keys as added (nil if absent).
func (s *Server) Keys(name string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tenants[name]; ok {
		return t.keys
	}
	return nil
}

func (s *Server) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, admin.MaxPacket+1)
			for {
				n, err := c.Read(buf)
				if err != nil || n == 0 {
					return
				}
				out, _ := json.Marshal(s.answer(buf[:n]))
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}()
	}
}

func failed(format string, a ...any) map[string]any {
	return map[string]any{"type": "failed", "reason": fmt.Sprintf(format, a...)}
}

func (s *Server) answer(pkt []byte) map[string]any {
	var req struct {
		Type    string            `json:"type"`
		From    uint32            `json:"from"`
		Tenant  string            `json:"tenant"`
		Keys    []admin.KeyChange `json:"keys"`
		Changes []admin.KeyChange `json:"changes"`
	}
	dec := json.NewDecoder(strings.NewReader(string(pkt)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return failed("bad request: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests = append(s.Requests, req.Type)
	switch req.Type {
	case "list":
		var ts []map[string]any
		names := make([]string, 0, len(s.tenants))
		for n := range s.tenants {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ts = append(ts, map[string]any{"id": s.tenants[n].id, "name": n, "state": "active",
				"slo": map[string]any{}, "connections": 0, "max_connections": 16, "figures": map[string]any{}, "engines": []any{}})
		}
		return map[string]any{"type": "tenants", "tenants": ts, "next": nil}
	case "engines":
		out := make([]admin.Engine, len(s.engines))
		for i, e := range s.engines {
			var res admin.Rates
			for _, t := range s.tenants {
				r := t.reserved[e.Name]
				res.TasksPerS += r.TasksPerS
				res.BytesPerS += r.BytesPerS
			}
			e.Reserved = admin.Capacity{TasksPerS: &res.TasksPerS, BytesPerS: &res.BytesPerS}
			out[i] = e
		}
		return map[string]any{"type": "engines", "engines": out}
	case "add":
		if _, ok := s.tenants[req.Tenant]; ok {
			return failed("tenant `%s` exists", req.Tenant)
		}
		t := &tenant{id: s.nextID, keys: map[string]any{}, reserved: map[string]admin.Rates{}}
		for _, k := range req.Keys {
			t.keys[k.Key] = k.Value
		}
		if err := s.admit(req.Tenant, t); err != nil {
			return failed("%v", err)
		}
		if p, ok := t.keys["attach_socket"].(string); ok {
			if !filepath.IsAbs(p) {
				return failed("key `attach_socket`: must be an absolute path")
			}
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
			if err != nil {
				return failed("key `attach_socket`: %v", err)
			}
			t.attach = ln
		}
		s.nextID++
		s.tenants[req.Tenant] = t
		return map[string]any{"type": "done", "message": "added " + req.Tenant}
	case "remove":
		t, ok := s.tenants[req.Tenant]
		if !ok {
			return failed("no tenant `%s`", req.Tenant)
		}
		if t.attach != nil {
			_ = t.attach.Close()
			_ = os.Remove(t.keys["attach_socket"].(string))
		}
		delete(s.tenants, req.Tenant)
		return map[string]any{"type": "done", "message": "removed " + req.Tenant}
	case "set", "reload", "costs":
		return failed("the fake does not do %s", req.Type)
	}
	return failed("unknown request type `%s`", req.Type)
}

// admit fills t.reserved from its keys and refuses it when a reservation,
// with the others on an engine, exceeds that engine's capacity.
func (s *Server) admit(name string, t *tenant) error {
	engineRes := map[string]string{}
	if r, ok := t.keys["reservation"].(string); ok {
		for _, e := range s.engines {
			engineRes[e.Name] = r
		}
	}
	if on, ok := t.keys["on"].(map[string]any); ok {
		for e, v := range on {
			if m, ok := v.(map[string]any); ok {
				if r, ok := m["reservation"].(string); ok {
					engineRes[e] = r
				}
			}
		}
	}
	for _, e := range s.engines {
		r, ok := engineRes[e.Name]
		if !ok {
			continue
		}
		rate, err := ParseRate(r)
		if err != nil {
			return fmt.Errorf("key `reservation`: %v", err)
		}
		used := admin.Rates{}
		for _, o := range s.tenants {
			used.TasksPerS += o.reserved[e.Name].TasksPerS
			used.BytesPerS += o.reserved[e.Name].BytesPerS
		}
		// As isolad: each reservation takes its share of the engine in
		// its own unit, and the shares add up to at most the whole.
		ct, cb := e.Capacity.Tasks(math.Inf(1)), e.Capacity.Bytes(math.Inf(1))
		taken := used.TasksPerS/ct + used.BytesPerS/cb
		share := rate.TasksPerS/ct + rate.BytesPerS/cb
		if taken+share > 1+1e-6 {
			return fmt.Errorf("engine `%s` cannot promise tenant `%s` its reservation of %s: its capacity is %g tasks/s and %g B/s, others already reserve %.1f%% of it, and this would take %.1f%% more", e.Name, name, r, ct, cb, taken*100, share*100)
		}
		t.reserved[e.Name] = rate
	}
	return nil
}

// ParseRate reads the two rate forms the plugin writes: "N/s" (tasks) and
// "NB/s" (bytes).
func ParseRate(s string) (admin.Rates, error) {
	if v, ok := strings.CutSuffix(s, "B/s"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return admin.Rates{BytesPerS: f}, err
	}
	if v, ok := strings.CutSuffix(s, "/s"); ok {
		f, err := strconv.ParseFloat(v, 64)
		return admin.Rates{TasksPerS: f}, err
	}
	return admin.Rates{}, fmt.Errorf("`%s` is not a rate", s)
}
