package manifests

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/isola-project/isola/deploy/dra/api/v1alpha1"
)

func TestManifestsDecodeStrictly(t *testing.T) {
	objs, err := LoadAll(Dir())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Object.GetObjectKind().GroupVersionKind().Kind]++
		switch v := o.Object.(type) {
		case *appsv1.DaemonSet:
			names := map[string]bool{}
			for _, c := range v.Spec.Template.Spec.Containers {
				names[c.Name] = true
				if c.Name == "plugin" {
					var mounts []string
					for _, m := range c.VolumeMounts {
						mounts = append(mounts, m.MountPath)
					}
					for _, want := range []string{"/run/isola", "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/plugins/isola.dev", "/var/run/cdi", "/var/lib/isola/claims"} {
						if !strings.Contains(strings.Join(mounts, " "), want) {
							t.Errorf("plugin container does not mount %s", want)
						}
					}
				}
			}
			if !names["isolad"] || !names["plugin"] {
				t.Errorf("DaemonSet containers %v: want isolad and plugin", names)
			}
		case *corev1.Pod:
			if len(v.Spec.ResourceClaims) == 0 || len(v.Spec.Containers[0].Resources.Claims) == 0 {
				t.Errorf("%s: pod %s names no resource claim", o.File, v.Name)
			}
		case *rbacv1.ClusterRole:
			may := map[string]bool{}
			for _, r := range v.Rules {
				for _, res := range r.Resources {
					for _, verb := range r.Verbs {
						may[res+":"+verb] = true
					}
				}
			}
			for _, need := range []string{"resourceclaims:get", "resourceslices:create", "resourceslices:update", "resourceslices:delete", "resourceslices:watch", "nodes:get"} {
				if !may[need] {
					t.Errorf("%s: ClusterRole %s does not grant %s", o.File, v.Name, need)
				}
			}
		case *resourceapi.ResourceClaimTemplate:
			for _, c := range v.Spec.Spec.Devices.Config {
				if c.Opaque == nil || c.Opaque.Driver != "isola.dev" {
					continue
				}
				cfg, err := v1alpha1.Decode(c.Opaque.Parameters.Raw)
				if err != nil {
					t.Errorf("%s: its TenantConfig: %v", o.File, err)
				} else if err := cfg.Validate(1 << 30); err != nil {
					t.Errorf("%s: its TenantConfig: %v", o.File, err)
				}
			}
		}
	}
	for _, k := range []string{"DaemonSet", "DeviceClass", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "ResourceClaimTemplate", "Pod", "ConfigMap"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in deploy/kubernetes (have %v)", k, kinds)
		}
	}
}

func TestUnknownFieldsAreRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"typo in spec": "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n  selectorz: []\n",
		"duplicate":    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nmetadata: {name: y}\n",
	} {
		if _, err := Decode(name, []byte(doc)); err == nil {
			t.Errorf("%s: decoded", name)
		} else if name == "typo in spec" && !strings.Contains(err.Error(), "selectorz") {
			t.Errorf("%s: %v does not name the field", name, err)
		}
	}
}
