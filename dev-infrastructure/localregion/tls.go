package localregion

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/openhcp/openhcp/internal/csclient"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// ClientTLS are the files a tool or test needs to call one of the region's endpoints: the CA
// that verifies the server and the client identity to present.
type ClientTLS struct {
	CAFile         string `json:"caFile,omitempty"`
	ClientCertFile string `json:"clientCertFile,omitempty"`
	ClientKeyFile  string `json:"clientKeyFile,omitempty"`
	// ServerName is the name the server's certificate carries (pki.ServerName): a client sets
	// it as its TLS server name whatever address it dials, so another service's key on that
	// port is refused.
	ServerName string `json:"serverName,omitempty"`
}

// Files returns them in tlsconfig's terms.
func (c ClientTLS) Files() tlsconfig.Files {
	return tlsconfig.Files{CA: c.CAFile, Cert: c.ClientCertFile, Key: c.ClientKeyFile, ServerName: c.ServerName}
}

// For is c meant for the server of PKI identity server: its ServerName is that server's name.
func (c ClientTLS) For(server string) ClientTLS {
	c.ServerName = pki.ServerName(server)
	return c
}

// clientTLS is the region CA plus one identity's files.
func (r *Region) clientTLS(identity string) ClientTLS {
	f := r.pki.MustFiles(identity)
	return ClientTLS{CAFile: r.pki.CAFile, ClientCertFile: f.Cert, ClientKeyFile: f.Key}
}

// HTTPClient returns an HTTP client for the frontend's ARM API that presents ARM's identity,
// as ARM does. Each call makes a new client; keep-alives reuse its connections.
func (f FrontendInfo) HTTPClient(timeout time.Duration) (*http.Client, error) {
	cfg, err := f.ClientTLS.Files().Client(hostOf(f.URL))
	if err != nil {
		return nil, fmt.Errorf("frontend TLS: %w", err)
	}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: cfg, MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second,
	}}, nil
}

// Dial connects to Cluster Service as the identity region.json lists for it (sre: what an
// operator's tool uses).
func (s ServiceInfo) Dial() (*grpc.ClientConn, error) {
	return DialClusterService(s.GRPC, s.ClientTLS)
}

// DialClusterService connects to Cluster Service at addr with the given files (mutual TLS). The
// server must present Cluster Service's certificate (its pki.ServerName), whatever c names.
func DialClusterService(addr string, c ClientTLS) (*grpc.ClientConn, error) {
	files := c.For(pki.ClusterService).Files()
	if !files.Enabled() {
		return nil, fmt.Errorf("cluster service %s: no TLS files", addr)
	}
	conn, err := csclient.Dial(addr, files)
	if err != nil {
		return nil, fmt.Errorf("cluster service %s: %w", addr, err)
	}
	return conn, nil
}

// clusterServiceClientTLS is identity's files for calling Cluster Service.
func (r *Region) clusterServiceClientTLS(identity string) ClientTLS {
	return r.clientTLS(identity).For(pki.ClusterService)
}

// DialClusterServiceAs connects to the region's Cluster Service as one of the region's
// identities (pki.Frontend, pki.Backend, pki.SRE, ...), for tests that act as that service.
func (r *Region) DialClusterServiceAs(identity string) (*grpc.ClientConn, error) {
	if r.attached {
		return r.attachedDialClusterService(identity)
	}
	if _, err := r.pki.Files(identity); err != nil {
		return nil, err
	}
	return DialClusterService(r.Info.ClusterService.GRPC, r.clusterServiceClientTLS(identity))
}

// clusterServiceServerArgs make Cluster Service serve mutual TLS as its own identity, admitting
// the region's services and the SRE identity (the bundle of both CAs); pkg/authz decides per
// method.
func (r *Region) clusterServiceServerArgs() []string {
	f := r.pki.MustFiles(pki.ClusterService)
	return []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-client-ca", r.pki.CAFile}
}

// clusterServiceClientArgs are the frontend's and backend's flags to call Cluster Service as
// identity.
func (r *Region) clusterServiceClientArgs(identity string) []string {
	c := r.clientTLS(identity)
	return []string{"--cluster-service-ca", c.CAFile, "--cluster-service-cert", c.ClientCertFile, "--cluster-service-key", c.ClientKeyFile}
}

// frontendServerArgs make the ARM API mutual TLS admitting only ARM's certificate.
func (r *Region) frontendServerArgs() []string {
	f := r.pki.MustFiles(pki.Frontend)
	return []string{"--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-client-ca", r.pki.ARMCAFile, "--arm-client-subjects", pki.ARM}
}

// probeClient verifies the region's server of PKI identity server (its pki.ServerName; ""
// verifies addr's host) and presents no certificate: enough for /healthz.
func (r *Region) probeClient(addr, server string) (*http.Client, error) {
	files := tlsconfig.Files{CA: r.pki.CAFile}
	if server != "" {
		files.ServerName = pki.ServerName(server)
	}
	cfg, err := files.Client(addr)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// hostOf returns host:port of an http(s) URL.
func hostOf(u string) string {
	for _, p := range []string{"https://", "http://"} {
		if len(u) > len(p) && u[:len(p)] == p {
			u = u[len(p):]
		}
	}
	for i, c := range u {
		if c == '/' {
			return u[:i]
		}
	}
	return u
}

// keepRenewed rotates every certificate of the region (RotateCertificates) every interval, and
// rolls each CA over (RollCA) every caInterval, until the region stops: a region may run for
// longer than a certificate (8 h) or a CA (48 h) lives, and rotation is exercised rather than
// merely possible. A zero caInterval never rolls a CA.
func (r *Region) keepRenewed(interval, caInterval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.onStop(func() { cancel(); <-done })
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		lastCA := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// One rotation at a time: the maintenance service's (rotationapi.go) waits for this.
			r.rotateMu.Lock()
			if caInterval > 0 && time.Since(lastCA) >= caInterval {
				for _, by := range []pki.Issuer{pki.ServiceCA, pki.ARMCA, pki.PersonCA} {
					if err := r.RollCA(ctx, by); err != nil {
						r.step("rolling over the %s failed: %v", by, err)
					}
				}
				r.rotateMu.Unlock()
				lastCA = time.Now()
				continue
			}
			err := r.RotateCertificates(ctx)
			r.rotateMu.Unlock()
			if err != nil {
				r.step("rotating the region's certificates failed: %v", err)
				continue
			}
			r.step("rotated every certificate of the region")
		}
	}()
}
