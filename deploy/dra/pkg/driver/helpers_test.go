package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
	"github.com/isola-project/isola/deploy/dra/pkg/admin/admintest"
	"github.com/isola-project/isola/deploy/dra/pkg/manifests"
)

const testNode = "node-a"

func f64(v float64) *float64 { return &v }

// testEngines: one accelerator of 1M tasks/s or 1 GB/s.
var testEngines = []admin.Engine{{
	Name: "acc", Kind: "accelerator", Policy: "sfq", Ops: []string{"sha256", "crc32c"}, Workers: 1,
	Capacity: admin.Capacity{TasksPerS: f64(1e6), BytesPerS: f64(1e9)},
}}

type env struct {
	dir   string
	cfg   Config
	fake  *admintest.Server
	d     *Driver
	class *resourceapi.DeviceClass
	tmpl  *resourceapi.ResourceClaimTemplate
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "isola-dra")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fake, err := admintest.Start(filepath.Join(dir, "admin.sock"), testEngines)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	e := &env{dir: dir, fake: fake, cfg: Config{
		DriverName:     DefaultDriverName,
		NodeName:       testNode,
		Admin:          admin.New(fake.Path),
		ClaimsDir:      filepath.Join(dir, "claims"),
		ContainerDir:   "/run/isola",
		CDIDir:         filepath.Join(dir, "cdi"),
		CheckpointPath: filepath.Join(dir, "plugin", "checkpoint.json"),
		MaxMemoryQuota: 1 << 30,
	}}
	e.restart(t)
	e.class, e.tmpl = exampleObjects(t)
	return e
}

func (e *env) restart(t *testing.T) {
	t.Helper()
	d, err := New(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
}

// exampleObjects returns the DeviceClass and ResourceClaimTemplate of
// deploy/kubernetes.
func exampleObjects(t *testing.T) (*resourceapi.DeviceClass, *resourceapi.ResourceClaimTemplate) {
	t.Helper()
	objs, err := manifests.LoadAll(manifests.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var class *resourceapi.DeviceClass
	var tmpl *resourceapi.ResourceClaimTemplate
	for _, o := range objs {
		switch v := o.Object.(type) {
		case *resourceapi.DeviceClass:
			class = v
		case *resourceapi.ResourceClaimTemplate:
			tmpl = v
		}
	}
	if class == nil || tmpl == nil {
		t.Fatal("deploy/kubernetes lacks the DeviceClass or the ResourceClaimTemplate")
	}
	return class, tmpl
}

// claimFrom makes a claim as the ResourceClaim controller does from the
// template, asking for the given capacity (nil: the template's) and, where
// config is not nil, with that opaque configuration instead of the template's.
func claimFrom(tmpl *resourceapi.ResourceClaimTemplate, name string, capacity map[resourceapi.QualifiedName]string, config map[string]any) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tmpl.Namespace, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", len(name)*7919+int(name[len(name)-1])))},
		Spec:       *tmpl.Spec.Spec.DeepCopy(),
	}
	// The API server's defaults.
	for i := range c.Spec.Devices.Requests {
		if ex := c.Spec.Devices.Requests[i].Exactly; ex != nil && ex.AllocationMode == "" {
			ex.AllocationMode = resourceapi.DeviceAllocationModeExactCount
			ex.Count = 1
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
		c.Spec.Devices.Config[0].Opaque.Parameters = runtime.RawExtension{Raw: raw}
	}
	return c
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

// scheduler allocates claims as kube-scheduler's DRA plugin does, keeping
// what it allocated.
type scheduler struct {
	node   *corev1.Node
	slices []*resourceapi.ResourceSlice
	class  *resourceapi.DeviceClass
	state  structured.AllocatedState
}

func newScheduler(res resourceslice.DriverResources, class *resourceapi.DeviceClass) *scheduler {
	s := &scheduler{
		node:  &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}},
		class: class,
		state: structured.AllocatedState{
			AllocatedDevices:         sets.New[structured.DeviceID](),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
			AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
		},
	}
	for name, pool := range res.Pools {
		for i, sl := range pool.Slices {
			s.slices = append(s.slices, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", testNode, name, i)},
				Spec: resourceapi.ResourceSliceSpec{
					Driver:   DefaultDriverName,
					Pool:     resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: int64(len(pool.Slices))},
					NodeName: ptr.To(testNode),
					Devices:  sl.Devices,
				},
			})
		}
	}
	return s
}

// allocate returns the claim allocated (and counts it), or nil where it
// does not fit.
func (s *scheduler) allocate(t *testing.T, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	t.Helper()
	ctx := context.Background()
	a, err := structured.NewAllocator(ctx, structured.Features{ConsumableCapacity: true}, s.state, classLister{s.class}, s.slices, cel.NewCache(10, cel.Features{}))
	if err != nil {
		t.Fatal(err)
	}
	results, err := a.Allocate(ctx, s.node, []*resourceapi.ResourceClaim{claim})
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
