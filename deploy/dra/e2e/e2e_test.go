// Package e2e drives the plugin end to end: a real isolad (built from this
// repository), the plugin's real driver serving its real DRA gRPC socket in
// a process of its own, and the test playing the ResourceClaim controller,
// the scheduler (the allocator of k8s.io/dynamic-resource-allocation), the
// kubelet (NodePrepareResources / NodeUnprepareResources on the socket) and
// the container runtime (the CDI spec's environment and mount).
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
	"github.com/isola-project/isola/deploy/dra/pkg/driver"
	"github.com/isola-project/isola/deploy/dra/pkg/manifests"
)

func TestMain(m *testing.M) {
	if p := os.Getenv("ISOLA_E2E_PLUGIN"); p != "" {
		if err := runPlugin(p); err != nil {
			fmt.Fprintln(os.Stderr, "plugin:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var bg = context.Background()

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// binary finds a binary of this repository's Rust build: $ENV, else
// $CARGO_TARGET_DIR or target/, debug or release, the newest.
func binary(t *testing.T, env, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	var dirs []string
	if d := os.Getenv("CARGO_TARGET_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, filepath.Join(repoRoot(), "target"))
	best, bestTime := "", time.Time{}
	for _, d := range dirs {
		for _, p := range []string{"debug", "release"} {
			path := filepath.Join(d, p, name)
			if fi, err := os.Stat(path); err == nil && fi.ModTime().After(bestTime) {
				best, bestTime = path, fi.ModTime()
			}
		}
	}
	if best == "" {
		msg := fmt.Sprintf("%s not built (cargo build -p isola-daemon -p isola-cli, or set %s)", name, env)
		if os.Getenv("ISOLA_E2E_REQUIRE") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return best
}

type world struct {
	t       *testing.T
	dir     string
	isolad  *exec.Cmd
	isola   string
	admin   *admin.Client
	pc      pluginConfig
	pcPath  string
	plugin  *exec.Cmd
	kubelet drapb.DRAPluginClient
	conn    *grpc.ClientConn
	sched   *scheduler
	tmpl    *resourceapi.ResourceClaimTemplate
	claims  map[string]*resourceapi.ResourceClaim
}

const isoladConfig = `[daemon]
socket = "isolad.sock"
admin_socket = "admin.sock"
spare_tenants = 16

[[engine]]
name = "acc"
kind = "accelerator"
ops = ["sha256", "crc32c"]
workers = 1
policy = "sfq"
cost = { base = "2us", per_byte_ns = 0.5 }

[[tenant]]
name = "static"
memory_quota = "1MiB"
users = [%d]
`

func newWorld(t *testing.T) *world {
	isolad := binary(t, "ISOLAD_BIN", "isolad")
	isola := binary(t, "ISOLA_BIN", "isola")
	dir, err := os.MkdirTemp("", "isola-e2e")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, dir: dir, isola: isola, claims: map[string]*resourceapi.ResourceClaim{}}
	t.Cleanup(w.close)
	if err := os.WriteFile(filepath.Join(dir, "isolad.toml"), []byte(fmt.Sprintf(isoladConfig, os.Getuid())), 0o600); err != nil {
		t.Fatal(err)
	}
	log, _ := os.Create(filepath.Join(dir, "isolad.log"))
	w.isolad = exec.Command(isolad, "--config", filepath.Join(dir, "isolad.toml"))
	w.isolad.Stdout, w.isolad.Stderr = log, log
	if err := w.isolad.Start(); err != nil {
		t.Fatal(err)
	}
	w.admin = admin.New(filepath.Join(dir, "admin.sock"))
	w.waitFor("isolad's admin socket", func() bool { _, err := w.admin.List(bg); return err == nil })
	w.pc = pluginConfig{
		AdminSocket:    w.admin.Path,
		ClaimsDir:      filepath.Join(dir, "claims"),
		CDIDir:         filepath.Join(dir, "cdi"),
		CheckpointPath: filepath.Join(dir, "plugin", "checkpoint.json"),
		PluginDir:      filepath.Join(dir, "plugin"),
		RegistrarDir:   filepath.Join(dir, "registry"),
		ClaimsFile:     filepath.Join(dir, "claims.json"),
		SlicesFile:     filepath.Join(dir, "slices.json"),
		ReadyFile:      filepath.Join(dir, "ready"),
		MaxMemoryQuota: 256 << 20,
	}
	for _, d := range []string{w.pc.PluginDir, w.pc.RegistrarDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if w.pcPath, err = pluginConfigFile(dir, w.pc); err != nil {
		t.Fatal(err)
	}
	w.startPlugin()

	objs, err := manifests.LoadAll(manifests.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var class *resourceapi.DeviceClass
	for _, o := range objs {
		switch v := o.Object.(type) {
		case *resourceapi.DeviceClass:
			class = v
		case *resourceapi.ResourceClaimTemplate:
			w.tmpl = v
		}
	}
	var slices []*resourceapi.ResourceSlice
	data, err := os.ReadFile(w.pc.SlicesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &slices); err != nil {
		t.Fatal(err)
	}
	w.sched = &scheduler{class: class, slices: slices, state: structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}}
	return w
}

func (w *world) waitFor(what string, ok func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s (logs in %s)", what, w.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) startPlugin() {
	w.t.Helper()
	_ = os.Remove(w.pc.ReadyFile)
	log, _ := os.OpenFile(filepath.Join(w.dir, "plugin.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	w.plugin = exec.Command(os.Args[0], "-test.run=^$")
	w.plugin.Env = append(os.Environ(), "ISOLA_E2E_PLUGIN="+w.pcPath)
	w.plugin.Stdout, w.plugin.Stderr = log, log
	if err := w.plugin.Start(); err != nil {
		w.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func(c *exec.Cmd) { exited <- c.Wait() }(w.plugin)
	w.waitFor("the plugin", func() bool {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(filepath.Join(w.dir, "plugin.log"))
			w.t.Fatalf("plugin exited: %v\n%s", err, out)
		default:
		}
		_, err := os.Stat(w.pc.ReadyFile)
		return err == nil
	})
	conn, err := grpc.NewClient("unix://"+filepath.Join(w.pc.PluginDir, "dra.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		w.t.Fatal(err)
	}
	w.conn = conn
	w.kubelet = drapb.NewDRAPluginClient(conn)
}

// killPlugin is kill -9.
func (w *world) killPlugin() {
	if w.plugin != nil && w.plugin.Process != nil {
		_ = w.plugin.Process.Signal(syscall.SIGKILL)
		time.Sleep(100 * time.Millisecond)
		w.plugin = nil
	}
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

func (w *world) close() {
	w.killPlugin()
	if w.isolad != nil && w.isolad.Process != nil {
		_ = w.isolad.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = w.isolad.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = w.isolad.Process.Kill()
		}
	}
	if w.t.Failed() {
		for _, f := range []string{"isolad.log", "plugin.log"} {
			out, _ := os.ReadFile(filepath.Join(w.dir, f))
			if len(out) > 6000 {
				out = out[len(out)-6000:]
			}
			w.t.Logf("%s:\n%s", f, out)
		}
	}
	os.RemoveAll(w.dir)
}

// claim makes a claim from the example template (capacity nil: the
// template's; config nil: the template's), allocates it and stores it
// where the plugin's API server reads it. It returns nil if it does not fit.
func (w *world) claim(name string, capacity map[resourceapi.QualifiedName]string, config map[string]any) *resourceapi.ResourceClaim {
	w.t.Helper()
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.tmpl.Namespace, UID: types.UID(fmt.Sprintf("c1a1e000-0000-4000-8000-%012d", len(w.claims)+1))},
		Spec:       *w.tmpl.Spec.Spec.DeepCopy(),
	}
	for i := range c.Spec.Devices.Requests {
		if ex := c.Spec.Devices.Requests[i].Exactly; ex != nil && ex.AllocationMode == "" {
			ex.AllocationMode, ex.Count = resourceapi.DeviceAllocationModeExactCount, 1
		}
	}
	if capacity != nil {
		reqs := map[resourceapi.QualifiedName]resource.Quantity{}
		for k, v := range capacity {
			reqs[k] = resource.MustParse(v)
		}
		c.Spec.Devices.Requests[0].Exactly.Capacity = &resourceapi.CapacityRequirements{Requests: reqs}
	}
	if config != nil {
		raw, _ := json.Marshal(config)
		c.Spec.Devices.Config[0].Opaque.Parameters = k8sruntime.RawExtension{Raw: raw}
	}
	a := w.sched.allocate(w.t, c)
	if a == nil {
		return nil
	}
	w.store(a)
	return a
}

func (w *world) store(c *resourceapi.ResourceClaim) {
	w.t.Helper()
	w.claims[c.Namespace+"/"+c.Name] = c
	data, _ := json.Marshal(w.claims)
	tmp := w.pc.ClaimsFile + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.pc.ClaimsFile); err != nil {
		w.t.Fatal(err)
	}
}

func ref(c *resourceapi.ResourceClaim) *drapb.Claim {
	return &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}
}

// prepare is the kubelet's NodePrepareResources for one claim.
func (w *world) prepare(c *resourceapi.ResourceClaim) (*drapb.NodePrepareResourceResponse, error) {
	ctx, cancel := context.WithTimeout(bg, 60*time.Second)
	defer cancel()
	resp, err := w.kubelet.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{ref(c)}})
	if err != nil {
		return nil, err
	}
	r := resp.Claims[string(c.UID)]
	if r == nil {
		return nil, fmt.Errorf("no answer for claim %s", c.UID)
	}
	if r.Error != "" {
		return r, fmt.Errorf("%s", r.Error)
	}
	return r, nil
}

func (w *world) unprepare(c *resourceapi.ResourceClaim) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(bg, 60*time.Second)
	defer cancel()
	resp, err := w.kubelet.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{ref(c)}})
	if err != nil {
		w.t.Fatalf("unprepare %s: %v", c.Name, err)
	}
	if r := resp.Claims[string(c.UID)]; r == nil || r.Error != "" {
		w.t.Fatalf("unprepare %s: %v", c.Name, r)
	}
}

// container is what the runtime makes of a prepared claim's CDI devices,
// by the CDI library containerd and CRI-O use (a cache of the spec
// directory, InjectDevices into an OCI spec): the environment, with each
// mount's container path replaced by its host path (no mount namespace
// here).
func (w *world) container(r *drapb.NodePrepareResourceResponse) map[string]string {
	w.t.Helper()
	var ids []string
	for _, dev := range r.Devices {
		ids = append(ids, dev.CdiDeviceIds...)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(w.pc.CDIDir), cdi.WithAutoRefresh(false))
	if err != nil {
		w.t.Fatalf("CDI specs in %s: %v", w.pc.CDIDir, err)
	}
	spec := &oci.Spec{Process: &oci.Process{}}
	if unresolved, err := cache.InjectDevices(spec, ids...); err != nil {
		w.t.Fatalf("inject CDI devices %v: %v (unresolved %v)", ids, err, unresolved)
	}
	env := map[string]string{}
	for _, e := range spec.Process.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if len(spec.Mounts) != 1 {
		w.t.Fatalf("mounts %+v: want the claim's directory", spec.Mounts)
	}
	for _, m := range spec.Mounts {
		for k, v := range env {
			if rest, ok := strings.CutPrefix(v, m.Destination+"/"); ok {
				env[k] = filepath.Join(m.Source, rest)
			}
		}
	}
	return env
}

func (w *world) tenants() []string {
	w.t.Helper()
	ts, err := w.admin.List(bg)
	if err != nil {
		w.t.Fatal(err)
	}
	var names []string
	for _, t := range ts {
		if t.State != "removing" {
			names = append(names, t.Name)
		}
	}
	sort.Strings(names)
	return names
}

// assertOnly checks that isolad holds exactly these tenants and that the
// claims and CDI directories and the checkpoint hold exactly these claims.
func (w *world) assertOnly(claims ...*resourceapi.ResourceClaim) {
	w.t.Helper()
	want := []string{"static"}
	var uids []string
	for _, c := range claims {
		want = append(want, driver.TenantName(c.UID))
		uids = append(uids, string(c.UID))
	}
	sort.Strings(want)
	sort.Strings(uids)
	w.waitFor("the tenants "+strings.Join(want, ", "), func() bool { return strings.Join(w.tenants(), ",") == strings.Join(want, ",") })
	var dirs, specs []string
	ents, _ := os.ReadDir(w.pc.ClaimsDir)
	for _, e := range ents {
		dirs = append(dirs, e.Name())
	}
	ents, _ = os.ReadDir(w.pc.CDIDir)
	for _, e := range ents {
		specs = append(specs, e.Name())
	}
	var wantSpecs []string
	for _, u := range uids {
		wantSpecs = append(wantSpecs, "isola.dev-claim_"+u+".json")
	}
	if strings.Join(dirs, ",") != strings.Join(uids, ",") {
		w.t.Errorf("claim directories %v, want %v", dirs, uids)
	}
	if strings.Join(specs, ",") != strings.Join(wantSpecs, ",") {
		w.t.Errorf("CDI specs %v, want %v", specs, wantSpecs)
	}
	var cp struct {
		Claims map[string]json.RawMessage `json:"claims"`
	}
	data, err := os.ReadFile(w.pc.CheckpointPath)
	if err == nil {
		err = json.Unmarshal(data, &cp)
	} else if os.IsNotExist(err) {
		err = nil // no claim prepared yet
	}
	var got []string
	for u := range cp.Claims {
		got = append(got, u)
	}
	sort.Strings(got)
	if err != nil || strings.Join(got, ",") != strings.Join(uids, ",") {
		w.t.Errorf("checkpoint claims %v (%v), want %v", got, err, uids)
	}
}

// load starts `isola load` as the claim's container would run it; it
// waits for a line on its standard input before it starts.
func (w *world) load(env map[string]string, duration string) (*exec.Cmd, io.WriteCloser, *strings.Builder) {
	w.t.Helper()
	cmd := exec.Command(w.isola, "load", "--socket", env["ISOLA_SOCKET"], "--tenant", env["ISOLA_TENANT"],
		"--op", "sha256", "--sizes", "4KiB", "--concurrency", "16", "--duration", duration, "--start-on-stdin", "--json")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	out := &strings.Builder{}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		_ = cmd.Wait()
		w.t.Fatalf("isola load did not get ready: %q %v\n%s", line, err, out)
	}
	go func() { _, _ = io.Copy(out, r) }()
	return cmd, stdin, out
}

// busy is each tenant's engine time so far, ns (isolad's list figures).
func (w *world) busy() map[string]uint64 {
	w.t.Helper()
	ts, err := w.admin.List(bg)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, t := range ts {
		out[t.Name] = t.Figures.BusyNs
	}
	return out
}

type scheduler struct {
	class  *resourceapi.DeviceClass
	slices []*resourceapi.ResourceSlice
	state  structured.AllocatedState
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }
func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

func (s *scheduler) allocate(t *testing.T, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	a, err := structured.NewAllocator(bg, structured.Features{ConsumableCapacity: true}, s.state, classLister{s.class}, s.slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	results, err := a.Allocate(bg, node, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		t.Fatalf("allocate %s: %v", claim.Name, err)
	}
	if len(results) == 0 {
		return nil
	}
	out := claim.DeepCopy()
	out.Status.Allocation = &results[0]
	for _, r := range results[0].Devices.Results {
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID != nil {
			s.state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		} else {
			s.state.AllocatedDevices.Insert(id)
		}
		if r.ConsumedCapacity != nil {
			s.state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
	return out
}
