// Package v1alpha1 is the opaque device configuration of the isola.dev DRA
// driver: what a ResourceClaim (or its DeviceClass) says about the isolad
// tenant its devices become.
//
//	config:
//	- opaque:
//	    driver: isola.dev
//	    parameters:
//	      apiVersion: isola.dev/v1alpha1
//	      kind: TenantConfig
//	      weight: 3
//	      class: latency-sensitive
//	      limit: 200MB/s
//	      latency: 2ms
//	      memoryQuota: 64Mi
package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// GroupVersion is the apiVersion of a TenantConfig.
	GroupVersion = "isola.dev/v1alpha1"
	// Kind is the kind of a TenantConfig.
	Kind = "TenantConfig"
)

// TenantConfig is the SLO of the tenant a claim becomes. Every field is
// optional; what is left out is isolad's default. The reservation is not
// here: it is the capacity the claim consumed (its capacity requests).
type TenantConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Weight is the tenant's share of each engine, above 0 (isolad's
	// `weight`; default 1).
	Weight *float64 `json:"weight,omitempty"`
	// Class is latency-sensitive, bandwidth-sensitive or best-effort
	// (isolad's `class`; default best-effort).
	Class string `json:"class,omitempty"`
	// Limit caps the tenant's rate: "100MB/s" (bytes) or "50k/s" (tasks)
	// (isolad's `limit`).
	Limit string `json:"limit,omitempty"`
	// Latency is the latency objective, arrival to completion, e.g. "2ms"
	// (isolad's `latency`).
	Latency string `json:"latency,omitempty"`
	// MemoryQuota is each connection's arena and the bytes of its tasks in
	// flight, a Kubernetes quantity ("64Mi"); at most the plugin's
	// --max-memory-quota (isolad's `memory_quota`).
	MemoryQuota *resource.Quantity `json:"memoryQuota,omitempty"`
	// MaxConnections bounds the connections the claim's containers may
	// hold at once (isolad's `max_connections`).
	MaxConnections *uint32 `json:"maxConnections,omitempty"`
}

var classes = []string{"latency-sensitive", "bandwidth-sensitive", "best-effort"}

// Decode reads a TenantConfig strictly: an unknown or duplicated field, a
// wrong apiVersion or kind, or trailing data is an error naming it.
func Decode(raw []byte) (*TenantConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c TenantConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s %s: %w", GroupVersion, Kind, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s %s: trailing data after the object", GroupVersion, Kind)
	}
	if c.APIVersion != GroupVersion {
		return nil, fmt.Errorf("field apiVersion: %q is not %q", c.APIVersion, GroupVersion)
	}
	if c.Kind != Kind {
		return nil, fmt.Errorf("field kind: %q is not %q", c.Kind, Kind)
	}
	return &c, nil
}

// Validate checks the fields the plugin can check itself; isolad checks
// the rest (and names the key) when the tenant is added.
func (c *TenantConfig) Validate(maxMemoryQuota int64) error {
	if c.Weight != nil && !(*c.Weight > 0) {
		return fmt.Errorf("field weight: %v must be above 0", *c.Weight)
	}
	if c.Class != "" {
		ok := false
		for _, k := range classes {
			ok = ok || c.Class == k
		}
		if !ok {
			return fmt.Errorf("field class: %q is not one of %s", c.Class, strings.Join(classes, ", "))
		}
	}
	if c.MemoryQuota != nil {
		q := c.MemoryQuota.Value()
		if q <= 0 {
			return fmt.Errorf("field memoryQuota: %s must be above 0", c.MemoryQuota)
		}
		if maxMemoryQuota > 0 && q > maxMemoryQuota {
			return fmt.Errorf("field memoryQuota: %s (%d bytes) is over this node's limit of %d bytes (--max-memory-quota)", c.MemoryQuota, q, maxMemoryQuota)
		}
	}
	if c.MaxConnections != nil && *c.MaxConnections == 0 {
		return fmt.Errorf("field maxConnections: must be at least 1")
	}
	return nil
}
