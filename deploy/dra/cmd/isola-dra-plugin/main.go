// Command isola-dra-plugin is the isola.dev DRA kubelet plugin: it
// publishes isolad's engines as devices of the node's ResourceSlice and
// turns each prepared ResourceClaim into an isolad tenant (docs/kubernetes.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
	"github.com/isola-project/isola/deploy/dra/pkg/driver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "isola-dra-plugin:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run() error {
	var (
		driverName   = flag.String("driver-name", driver.DefaultDriverName, "DRA driver name")
		nodeName     = flag.String("node-name", env("NODE_NAME", ""), "this node's name (env NODE_NAME)")
		podUID       = flag.String("pod-uid", env("POD_UID", ""), "this pod's UID, for rolling updates of the DaemonSet (env POD_UID; empty: none)")
		adminSocket  = flag.String("admin-socket", "/run/isola/isolad.sock.admin", "isolad's admin socket")
		claimsDir    = flag.String("claims-dir", "/var/lib/isola/claims", "host directory of the per-claim attach sockets (same path in isolad, the plugin and the host)")
		containerDir = flag.String("container-dir", "/run/isola", "where a claim's directory appears in its containers")
		cdiDir       = flag.String("cdi-dir", "/var/run/cdi", "CDI spec directory the container runtime reads")
		pluginDir    = flag.String("plugin-dir", filepath.Join(kubeletplugin.KubeletPluginsDir, driver.DefaultDriverName), "kubelet plugin data directory (DRA socket)")
		registrarDir = flag.String("registrar-dir", kubeletplugin.KubeletRegistryDir, "kubelet plugin registration directory")
		checkpoint   = flag.String("checkpoint", "", "checkpoint file (default: checkpoint.json in --plugin-dir)")
		maxQuota     = flag.String("max-memory-quota", "1Gi", "largest memoryQuota a claim may ask for (0: no bound)")
		defQuota     = flag.String("default-memory-quota", "16Mi", "memoryQuota of a claim that names none")
		republish    = flag.Duration("republish", 30*time.Second, "how often isolad's engines are read again, the ResourceSlice updated and the claims' tenants isolad lost (a restart) added again")
		kubeconfig   = flag.String("kubeconfig", env("KUBECONFIG", ""), "kubeconfig (default: in-cluster)")
	)
	klog.InitFlags(nil)
	flag.Parse()
	if *nodeName == "" {
		return errors.New("--node-name (or NODE_NAME) is required")
	}
	quota, err := resource.ParseQuantity(*maxQuota)
	if err != nil {
		return fmt.Errorf("--max-memory-quota: %w", err)
	}
	dquota, err := resource.ParseQuantity(*defQuota)
	if err != nil {
		return fmt.Errorf("--default-memory-quota: %w", err)
	}
	if *checkpoint == "" {
		*checkpoint = filepath.Join(*pluginDir, "checkpoint.json")
	}
	var cfg *rest.Config
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	d, err := driver.New(ctx, driver.Config{
		DriverName:         *driverName,
		NodeName:           *nodeName,
		Admin:              admin.New(*adminSocket),
		ClaimsDir:          *claimsDir,
		ContainerDir:       *containerDir,
		CDIDir:             *cdiDir,
		CheckpointPath:     *checkpoint,
		MaxMemoryQuota:     quota.Value(),
		DefaultMemoryQuota: dquota.Value(),
	})
	if err != nil {
		return err
	}
	d.OnFatal = func(err error) { cancel(err) }
	opts := []kubeletplugin.Option{
		kubeletplugin.KubeClient(client),
		kubeletplugin.PluginDataDirectoryPath(*pluginDir),
		kubeletplugin.RegistrarDirectoryPath(*registrarDir),
	}
	if *podUID != "" {
		opts = append(opts, kubeletplugin.RollingUpdate(types.UID(*podUID)))
	}
	if err := d.Start(ctx, opts...); err != nil {
		return err
	}
	defer d.Stop()
	klog.InfoS("serving", "driver", *driverName, "node", *nodeName, "admin", *adminSocket)
	tick := time.NewTicker(*republish)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-tick.C:
			if err := d.Repair(ctx); err != nil {
				klog.ErrorS(err, "repair the claims' tenants")
			}
			if err := d.Publish(ctx); err != nil {
				klog.ErrorS(err, "republish")
			}
		}
	}
}
