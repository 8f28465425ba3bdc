package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
	"github.com/isola-project/isola/deploy/dra/pkg/driver"
	"github.com/isola-project/isola/deploy/dra/pkg/manifests"
)

func tenantConfig(kv ...any) map[string]any {
	m := map[string]any{"apiVersion": "isola.dev/v1alpha1", "kind": "TenantConfig"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func TestEndToEnd(t *testing.T) {
	w := newWorld(t)
	none := map[resourceapi.QualifiedName]string{}

	// The example claim as it stands: 100 MB/s reserved, weight 3.
	ex := w.claim("example", nil, nil)
	if ex == nil {
		t.Fatal("the example claim was not allocated")
	}
	r, err := w.prepare(ex)
	if err != nil {
		t.Fatalf("prepare the example claim: %v", err)
	}
	env := w.container(r)
	if env["ISOLA_TENANT"] != driver.TenantName(ex.UID) || env["ISOLA_SOCKET"] != filepath.Join(w.pc.ClaimsDir, string(ex.UID), driver.SocketName) {
		t.Fatalf("container environment %v", env)
	}
	engines, err := w.admin.Engines(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got := engines[0].Reserved.Bytes(0); got != 100e6 {
		t.Fatalf("isolad reserves %g B/s on %s, want the claim's 100 MB/s", got, engines[0].Name)
	}
	// Prepared twice: the same answer.
	if r2, err := w.prepare(ex); err != nil || fmt.Sprint(r2.Devices) != fmt.Sprint(r.Devices) {
		t.Fatalf("second prepare: %v %v", r2, err)
	}
	w.unprepare(ex)
	w.unprepare(ex)
	w.assertOnly()

	// Two claims at 3:1 (no reservation, so that the weights alone share
	// the engine), each a backlogged `isola load` attached through its
	// CDI spec alone.
	heavy := w.claim("heavy", none, tenantConfig("weight", 3, "memoryQuota", "4Mi"))
	light := w.claim("light", none, tenantConfig("weight", 1, "memoryQuota", "4Mi"))
	var envs []map[string]string
	for _, c := range []*resourceapi.ResourceClaim{heavy, light} {
		r, err := w.prepare(c)
		if err != nil {
			t.Fatalf("prepare %s: %v", c.Name, err)
		}
		envs = append(envs, w.container(r))
	}
	w.assertOnly(heavy, light)
	before := w.busy()
	hc, hin, hout := w.load(envs[0], "4s")
	lc, lin, lout := w.load(envs[1], "4s")
	hin.Close()
	lin.Close()
	herr, lerr := hc.Wait(), lc.Wait()
	if herr != nil || lerr != nil {
		t.Fatalf("isola load: %v %v\n%s\n%s", herr, lerr, hout, lout)
	}
	after := w.busy()
	h := float64(after[driver.TenantName(heavy.UID)] - before[driver.TenantName(heavy.UID)])
	l := float64(after[driver.TenantName(light.UID)] - before[driver.TenantName(light.UID)])
	if l == 0 || h/l < 2.2 || h/l > 4.0 {
		t.Fatalf("engine time heavy %.0f ns, light %.0f ns: ratio %.2f, want about 3", h, l, h/l)
	}
	t.Logf("engine time at weights 3:1: %.2f:1", h/l)

	// kill -9 between prepare and unprepare; meanwhile isolad loses one
	// tenant. The restarted plugin re-adds it, answers the kubelet's
	// repeated prepare as before, and unprepares both.
	w.killPlugin()
	if _, err := w.admin.Remove(bg, driver.TenantName(light.UID)); err != nil {
		t.Fatal(err)
	}
	w.startPlugin()
	w.assertOnly(heavy, light)
	if _, err := w.prepare(heavy); err != nil {
		t.Fatalf("prepare after restart: %v", err)
	}
	w.unprepare(heavy)
	w.unprepare(light)
	w.assertOnly()

	// A tenant left by a prepare that died before its checkpoint is
	// removed at the next start.
	stray := "c1a1e000-0000-4000-8000-ffffffffffff"
	if err := os.MkdirAll(filepath.Join(w.pc.ClaimsDir, stray), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := w.admin.Add(bg, driver.TenantPrefix+stray, []admin.KeyChange{{Key: "memory_quota", Value: "1MiB"}, {Key: "attach_socket", Value: filepath.Join(w.pc.ClaimsDir, stray, driver.SocketName)}}); err == nil {
		w.killPlugin()
		w.startPlugin()
	} else {
		t.Fatalf("add a stray tenant: %v", err)
	}
	w.assertOnly()
}

func TestBadClaimsFailAndLeaveNothing(t *testing.T) {
	w := newWorld(t)
	over := w.claim("over", nil, nil)
	// The scheduler would not allocate past the capacity; say it did (a
	// stale slice): isolad's admission control refuses it with the numbers.
	over.Status.Allocation.Devices.Results[0].ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{driver.CapacityBytes: resource.MustParse("3G")}
	w.store(over)
	for _, c := range []struct {
		claim *resourceapi.ResourceClaim
		want  []string
	}{
		{w.claim("unknown", nil, tenantConfig("weigth", 3)), []string{`unknown field "weigth"`}},
		{w.claim("memory", nil, tenantConfig("memoryQuota", "1Gi")), []string{"field memoryQuota", "--max-memory-quota"}},
		{over, []string{"reservation", "3000000000"}},
		{w.claim("latency", nil, tenantConfig("latency", "soon")), []string{"latency"}},
	} {
		_, err := w.prepare(c.claim)
		if err == nil {
			t.Errorf("%s: prepared", c.claim.Name)
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v does not say %q", c.claim.Name, err, s)
			}
		}
		t.Logf("%s: %v", c.claim.Name, err)
		w.assertOnly()
	}
}

// The isolad configuration the DaemonSet ships serves, and its engines are
// what the plugin publishes.
func TestTheDaemonSetsIsoladConfigServes(t *testing.T) {
	isolad := binary(t, "ISOLAD_BIN", "isolad")
	objs, err := manifests.LoadAll(manifests.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, o := range objs {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Name == "isolad" {
			text = cm.Data["isolad.toml"]
		}
	}
	if text == "" {
		t.Fatal("no isolad ConfigMap with isolad.toml")
	}
	dir, err := os.MkdirTemp("", "isola-cm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	text = strings.ReplaceAll(text, "/run/isola/", dir+"/")
	text = strings.ReplaceAll(text, `metrics = "0.0.0.0:9464"`, `metrics = "127.0.0.1:0"`)
	if err := os.WriteFile(filepath.Join(dir, "isolad.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(isolad, "--config", filepath.Join(dir, "isolad.toml"))
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	c := admin.New(filepath.Join(dir, "isolad.sock.admin"))
	deadline := time.Now().Add(30 * time.Second)
	var engines []admin.Engine
	for {
		if engines, err = c.Engines(bg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("isolad with the DaemonSet's configuration: %v\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(engines) == 0 || engines[0].Capacity.TasksPerS == nil || engines[0].Capacity.BytesPerS == nil {
		t.Fatalf("engines %+v", engines)
	}
	dev := driver.EngineDevice(engines[0], admin.Rates{})
	tasks, bytes := dev.Capacity[driver.CapacityTasks], dev.Capacity[driver.CapacityBytes]
	if tasks.Value.Value() <= 0 || bytes.Value.Value() <= 0 {
		t.Fatalf("published capacity %v", dev.Capacity)
	}
	t.Logf("published: %s: %s tasks/s, %s B/s", dev.Name, tasks.Value.String(), bytes.Value.String())
}

// The scheduler's allocator against the slice the plugin published from a
// real isolad (2 GB/s by its cost model): twenty 100 MB/s claims from the
// example template fit, a twenty-first does not; and isolad admits the
// twenty the scheduler placed.
func TestTheAllocatorFillsTheRealEngineAndIsoladAdmitsIt(t *testing.T) {
	w := newWorld(t)
	var placed []*resourceapi.ResourceClaim
	for i := 0; i < 20; i++ {
		c := w.claim(fmt.Sprintf("fill-%02d", i), nil, tenantConfig("memoryQuota", "64Ki"))
		if c == nil {
			t.Fatalf("claim %d of 100 MB/s not allocated on a 2 GB/s engine", i)
		}
		placed = append(placed, c)
	}
	if c := w.claim("one-more", nil, nil); c != nil {
		t.Fatalf("a twenty-first 100 MB/s claim was allocated: %+v", c.Status.Allocation)
	}
	// isolad holds 16 spare seats in this test's configuration.
	for _, c := range placed[:15] {
		if _, err := w.prepare(c); err != nil {
			t.Fatalf("prepare %s: %v", c.Name, err)
		}
	}
	engines, err := w.admin.Engines(bg)
	if err != nil {
		t.Fatal(err)
	}
	if got := engines[0].Reserved.Bytes(0); got != 15*100e6 {
		t.Fatalf("isolad reserves %g B/s, want 15 x 100 MB/s", got)
	}
	for _, c := range placed[:15] {
		w.unprepare(c)
	}
	w.assertOnly()
}
