package localregion

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/pkirotation"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// RegionPKIInfo is the launcher's rotation API (internal/pkirotation): the launcher holds the
// region's CA keys, and the maintenance service asks it for rotations through this API, which
// admits the maintenance workload alone (docs/security.md, "Rotation").
type RegionPKIInfo struct {
	// Addr is host:port of the HTTPS API; its certificate carries ServerName.
	Addr       string `json:"addr"`
	ServerName string `json:"serverName"`
	CAFile     string `json:"caFile"`
}

// caScopes maps a CA rollover's scope to the region's CA.
var caScopes = map[string]pki.Issuer{"service": pki.ServiceCA, "arm": pki.ARMCA, "person": pki.PersonCA}

// startRotationAPI serves the rotation API on a free loopback port with its own server
// certificate (pkirotation.ServerIdentity, from the service CA, renewed with every other) and
// the service CA as its only client CA. It returns the address, for the maintenance service's
// --region-pki.
func (r *Region) startRotationAPI() (string, error) {
	if err := r.pki.Add(pkirotation.ServerIdentity, pki.Spec{CommonName: pkirotation.ServerIdentity, Usage: pki.Server}, pki.ServiceCA); err != nil {
		return "", fmt.Errorf("rotation API certificate: %w", err)
	}
	srv, err := pkirotation.NewServer(pkirotation.ServerConfig{
		TrustDomain: r.pki.TrustDomain,
		Rotate:      r.rotate,
		Region:      r.rotationRegion,
	})
	if err != nil {
		return "", err
	}
	f := r.pki.MustFiles(pkirotation.ServerIdentity)
	cfg, err := tlsconfig.Files{CA: r.pki.CAFile, Cert: f.Cert, Key: f.Key}.Server("127.0.0.1:0")
	if err != nil {
		srv.Close()
		return "", fmt.Errorf("rotation API TLS: %w", err)
	}
	hs := serverlimits.API().Server("127.0.0.1:0", srv.Handler(), cfg)
	ln, err := serverlimits.API().Listen(hs)
	if err != nil {
		srv.Close()
		return "", fmt.Errorf("rotation API: %w", err)
	}
	go func() {
		if err := hs.Serve(ln); err != nil && err != http.ErrServerClosed {
			r.step("the rotation API stopped: %v", err)
		}
	}()
	r.onStop(func() { _ = hs.Close(); srv.Close() })
	addr := ln.Addr().String()
	r.Info.RegionPKI = &RegionPKIInfo{Addr: addr, ServerName: pki.ServerName(pkirotation.ServerIdentity), CAFile: r.pki.CAFile}
	return addr, nil
}

// rotate carries out one rotation the API was asked for, one at a time with the launcher's own
// timer (keepRenewed).
func (r *Region) rotate(ctx context.Context, scope pkirotation.Scope) error {
	r.rotateMu.Lock()
	defer r.rotateMu.Unlock()
	if scope == pkirotation.ScopeCertificates {
		r.step("rotating every certificate of the region (asked by the maintenance service)")
		return r.RotateCertificates(ctx)
	}
	by, ok := caScopes[scope.CA()]
	if !ok {
		return fmt.Errorf("no CA %q in this region", scope.CA())
	}
	r.step("rolling over the %s (asked by the maintenance service)", by)
	return r.RollCA(ctx, by)
}

// rotationRegion lists the listeners that serve the region PKI's certificates, from region.json's
// endpoints: what the maintenance service probes before and after a rotation. Metrics ports
// (plaintext on loopback) and the management clusters' own PKIs are not the region's.
func (r *Region) rotationRegion() pkirotation.Region {
	r.infoMu.Lock()
	defer r.infoMu.Unlock()
	in := r.Info
	var ls []pkirotation.Listener
	add := func(name, addr, identity, protocol string) {
		if addr != "" {
			ls = append(ls, pkirotation.Listener{Name: name, Address: addr, ServerName: pki.ServerName(identity), Protocol: protocol})
		}
	}
	add("frontend", hostOf(in.Frontend.URL), pki.Frontend, pkirotation.ProtocolTLS)
	add("cluster-service", in.ClusterService.GRPC, pki.ClusterService, pkirotation.ProtocolTLS)
	add("maestro-rest", hostOf(in.Maestro.REST), pki.MaestroServer, pkirotation.ProtocolTLS)
	add("maestro-grpc", in.Maestro.GRPC, pki.MaestroServer, pkirotation.ProtocolTLS)
	add("broker", strings.TrimPrefix(in.MQTT.URL, "mqtts://"), pki.Broker, pkirotation.ProtocolTLS)
	add("postgres", in.Postgres.Addr, pki.Postgres, pkirotation.ProtocolPostgres)
	add("pgbouncer", in.Postgres.BouncerAddr, pki.Postgres, pkirotation.ProtocolPostgres)
	add("admin", hostOf(in.Admin.URL), adminIdentity, pkirotation.ProtocolTLS)
	for i, u := range in.Gateway.URLs {
		add(fmt.Sprintf("gateway-%d", i+1), hostOf(u), gatewayIdentity, pkirotation.ProtocolTLS)
	}
	if in.Prometheus != nil {
		add("prometheus", hostOf(in.Prometheus.URL), pki.Prometheus, pkirotation.ProtocolTLS)
	}
	for _, mc := range in.ManagementClusters {
		if _, ok := r.mgmt[mc.Name]; ok {
			add("maestro-agent-"+mc.ConsumerName, hostOf(mc.AgentHealthURL), agentServingIdentity(mc.ConsumerName), pkirotation.ProtocolTLS)
		}
	}
	if in.RegionPKI != nil {
		add("region-pki", in.RegionPKI.Addr, pkirotation.ServerIdentity, pkirotation.ProtocolTLS)
	}
	return pkirotation.Region{Name: in.Location, Listeners: ls}
}
