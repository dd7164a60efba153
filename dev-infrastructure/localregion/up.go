package localregion

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
	"k8s.io/client-go/rest"
)

// Up brings up a region as cfg says and returns once every part is ready and region.json is
// written. On error everything already started is stopped again.
func Up(ctx context.Context, cfg Config) (r *Region, err error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r = &Region{
		cfg:         cfg,
		logDir:      filepath.Join(cfg.StateDir, "logs"),
		stateDir:    filepath.Join(cfg.StateDir, "state"),
		binDir:      filepath.Join(cfg.StateDir, "bin"),
		services:    map[string]*service{},
		crashes:     make(chan Crash, 32),
		dbPasswords: map[string]string{},
		mgmt:        map[string]*mgmtcluster.ManagementCluster{},
	}
	// Every error return below sets r to nil before this runs: stop the region built here.
	built := r
	defer func() {
		if err != nil {
			built.Stop()
			r = nil
		}
	}()
	// A previous run that was killed may have left state behind; it is throwaway. Its etcds'
	// and its broker's socket directories are not in it but in the temporary directory: those
	// whose launcher (or sim) is gone go too; a running region's stay.
	if err := os.RemoveAll(r.stateDir); err != nil {
		return nil, fmt.Errorf("clear old state %s: %w", r.stateDir, err)
	}
	removed, sweepErr := mgmtcluster.SweepSocketDirs("")
	for _, d := range removed {
		r.step("removed %s, a socket directory left by a launcher that was killed", d)
	}
	if sweepErr != nil {
		r.step("sweeping old socket directories: %v", sweepErr)
	}
	for _, d := range []string{r.stateDir, r.binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Logs are for the operator and its group only (mgmtcluster.LogDirMode).
	if err := os.MkdirAll(r.logDir, mgmtcluster.LogDirMode); err != nil {
		return nil, fmt.Errorf("create %s: %w", r.logDir, err)
	}
	if err := os.Chmod(r.logDir, mgmtcluster.LogDirMode); err != nil {
		return nil, fmt.Errorf("create %s: %w", r.logDir, err)
	}
	r.Info.Location = cfg.Location
	r.Info.LogDir = r.logDir

	consumers := make([]string, 0, cfg.ManagementClusters)
	for i := 1; i <= cfg.ManagementClusters; i++ {
		consumers = append(consumers, managementClusterName(i))
	}
	for _, ext := range cfg.External {
		consumers = append(consumers, ext.Name())
	}
	if r.pki, err = pki.Create(filepath.Join(r.stateDir, "pki"), pki.Options{MaestroConsumers: consumers}); err != nil {
		return nil, fmt.Errorf("create the region PKI: %w", err)
	}
	if err := r.addBrokerNames(); err != nil {
		return nil, err
	}
	if err := r.writePprofToken(); err != nil {
		return nil, err
	}
	if err := r.addServiceClusterNames(); err != nil {
		return nil, err
	}

	r.step("building the pinned tools (cached) and our services")
	apiserverBin, etcdBin, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		return nil, err
	}
	kcmBin, err := mgmtcluster.KubeControllerManagerBinary(ctx)
	if err != nil {
		return nil, err
	}
	maestroBin, err := mgmtcluster.MaestroBinary(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.buildBinaries(ctx); err != nil {
		return nil, err
	}

	r.step("starting PostgreSQL")
	pg, err := r.startPostgres(ctx)
	if err != nil {
		return nil, err
	}

	r.step("starting mosquitto")
	// The first Maestro server's identity is the region's own; the others get theirs here.
	extraServers := maestroServerNames(cfg.MaestroServers)[1:]
	for _, name := range extraServers {
		if err := r.pki.Add(name, pki.Spec{CommonName: name, Usage: pki.Client}, pki.ServiceCA); err != nil {
			return nil, err
		}
	}
	sharePlugin, err := mgmtcluster.MosquittoShareGuardPlugin(ctx)
	if err != nil {
		return nil, err
	}
	mqOpts, err := mgmtcluster.SecureBrokerOptions(r.pki, filepath.Join(r.stateDir, "mosquitto"), r.logDir, sharePlugin, extraServers...)
	if err != nil {
		return nil, err
	}
	mq, err := mgmtcluster.StartMosquitto(ctx, mqOpts)
	if err != nil {
		return nil, err
	}
	r.onStop(mq.Stop)
	r.holders.broker = mq
	r.supervise(mq.Proc)
	r.Info.MQTT = MQTTInfo{URL: "mqtts://" + mq.Addr, CAFile: r.pki.CAFile}

	var maestroREST mgmtcluster.MaestroREST
	if cfg.ServiceCluster != nil {
		if maestroREST, err = r.installMaestroServer(ctx); err != nil {
			return nil, err
		}
	} else {
		r.step("starting the Maestro server (and the service cluster's kube-apiserver that authorizes its gRPC callers)")
		ms, err := r.startMaestroServer(ctx, kubeBinaries{apiserverBin, etcdBin, ""}, maestroBin, mq.Addr)
		if err != nil {
			return nil, err
		}
		maestroREST = ms.REST()
		r.maestro = ms
	}

	for i := 1; i <= cfg.ManagementClusters; i++ {
		name := managementClusterName(i)
		r.step("starting management cluster %s (etcd, kube-apiserver, kube-controller-manager, maestro agent, hypershift-sim)", name)
		info, err := r.startManagementCluster(ctx, name, kubeBinaries{apiserverBin, etcdBin, kcmBin}, maestroBin, maestroREST, mqOpts, mq.Addr)
		if err != nil {
			return nil, err
		}
		r.Info.ManagementClusters = append(r.Info.ManagementClusters, info)
	}

	if err := r.startExternal(ctx, maestroREST.RegisterConsumer, mq.Addr); err != nil {
		return nil, err
	}

	if err := r.startStuckDeleteWatchdog(maestroREST, mq.Addr); err != nil {
		return nil, err
	}
	if err := r.startOrphanedAppliedWorkSweeper(maestroREST); err != nil {
		return nil, err
	}

	if cfg.ServiceCluster != nil {
		r.onStop(cfg.ServiceCluster.Stop)
		if err := r.installServices(ctx, pg); err != nil {
			return nil, err
		}
		// The charts' pods read their certificates from Secrets made once: the CAs are not rolled
		// under them (0: never).
		r.keepRenewed(pki.DefaultLifetime/2, 0)
		if err := r.writeInfo(); err != nil {
			return nil, fmt.Errorf("write %s: %w", cfg.RegionFile, err)
		}
		return r, nil
	}

	r.step("starting Cluster Service")
	if err := r.startClusterService(ctx, r.maestro); err != nil {
		return nil, err
	}
	r.step("starting the backend")
	if err := r.startBackend(ctx); err != nil {
		return nil, err
	}
	r.step("starting the frontend")
	if err := r.startFrontend(ctx); err != nil {
		return nil, err
	}
	r.step("starting the fleet Monitor (%d replicas)", monitorReplicas)
	if err := r.startMonitor(ctx, pg); err != nil {
		return nil, err
	}
	r.step("starting the maintenance service")
	if err := r.startMaintenance(ctx, pg); err != nil {
		return nil, err
	}
	r.step("starting the break-glass gateway (%d replicas) and the admin API", gatewayReplicas)
	if err := r.startAdmin(ctx, pg); err != nil {
		return nil, err
	}
	r.step("starting Prometheus (every service's metrics, the shipped alert rules)")
	if err := r.startPrometheus(ctx); err != nil {
		return nil, err
	}
	r.keepRenewed(pki.DefaultLifetime/2, pki.DefaultCALifetime/2)
	if err := r.writeInfo(); err != nil {
		return nil, fmt.Errorf("write %s: %w", cfg.RegionFile, err)
	}
	return r, nil
}

// startMaestroServer starts the Maestro server with TLS on REST and gRPC, its gRPC callers
// authorized by the service cluster's apiserver (only cluster-service may publish and
// subscribe as source "cluster-service"), its database login and its own broker identity.
func (r *Region) startMaestroServer(ctx context.Context, kube kubeBinaries, maestroBin, brokerAddr string) (*mgmtcluster.MaestroServer, error) {
	server := r.pki.MustFiles(pki.MaestroServer)
	authz, err := mgmtcluster.StartMaestroAuthorizer(ctx, mgmtcluster.MaestroAuthorizerOptions{
		Cluster: mgmtcluster.ManagementClusterOptions{Name: "svc", Dir: filepath.Join(r.stateDir, "svc"), LogDir: r.logDir,
			APIServerPath: kube.apiserver, EtcdPath: kube.etcd, ExtraClientCAFile: r.pki.CAFile},
		ServerUser: pki.MaestroServer, ServerCertFile: server.Cert, ServerKeyFile: server.Key,
		Sources: map[string]string{maestroSourceClusterService: pki.ClusterService},
	})
	if err != nil {
		return nil, err
	}
	r.onStop(authz.Stop)
	r.holders.authorizer = authz.Cluster
	r.supervise(authz.Cluster.Etcd)
	r.supervise(authz.Cluster.APIServer)

	db, err := r.Info.Postgres.Role("maestro")
	if err != nil {
		return nil, err
	}
	// Config.MaestroServers instances: the same database, serving certificate and authorizer,
	// each with its own broker identity. Several share the agents' status events; nothing calls
	// the REST or gRPC API of any but the first.
	restClients, err := maestrogate.WorkloadRules(r.pki.TrustDomain, maestroRESTClients)
	if err != nil {
		return nil, err
	}
	var ms *mgmtcluster.MaestroServer
	names := maestroServerNames(r.cfg.MaestroServers)
	for i, name := range names {
		mqtt := r.pki.MustFiles(name)
		s, err := mgmtcluster.StartMaestroServer(ctx, mgmtcluster.MaestroServerOptions{
			Binary: maestroBin, DSN: db.DSN, DBPassword: r.dbPasswords["maestro"], MQTTAddr: brokerAddr,
			MQTTTLS:  &mgmtcluster.MaestroMQTTTLS{CAFile: r.pki.CAFile, CertFile: mqtt.Cert, KeyFile: mqtt.Key},
			ClientID: name, Name: name, SharedStatus: true,
			TLS: &mgmtcluster.MaestroServerTLS{CertFile: server.Cert, KeyFile: server.Key, CAFile: r.pki.CAFile,
				ClientCAFile: r.pki.CAFile, AuthorizerKubeconfig: authz.Kubeconfig,
				RESTClients: restClients,
				// The launcher registers consumers and runs the stuck-delete watchdog for
				// Cluster Service, and so acts as it.
				ClientCertFile: r.pki.MustFiles(pki.ClusterService).Cert, ClientKeyFile: r.pki.MustFiles(pki.ClusterService).Key},
			Dir: filepath.Join(r.stateDir, name), LogDir: r.logDir,
		})
		if err != nil {
			return nil, fmt.Errorf("start Maestro server %d (%s): %w", i+1, name, err)
		}
		r.onStop(s.Close)
		r.supervise(s.Proc)
		if i == 0 {
			ms = s
			r.Info.Maestro = MaestroInfo{REST: ms.RESTURL, GRPC: ms.GRPCAddr, MetricsURL: ms.MetricsURL,
				ClientTLS: r.clientTLS(pki.ClusterService).For(pki.MaestroServer)}
		} else {
			r.extraMaestro = append(r.extraMaestro, s)
		}
	}
	return ms, nil
}

// maestroRESTClients are the only callers of Maestro's REST API (through the gate in front of
// it, mgmtcluster/maestroisolation.go), by workload: Cluster Service reads works and registers
// consumers; the admin API (identity.SRE's workload, which its "admin" certificate carries)
// reads resource bundles for describe. Every other identity is refused.
var maestroRESTClients = map[string]maestrogate.Access{
	identity.ClusterService: maestrogate.ReadWrite,
	identity.SRE:            maestrogate.ReadOnly,
}

// maestroSourceClusterService is the Maestro source Cluster Service publishes as (its
// --maestro-source-id default).
const maestroSourceClusterService = "cluster-service"

// startStuckDeleteWatchdog runs the workaround for deletes the pinned Maestro loses (see
// StuckDeleteWatchdog), logging to <logs>/stuck-delete-watchdog.log, until the region stops.
// To make an agent reconnect it takes over the agent's MQTT session, which the broker allows
// only to the agent's own identity, so it holds each agent's certificate (docs/security.md).
func (r *Region) startStuckDeleteWatchdog(maestro mgmtcluster.MaestroREST, brokerAddr string) error {
	f, _, err := mgmtcluster.OpenLog(r.logDir, "stuck-delete-watchdog.log")
	if err != nil {
		return fmt.Errorf("stuck delete watchdog log: %w", err)
	}
	ids := map[string]string{}
	agentTLS := map[string]*tls.Config{}
	for _, mc := range r.Info.ManagementClusters {
		ids[mc.ConsumerName] = mc.AgentMQTTClientID
		f := r.pki.MustFiles(pki.MaestroAgent(mc.ConsumerName))
		cfg, err := tlsconfig.Files{CA: r.pki.CAFile, Cert: f.Cert, Key: f.Key}.Client(brokerAddr)
		if err != nil {
			return fmt.Errorf("stuck delete watchdog: TLS of %s: %w", mc.ConsumerName, err)
		}
		agentTLS[mc.ConsumerName] = cfg
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.onStop(func() { cancel(); f.Close() })
	r.watchdog = mgmtcluster.StartStuckDeleteWatchdog(ctx, mgmtcluster.StuckDeleteWatchdogOptions{
		Maestro: maestro, BrokerAddr: brokerAddr, AgentClientIDs: ids, AgentTLS: agentTLS,
		Logger: slog.New(slog.NewJSONHandler(f, nil)),
	})
	return nil
}

// startOrphanedAppliedWorkSweeper runs the workaround for the AppliedManifestWorks the pinned
// agent leaves behind after its management kube-apiserver was away (see
// OrphanedAppliedWorkSweeper), on every management cluster the region runs as processes,
// logging to <logs>/orphaned-applied-work-sweeper.log, until the region stops.
func (r *Region) startOrphanedAppliedWorkSweeper(maestro mgmtcluster.MaestroREST) error {
	clusters := map[string]*rest.Config{}
	for _, mc := range r.Info.ManagementClusters {
		if m, ok := r.mgmt[mc.Name]; ok {
			clusters[mc.ConsumerName] = m.RESTConfig()
		}
	}
	if len(clusters) == 0 {
		return nil
	}
	f, _, err := mgmtcluster.OpenLog(r.logDir, "orphaned-applied-work-sweeper.log")
	if err != nil {
		return fmt.Errorf("orphaned applied work sweeper log: %w", err)
	}
	s, err := mgmtcluster.NewOrphanedAppliedWorkSweeper(mgmtcluster.OrphanedAppliedWorkSweeperOptions{
		Bundles: maestro, Clusters: clusters, Logger: slog.New(slog.NewJSONHandler(f, nil)),
	})
	if err != nil {
		f.Close()
		return fmt.Errorf("orphaned applied work sweeper: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.onStop(func() { cancel(); f.Close() })
	s.Start(ctx)
	r.sweeper = s
	return nil
}

// managementClusterName is the name of the i-th management cluster (from 1), which is also its
// provision shard and Maestro consumer.
func managementClusterName(i int) string { return fmt.Sprintf("mgmt-%d", i) }

// agentServingIdentity is the PKI identity of the serving certificate of a management cluster's
// Maestro agent (its health and metrics port).
func agentServingIdentity(consumer string) string { return pki.MaestroAgent(consumer) + "-serving" }

type kubeBinaries struct{ apiserver, etcd, controllerManager string }

func (r *Region) startManagementCluster(ctx context.Context, name string, kube kubeBinaries, maestroBin string, maestro mgmtcluster.MaestroREST, mqOpts mgmtcluster.MosquittoOptions, mqttAddr string) (ManagementClusterInfo, error) {
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: name, Dir: filepath.Join(r.stateDir, name), LogDir: r.logDir,
		APIServerPath: kube.apiserver, EtcdPath: kube.etcd, ControllerManagerPath: kube.controllerManager,
	})
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	r.onStop(mc.Stop)
	r.mgmt[name] = mc
	for _, p := range []*mgmtcluster.Process{mc.Etcd, mc.APIServer, mc.ControllerManager} {
		if p != nil {
			r.supervise(p)
		}
	}
	if err := maestro.RegisterConsumer(ctx, name); err != nil {
		return ManagementClusterInfo{}, err
	}
	// The agent and hypershift-sim act on the cluster as their charts' ServiceAccounts, with
	// exactly the RBAC the charts grant (chartrbac.go).
	identities := filepath.Join(r.stateDir, name, "identities")
	agentKubeconfig, err := mgmtcluster.ApplyChartIdentity(ctx, mc, mgmtcluster.AgentIdentity(name), identities)
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	simKubeconfig, err := mgmtcluster.ApplyChartIdentity(ctx, mc, mgmtcluster.SimIdentity, identities)
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	adminKubeconfig, err := applyAdminReader(ctx, mc, identities)
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	// The agent's own identity (CN = the consumer name): the broker's ACL confines it to its
	// own topics.
	agentFiles := r.pki.MustFiles(pki.MaestroAgent(name))
	// Its health and metrics port serves a certificate of the service CA (the maestro-agent
	// workload's), so the region's Prometheus verifies it; its CN is no broker username.
	serving := agentServingIdentity(name)
	if err := r.pki.Add(serving, pki.Spec{CommonName: serving, Usage: pki.Server}, pki.ServiceCA); err != nil {
		return ManagementClusterInfo{}, err
	}
	servingFiles := r.pki.MustFiles(serving)
	agent, err := mgmtcluster.StartMaestroAgent(ctx, mgmtcluster.MaestroAgentOptions{
		Binary: maestroBin, ConsumerName: name, Kubeconfig: agentKubeconfig, MQTTAddr: mqttAddr,
		MQTTTLS: &mgmtcluster.MaestroMQTTTLS{CAFile: r.pki.CAFile, CertFile: agentFiles.Cert, KeyFile: agentFiles.Key},
		Dir:     filepath.Join(r.stateDir, name, "maestro-agent"), LogDir: r.logDir,
		Verbosity: r.cfg.AgentVerbosity, StatusSyncInterval: r.cfg.AgentStatusSyncIntervals[name],
		ServingTLS: &mgmtcluster.MaestroAgentServingTLS{CertFile: servingFiles.Cert, KeyFile: servingFiles.Key},
	})
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	r.onStop(agent.Stop)
	r.mu.Lock()
	r.holders.agents = append(r.holders.agents, agent)
	r.mu.Unlock()
	r.supervise(agent.Proc)

	ports, err := mgmtcluster.FreePorts(2)
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	args := []string{
		"--kubeconfig", simKubeconfig,
		"--metrics-addr", "127.0.0.1:" + strconv.Itoa(ports[0]),
		"--health-addr", "127.0.0.1:" + strconv.Itoa(ports[1]),
	}
	if d := r.cfg.Sim.AvailableDelay; d > 0 {
		args = append(args, "--available-delay", d.String())
	}
	if d := r.cfg.Sim.DeleteDelay; d > 0 {
		args = append(args, "--delete-delay", d.String())
	}
	args = append(args, r.hostedArgs(name, kube)...)
	// The sim opens the Secrets Cluster Service sealed to this management cluster's key.
	unsealKey, err := r.writeSealingKey(name)
	if err != nil {
		return ManagementClusterInfo{}, err
	}
	args = append(args, "--unseal-key-file", unsealKey)
	simName := name + "-hypershift-sim"
	if err := r.startService(ctx, mgmtcluster.ProcSpec{
		Name: simName, Path: filepath.Join(r.binDir, "hypershift-sim"), Args: args, LogDir: r.logDir,
	}, mgmtcluster.HTTPReady(nil, url127(ports[1])+"/readyz")); err != nil {
		return ManagementClusterInfo{}, err
	}
	return ManagementClusterInfo{
		Name: name, Kubeconfig: mc.Kubeconfig, Server: mc.Host,
		SimMetricsURL: url127(ports[0]) + "/metrics", AgentHealthURL: agent.HealthURL, AgentMQTTClientID: mqOpts.ClientID(name, agent.ClientID),
		ConsumerName: name, ProvisionShard: name, NamespacePrefix: "ocm-" + r.cfg.EnvName + "-", AdminKubeconfig: adminKubeconfig,
	}, nil
}

func (r *Region) startClusterService(ctx context.Context, ms *mgmtcluster.MaestroServer) error {
	db, err := r.Info.Postgres.Role("cluster-service")
	if err != nil {
		return err
	}
	ports, err := mgmtcluster.FreePorts(2)
	if err != nil {
		return err
	}
	grpcAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	secretArgs, err := r.clusterServiceSecretArgs()
	if err != nil {
		return err
	}
	err = r.startService(ctx, mgmtcluster.ProcSpec{
		Name: "cluster-service", Path: r.servicePath(ServiceClusterService), LogDir: r.logDir, Env: pgEnv(db),
		Args: append(append(r.clusterServiceServerArgs(), secretArgs...),
			"--listen", grpcAddr,
			"--metrics-listen", "127.0.0.1:"+strconv.Itoa(ports[1]), "--pprof-token-file", r.Info.PprofTokenFile,
			"--db-dsn", db.DSN,
			"--maestro-grpc", ms.GRPCAddr,
			"--maestro-rest", ms.RESTURL,
			// Maestro's gRPC source API admits and authorizes Cluster Service by this
			// certificate; the same files verify Maestro's REST and gRPC servers.
			"--maestro-ca", r.pki.CAFile,
			"--maestro-cert", r.pki.MustFiles(pki.ClusterService).Cert,
			"--maestro-key", r.pki.MustFiles(pki.ClusterService).Key,
			"--env-name", r.cfg.EnvName,
			"--resync-period", r.cfg.ClusterServiceResync.String(),
			// A short heartbeat, so that a test sees a cluster's feedback go stale (the
			// Monitor's --feedback-stale-after here) within minutes.
			"--feedback-heartbeat", clusterServiceFeedbackHeartbeat.String(),
			// Azure's managed-identity data plane cannot run here, so ARM bodies carry no
			// identity client IDs; HyperShift's CRD still requires them, so every hosted
			// cluster of the local region gets this one development placeholder.
			"--dev-workload-identity-client-id", devIdentityClientID(),
		),
	}, mgmtcluster.TCPReady(grpcAddr))
	if err != nil {
		return err
	}
	r.Info.ClusterService = ServiceInfo{GRPC: grpcAddr, ClientTLS: r.clusterServiceClientTLS(pki.SRE), MetricsURL: url127(ports[1]) + "/metrics"}
	return r.registerShards(ctx, grpcAddr)
}

// registerShards makes every management cluster an active provision shard.
func (r *Region) registerShards(ctx context.Context, addr string) error {
	// Changing provision shards is an operator's right only (cluster-service/pkg/authz): the
	// launcher acts as the SRE identity.
	conn, err := DialClusterService(addr, r.clusterServiceClientTLS(pki.SRE))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := csv1.NewProvisionShardsClient(conn)
	for _, mc := range r.Info.ManagementClusters {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
			Name: mc.ProvisionShard, Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE,
			MaxClusters: int32(r.cfg.ShardCapacity), Labels: map[string]string{"region": r.cfg.Location},
		}})
		cancel()
		if err != nil {
			return fmt.Errorf("register provision shard %s: %w", mc.ProvisionShard, err)
		}
	}
	return nil
}

func (r *Region) startBackend(ctx context.Context) error {
	info, err := r.startBackendProcess(ctx, "backend", nil)
	if err != nil {
		return err
	}
	r.Info.Backend = info
	return nil
}

// StartBackend starts a backend process called name (its log is <name>.log) with the region's
// backend flags followed by extra, which override them ("--status-mode", "poll"). Started
// beside the region's own "backend" it is a second replica: one of them leads, the other waits
// for the lease. Kill, Restart and Process work on it by name.
func (r *Region) StartBackend(ctx context.Context, name string, extra ...string) (ServiceInfo, error) {
	r.mu.Lock()
	_, ok := r.services["backend"]
	r.mu.Unlock()
	if !ok {
		return ServiceInfo{}, fmt.Errorf("the region has no backend to copy the flags of")
	}
	return r.startBackendProcess(ctx, name, extra)
}

func (r *Region) startBackendProcess(ctx context.Context, name string, extra []string) (ServiceInfo, error) {
	db, err := r.Info.Postgres.Role("backend")
	if err != nil {
		return ServiceInfo{}, err
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		return ServiceInfo{}, err
	}
	metrics := url127(port)
	args := []string{
		"--db-dsn", db.DSN,
		"--cluster-service", r.Info.ClusterService.GRPC,
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(port), "--pprof-token-file", r.Info.PprofTokenFile,
		"--resync-period", r.cfg.BackendResync.String(),
		"--replica-id", name,
		// Async notifications refuse loopback addresses; the e2e suite's receivers listen on
		// 127.0.0.1, so the local region, and only it, allows that one address.
		"--notification-allowed-cidrs", "127.0.0.1/32",
	}
	args = append(args, r.clusterServiceClientArgs(pki.Backend)...)
	err = r.startService(ctx, mgmtcluster.ProcSpec{
		Name: name, Path: r.servicePath(ServiceBackend), LogDir: r.logDir, Env: pgEnv(db),
		Args: append(args, extra...),
	}, mgmtcluster.HTTPReady(nil, metrics+"/healthz"))
	if err != nil {
		return ServiceInfo{}, err
	}
	return ServiceInfo{MetricsURL: metrics + "/metrics"}, nil
}

func (r *Region) startFrontend(ctx context.Context) error {
	db, err := r.Info.Postgres.Role("frontend")
	if err != nil {
		return err
	}
	ports, err := mgmtcluster.FreePorts(2)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	url := "https://" + addr
	probe, err := r.probeClient(addr, pki.Frontend)
	if err != nil {
		return err
	}
	args := append(r.frontendServerArgs(), r.clusterServiceClientArgs(pki.Frontend)...)
	err = r.startService(ctx, mgmtcluster.ProcSpec{
		Name: "frontend", Path: r.servicePath(ServiceFrontend), LogDir: r.logDir, Env: pgEnv(db),
		Args: append(args,
			"--listen", "127.0.0.1:"+strconv.Itoa(ports[0]),
			"--metrics-listen", "127.0.0.1:"+strconv.Itoa(ports[1]), "--pprof-token-file", r.Info.PprofTokenFile,
			"--db-dsn", db.DSN,
			"--cluster-service", r.Info.ClusterService.GRPC,
			"--location", r.cfg.Location,
		),
	}, mgmtcluster.HTTPReady(probe, url+"/healthz"))
	if err != nil {
		return err
	}
	r.Info.Frontend = FrontendInfo{URL: url, ClientTLS: r.clientTLS(pki.ARM).For(pki.Frontend), MetricsURL: url127(ports[1]) + "/metrics"}
	return nil
}

// devIdentityClientID is a random UUID (v4) for the region's placeholder workload identity.
func devIdentityClientID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// hostedArgs are the hypershift-sim flags that run real hosted control planes for management
// cluster name: the pinned kube-apiserver and etcd, of which the sim runs one each per served
// HostedCluster, under the cluster's state directory. With Sim.HostedAPIServers negative there
// are none and the sim is told so.
func (r *Region) hostedArgs(name string, kube kubeBinaries) []string {
	if r.cfg.Sim.HostedAPIServers < 0 {
		return []string{"--hosted-apiservers", "0"}
	}
	args := []string{
		"--kube-apiserver", kube.apiserver,
		"--etcd", kube.etcd,
		"--hosted-dir", filepath.Join(r.stateDir, name, "hosted", "apiservers"),
		"--hosted-log-dir", r.logDir,
	}
	if n := r.cfg.Sim.HostedAPIServers; n > 0 {
		args = append(args, "--hosted-apiservers", strconv.Itoa(n))
	}
	return args
}
