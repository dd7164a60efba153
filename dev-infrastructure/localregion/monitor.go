package localregion

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's fleet Monitor (backend/cmd/monitor, docs/monitor.md): two replicas that share the
// fleet through leases in the document store, so a test can kill one and watch its share move.
const (
	monitorReplicas = 2
	monitorRole     = "monitor"
	// monitorKubeUser is who the Monitor is to each management cluster's kube-apiserver; it
	// needs no binding: /readyz is open to every authenticated user (system:public-info-viewer).
	monitorKubeUser = "openhcp-monitor"
	// The local region checks often and calls feedback stale after a minute, so that a test
	// sees MonitorFeedbackStale fire within a few minutes of a shard going silent; production
	// keeps the binary's defaults (30s, 3m).
	monitorInterval   = 5 * time.Second
	monitorLease      = 6 * time.Second
	monitorStaleAfter = time.Minute
)

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

// monitorReplicaName is the process (and log) name of the i-th replica, from 1.
func monitorReplicaName(i int) string { return "monitor-" + strconv.Itoa(i) }

// startMonitor gives the Monitor its database login (a member of the document store's owner
// group: it writes its leases and health documents there) and starts its replicas, each probing
// every management cluster's kube-apiserver /readyz with a client certificate of that cluster's CA.
func (r *Region) startMonitor(ctx context.Context, pg *pgserver.Server) error {
	password, err := pgserver.NewPassword()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, password)
	r.dbPasswords[monitorRole] = password
	r.mu.Unlock()
	if err := pg.CreateLoginRole(ctx, monitorRole, password, "resourceprovider"); err != nil {
		return fmt.Errorf("monitor database login: %w", err)
	}
	passFile := filepath.Join(r.secretsDir(), monitorRole+".pgpass")
	if err := pg.WritePassFile(passFile, monitorRole, "resourceprovider", password); err != nil {
		return err
	}
	db := PostgresRoleInfo{Service: monitorRole, Role: monitorRole, Database: "resourceprovider",
		DSN: pg.RoleDSN(monitorRole, "resourceprovider", r.pki.CAFile), PassFile: passFile}
	r.Info.Postgres.Roles = append(r.Info.Postgres.Roles, db)

	dir := filepath.Join(r.stateDir, "monitor")
	var probes []string
	for _, name := range r.managementClusterNames() {
		arg, err := monitorProbeArg(dir, mgmtShard(r.Info.ManagementClusters, name), r.mgmt[name])
		if err != nil {
			return err
		}
		probes = append(probes, "--shard-probe", arg)
	}
	info := MonitorInfo{StaleAfter: monitorStaleAfter.String()}
	for i := 1; i <= monitorReplicas; i++ {
		port, err := mgmtcluster.FreePort()
		if err != nil {
			return err
		}
		metrics := url127(port)
		args := append([]string{
			"--db-dsn", db.DSN,
			"--cluster-service", r.Info.ClusterService.GRPC,
			"--metrics-listen", "127.0.0.1:" + strconv.Itoa(port),
			"--replica-id", monitorReplicaName(i),
			"--interval", monitorInterval.String(),
			"--lease-duration", monitorLease.String(),
			"--stale-after", monitorStaleAfter.String(),
		}, r.clusterServiceClientArgs(pki.Monitor)...)
		err = r.startService(ctx, mgmtcluster.ProcSpec{
			Name: monitorReplicaName(i), Path: filepath.Join(r.binDir, "monitor"), LogDir: r.logDir, Env: pgEnv(db),
			Args: append(args, probes...),
		}, mgmtcluster.HTTPReady(nil, metrics+"/healthz"))
		if err != nil {
			return err
		}
		info.Replicas = append(info.Replicas, ServiceInfo{MetricsURL: metrics + "/metrics"})
	}
	r.Info.Monitor = info
	return nil
}

// monitorProbeArg is the --shard-probe value for mc: its kube-apiserver's /readyz, verified with
// its CA, with a client certificate of its CA for monitorKubeUser written into dir.
func monitorProbeArg(dir, shard string, mc *mgmtcluster.ManagementCluster) (string, error) {
	cert, key, ca, err := mc.WriteClientCertificate(dir, mc.Name+"-monitor-client", monitorKubeUser, nil)
	if err != nil {
		return "", fmt.Errorf("monitor probe of %s: %w", mc.Name, err)
	}
	return shard + "=" + mc.Host + "/readyz," + ca + "," + cert + "," + key, nil
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
