// Package driver is the isola.dev DRA kubelet plugin: it publishes isolad's
// engines as devices with consumable capacity and turns each prepared
// ResourceClaim into an isolad tenant reachable through a per-claim attach
// socket that CDI mounts into the claim's containers.
package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/isola-project/isola/deploy/dra/api/v1alpha1"
	"github.com/isola-project/isola/deploy/dra/pkg/admin"
)

const (
	// DefaultDriverName is the DRA driver name (and the attribute domain).
	DefaultDriverName = "isola.dev"
	// TenantPrefix starts the name of every tenant the plugin creates:
	// claim-<claim uid>. Tenants so named belong to the plugin.
	TenantPrefix = "claim-"
	// SocketName is the attach socket's name in a claim's directory.
	SocketName = "isolad.sock"
	// CapacityTasks is the consumable capacity in tasks per second.
	CapacityTasks resourceapi.QualifiedName = "tasks"
	// CapacityBytes is the consumable capacity in bytes per second.
	CapacityBytes resourceapi.QualifiedName = "bytes"
	// Unbounded is the capacity published in a unit isolad does not bound
	// (its cost model's part for it is 0): isolad's largest rate, 10^15/s.
	Unbounded = 1e15
)

// Config is what the plugin needs to know about its node.
type Config struct {
	DriverName string
	NodeName   string
	// Admin is isolad's admin socket.
	Admin *admin.Client
	// ClaimsDir holds one directory per prepared claim, with isolad's
	// attach socket in it. isolad, the plugin and the host (CDI mounts are
	// host paths) must see it at the same path.
	ClaimsDir string
	// ContainerDir is where a claim's directory appears in its containers.
	ContainerDir string
	// CDIDir is where CDI specs are written (the runtime's CDI spec dir).
	CDIDir string
	// CheckpointPath is the checkpoint file.
	CheckpointPath string
	// MaxMemoryQuota bounds a claim's memoryQuota, bytes (0: no bound).
	MaxMemoryQuota int64
	// DefaultMemoryQuota is the memory quota of a claim that names none,
	// bytes (isolad needs one; 0: DefaultMemoryQuota).
	DefaultMemoryQuota int64
}

// DefaultMemoryQuota is a claim's memory quota when neither it nor the
// plugin's flag names one: 16 MiB.
const DefaultMemoryQuota = 16 << 20

// Driver implements kubeletplugin.DRAPlugin.
type Driver struct {
	cfg    Config
	mu     sync.Mutex
	cp     *Checkpoint
	helper *kubeletplugin.Helper
	// OnFatal, if set, is called for fatal background errors.
	OnFatal func(error)
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// New loads the checkpoint and reconciles it with isolad, the claims
// directory and the CDI directory. It does not talk to Kubernetes.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	if cfg.DriverName == "" {
		cfg.DriverName = DefaultDriverName
	}
	if cfg.DefaultMemoryQuota <= 0 {
		cfg.DefaultMemoryQuota = DefaultMemoryQuota
	}
	if !filepath.IsAbs(cfg.ClaimsDir) || !filepath.IsAbs(cfg.ContainerDir) || !filepath.IsAbs(cfg.CDIDir) || !filepath.IsAbs(cfg.CheckpointPath) {
		return nil, fmt.Errorf("claims dir %q, container dir %q, CDI dir %q and checkpoint %q must be absolute paths", cfg.ClaimsDir, cfg.ContainerDir, cfg.CDIDir, cfg.CheckpointPath)
	}
	for _, dir := range []string{cfg.ClaimsDir, filepath.Dir(cfg.CheckpointPath)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	// Only what a claim's directory is mounted into may reach its socket:
	// nobody else may look into the claims directory.
	if err := os.Chmod(cfg.ClaimsDir, 0o700); err != nil {
		return nil, err
	}
	cp, err := loadCheckpoint(cfg.CheckpointPath)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, cp: cp}
	if err := d.Reconcile(ctx); err != nil {
		return nil, fmt.Errorf("reconcile: %w", err)
	}
	return d, nil
}

// Start serves the kubelet plugin (registration and DRA gRPC sockets) and
// publishes the node's ResourceSlice. opts come after the driver's own
// (tests point the sockets at temporary directories).
func (d *Driver) Start(ctx context.Context, opts ...kubeletplugin.Option) error {
	all := append([]kubeletplugin.Option{
		kubeletplugin.DriverName(d.cfg.DriverName),
		kubeletplugin.NodeName(d.cfg.NodeName),
	}, opts...)
	helper, err := kubeletplugin.Start(ctx, d, all...)
	if err != nil {
		return err
	}
	d.helper = helper
	return d.Publish(ctx)
}

// Publish (re)publishes the node's devices from isolad's engines.
func (d *Driver) Publish(ctx context.Context) error {
	res, err := d.Resources(ctx)
	if err != nil {
		return err
	}
	return d.helper.PublishResources(ctx, res)
}

// Stop stops serving.
func (d *Driver) Stop() {
	if d.helper != nil {
		d.helper.Stop()
	}
}

// Claims returns the UIDs of the prepared claims (for tests and logs).
func (d *Driver) Claims() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var uids []string
	for uid := range d.cp.Claims {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	return uids
}

// Resources is the one pool (named after the node) of one device per
// isolad engine. Its consumable capacity is the engine's capacity less what
// tenants other than this plugin's claims reserve (the configured ones):
// the scheduler accounts for the claims' share itself.
func (d *Driver) Resources(ctx context.Context) (resourceslice.DriverResources, error) {
	engines, err := d.cfg.Admin.Engines(ctx)
	if err != nil {
		return resourceslice.DriverResources{}, err
	}
	d.mu.Lock()
	ours := map[string]admin.Rates{}
	for _, c := range d.cp.Claims {
		for e, r := range c.Reserved {
			o := ours[e]
			o.TasksPerS += r.TasksPerS
			o.BytesPerS += r.BytesPerS
			ours[e] = o
		}
	}
	d.mu.Unlock()
	var devices []resourceapi.Device
	for _, e := range engines {
		if errs := validation.IsDNS1123Label(e.Name); len(errs) > 0 {
			klog.FromContext(ctx).Error(nil, "engine not published: its name is not a device name", "engine", e.Name, "why", strings.Join(errs, "; "))
			continue
		}
		devices = append(devices, EngineDevice(e, ours[e.Name]))
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		d.cfg.NodeName: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}}, nil
}

// EngineDevice is the device of one engine, ours being what the plugin's
// own claims reserve on it (included in e.Reserved). isolad counts each
// reservation as its share of the engine in its own unit (rate /
// capacity), the shares adding up to at most the whole; what tenants other
// than the claims take is taken off both units alike.
func EngineDevice(e admin.Engine, ours admin.Rates) resourceapi.Device {
	capTasks, capBytes := e.Capacity.Tasks(Unbounded), e.Capacity.Bytes(Unbounded)
	share := func(reserved, ours, capacity float64) float64 {
		if capacity <= 0 || reserved <= ours {
			return 0
		}
		return (reserved - ours) / capacity
	}
	left := 1 - share(e.Reserved.Tasks(0), ours.TasksPerS, capTasks) - share(e.Reserved.Bytes(0), ours.BytesPerS, capBytes)
	free := func(capacity float64) int64 {
		v := math.Floor(capacity * left)
		if v < 0 || math.IsNaN(v) {
			return 0
		}
		return int64(v)
	}
	zero := resource.MustParse("0")
	policy := func() *resourceapi.CapacityRequestPolicy {
		return &resourceapi.CapacityRequestPolicy{
			Default:    ptr.To(zero.DeepCopy()),
			ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(zero.DeepCopy())},
		}
	}
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"kind":    {StringValue: ptr.To(e.Kind)},
		"policy":  {StringValue: ptr.To(e.Policy)},
		"workers": {IntValue: ptr.To(int64(e.Workers))},
	}
	// The API's bounds: a string attribute of at most 64 characters, at
	// most 32 attributes and capacities in all per device.
	if ops := strings.Join(e.Ops, ","); len(ops) <= resourceapi.DeviceAttributeMaxValueLength {
		attrs["ops"] = resourceapi.DeviceAttribute{StringValue: ptr.To(ops)}
	}
	for _, op := range e.Ops {
		if len(attrs)+2 >= resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
			break
		}
		if isIdentifier(op) {
			attrs[resourceapi.QualifiedName("op_"+op)] = resourceapi.DeviceAttribute{BoolValue: ptr.To(true)}
		}
	}
	return resourceapi.Device{
		Name:       e.Name,
		Attributes: attrs,
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
			CapacityTasks: {Value: *resource.NewQuantity(free(capTasks), resource.DecimalSI), RequestPolicy: policy()},
			CapacityBytes: {Value: *resource.NewQuantity(free(capBytes), resource.DecimalSI), RequestPolicy: policy()},
		},
		AllowMultipleAllocations: ptr.To(true),
	}
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 29 {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (d *Driver) claimDir(uid string) string { return filepath.Join(d.cfg.ClaimsDir, uid) }

// TenantName is the isolad tenant of a claim.
func TenantName(uid types.UID) string { return TenantPrefix + string(uid) }

// PrepareResourceClaims implements kubeletplugin.DRAPlugin.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		devices, err := d.Prepare(ctx, claim)
		if err != nil {
			klog.FromContext(ctx).Error(err, "prepare failed", "claim", klog.KObj(claim), "uid", claim.UID)
			out[claim.UID] = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", claim.Namespace, claim.Name, err)}
			continue
		}
		out[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return out, nil
}

// UnprepareResourceClaims implements kubeletplugin.DRAPlugin.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.Unprepare(ctx, string(c.UID))
	}
	return out, nil
}

// HandleError implements kubeletplugin.DRAPlugin.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) && d.OnFatal != nil {
		d.OnFatal(fmt.Errorf("%s: %w", msg, err))
	}
}

// WatchHealthStatus implements kubeletplugin.DRAPlugin: not supported.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func toKubelet(p *PreparedClaim) []kubeletplugin.Device {
	var out []kubeletplugin.Device
	for _, dev := range p.Devices {
		out = append(out, kubeletplugin.Device{
			Requests:     dev.Requests,
			PoolName:     dev.Pool,
			DeviceName:   dev.Device,
			CDIDeviceIDs: dev.CDIDeviceIDs,
			ShareID:      (*types.UID)(dev.ShareID),
		})
	}
	return out
}

// Prepare makes one claim's tenant, directory and CDI spec, or, for a
// claim already prepared, makes sure they are there. On failure nothing it
// made is left.
func (d *Driver) Prepare(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return nil, err
	}
	uid := string(claim.UID)
	if p, ok := d.cp.Claims[uid]; ok {
		if err := d.ensure(ctx, uid, p); err != nil {
			return nil, err
		}
		return toKubelet(p), nil
	}
	p, err := d.plan(claim)
	if err != nil {
		return nil, err
	}
	if err := d.create(ctx, uid, p); err != nil {
		return nil, err
	}
	d.cp.Claims[uid] = p
	if err := d.cp.save(d.cfg.CheckpointPath); err != nil {
		delete(d.cp.Claims, uid)
		d.destroy(ctx, uid, p.Tenant)
		return nil, fmt.Errorf("write checkpoint: %w", err)
	}
	return toKubelet(p), nil
}

// plan works out a claim's tenant keys and devices without touching
// anything.
func (d *Driver) plan(claim *resourceapi.ResourceClaim) (*PreparedClaim, error) {
	if claim.Status.Allocation == nil {
		return nil, errors.New("not allocated")
	}
	uid := string(claim.UID)
	alloc := claim.Status.Allocation.Devices
	p := &PreparedClaim{
		Namespace: claim.Namespace,
		Name:      claim.Name,
		Tenant:    TenantName(claim.UID),
		Reserved:  map[string]admin.Rates{},
	}
	requests := map[string]bool{}
	for _, r := range alloc.Results {
		if r.Driver != d.cfg.DriverName {
			continue
		}
		requests[r.Request] = true
		if r.Pool != d.cfg.NodeName {
			return nil, fmt.Errorf("device %s/%s: pool %q is not this node's (%q)", r.Pool, r.Device, r.Pool, d.cfg.NodeName)
		}
		if r.AdminAccess != nil && *r.AdminAccess {
			return nil, fmt.Errorf("request %s: adminAccess is not supported", r.Request)
		}
		res := p.Reserved[r.Device]
		for name, q := range r.ConsumedCapacity {
			v := q.AsApproximateFloat64()
			switch name {
			case CapacityTasks:
				res.TasksPerS += v
			case CapacityBytes:
				res.BytesPerS += v
			default:
				return nil, fmt.Errorf("request %s: consumed capacity %q is not one of %s, %s", r.Request, name, CapacityTasks, CapacityBytes)
			}
		}
		if res.TasksPerS > 0 && res.BytesPerS > 0 {
			return nil, fmt.Errorf("request %s: capacity: the claim consumes both %s and %s of engine %s; isolad reserves one rate per tenant and engine, request one of them", r.Request, CapacityTasks, CapacityBytes, r.Device)
		}
		p.Reserved[r.Device] = res
		var share *string
		if r.ShareID != nil {
			share = ptr.To(string(*r.ShareID))
		}
		p.Devices = append(p.Devices, PreparedDevice{
			Requests:     []string{r.Request},
			Pool:         r.Pool,
			Device:       r.Device,
			CDIDeviceIDs: []string{d.cdiDeviceID(uid)},
			ShareID:      share,
		})
	}
	if len(p.Devices) == 0 {
		return nil, fmt.Errorf("no device of driver %s is allocated to it", d.cfg.DriverName)
	}
	cfg, err := d.tenantConfig(alloc.Config, requests)
	if err != nil {
		return nil, err
	}
	keys := []admin.KeyChange{{Key: "attach_socket", Value: filepath.Join(d.claimDir(uid), SocketName)}}
	on := map[string]any{}
	engines := make([]string, 0, len(p.Reserved))
	for e := range p.Reserved {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	for _, e := range engines {
		r := p.Reserved[e]
		switch {
		case r.TasksPerS > 0:
			on[e] = map[string]any{"reservation": rate(r.TasksPerS, "/s")}
		case r.BytesPerS > 0:
			on[e] = map[string]any{"reservation": rate(r.BytesPerS, "B/s")}
		default:
			delete(p.Reserved, e)
		}
	}
	if len(on) > 0 {
		keys = append(keys, admin.KeyChange{Key: "on", Value: on})
	}
	if cfg.Weight != nil {
		keys = append(keys, admin.KeyChange{Key: "weight", Value: *cfg.Weight})
	}
	if cfg.Class != "" {
		keys = append(keys, admin.KeyChange{Key: "class", Value: cfg.Class})
	}
	if cfg.Limit != "" {
		keys = append(keys, admin.KeyChange{Key: "limit", Value: cfg.Limit})
	}
	if cfg.Latency != "" {
		keys = append(keys, admin.KeyChange{Key: "latency", Value: cfg.Latency})
	}
	quota := d.cfg.DefaultMemoryQuota
	if cfg.MemoryQuota != nil {
		quota = cfg.MemoryQuota.Value()
	}
	keys = append(keys, admin.KeyChange{Key: "memory_quota", Value: strconv.FormatInt(quota, 10) + "B"})
	if cfg.MaxConnections != nil {
		keys = append(keys, admin.KeyChange{Key: "max_connections", Value: *cfg.MaxConnections})
	}
	p.Keys = keys
	return p, nil
}

func rate(v float64, unit string) string {
	return strconv.FormatInt(int64(math.Ceil(v)), 10) + unit
}

// tenantConfig merges the opaque configurations of this driver that apply
// to the claim's requests: the class's first, then the claim's, a later
// field overriding an earlier one (the order the API gives them).
func (d *Driver) tenantConfig(configs []resourceapi.DeviceAllocationConfiguration, requests map[string]bool) (*v1alpha1.TenantConfig, error) {
	merged := &v1alpha1.TenantConfig{}
	for _, source := range []resourceapi.AllocationConfigSource{resourceapi.AllocationConfigSourceClass, resourceapi.AllocationConfigSourceClaim} {
		for i, c := range configs {
			if c.Source != source || c.Opaque == nil || c.Opaque.Driver != d.cfg.DriverName {
				continue
			}
			applies := len(c.Requests) == 0
			for _, r := range c.Requests {
				applies = applies || requests[r] || requests[strings.SplitN(r, "/", 2)[0]]
			}
			if !applies {
				continue
			}
			raw := c.Opaque.Parameters.Raw
			cfg, err := v1alpha1.Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("config %d (from %s): %w", i, strings.ToLower(string(source)), err)
			}
			if err := cfg.Validate(d.cfg.MaxMemoryQuota); err != nil {
				return nil, fmt.Errorf("config %d (from %s): %w", i, strings.ToLower(string(source)), err)
			}
			overlay(merged, cfg)
		}
	}
	return merged, nil
}

func overlay(dst, src *v1alpha1.TenantConfig) {
	if src.Weight != nil {
		dst.Weight = src.Weight
	}
	if src.Class != "" {
		dst.Class = src.Class
	}
	if src.Limit != "" {
		dst.Limit = src.Limit
	}
	if src.Latency != "" {
		dst.Latency = src.Latency
	}
	if src.MemoryQuota != nil {
		dst.MemoryQuota = src.MemoryQuota
	}
	if src.MaxConnections != nil {
		dst.MaxConnections = src.MaxConnections
	}
}

// create makes the directory, the tenant and the spec, undoing what it
// made when a later step fails.
func (d *Driver) create(ctx context.Context, uid string, p *PreparedClaim) error {
	dir := d.claimDir(uid)
	// 0755: the claim's containers may run as any uid and must reach the
	// socket; ClaimsDir itself (0700) keeps everyone else out.
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("claim directory: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("claim directory: %w", err)
	}
	// A tenant of this name with no checkpoint entry is a leftover of a
	// prepare that did not finish: replace it.
	if present, err := d.tenantPresent(ctx, p.Tenant); err != nil {
		_ = os.RemoveAll(dir)
		return err
	} else if present {
		if _, err := d.cfg.Admin.Remove(ctx, p.Tenant); err != nil {
			_ = os.RemoveAll(dir)
			return fmt.Errorf("remove leftover tenant %s: %w", p.Tenant, err)
		}
	}
	if _, err := d.cfg.Admin.Add(ctx, p.Tenant, p.Keys); err != nil {
		_ = os.RemoveAll(dir)
		var refused *admin.Failed
		if errors.As(err, &refused) {
			return fmt.Errorf("isolad refused the tenant (its SLO from the claim's TenantConfig, its reservation from the capacity the claim consumed): %s", refused.Reason)
		}
		return err
	}
	if err := d.writeCDISpec(uid, p.Tenant); err != nil {
		d.destroy(ctx, uid, p.Tenant)
		return fmt.Errorf("write CDI spec: %w", err)
	}
	return nil
}

// ensure re-creates what is missing of a prepared claim.
func (d *Driver) ensure(ctx context.Context, uid string, p *PreparedClaim) error {
	present, err := d.tenantPresent(ctx, p.Tenant)
	if err != nil {
		return err
	}
	if !present {
		if err := os.MkdirAll(d.claimDir(uid), 0o755); err != nil {
			return err
		}
		_ = removeIfExists(filepath.Join(d.claimDir(uid), SocketName))
		if _, err := d.cfg.Admin.Add(ctx, p.Tenant, p.Keys); err != nil {
			return fmt.Errorf("re-add tenant %s: %w", p.Tenant, err)
		}
	}
	if _, err := os.Stat(d.cdiSpecPath(uid)); err != nil {
		if err := d.writeCDISpec(uid, p.Tenant); err != nil {
			return fmt.Errorf("write CDI spec: %w", err)
		}
	}
	return nil
}

// destroy removes a claim's tenant, spec and directory, whichever exist.
func (d *Driver) destroy(ctx context.Context, uid, tenant string) error {
	var errs []error
	if present, err := d.tenantPresent(ctx, tenant); err != nil {
		errs = append(errs, err)
	} else if present {
		if _, err := d.cfg.Admin.Remove(ctx, tenant); err != nil {
			errs = append(errs, fmt.Errorf("remove tenant %s: %w", tenant, err))
		}
	}
	if err := removeIfExists(d.cdiSpecPath(uid)); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(d.claimDir(uid)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tenantPresent says whether isolad holds tenant (one being removed does
// not count).
func (d *Driver) tenantPresent(ctx context.Context, tenant string) (bool, error) {
	ts, err := d.cfg.Admin.List(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Name == tenant && t.State != "removing" {
			return true, nil
		}
	}
	return false, nil
}

// Unprepare removes a claim's tenant (isolad drains it), spec, directory
// and checkpoint entry. A claim not prepared is not an error.
func (d *Driver) Unprepare(ctx context.Context, uid string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return err
	}
	// The checkpoint first: a Repair (here or in the other plugin of a
	// rolling update) must not add back what is being removed. Leftovers
	// of a destroy that fails are removed by the kubelet's retry, or as
	// strays at the next start.
	if _, ok := d.cp.Claims[uid]; ok {
		delete(d.cp.Claims, uid)
		if err := d.cp.save(d.cfg.CheckpointPath); err != nil {
			return fmt.Errorf("write checkpoint: %w", err)
		}
	}
	return d.destroy(ctx, uid, TenantName(types.UID(uid)))
}

// reload reads the checkpoint again: in a rolling update of the
// DaemonSet, two plugins share it (the kubelet plugin helper serializes
// their gRPC calls with a file lock).
func (d *Driver) reload() error {
	cp, err := loadCheckpoint(d.cfg.CheckpointPath)
	if err != nil {
		return err
	}
	d.cp = cp
	return nil
}

// Repair makes again the tenants and specs of prepared claims that are
// missing (isolad restarted and lost them). It removes nothing: that is
// for Reconcile, at start.
func (d *Driver) Repair(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reload(); err != nil {
		return err
	}
	var errs []error
	for uid, p := range d.cp.Claims {
		if err := d.ensure(ctx, uid, p); err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s (%s): %w", p.Namespace, p.Name, uid, err))
		}
	}
	return errors.Join(errs...)
}

// Reconcile brings isolad, the claims directory and the CDI directory in
// line with the checkpoint: a checkpointed claim's missing tenant or spec
// is made again; the plugin's tenants, directories and specs of claims not
// in the checkpoint are removed.
func (d *Driver) Reconcile(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	logger := klog.FromContext(ctx)
	var errs []error
	for uid, p := range d.cp.Claims {
		if err := d.ensure(ctx, uid, p); err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s (%s): %w", p.Namespace, p.Name, uid, err))
		}
	}
	tenants, err := d.cfg.Admin.List(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, t := range tenants {
		uid, ok := strings.CutPrefix(t.Name, TenantPrefix)
		if !ok || d.cp.Claims[uid] != nil || t.State == "removing" {
			continue
		}
		logger.Info("removing a tenant no claim holds", "tenant", t.Name)
		if _, err := d.cfg.Admin.Remove(ctx, t.Name); err != nil {
			errs = append(errs, fmt.Errorf("remove stray tenant %s: %w", t.Name, err))
		}
	}
	if entries, err := os.ReadDir(d.cfg.ClaimsDir); err == nil {
		for _, e := range entries {
			if d.cp.Claims[e.Name()] == nil {
				logger.Info("removing a claim directory no claim holds", "dir", e.Name())
				if err := os.RemoveAll(filepath.Join(d.cfg.ClaimsDir, e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	specs, _ := filepath.Glob(filepath.Join(d.cfg.CDIDir, d.cdiSpecPrefix()+"*.json"))
	for _, s := range specs {
		uid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), d.cdiSpecPrefix()), ".json")
		if d.cp.Claims[uid] == nil {
			logger.Info("removing a CDI spec no claim holds", "spec", s)
			if err := removeIfExists(s); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
