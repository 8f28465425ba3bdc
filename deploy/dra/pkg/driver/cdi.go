package driver

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	cdispec "tags.cncf.io/container-device-interface/specs-go"
)

// cdiVersion is the CDI spec version the plugin writes: env and mounts are
// all it uses, and 0.6.0 is read by every runtime with CDI support.
const cdiVersion = "0.6.0"

// cdiKind is the CDI kind of a claim's attach point: isola.dev/tenant.
func (d *Driver) cdiKind() string { return d.cfg.DriverName + "/tenant" }

// cdiSpecPath is the spec file of one claim.
func (d *Driver) cdiSpecPath(uid string) string {
	return filepath.Join(d.cfg.CDIDir, d.cdiSpecPrefix()+uid+".json")
}

func (d *Driver) cdiSpecPrefix() string {
	return strings.ReplaceAll(d.cfg.DriverName, "/", "-") + "-claim_"
}

// cdiDeviceID is the fully qualified CDI device a claim's containers get.
func (d *Driver) cdiDeviceID(uid string) string { return d.cdiKind() + "=" + uid }

// writeCDISpec writes the spec of one claim: its directory (holding
// isolad's attach socket) mounted at ContainerDir, ISOLA_SOCKET and
// ISOLA_TENANT set.
func (d *Driver) writeCDISpec(uid, tenant string) error {
	spec := cdispec.Spec{
		Version: cdiVersion,
		Kind:    d.cdiKind(),
		Devices: []cdispec.Device{{
			Name: uid,
			ContainerEdits: cdispec.ContainerEdits{
				Env: []string{
					"ISOLA_SOCKET=" + filepath.Join(d.cfg.ContainerDir, SocketName),
					"ISOLA_TENANT=" + tenant,
				},
				Mounts: []*cdispec.Mount{{
					HostPath:      d.claimDir(uid),
					ContainerPath: d.cfg.ContainerDir,
					Options:       []string{"rbind", "rw", "nosuid", "nodev", "noexec"},
				}},
			},
		}},
	}
	data, err := json.MarshalIndent(&spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.cfg.CDIDir, 0o755); err != nil {
		return err
	}
	return writeFileAtomically(d.cdiSpecPath(uid), data, 0o644)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
