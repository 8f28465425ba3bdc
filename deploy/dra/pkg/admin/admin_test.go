package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// serve answers each request packet with the next canned reply, recording
// the requests.
func serve(t *testing.T, replies ...string) (*Client, *[]map[string]any) {
	t.Helper()
	dir, err := os.MkdirTemp("", "admin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "a.sock")
	ln, err := net.Listen("unixpacket", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got []map[string]any
	var mu sync.Mutex
	t.Cleanup(func() { mu.Lock(); defer mu.Unlock() })
	go func() {
		for _, r := range replies {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, MaxPacket)
			n, _ := c.Read(buf)
			var m map[string]any
			_ = json.Unmarshal(buf[:n], &m)
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
			_, _ = c.Write([]byte(r))
			c.Close()
		}
	}()
	return New(path), &got
}

func TestListFollowsPages(t *testing.T) {
	c, got := serve(t,
		`{"type":"tenants","tenants":[{"id":0,"name":"a","state":"active","slo":{},"connections":1,"max_connections":16,"figures":{"busy_ns":5},"engines":[]}],"next":1}`,
		`{"type":"tenants","tenants":[{"id":1,"name":"b","state":"removing","slo":{},"connections":0,"max_connections":16,"figures":{},"engines":[]}],"next":null}`)
	ts, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "a" || ts[0].Figures.BusyNs != 5 || ts[1].State != "removing" {
		t.Fatalf("%+v", ts)
	}
	if (*got)[0]["type"] != "list" || (*got)[0]["from"] != 0.0 || (*got)[1]["from"] != 1.0 {
		t.Fatalf("requests %v", *got)
	}
}

func TestEnginesAndRefusals(t *testing.T) {
	c, got := serve(t,
		`{"type":"engines","engines":[{"name":"acc","kind":"accelerator","policy":"sfq","ops":["sha256"],"workers":2,"capacity":{"tasks_per_s":1000000.0,"bytes_per_s":null},"reserved":{"tasks_per_s":0.0,"bytes_per_s":0.0}}]}`,
		`{"type":"failed","reason":"key `+"`weight`"+`: must be above 0"}`,
		`{"type":"done","message":"added c"}`)
	es, err := c.Engines(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Capacity.Tasks(0) != 1e6 || es[0].Capacity.Bytes(7) != 7 || es[0].Workers != 2 {
		t.Fatalf("%+v", es)
	}
	_, err = c.Set(context.Background(), "c", []KeyChange{{Key: "weight", Value: 0}})
	var f *Failed
	if !errors.As(err, &f) || !strings.Contains(f.Reason, "`weight`") {
		t.Fatalf("set: %v", err)
	}
	if msg, err := c.Add(context.Background(), "c", nil); err != nil || msg != "added c" {
		t.Fatalf("add: %q %v", msg, err)
	}
	add := (*got)[2]
	if add["type"] != "add" || add["tenant"] != "c" || add["keys"] == nil {
		t.Fatalf("add sent %v", add)
	}
}

func TestNoDaemonIsNamed(t *testing.T) {
	_, err := New("/nonexistent/admin.sock").List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/admin.sock") {
		t.Fatalf("%v", err)
	}
}
