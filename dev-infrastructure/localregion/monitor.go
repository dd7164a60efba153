package localregion

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's fleet Monitor (backend/cmd/monitor, docs/monitor.md): two replicas that share the
// fleet through leases in the document store, so a test can kill one and watch its share move.
const (
	monitorReplicas = 2
	monitorName     = "monitor"
	// The local region checks often and calls feedback stale after a minute, so that a test
	// sees MonitorFeedbackStale fire within a few minutes of a shard going silent; production
	// keeps the binary's defaults (30s, 3m).
	monitorInterval   = 5 * time.Second
	monitorLease      = 6 * time.Second
	monitorStaleAfter = time.Minute
	// Cluster Service republishes a settled cluster's work every minute (--feedback-heartbeat)
	// and the Monitor calls a cluster whose last feedback is older than three of those plus
	// slack stale (--feedback-stale-after).
	clusterServiceFeedbackHeartbeat = time.Minute
	monitorFeedbackStaleAfter       = 3*clusterServiceFeedbackHeartbeat + time.Minute
)

// MonitorKubeUser is who the Monitor is to each management cluster's kube-apiserver, under make
// run and make deploy alike; it needs no binding: /readyz is open to every authenticated user
// (system:public-info-viewer).
const MonitorKubeUser = "openhcp-monitor"

// MonitorInfo is the Monitor's replicas: each serves only /metrics and /healthz.
type MonitorInfo struct {
	Replicas []ServiceInfo `json:"replicas"`
	// StaleAfter is the replicas' --stale-after: how long a shard's feedback path may fail
	// before its clusters are judged stale.
	StaleAfter string `json:"staleAfter"`
}

// MetricsURLs are the replicas' /metrics.
func (m MonitorInfo) MetricsURLs() []string {
	var out []string
	for _, r := range m.Replicas {
		out = append(out, r.MetricsURL)
	}
	return out
}

// startMonitor starts the Monitor's replicas (startStoreService), each probing every management
// cluster's kube-apiserver /readyz with a client certificate of that cluster's CA.
func (r *Region) startMonitor(ctx context.Context, pg *pgserver.Server) error {
	dir := filepath.Join(r.stateDir, "monitor")
	args := []string{
		"--interval", monitorInterval.String(),
		"--lease-duration", monitorLease.String(),
		"--stale-after", monitorStaleAfter.String(),
		"--feedback-stale-after", monitorFeedbackStaleAfter.String(),
	}
	for _, name := range r.managementClusterNames() {
		arg, err := monitorProbeArg(dir, mgmtShard(r.Info.ManagementClusters, name), r.mgmt[name])
		if err != nil {
			return err
		}
		args = append(args, "--shard-probe", arg)
	}
	replicas, err := r.startStoreService(ctx, pg, storeService{name: monitorName, identity: pki.Monitor, replicas: monitorReplicas, args: args})
	if err != nil {
		return err
	}
	r.Info.Monitor = MonitorInfo{Replicas: replicas, StaleAfter: monitorStaleAfter.String()}
	return nil
}

// monitorProbeArg is the --shard-probe value for mc: its kube-apiserver's /readyz, verified with
// its CA, with the Monitor's probe certificate written into dir.
func monitorProbeArg(dir, shard string, mc *mgmtcluster.ManagementCluster) (string, error) {
	cert, key, ca, err := WriteMonitorProbeCertificate(mc, dir)
	if err != nil {
		return "", err
	}
	return shard + "=" + mc.Host + "/readyz," + ca + "," + cert + "," + key, nil
}

// WriteMonitorProbeCertificate writes into dir a client certificate of mc's CA for
// MonitorKubeUser, its key, and mc's CA: what the Monitor probes mc's /readyz with, here or in a
// pod (make deploy).
func WriteMonitorProbeCertificate(mc *mgmtcluster.ManagementCluster, dir string) (cert, key, ca string, err error) {
	cert, key, ca, err = mc.WriteClientCertificate(dir, mc.Name+"-monitor-client", MonitorKubeUser, nil)
	if err != nil {
		return "", "", "", fmt.Errorf("monitor probe of %s: %w", mc.Name, err)
	}
	return cert, key, ca, nil
}

// mgmtShard is the provision shard of the management cluster called name.
func mgmtShard(mcs []ManagementClusterInfo, name string) string {
	for _, mc := range mcs {
		if mc.Name == name {
			return mc.ProvisionShard
		}
	}
	return name
}
