package v1alpha1

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	c, err := Decode([]byte(`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","weight":3,"class":"latency-sensitive","limit":"100MB/s","latency":"2ms","memoryQuota":"64Mi","maxConnections":4}`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Weight != 3 || c.MemoryQuota.Value() != 64<<20 || *c.MaxConnections != 4 {
		t.Fatalf("%+v", c)
	}
	if err := c.Validate(1 << 30); err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","weigth":3}`:           `unknown field "weigth"`,
		`{"apiVersion":"isola.dev/v1","kind":"TenantConfig"}`:                            "field apiVersion",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"Other"}`:                             "field kind",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","weight":"x"}`:         "TenantConfig.weight",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig"} {}`:                   "trailing",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","memoryQuota":"lots"}`: "quantities must match",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","memoryQuota":"2Gi"}`:  "field memoryQuota",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","class":"fast"}`:       "field class",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","weight":0}`:           "field weight",
		`{"apiVersion":"isola.dev/v1alpha1","kind":"TenantConfig","maxConnections":0}`:   "field maxConnections",
	} {
		c, err := Decode([]byte(doc))
		if err == nil {
			err = c.Validate(1 << 30)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", doc, err, want)
		}
	}
}
