// Package admin speaks isolad's admin protocol: a Unix SOCK_SEQPACKET
// socket, one JSON request per packet, exactly one JSON reply per request
// (docs/daemon.md, "Changing tenants while they run").
package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// MaxPacket is the largest admin message isolad sends or accepts.
const MaxPacket = 64 << 10

// KeyChange is one key of a `[[tenant]]` table, as `add` and `set` take it.
// A nil Value (in `set`) returns the key to its default.
type KeyChange struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Tenant is the part of isolad's tenant status the plugin reads.
type Tenant struct {
	ID          uint32  `json:"id"`
	Name        string  `json:"name"`
	State       string  `json:"state"`
	Connections uint32  `json:"connections"`
	Figures     Figures `json:"figures"`
}

// Figures are the tenant's counters the plugin's tests read.
type Figures struct {
	Succeeded uint64 `json:"succeeded"`
	// BusyNs is the engine time its tasks used, ns.
	BusyNs uint64 `json:"busy_ns"`
}

// Rates is a pair of rates: tasks per second and bytes per second.
type Rates struct {
	TasksPerS float64 `json:"tasks_per_s"`
	BytesPerS float64 `json:"bytes_per_s"`
}

// Capacity is a rate in each of a reservation's units; nil is not
// bounded (the cost model's part for that unit is 0).
type Capacity struct {
	TasksPerS *float64 `json:"tasks_per_s"`
	BytesPerS *float64 `json:"bytes_per_s"`
}

// Tasks is the tasks per second, limit where not bounded.
func (c Capacity) Tasks(limit float64) float64 { return orLimit(c.TasksPerS, limit) }

// Bytes is the bytes per second, limit where not bounded.
func (c Capacity) Bytes(limit float64) float64 { return orLimit(c.BytesPerS, limit) }

func orLimit(v *float64, limit float64) float64 {
	if v == nil {
		return limit
	}
	return *v
}

// Engine is one engine as `{"type":"engines"}` describes it.
type Engine struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Policy   string   `json:"policy"`
	Ops      []string `json:"ops"`
	Workers  uint32   `json:"workers"`
	Capacity Capacity `json:"capacity"`
	Reserved Capacity `json:"reserved"`
}

// Failed is isolad's refusal of a request; Reason is its own words.
type Failed struct {
	Request string
	Reason  string
}

func (f *Failed) Error() string { return fmt.Sprintf("isolad refused %s: %s", f.Request, f.Reason) }

// Client talks to one isolad admin socket. Each request opens its own
// connection, so a Client is safe for concurrent use and survives daemon
// restarts.
type Client struct {
	Path    string
	Timeout time.Duration
}

// New returns a client of the admin socket at path.
func New(path string) *Client { return &Client{Path: path, Timeout: 60 * time.Second} }

type reply struct {
	Type     string   `json:"type"`
	Message  string   `json:"message"`
	Reason   string   `json:"reason"`
	Tenants  []Tenant `json:"tenants"`
	Next     *uint32  `json:"next"`
	Engines  []Engine `json:"engines"`
	received []byte
}

// Do sends one request and returns its reply. A `failed` reply is a *Failed.
func (c *Client) Do(ctx context.Context, req map[string]any) (*reply, error) {
	name, _ := req["type"].(string)
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(body) > MaxPacket {
		return nil, fmt.Errorf("%s request of %d bytes is over isolad's %d", name, len(body), MaxPacket)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unixpacket", c.Path)
	if err != nil {
		return nil, fmt.Errorf("cannot reach isolad's admin socket %s: %w", c.Path, err)
	}
	defer conn.Close()
	deadline := time.Now().Add(c.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write(body); err != nil {
		return nil, fmt.Errorf("%s: write to %s: %w", name, c.Path, err)
	}
	buf := make([]byte, MaxPacket+1)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: read from %s: %w", name, c.Path, err)
	}
	var r reply
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		return nil, fmt.Errorf("%s: isolad's reply %q: %w", name, buf[:n], err)
	}
	r.received = buf[:n]
	if r.Type == "failed" {
		return nil, &Failed{Request: name, Reason: r.Reason}
	}
	return &r, nil
}

// List returns every tenant, following `next` pages.
func (c *Client) List(ctx context.Context) ([]Tenant, error) {
	var all []Tenant
	var from uint32
	for {
		r, err := c.Do(ctx, map[string]any{"type": "list", "from": from})
		if err != nil {
			return nil, err
		}
		if r.Type != "tenants" {
			return nil, fmt.Errorf("list: unexpected reply %q", r.received)
		}
		all = append(all, r.Tenants...)
		if r.Next == nil {
			return all, nil
		}
		if *r.Next <= from {
			return nil, fmt.Errorf("list: isolad's next page %d does not advance from %d", *r.Next, from)
		}
		from = *r.Next
	}
}

// Engines returns each engine with its capacity and what is reserved on it.
func (c *Client) Engines(ctx context.Context) ([]Engine, error) {
	r, err := c.Do(ctx, map[string]any{"type": "engines"})
	if err != nil {
		return nil, err
	}
	if r.Type != "engines" {
		return nil, fmt.Errorf("engines: unexpected reply %q", r.received)
	}
	return r.Engines, nil
}

func (c *Client) done(ctx context.Context, req map[string]any) (string, error) {
	r, err := c.Do(ctx, req)
	if err != nil {
		return "", err
	}
	if r.Type != "done" {
		return "", fmt.Errorf("%v: unexpected reply %q", req["type"], r.received)
	}
	return r.Message, nil
}

// Add adds tenant with keys.
func (c *Client) Add(ctx context.Context, tenant string, keys []KeyChange) (string, error) {
	if keys == nil {
		keys = []KeyChange{}
	}
	return c.done(ctx, map[string]any{"type": "add", "tenant": tenant, "keys": keys})
}

// Set changes tenant's keys.
func (c *Client) Set(ctx context.Context, tenant string, changes []KeyChange) (string, error) {
	return c.done(ctx, map[string]any{"type": "set", "tenant": tenant, "changes": changes})
}

// Remove drains tenant, then removes it.
func (c *Client) Remove(ctx context.Context, tenant string) (string, error) {
	return c.done(ctx, map[string]any{"type": "remove", "tenant": tenant})
}
