package localregion

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
)

// GatewayInfo is the break-glass gateway (admin/cmd/gateway, docs/sre.md): the SREs' only path
// into a hosted cluster, https://<one of URLs>/sessions/<session ID>/<kube API path>, with
// mutual TLS (an SRE's person certificate), verified with CAFile. The replicas share the admin
// database and the session key, so any of them serves any session.
type GatewayInfo struct {
	URLs []string `json:"urls"`
	// ServerName is the name the gateway's certificate carries (it names no address).
	ServerName string `json:"serverName"`
	CAFile     string `json:"caFile"`
	// MetricsURLs are the replicas' Prometheus endpoints (plaintext, loopback), in URLs' order.
	MetricsURLs []string `json:"metrics"`
	// SessionKeyFile is the region's session key (0600), shared with the admin API, which
	// seals each session's credential with it.
	SessionKeyFile string `json:"sessionKeyFile"`
}

// gatewayIdentity is the gateway's service certificate (the gateway workload's SPIFFE ID), and
// gatewayReplicas how many gateway processes the region runs: two, as the chart does, so a
// session is served through whichever replica a request reaches.
const (
	gatewayIdentity = identity.Gateway
	gatewayReplicas = 2
)

// gatewayName is the process (and log) name of the i-th gateway replica, from 1.
func gatewayName(i int) string { return "gateway-" + strconv.Itoa(i) }

// sessionKeyFile is the region's break-glass session key: the admin API seals sessions'
// credentials with it and the gateway opens them.
func (r *Region) sessionKeyFile() string { return filepath.Join(r.secretsDir(), "session-key") }

// writeSessionKey writes the session key (0600) once and records it as a secret of the region.
func (r *Region) writeSessionKey() error {
	path := r.sessionKeyFile()
	if err := session.WriteKeyFile(path); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("session key: %w", err)
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, strings.TrimSpace(string(b)))
	r.mu.Unlock()
	return nil
}

// issueGatewayIdentity issues the gateway's server certificate (its workload's SPIFFE ID, and
// the names the service cluster dials it by under make deploy).
func (r *Region) issueGatewayIdentity() error {
	if err := r.pki.Add(gatewayIdentity, r.serverSpec(gatewayIdentity, pki.Server), pki.ServiceCA); err != nil {
		return fmt.Errorf("gateway certificate: %w", err)
	}
	return nil
}

// startGateways starts gatewayReplicas gateway processes on the admin database (the admin
// service's login, whose grants session.Install made) and waits until each is ready.
func (r *Region) startGateways(ctx context.Context, db PostgresRoleInfo) error {
	if err := r.issueGatewayIdentity(); err != nil {
		return err
	}
	if err := r.writeSessionKey(); err != nil {
		return err
	}
	server := r.pki.MustFiles(gatewayIdentity)
	r.Info.Gateway = GatewayInfo{CAFile: r.pki.CAFile, SessionKeyFile: r.sessionKeyFile()}
	for i := 1; i <= gatewayReplicas; i++ {
		ports, err := mgmtcluster.FreePorts(2)
		if err != nil {
			return err
		}
		addr, metrics := "127.0.0.1:"+strconv.Itoa(ports[0]), url127(ports[1])
		err = r.startService(ctx, mgmtcluster.ProcSpec{
			Name: gatewayName(i), Path: filepath.Join(r.binDir, "gateway"), LogDir: r.logDir, Env: pgEnv(db),
			Args: []string{
				"--listen", addr, "--metrics-listen", hostOf(metrics), "--pprof-token-file", r.Info.PprofTokenFile,
				// Callers are SREs only: the person CA.
				"--tls-cert", server.Cert, "--tls-key", server.Key, "--tls-client-ca", r.pki.PersonCAFile,
				"--audit-db-dsn", db.DSN, "--session-key-file", r.sessionKeyFile(),
			},
			// The gateway's own listener admits person certificates only; readiness (the admin
			// database answers) is on the metrics listener.
		}, mgmtcluster.HTTPReady(nil, metrics+"/readyz"))
		if err != nil {
			return fmt.Errorf("start %s: %w", gatewayName(i), err)
		}
		r.Info.Gateway.URLs = append(r.Info.Gateway.URLs, "https://"+addr)
		r.Info.Gateway.ServerName = pki.ServerName(gatewayIdentity)
		r.Info.Gateway.MetricsURLs = append(r.Info.Gateway.MetricsURLs, metrics+"/metrics")
	}
	return nil
}
