package localregion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"google.golang.org/grpc"

	"github.com/openhcp/openhcp/internal/pki"
)

// ErrAttached is what a Region from Attach answers to anything that needs the region's own
// processes, PKI or state: it owns none of them.
var ErrAttached = errors.New("the region is attached (localregion.Attach): it owns no process, no PKI and no state")

// Attach returns the running region that the region.json at path describes (make run's or make
// deploy's): a Region that owns no process. Its Info is the file's; Stop does nothing (the
// region's own launcher stops it); everything that needs the launcher's processes, PKI or state
// (Kill, Restart, RotateCertificates, ...) answers an error wrapping ErrAttached, and PKI is nil.
// Clients are made from the file alone: its ClientTLS files, its kubeconfigs, its URLs.
//
// The file is read strictly (an unknown field is an error: it comes from another version of
// the launcher) and must name what a client needs to reach the region: the frontend with ARM's
// certificate, Cluster Service with its client identity, and each management cluster's
// kubeconfig; each named file must be readable.
func Attach(path string) (*Region, error) {
	if err := trusted(path); err != nil {
		return nil, fmt.Errorf("attach to a running region: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("attach to a running region: %w", err)
	}
	var info Info
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		return nil, fmt.Errorf("attach to a running region: decode %s: %w", path, err)
	}
	if err := info.checkReachable(); err != nil {
		return nil, fmt.Errorf("attach to the region of %s: %w", path, err)
	}
	return &Region{Info: info, cfg: Config{RegionFile: path}, attached: true}, nil
}

// checkReachable says what a region.json lacks for a client to reach the region.
func (i Info) checkReachable() error {
	var errs []error
	need := func(what, v string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("no %s", what))
		}
	}
	file := func(what, path string) {
		need(what, path)
		if path == "" {
			return
		}
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	need("location", i.Location)
	need("frontend.url", i.Frontend.URL)
	file("frontend.caFile", i.Frontend.CAFile)
	file("frontend.clientCertFile", i.Frontend.ClientCertFile)
	file("frontend.clientKeyFile", i.Frontend.ClientKeyFile)
	need("clusterService.grpc", i.ClusterService.GRPC)
	file("clusterService.caFile", i.ClusterService.CAFile)
	file("clusterService.clientCertFile", i.ClusterService.ClientCertFile)
	file("clusterService.clientKeyFile", i.ClusterService.ClientKeyFile)
	if len(i.ManagementClusters) == 0 {
		errs = append(errs, errors.New("no managementClusters"))
	}
	for _, mc := range i.ManagementClusters {
		need("managementClusters[].name", mc.Name)
		file(fmt.Sprintf("managementClusters[%s].kubeconfig", mc.Name), mc.Kubeconfig)
		if mc.Kubeconfig != "" {
			if err := trusted(mc.Kubeconfig); err != nil {
				errs = append(errs, fmt.Errorf("managementClusters[%s].kubeconfig: %w", mc.Name, err))
			}
		}
		need(fmt.Sprintf("managementClusters[%s].provisionShard", mc.Name), mc.ProvisionShard)
	}
	return errors.Join(errs...)
}

// Attached says the region came from Attach: it owns no process, PKI or state.
func (r *Region) Attached() bool { return r.attached }

// attachedDialClusterService is DialClusterServiceAs for an attached region, which has no PKI:
// the identity region.json names for Cluster Service (sre), or another identity's files beside
// it (the region PKI's layout, <name>.crt and <name>.key in one directory), when they exist.
func (r *Region) attachedDialClusterService(identity string) (*grpc.ClientConn, error) {
	c := r.Info.ClusterService.ClientTLS
	if identity != pki.SRE {
		dir := filepath.Dir(c.ClientCertFile)
		c.ClientCertFile, c.ClientKeyFile = filepath.Join(dir, identity+".crt"), filepath.Join(dir, identity+".key")
		for _, f := range []string{c.ClientCertFile, c.ClientKeyFile} {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("dial cluster service as %s: %w (%w)", identity, err, ErrAttached)
			}
		}
	}
	return DialClusterService(r.Info.ClusterService.GRPC, c)
}

// errIfAttached is ErrAttached, naming what was asked, for an attached region; nil otherwise.
func (r *Region) errIfAttached(what string) error {
	if r.attached {
		return fmt.Errorf("%s: %w", what, ErrAttached)
	}
	return nil
}

// trusted refuses a file that someone other than this user (or root) could have written: the
// file and its directory must be owned by this user or root and writable by no one else (a
// directory with the sticky bit, such as /tmp, only lets its owners replace their own files).
// A region.json names the files the tests read, and a kubeconfig's exec plugin is a command
// client-go runs: one another local user wrote would run their code as the tests' user.
func trusted(path string) error {
	for _, p := range []string{path, filepath.Dir(path)} {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner to check", p)
		}
		if int(sys.Uid) != os.Geteuid() && sys.Uid != 0 {
			return fmt.Errorf("%s belongs to uid %d, not to this user or root", p, sys.Uid)
		}
		sticky := st.IsDir() && st.Mode()&os.ModeSticky != 0
		if st.Mode().Perm()&0o022 != 0 && !sticky {
			return fmt.Errorf("%s is writable by others (%s)", p, st.Mode().Perm())
		}
	}
	return nil
}
