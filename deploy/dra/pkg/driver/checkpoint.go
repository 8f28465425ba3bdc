package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/isola-project/isola/deploy/dra/pkg/admin"
)

// checkpointVersion is the version of the checkpoint file's layout.
const checkpointVersion = 1

// Checkpoint is what the plugin remembers across restarts: every claim it
// prepared, with the tenant keys it sent isolad, so that a restarted plugin
// can re-add a tenant isolad lost and answer a repeated prepare.
type Checkpoint struct {
	Version int                       `json:"version"`
	Claims  map[string]*PreparedClaim `json:"claims"`
}

// PreparedClaim is one prepared claim.
type PreparedClaim struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Tenant    string            `json:"tenant"`
	Keys      []admin.KeyChange `json:"keys"`
	Devices   []PreparedDevice  `json:"devices"`
	// Reserved is what the claim reserves on each engine.
	Reserved map[string]admin.Rates `json:"reserved,omitempty"`
}

// PreparedDevice is one allocated device of a prepared claim.
type PreparedDevice struct {
	Requests     []string `json:"requests"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs"`
	ShareID      *string  `json:"shareID,omitempty"`
}

func newCheckpoint() *Checkpoint {
	return &Checkpoint{Version: checkpointVersion, Claims: map[string]*PreparedClaim{}}
}

// loadCheckpoint reads path; a missing file is an empty checkpoint.
func loadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newCheckpoint(), nil
	}
	if err != nil {
		return nil, err
	}
	c := newCheckpoint()
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("checkpoint %s: version %d, this plugin reads %d", path, c.Version, checkpointVersion)
	}
	if c.Claims == nil {
		c.Claims = map[string]*PreparedClaim{}
	}
	return c, nil
}

// save writes the checkpoint atomically: a temporary file in the same
// directory, synced, renamed over the old one, and the directory synced.
func (c *Checkpoint) save(path string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomically(path, data, 0o600)
}

func writeFileAtomically(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // gone after a successful rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
