package localregion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
