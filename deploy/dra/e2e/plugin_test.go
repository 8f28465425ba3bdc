package e2e

// The plugin as its own process: the test binary run again with
// ISOLA_E2E_PLUGIN set to a configuration file. It serves the real DRA
// gRPC and registration sockets with the real driver; the API server is
// client-go's fake clientset, whose ResourceClaims are read from a file the
// test writes (so the test, playing the ResourceClaim controller and the
// scheduler, can add claims while the plugin runs).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
	"github.com/isola-project/isola/deploy/dra/pkg/driver"
)

// pluginConfig is what the plugin process is told.
type pluginConfig struct {
	AdminSocket    string `json:"adminSocket"`
	ClaimsDir      string `json:"claimsDir"`
	CDIDir         string `json:"cdiDir"`
	CheckpointPath string `json:"checkpointPath"`
	PluginDir      string `json:"pluginDir"`
	RegistrarDir   string `json:"registrarDir"`
	ClaimsFile     string `json:"claimsFile"`
	SlicesFile     string `json:"slicesFile"`
	ReadyFile      string `json:"readyFile"`
	MaxMemoryQuota int64  `json:"maxMemoryQuota"`
}

const nodeName = "node-a"

func readClaims(path string) (map[string]*resourceapi.ResourceClaim, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return map[string]*resourceapi.ResourceClaim{}, nil
	}
	if err != nil {
		return nil, err
	}
	var claims map[string]*resourceapi.ResourceClaim
	return claims, json.Unmarshal(data, &claims)
}

func runPlugin(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var pc pluginConfig
	if err := json.Unmarshal(data, &pc); err != nil {
		return err
	}
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "node-a-uid"}})
	client.PrependReactor("get", "resourceclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		get := action.(k8stesting.GetAction)
		claims, err := readClaims(pc.ClaimsFile)
		if err != nil {
			return true, nil, err
		}
		key := get.GetNamespace() + "/" + get.GetName()
		if c, ok := claims[key]; ok {
			return true, c.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), get.GetName())
	})
	d, err := driver.New(ctx, driver.Config{
		DriverName:     driver.DefaultDriverName,
		NodeName:       nodeName,
		Admin:          admin.New(pc.AdminSocket),
		ClaimsDir:      pc.ClaimsDir,
		ContainerDir:   "/run/isola",
		CDIDir:         pc.CDIDir,
		CheckpointPath: pc.CheckpointPath,
		MaxMemoryQuota: pc.MaxMemoryQuota,
	})
	if err != nil {
		return err
	}
	if err := d.Start(ctx,
		kubeletplugin.KubeClient(client),
		kubeletplugin.PluginDataDirectoryPath(pc.PluginDir),
		kubeletplugin.RegistrarDirectoryPath(pc.RegistrarDir),
	); err != nil {
		return err
	}
	// The slice as published to the API server, for the test's scheduler.
	deadline := time.Now().Add(30 * time.Second)
	for {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err == nil && len(slices.Items) > 0 {
			out, _ := json.Marshal(slices.Items)
			if err := os.WriteFile(pc.SlicesFile, out, 0o600); err != nil {
				return err
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no ResourceSlice published: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(pc.ReadyFile, []byte("ready"), 0o600); err != nil {
		return err
	}
	select {} // until killed
}

func pluginConfigFile(dir string, pc pluginConfig) (string, error) {
	path := filepath.Join(dir, "plugin.json")
	data, _ := json.Marshal(pc)
	return path, os.WriteFile(path, data, 0o600)
}
