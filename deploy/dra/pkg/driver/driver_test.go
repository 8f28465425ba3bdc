package driver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
)

var bg = context.Background()

func (e *env) resources(t *testing.T) *scheduler {
	t.Helper()
	res, err := e.d.Resources(bg)
	if err != nil {
		t.Fatal(err)
	}
	return newScheduler(res, e.class)
}

func TestSliceHasOneDevicePerEngineWithConsumableCapacity(t *testing.T) {
	e := newEnv(t)
	res, err := e.d.Resources(bg)
	if err != nil {
		t.Fatal(err)
	}
	pool, ok := res.Pools[testNode]
	if !ok || len(pool.Slices) != 1 || len(pool.Slices[0].Devices) != 1 {
		t.Fatalf("pools %+v: want one slice of one device on %s", res.Pools, testNode)
	}
	dev := pool.Slices[0].Devices[0]
	if dev.Name != "acc" || *dev.AllowMultipleAllocations != true {
		t.Fatalf("device %+v", dev)
	}
	if *dev.Attributes["kind"].StringValue != "accelerator" || *dev.Attributes["policy"].StringValue != "sfq" ||
		*dev.Attributes["ops"].StringValue != "sha256,crc32c" || !*dev.Attributes["op_sha256"].BoolValue {
		t.Fatalf("attributes %+v", dev.Attributes)
	}
	if v := dev.Capacity[CapacityTasks].Value; v.Value() != 1e6 {
		t.Fatalf("tasks capacity %s", v.String())
	}
	if v := dev.Capacity[CapacityBytes].Value; v.Value() != 1e9 {
		t.Fatalf("bytes capacity %s", v.String())
	}
}

func TestAllocatorFitsClaimsToTheEngineCapacity(t *testing.T) {
	e := newEnv(t)
	s := e.resources(t)
	// The example asks for 100 MB/s; the engine serves 1 GB/s.
	for i := 0; i < 10; i++ {
		c := claimFrom(e.tmpl, "fits-"+string(rune('a'+i)), nil, nil)
		a := s.allocate(t, c)
		if a == nil {
			t.Fatalf("claim %d of 100 MB/s not allocated on a 1 GB/s engine", i)
		}
		r := a.Status.Allocation.Devices.Results[0]
		if r.Device != "acc" || r.ShareID == nil || func() bool { q := r.ConsumedCapacity[CapacityBytes]; return q.Value() != 100e6 }() {
			t.Fatalf("result %+v", r)
		}
	}
	if a := s.allocate(t, claimFrom(e.tmpl, "over", nil, nil)); a != nil {
		t.Fatalf("an eleventh 100 MB/s claim was allocated on a full 1 GB/s engine: %+v", a.Status.Allocation)
	}
	// Nothing asked of tasks/s yet: a claim of the whole tasks capacity fits,
	// one task more does not.
	if a := s.allocate(t, claimFrom(e.tmpl, "tasks-1", map[resourceapi.QualifiedName]string{"tasks": "1M"}, nil)); a == nil {
		t.Fatal("a claim of 1M tasks/s not allocated")
	}
	if a := s.allocate(t, claimFrom(e.tmpl, "tasks-2", map[resourceapi.QualifiedName]string{"tasks": "1"}, nil)); a != nil {
		t.Fatal("a claim past the tasks capacity was allocated")
	}
	// A claim asking for nothing consumes nothing (the request policy's
	// default is 0) and still fits.
	if a := s.allocate(t, claimFrom(e.tmpl, "none", map[resourceapi.QualifiedName]string{}, nil)); a == nil {
		t.Fatal("a claim asking for no capacity was not allocated")
	}
}

func readSpec(t *testing.T, path string) *cdispec.Spec {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s cdispec.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestPrepareMakesTenantSpecAndCheckpointAndUnprepareUndoesThem(t *testing.T) {
	e := newEnv(t)
	s := e.resources(t)
	claim := s.allocate(t, claimFrom(e.tmpl, "a", nil, nil))
	uid := string(claim.UID)
	tenant := TenantName(claim.UID)

	res, err := e.d.PrepareResourceClaims(bg, []*resourceapi.ResourceClaim{claim})
	if err != nil || res[claim.UID].Err != nil {
		t.Fatalf("prepare: %v %v", err, res[claim.UID].Err)
	}
	devs := res[claim.UID].Devices
	if len(devs) != 1 || devs[0].DeviceName != "acc" || devs[0].PoolName != testNode ||
		!reflect.DeepEqual(devs[0].CDIDeviceIDs, []string{"isola.dev/tenant=" + uid}) || devs[0].ShareID == nil ||
		*devs[0].ShareID != *claim.Status.Allocation.Devices.Results[0].ShareID {
		t.Fatalf("devices %+v", devs)
	}
	keys := e.fake.Keys(tenant)
	sock := filepath.Join(e.cfg.ClaimsDir, uid, SocketName)
	want := map[string]any{
		"attach_socket": sock,
		"on":            map[string]any{"acc": map[string]any{"reservation": "100000000B/s"}},
		"weight":        3.0,
		"class":         "bandwidth-sensitive",
		"memory_quota":  "16777216B",
	}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("tenant keys\n got %#v\nwant %#v", keys, want)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("attach socket: %v %v", fi, err)
	}
	spec := readSpec(t, e.d.cdiSpecPath(uid))
	if spec.Kind != "isola.dev/tenant" || len(spec.Devices) != 1 || spec.Devices[0].Name != uid {
		t.Fatalf("spec %+v", spec)
	}
	ed := spec.Devices[0].ContainerEdits
	if !reflect.DeepEqual(ed.Env, []string{"ISOLA_SOCKET=/run/isola/isolad.sock", "ISOLA_TENANT=" + tenant}) ||
		len(ed.Mounts) != 1 || ed.Mounts[0].HostPath != filepath.Join(e.cfg.ClaimsDir, uid) || ed.Mounts[0].ContainerPath != "/run/isola" {
		t.Fatalf("edits %+v", ed)
	}
	cp, err := loadCheckpoint(e.cfg.CheckpointPath)
	if err != nil || cp.Claims[uid] == nil || cp.Claims[uid].Tenant != tenant {
		t.Fatalf("checkpoint %+v %v", cp, err)
	}
	// The published capacity stays the engine's: the scheduler counts the
	// claim's share itself.
	if c := e.resources(t).slices[0].Spec.Devices[0].Capacity[CapacityBytes]; c.Value.Value() != 1e9 {
		t.Fatal("published capacity changed by the plugin's own claim")
	}

	// Again: the same answer, no second tenant.
	adds := count(e.fake.Requests, "add")
	res2, _ := e.d.PrepareResourceClaims(bg, []*resourceapi.ResourceClaim{claim})
	if res2[claim.UID].Err != nil || !reflect.DeepEqual(res2[claim.UID].Devices, devs) || count(e.fake.Requests, "add") != adds {
		t.Fatalf("second prepare: %+v", res2[claim.UID])
	}

	for i := 0; i < 2; i++ {
		if err := e.d.Unprepare(bg, uid); err != nil {
			t.Fatalf("unprepare %d: %v", i, err)
		}
		e.assertEmpty(t)
	}
}

// assertEmpty checks that nothing of any claim is left.
func (e *env) assertEmpty(t *testing.T) {
	t.Helper()
	if ts := e.fake.Tenants(); len(ts) != 0 {
		t.Errorf("tenants left in isolad: %v", ts)
	}
	if ents, _ := os.ReadDir(e.cfg.ClaimsDir); len(ents) != 0 {
		t.Errorf("claim directories left: %v", ents)
	}
	if ents, _ := os.ReadDir(e.cfg.CDIDir); len(ents) != 0 {
		t.Errorf("CDI specs left: %v", ents)
	}
	cp, err := loadCheckpoint(e.cfg.CheckpointPath)
	if err != nil || len(cp.Claims) != 0 {
		t.Errorf("checkpoint: %+v %v", cp, err)
	}
}

func TestBadClaimsFailNamingTheFieldAndLeaveNothing(t *testing.T) {
	e := newEnv(t)
	s := e.resources(t)
	base := map[string]any{"apiVersion": "isola.dev/v1alpha1", "kind": "TenantConfig"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	over := s.allocate(t, claimFrom(e.tmpl, "over", nil, nil))
	over.Status.Allocation.Devices.Results[0].ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{CapacityBytes: resource.MustParse("2G")}
	both := s.allocate(t, claimFrom(e.tmpl, "both", map[resourceapi.QualifiedName]string{"tasks": "1k", "bytes": "1M"}, nil))
	for name, c := range map[string]struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		"unknown field":      {s.allocate(t, claimFrom(e.tmpl, "unknown", nil, with("weigth", 3))), `unknown field "weigth"`},
		"memory over limit":  {s.allocate(t, claimFrom(e.tmpl, "memory", nil, with("memoryQuota", "2Gi"))), "field memoryQuota"},
		"bad class":          {s.allocate(t, claimFrom(e.tmpl, "class", nil, with("class", "urgent"))), "field class"},
		"over capacity":      {over, "reservation"},
		"both units":         {both, "capacity"},
		"isolad refuses key": {s.allocate(t, claimFrom(e.tmpl, "limit", nil, with("limit", "fast"))), ""},
	} {
		if c.claim == nil {
			t.Fatalf("%s: not allocated", name)
		}
		res, err := e.d.PrepareResourceClaims(bg, []*resourceapi.ResourceClaim{c.claim})
		if err != nil {
			t.Fatal(err)
		}
		got := res[c.claim.UID].Err
		if name == "isolad refuses key" {
			// The fake takes any limit; the real isolad names the key.
			if got == nil {
				_ = e.d.Unprepare(bg, string(c.claim.UID))
			}
			continue
		}
		if got == nil || !strings.Contains(got.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", name, got, c.want)
		}
		e.assertEmpty(t)
	}
}

func TestAFailedSpecRollsTheTenantBack(t *testing.T) {
	e := newEnv(t)
	claim := e.resources(t).allocate(t, claimFrom(e.tmpl, "a", nil, nil))
	// The CDI directory is a file: the spec cannot be written.
	if err := os.WriteFile(e.cfg.CDIDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Prepare(bg, claim); err == nil || !strings.Contains(err.Error(), "CDI spec") {
		t.Fatalf("prepare: %v", err)
	}
	if ts := e.fake.Tenants(); len(ts) != 0 {
		t.Errorf("tenant left: %v", ts)
	}
	if ents, _ := os.ReadDir(e.cfg.ClaimsDir); len(ents) != 0 {
		t.Errorf("claim directory left: %v", ents)
	}
}

func TestRestartReconcilesWithIsolad(t *testing.T) {
	e := newEnv(t)
	s := e.resources(t)
	a := s.allocate(t, claimFrom(e.tmpl, "a", nil, nil))
	b := s.allocate(t, claimFrom(e.tmpl, "b", nil, nil))
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		if _, err := e.d.Prepare(bg, c); err != nil {
			t.Fatal(err)
		}
	}
	// While the plugin is down: isolad lost a's tenant (it restarted), and
	// a prepare that never reached the checkpoint left a tenant, a
	// directory and a spec behind.
	if _, err := e.cfg.Admin.Remove(bg, TenantName(a.UID)); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(e.d.cdiSpecPath(string(b.UID)))
	stray := "11111111-2222-4333-8444-555555555555"
	_ = os.Mkdir(filepath.Join(e.cfg.ClaimsDir, stray), 0o755)
	if _, err := e.cfg.Admin.Add(bg, TenantPrefix+stray, []admin.KeyChange{{Key: "attach_socket", Value: filepath.Join(e.cfg.ClaimsDir, stray, SocketName)}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.d.cdiSpecPath(stray), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A tenant of isolad's own configuration is not the plugin's.
	if _, err := e.cfg.Admin.Add(bg, "static", nil); err != nil {
		t.Fatal(err)
	}

	e.restart(t)
	want := []string{TenantName(a.UID), TenantName(b.UID), "static"}
	if got := e.fake.Tenants(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tenants after restart %v, want %v", got, want)
	}
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		if _, err := os.Stat(e.d.cdiSpecPath(string(c.UID))); err != nil {
			t.Errorf("spec of %s: %v", c.Name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(e.cfg.ClaimsDir, stray)); err == nil {
		t.Error("stray claim directory left")
	}
	if _, err := os.Stat(e.d.cdiSpecPath(stray)); err == nil {
		t.Error("stray CDI spec left")
	}
	for _, c := range []*resourceapi.ResourceClaim{a, b} {
		if err := e.d.Unprepare(bg, string(c.UID)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.cfg.Admin.Remove(bg, "static"); err != nil {
		t.Fatal(err)
	}
	e.assertEmpty(t)
}

func TestPublishedCapacityLeavesOutOtherTenantsReservations(t *testing.T) {
	e := newEnv(t)
	// A configured tenant reserves a quarter of the engine in bytes/s: a
	// quarter of each unit is gone (isolad counts shares across units).
	if _, err := e.cfg.Admin.Add(bg, "static", []admin.KeyChange{{Key: "reservation", Value: "250000000B/s"}}); err != nil {
		t.Fatal(err)
	}
	claim := e.resources(t).allocate(t, claimFrom(e.tmpl, "a", nil, nil))
	if _, err := e.d.Prepare(bg, claim); err != nil {
		t.Fatal(err)
	}
	dev := e.resources(t).slices[0].Spec.Devices[0]
	tasks, bytes := dev.Capacity[CapacityTasks], dev.Capacity[CapacityBytes]
	if tasks.Value.Value() != 750000 || bytes.Value.Value() != 750000000 {
		t.Fatalf("published %s tasks/s, %s B/s; want 750k and 750M (the claim's own 100M left in)", tasks.Value.String(), bytes.Value.String())
	}
}

func TestManyOperatorsStayWithinTheAPIBounds(t *testing.T) {
	e := testEngines[0]
	e.Ops = nil
	for i := 0; i < 40; i++ {
		e.Ops = append(e.Ops, "operator"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	dev := EngineDevice(e, admin.Rates{})
	if n := len(dev.Attributes) + len(dev.Capacity); n > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		t.Fatalf("%d attributes and capacities", n)
	}
	if _, ok := dev.Attributes["ops"]; ok {
		t.Fatal("an ops string over 64 characters published")
	}
}

func TestRepairAddsBackWhatIsoladLost(t *testing.T) {
	e := newEnv(t)
	claim := e.resources(t).allocate(t, claimFrom(e.tmpl, "a", nil, nil))
	if _, err := e.d.Prepare(bg, claim); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cfg.Admin.Remove(bg, TenantName(claim.UID)); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Repair(bg); err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Tenants(); !reflect.DeepEqual(got, []string{TenantName(claim.UID)}) {
		t.Fatalf("tenants %v", got)
	}
	if err := e.d.Unprepare(bg, string(claim.UID)); err != nil {
		t.Fatal(err)
	}
	if err := e.d.Repair(bg); err != nil {
		t.Fatal(err)
	}
	e.assertEmpty(t)
}
