// Package localregion brings up a whole OpenHCP region on one machine from real parts:
// PostgreSQL, mosquitto, the Maestro server, management clusters (etcd + kube-apiserver, a
// Maestro agent and hypershift-sim each), Cluster Service, the backend and the frontend. Every
// part is a plain process on free loopback ports, so two regions can run side by side.
package localregion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/atomicfile"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// Config describes the region to bring up. Zero values take the documented defaults.
type Config struct {
	// Root is the repository root (default: found from the working directory).
	Root string
	// StateDir holds throwaway state and logs (default <Root>/.run). Logs go to StateDir/logs
	// and are kept; everything else under StateDir/state is removed on Stop.
	StateDir string
	// RegionFile is where the endpoints are written as JSON (default StateDir/region.json).
	RegionFile string
	// Location is the ARM location the region serves (default "westus3").
	Location string
	// ManagementClusters is how many management clusters (provision shards) to start as
	// processes (default 2, or 0 when External lists any).
	ManagementClusters int
	// External are management clusters someone else installs (make deploy's Helm charts on the
	// real node); they come after the process ones.
	External []ExternalManagementCluster
	// ServiceCluster, when set, runs the Maestro server, Cluster Service, the backend, the
	// frontend and the admin API instead of Up's processes (make deploy's Helm charts on the
	// real node; servicecluster.go).
	ServiceCluster ExternalServiceCluster
	// ShardCapacity is each shard's max hosted clusters (default 100).
	ShardCapacity int
	// EnvName is Cluster Service's environment name, used in namespaces (default "dev").
	EnvName string
	// Sim tunes hypershift-sim on every management cluster.
	Sim SimConfig
	// BackendResync is the backend's resync period (default 10s).
	BackendResync time.Duration
	// MaestroDirectDB connects the Maestro server straight to PostgreSQL instead of through the
	// region's PgBouncer (pgserver.Bouncer): the baseline of the connection-pooling benchmark.
	MaestroDirectDB bool
	// MaestroServers is how many Maestro server instances the region can run (default 1; `make
	// run` starts 2). Each has its own broker identity (maestro-server, maestro-server-2, …) and
	// they share the agents' status events (an MQTT shared subscription, which the broker's
	// share guard grants to them alone); Cluster Service talks to the first.
	// Up starts them all; SetMaestroServers runs fewer or more of them (a benchmark's modes).
	// Not with ServiceCluster, whose chart has its own replicas value.
	MaestroServers int
	// AgentVerbosity is the Maestro agents' klog -v (default 2). At 5 an agent logs every
	// CloudEvent it sends, status payload included: what BenchmarkFeedbackModes reads to time
	// the agent's own share of the status path.
	AgentVerbosity int
	// ClusterServiceResync is Cluster Service's --resync-period: how often it reconciles every
	// cluster, each a read of its work from Maestro. Default 30s, config/config.yaml's dev-local
	// value; the production environments' 5m is what a scale benchmark should run (P5_CS_RESYNC),
	// since at 30 s the resync alone reconciles 33 clusters a second per 1,000.
	ClusterServiceResync time.Duration
	// AgentStatusSyncIntervals sets a management cluster's agent --status-sync-interval, by
	// name (mgmt-1, …); the others keep the agent's default (mgmtcluster.MaestroAgentOptions).
	// P5 runs shards at different intervals side by side to compare their steady-state cost.
	AgentStatusSyncIntervals map[string]time.Duration
	// PrometheusInterval is the region's Prometheus scrape and rule evaluation interval
	// (default DefaultPrometheusInterval, 5s; prometheus.go).
	PrometheusInterval time.Duration
	// ServiceBinaries runs a service from a binary other than the launcher's own build, by
	// service name (ServiceFrontend, ServiceBackend, ServiceClusterService): a previous
	// release's, as the rolling-upgrade test starts with (binaries.go). Such a binary gets only
	// the flags its --help lists: a flag added since its release is left out and named (Progress,
	// Region.FlagsLeftOut). RestartBinary swaps a binary in a running region.
	ServiceBinaries map[string]string
	// Progress receives one line per step (default: discarded).
	Progress io.Writer
}

// SimConfig is passed to every hypershift-sim.
type SimConfig struct {
	AvailableDelay time.Duration
	DeleteDelay    time.Duration
	// HostedAPIServers caps the HostedClusters per management cluster that get a real
	// kube-apiserver (hypershift-sim --hosted-apiservers): 0 keeps the sim's default (4),
	// a negative value disables them (status only, as scale tests want).
	HostedAPIServers int
}

// Info is what region.json holds: everything a person, test or tool needs to reach the region.
type Info struct {
	Location           string                  `json:"location"`
	Frontend           FrontendInfo            `json:"frontend"`
	ClusterService     ServiceInfo             `json:"clusterService"`
	Backend            ServiceInfo             `json:"backend"`
	Maestro            MaestroInfo             `json:"maestro"`
	Postgres           PostgresInfo            `json:"postgres"`
	MQTT               MQTTInfo                `json:"mqtt"`
	ManagementClusters []ManagementClusterInfo `json:"managementClusters"`
	// Admin is the SRE admin API (admin.go).
	Admin AdminInfo `json:"admin"`
	// Gateway is the break-glass gateway's replicas (gateway.go).
	Gateway GatewayInfo `json:"gateway"`
	// Monitor is the fleet Monitor's replicas (monitor.go).
	Monitor MonitorInfo `json:"monitor"`
	// Maintenance is the maintenance service (maintenance.go): /metrics and /healthz only.
	Maintenance ServiceInfo `json:"maintenance"`
	// RegionPKI is the launcher's rotation API, which only the maintenance service may call
	// (rotationapi.go); absent under make deploy.
	RegionPKI *RegionPKIInfo `json:"regionPKI,omitempty"`
	LogDir    string         `json:"logDir"`
	// Restarts counts, by process name, how often the launcher restarted a process that
	// crashed (supervise); absent until something crashes.
	Restarts map[string]int `json:"restarts,omitempty"`
	// Prometheus is the region's Prometheus (prometheus.go); absent when make deploy's
	// service cluster runs the services.
	Prometheus *PrometheusInfo `json:"prometheus,omitempty"`
	// PprofTokenFile holds the token our services' /debug/pprof/ answer to
	// (pprofmux.Client; docs/security.md).
	PprofTokenFile string `json:"pprofTokenFile"`
}

// FrontendInfo is the ARM API: HTTPS with mutual TLS. ClientTLS is ARM's identity (the only
// subject the frontend admits) and the region CA that verifies the frontend.
type FrontendInfo struct {
	URL string `json:"url"`
	ClientTLS
	MetricsURL string `json:"metrics"`
}

// ServiceInfo is one of our services. For Cluster Service, ClientTLS is the SRE identity (what
// an operator's tool uses; it may read everything and manage provision shards, see
// cluster-service/pkg/authz); the backend serves no API.
type ServiceInfo struct {
	GRPC string `json:"grpc,omitempty"`
	ClientTLS
	MetricsURL string `json:"metrics"`
}

// MaestroInfo is the Maestro server: REST over HTTPS through the gate (a client certificate
// required; maestroRESTClients) and the gRPC source API with mutual TLS. ClientTLS is Cluster
// Service's identity, the only one Maestro authorizes as source "cluster-service" and the only
// one its REST gate lets write.
type MaestroInfo struct {
	REST string `json:"rest"`
	GRPC string `json:"grpc"`
	ClientTLS
	MetricsURL string `json:"metrics"`
}

// PostgresInfo says how each service reaches PostgreSQL: over the Unix socket in Socket, or
// (a service cluster's pods, make deploy) over TLS at Addr verified with CAFile; as its own
// login role, with the password in a libpq password file (PGPASSFILE=PassFile). The superuser
// has no TCP login; only the launcher uses it, over the Unix socket.
type PostgresInfo struct {
	// Addr is the TCP address, empty when the server has none (Socket).
	Addr string `json:"addr,omitempty"`
	// Socket is the directory of the server's Unix socket when it has no TCP port.
	Socket string             `json:"socket,omitempty"`
	CAFile string             `json:"caFile"`
	Roles  []PostgresRoleInfo `json:"roles"`
	// BouncerAddr is the PgBouncer in front of the server (TLS and SCRAM as the server; the
	// same CA), for the logins marked Pooled; empty when none runs, or when it has no TCP port
	// (BouncerSocket).
	BouncerAddr string `json:"bouncerAddr,omitempty"`
	// BouncerSocket is the directory of the bouncer's Unix socket when it has no TCP port.
	BouncerSocket string `json:"bouncerSocket,omitempty"`
	// BouncerLog is its log file.
	BouncerLog string `json:"bouncerLog,omitempty"`
}

// PostgresRoleInfo is one service's database login.
type PostgresRoleInfo struct {
	Service  string `json:"service"`
	Role     string `json:"role"`
	Database string `json:"database"`
	// DSN has no password: set PGPASSFILE to PassFile (0600) to connect.
	DSN      string `json:"dsn"`
	PassFile string `json:"passFile"`
	// Pooled says DSN and PassFile lead through the bouncer (PostgresInfo.BouncerAddr).
	Pooled bool `json:"pooled,omitempty"`
}

// Role returns the database login of a service ("frontend", "backend", "cluster-service",
// "maestro").
func (p PostgresInfo) Role(service string) (PostgresRoleInfo, error) {
	for _, r := range p.Roles {
		if r.Service == service {
			return r, nil
		}
	}
	return PostgresRoleInfo{}, fmt.Errorf("no database login for service %q", service)
}

// MQTTInfo is the broker: TLS verified with CAFile, and every client must present its own
// certificate from the region PKI (the maestro-server identity, or a maestro-agent one); its CN
// is its MQTT username and client ID, and MaestroACL confines it to its topics.
type MQTTInfo struct {
	URL    string `json:"url"`
	CAFile string `json:"caFile"`
}

type ManagementClusterInfo struct {
	Name           string `json:"name"`
	Kubeconfig     string `json:"kubeconfig"`
	Server         string `json:"server"`
	SimMetricsURL  string `json:"hypershiftSimMetrics"`
	AgentHealthURL string `json:"maestroAgentHealth"`
	// AgentMQTTClientID is the Maestro agent's MQTT client ID as the broker knows it (its
	// certificate's CN, the consumer name).
	AgentMQTTClientID string `json:"maestroAgentMQTTClientId"`
	ConsumerName      string `json:"maestroConsumer"`
	ProvisionShard    string `json:"provisionShard"`
	NamespacePrefix   string `json:"namespacePrefix"`
	// AdminKubeconfig acts as the admin API's read-only user on this cluster (adminreader.go).
	AdminKubeconfig string `json:"adminKubeconfig"`
}

// Region is a running local region.
type Region struct {
	Info Info
	cfg  Config
	// attached: the region is someone else's (Attach); this Region owns nothing of it.
	attached bool

	logDir   string
	stateDir string
	binDir   string
	// pki is the region's dev PKI (<StateDir>/state/pki): every identity's certificate and key.
	pki *pki.Region

	mu       sync.Mutex
	infoMu   sync.Mutex
	services map[string]*service
	stoppers []func()
	crashes  chan Crash
	watchdog *mgmtcluster.StuckDeleteWatchdog
	sweeper  *mgmtcluster.OrphanedAppliedWorkSweeper
	// maestro is the Maestro server process (nil when a ServiceCluster runs it).
	maestro *mgmtcluster.MaestroServer
	// extraMaestro are the Maestro server instances beyond the first (Config.MaestroServers),
	// running or not (SetMaestroServers).
	extraMaestro []*mgmtcluster.MaestroServer
	// maestroDSN are the Maestro server's two ways to its database: straight to PostgreSQL,
	// and through the bouncer (empty when none runs). RestartMaestroServer switches.
	maestroDSN struct{ direct, pooled string }
	// secrets are the generated secrets (see Secrets).
	secrets []string
	// dbPasswords are the database passwords by service, for those (Maestro) that want the
	// password itself in a file of their own.
	dbPasswords map[string]string
	// mgmt are the management clusters the region started as processes, by name.
	mgmt map[string]*mgmtcluster.ManagementCluster
	// holders are the processes we did not write that hold the region's certificates and read
	// them only when told (rotate.go).
	holders certHolders
	// postgres is the region's PostgreSQL, whatever its layout (holders.postgres only when it
	// holds a TLS certificate): the chaos hooks kill and restart it.
	postgres *pgserver.Server
	// bouncer is the region's PgBouncer (nil when none runs), supervised (superviseRestartable).
	bouncer *pgserver.Bouncer
	// rotateMu runs one rotation at a time: the launcher's timer's or the rotation API's.
	rotateMu sync.Mutex
}

// StuckDeleteKicks is how many times the region's StuckDeleteWatchdog made an agent reconnect
// to recover a delete the pinned Maestro lost.
func (r *Region) StuckDeleteKicks() int {
	return r.watchdog.Kicks()
}

// OrphanedAppliedWorksSwept is how many AppliedManifestWorks the region's
// OrphanedAppliedWorkSweeper deleted because their resource bundle was gone (the pinned agent
// reported their work deleted without removing what it had applied).
func (r *Region) OrphanedAppliedWorksSwept() int {
	return r.sweeper.Swept()
}

// managementClusterNames are the names of the management clusters the region started as
// processes, in order.
func (r *Region) managementClusterNames() []string {
	var names []string
	for _, mc := range r.Info.ManagementClusters {
		if _, ok := r.mgmt[mc.Name]; ok {
			names = append(names, mc.Name)
		}
	}
	return names
}

// StopManagementAPIServer stops the kube-apiserver of a management cluster the region started
// (its etcd, agent and hypershift-sim keep running), as an outage of that shard's control plane:
// tests make the shard-unreachable alert fire with it. RestartManagementAPIServer undoes it.
func (r *Region) StopManagementAPIServer(name string) error {
	mc, ok := r.mgmt[name]
	if !ok {
		return fmt.Errorf("stop the kube-apiserver of %s: no management cluster of that name runs as a process here", name)
	}
	mc.StopAPIServer()
	return nil
}

// RestartManagementAPIServer starts a management cluster's kube-apiserver again on the same
// port with the same certificates, and waits until it is ready.
func (r *Region) RestartManagementAPIServer(ctx context.Context, name string) error {
	mc, ok := r.mgmt[name]
	if !ok {
		return fmt.Errorf("restart the kube-apiserver of %s: no management cluster of that name runs as a process here", name)
	}
	p, err := mc.RestartAPIServer(ctx)
	if err != nil {
		return err
	}
	r.supervise(p)
	return nil
}

// Crash reports a child that exited without being asked to, and when the launcher starts it
// again.
type Crash struct {
	Name    string
	Err     error
	LogTail string
	// Restarts counts this process's restarts, the coming one included; After is the backoff
	// before it.
	Restarts int
	After    time.Duration
}

// service is one of our own processes, kept so tests can kill and restart it.
type service struct {
	spec  mgmtcluster.ProcSpec
	proc  *mgmtcluster.Process
	ready func(context.Context) error
	// base is the command line before RestartWith's extra flags; nil if none were added.
	base []string
	// leftOut are the flags of the command line its binary did not know (compatibleArgs).
	leftOut []string
}

func (c *Config) defaults() error {
	if c.Root == "" {
		root, err := mgmtcluster.RepoRoot()
		if err != nil {
			return err
		}
		c.Root = root
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join(c.Root, ".run")
	}
	if c.RegionFile == "" {
		c.RegionFile = filepath.Join(c.StateDir, "region.json")
	}
	if c.Location == "" {
		c.Location = "westus3"
	}
	if c.ManagementClusters < 0 || c.ManagementClusters == 0 && len(c.External) == 0 {
		c.ManagementClusters = 2
	}
	if c.ShardCapacity <= 0 {
		c.ShardCapacity = 100
	}
	if c.EnvName == "" {
		c.EnvName = "dev"
	}
	if c.BackendResync <= 0 {
		c.BackendResync = 10 * time.Second
	}
	if c.ClusterServiceResync <= 0 {
		c.ClusterServiceResync = 30 * time.Second
	}
	if c.PrometheusInterval <= 0 {
		c.PrometheusInterval = DefaultPrometheusInterval
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return nil
}

func (r *Region) step(format string, args ...any) {
	fmt.Fprintf(r.cfg.Progress, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// Crashes delivers a report for each child that exits unexpectedly.
func (r *Region) Crashes() <-chan Crash { return r.crashes }

// ServeUntilDone is the foreground loop of the launchers (make run, make deploy): it reports
// every crash on stderr with its last log lines until ctx is done (Ctrl-C), then says what it
// stops, calls stop, and says where the logs are kept.
func ServeUntilDone(ctx context.Context, crashes <-chan Crash, stopping string, stop func(), logDir string) {
	for {
		select {
		case <-ctx.Done():
			fmt.Printf("\nstopping %s…\n", stopping)
			stop()
			fmt.Println("stopped; logs kept in", logDir)
			return
		case c := <-crashes:
			fmt.Fprintf(os.Stderr, "\n!! %s exited unexpectedly (%v); restart %d in %s; last log lines:\n%s\n", c.Name, c.Err, c.Restarts, c.After.Round(100*time.Millisecond), c.LogTail)
		}
	}
}

func (r *Region) onStop(f func()) {
	r.mu.Lock()
	r.stoppers = append(r.stoppers, f)
	r.mu.Unlock()
}

// supervise restarts p whenever it exits without being stopped on purpose, as a kubelet
// restarts a crashed container (mgmtcluster.DefaultRestartPolicy: backoff from 1s to 30s), and
// reports each crash with its last log lines, counted in region.json's restarts.
func (r *Region) supervise(p *mgmtcluster.Process) {
	p.Supervise(mgmtcluster.DefaultRestartPolicy(r.reportCrash))
}

// reportCrash counts a crash in region.json's restarts and hands it to Crashes (ServeUntilDone
// prints it): every supervised child's crash goes through it, PgBouncer's too.
func (r *Region) reportCrash(c mgmtcluster.ProcessCrash) {
	r.mu.Lock()
	if r.Info.Restarts == nil {
		r.Info.Restarts = map[string]int{}
	}
	r.Info.Restarts[c.Name]++
	r.mu.Unlock()
	if err := r.writeInfo(); err != nil {
		fmt.Fprintf(os.Stderr, "!! record the restart of %s in region.json: %v\n", c.Name, err)
	}
	select {
	case r.crashes <- Crash{Name: c.Name, Err: c.Err, LogTail: c.LogTail, Restarts: c.Restarts, After: c.After}:
	default:
	}
}

// Stop ends every process the region started and removes the throwaway state; logs are kept.
// Our own services stop first (together), so none of them sees its database or broker vanish;
// then the infrastructure, newest first.
func (r *Region) Stop() {
	if r.attached {
		return // its launcher stops it
	}
	r.stopServices()
	r.mu.Lock()
	stoppers := r.stoppers
	r.stoppers = nil
	r.mu.Unlock()
	for i := len(stoppers) - 1; i >= 0; i-- {
		stoppers[i]()
	}
	_ = os.RemoveAll(r.stateDir)
	_ = os.Remove(r.cfg.RegionFile)
}

// buildBinaries builds our own commands into binDir. With a warm GOCACHE this takes seconds.
func (r *Region) buildBinaries(ctx context.Context) error {
	pkgs := []string{
		"./frontend/cmd/frontend",
		"./backend/cmd/backend",
		"./backend/cmd/monitor",
		"./backend/cmd/maintenance",
		"./cluster-service/cmd/cluster-service",
		"./dev-infrastructure/mgmtcluster/cmd/hypershift-sim",
		"./admin/cmd/admin",
		"./admin/cmd/gateway",
	}
	args := append([]string{"build", "-o", r.binDir + "/"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.cfg.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build our services: %w\n%s", err, out)
	}
	return nil
}

// startService starts one of our own processes and waits for ready.
func (r *Region) startService(ctx context.Context, spec mgmtcluster.ProcSpec, ready func(context.Context) error) error {
	full := spec.Args
	var leftOut []string
	if filepath.Dir(spec.Path) != r.binDir {
		kept, left, err := compatibleArgs(ctx, spec.Path, spec.Args)
		if err != nil {
			return fmt.Errorf("start %s: %w", spec.Name, err)
		}
		if len(left) > 0 {
			r.step("%s: %s does not know %s (added since its release); it starts without them", spec.Name, spec.Path, strings.Join(left, ", "))
		}
		spec.Args, leftOut = kept, left
	}
	p, err := mgmtcluster.StartProcess(ctx, spec)
	if err != nil {
		return err
	}
	if err := p.WaitFor(ctx, 60*time.Second, "ready", ready); err != nil {
		p.Stop(5 * time.Second)
		return err
	}
	r.mu.Lock()
	// The whole command line is kept: a restart checks it again against the binary it runs.
	spec.Args = full
	r.services[spec.Name] = &service{spec: spec, proc: p, ready: ready, leftOut: leftOut}
	r.mu.Unlock()
	r.supervise(p)
	return nil
}

func (r *Region) stopServices() {
	r.mu.Lock()
	procs := make([]*mgmtcluster.Process, 0, len(r.services))
	for _, s := range r.services {
		procs = append(procs, s.proc)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Stop(10 * time.Second)
		}()
	}
	wg.Wait()
}

// Process returns the running process of one of our services ("frontend", "backend",
// "cluster-service").
func (r *Region) Process(name string) (*mgmtcluster.Process, error) {
	if err := r.errIfAttached("the process of " + name); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.services[name]
	if !ok {
		return nil, fmt.Errorf("no service %q in this region", name)
	}
	return s.proc, nil
}

// Kill ends a service with SIGKILL, as a crash would.
func (r *Region) Kill(name string) error {
	p, err := r.Process(name)
	if err != nil {
		return err
	}
	p.Kill()
	return nil
}

// Restart starts a stopped or killed service again with the same command line and waits until
// it is ready.
func (r *Region) Restart(ctx context.Context, name string) error {
	if err := r.errIfAttached("restart " + name); err != nil {
		return err
	}
	r.mu.Lock()
	s, ok := r.services[name]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("no service %q in this region", name)
	}
	if exited, _ := s.proc.Exited(); !exited {
		s.proc.Stop(10 * time.Second)
	}
	return r.startService(ctx, s.spec, s.ready)
}

// RestartWith restarts a service with its command line plus extra flags (the later flag wins),
// e.g. a benchmark's baseline mode, and waits until it is ready. The extra flags last until the
// next RestartWith: RestartWith(ctx, name) goes back to the command line the region started.
func (r *Region) RestartWith(ctx context.Context, name string, extra ...string) error {
	if err := r.errIfAttached("restart " + name); err != nil {
		return err
	}
	r.mu.Lock()
	s, ok := r.services[name]
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("no service %q in this region", name)
	}
	if exited, _ := s.proc.Exited(); !exited {
		s.proc.Stop(10 * time.Second)
	}
	spec := s.spec
	if s.base != nil {
		spec.Args = s.base
	}
	base := spec.Args
	spec.Args = append(append([]string(nil), base...), extra...)
	if err := r.startService(ctx, spec, s.ready); err != nil {
		return fmt.Errorf("restart %s with %v: %w", name, extra, err)
	}
	r.mu.Lock()
	r.services[name].base = base
	r.mu.Unlock()
	return nil
}

// writeInfo writes region.json from Info; the caller must not hold r.mu.
func (r *Region) writeInfo() error {
	r.infoMu.Lock() // one writer of the file at a time (crashes come concurrently)
	defer r.infoMu.Unlock()
	r.mu.Lock()
	b, err := json.MarshalIndent(r.Info, "", "  ")
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.cfg.RegionFile), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(r.cfg.RegionFile, append(b, '\n'), 0o644)
}

func url127(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// startPostgres starts the region's PostgreSQL, locked down (SCRAM passwords, the superuser
// only over the Unix socket as the launcher), with one database per service owned by that
// service's login role. When the region runs its services itself it has no TCP port at all:
// every service reaches it (and PgBouncer) over a Unix socket in a directory only the
// services' user and PostgreSQL's may enter, so no other local user can open a connection (an
// unprivileged flood of silent connections used to fill PostgreSQL's backends; it has no
// limit per source). A service cluster's pods (make deploy) reach it from the node's network,
// so there it listens on 127.0.0.1 with TLS only.
func (r *Region) startPostgres(ctx context.Context) (*pgserver.Server, error) {
	dir := filepath.Join(r.stateDir, "postgres")
	o := pgserver.Options{Dir: dir, LogPath: filepath.Join(r.logDir, "postgres.log"), SocketOnly: r.cfg.ServiceCluster == nil}
	if !o.SocketOnly {
		f := r.pki.MustFiles(pki.Postgres)
		o.TLS = &pgserver.TLSFiles{CertFile: f.Cert, KeyFile: f.Key}
	}
	pg, err := pgserver.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	r.onStop(pg.Stop)
	r.postgres = pg
	r.Info.Postgres = PostgresInfo{CAFile: r.pki.CAFile}
	if pg.SocketOnly {
		r.Info.Postgres.Socket = pg.SocketDir()
	} else {
		r.holders.postgres = pg
		r.Info.Postgres.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(pg.Port))
	}
	// The frontend and the backend share the document store: each logs in as itself and acts
	// as the store's owner role, so either may run the migrations.
	if err := pg.CreateGroupRole(ctx, "resourceprovider"); err != nil {
		return nil, err
	}
	for _, l := range []struct{ service, role, db, group string }{
		{"frontend", "frontend", "resourceprovider", "resourceprovider"},
		{"backend", "backend", "resourceprovider", "resourceprovider"},
		{"cluster-service", "clusterservice", "clusterservice", ""},
		{"maestro", "maestro", "maestro", ""},
	} {
		password, err := pgserver.NewPassword()
		if err != nil {
			return nil, err
		}
		r.secrets = append(r.secrets, password)
		r.dbPasswords[l.service] = password
		if err := pg.CreateLoginRole(ctx, l.role, password, l.group); err != nil {
			return nil, err
		}
		owner := l.role
		if l.group != "" {
			owner = l.group
		}
		if err := pg.CreateOwnedDatabase(ctx, l.db, owner); err != nil {
			return nil, err
		}
		passFile := filepath.Join(r.secretsDir(), l.role+".pgpass")
		if err := pg.WritePassFile(passFile, l.role, l.db, password); err != nil {
			return nil, err
		}
		r.Info.Postgres.Roles = append(r.Info.Postgres.Roles, PostgresRoleInfo{
			Service: l.service, Role: l.role, Database: l.db, DSN: pg.RoleDSN(l.role, l.db, r.pki.CAFile), PassFile: passFile})
	}
	maestro, err := r.Info.Postgres.Role("maestro")
	if err != nil {
		return nil, err
	}
	r.maestroDSN.direct = maestro.DSN
	if !r.cfg.MaestroDirectDB {
		if err := r.startBouncer(ctx, pg, "maestro"); err != nil {
			return nil, err
		}
		maestro, _ = r.Info.Postgres.Role("maestro")
		r.maestroDSN.pooled = maestro.DSN
	}
	return pg, nil
}

// RestartMaestroServer restarts the Maestro server (the first instance, the one Cluster Service
// talks to) connected to PostgreSQL through the bouncer (pooled) or straight (not), and says so
// in region.json: the connection-pooling benchmark compares the two in one region. The password
// file serves both ways.
func (r *Region) RestartMaestroServer(ctx context.Context, pooled bool) error {
	if r.maestro == nil {
		return errors.New("restart the Maestro server: it is not a process of this region (a service cluster runs it)")
	}
	dsn := r.maestroDSN.direct
	if pooled {
		if dsn = r.maestroDSN.pooled; dsn == "" {
			return errors.New("restart the Maestro server through the bouncer: this region runs none (Config.MaestroDirectDB)")
		}
	}
	r.mu.Lock()
	password := r.dbPasswords["maestro"]
	r.mu.Unlock()
	if err := r.maestro.RestartWithDB(ctx, dsn, password); err != nil {
		return fmt.Errorf("restart the Maestro server (pooled %v): %w", pooled, err)
	}
	r.supervise(r.maestro.Process())
	r.mu.Lock()
	for i, role := range r.Info.Postgres.Roles {
		if role.Service == "maestro" {
			r.Info.Postgres.Roles[i].DSN, r.Info.Postgres.Roles[i].Pooled = dsn, pooled
		}
	}
	r.mu.Unlock()
	return r.writeInfo()
}

// maestroServerNames are the names, broker identities and instance IDs of a region's n Maestro
// server instances: pki.MaestroServer for the first, pki.MaestroServer-<i> for the i-th after it.
func maestroServerNames(n int) []string {
	names := []string{pki.MaestroServer}
	for i := 2; i <= n; i++ {
		names = append(names, fmt.Sprintf("%s-%d", pki.MaestroServer, i))
	}
	return names
}

// MaestroServersProvisioned is how many Maestro server instances the region has (Up starts them
// all; SetMaestroServers may run fewer).
func (r *Region) MaestroServersProvisioned() int { return 1 + len(r.extraMaestro) }

// MaestroMetricsURLs are the /metrics URLs of the Maestro server instances running now, the
// first instance's (Info.Maestro.MetricsURL) first.
func (r *Region) MaestroMetricsURLs() []string {
	urls := []string{r.Info.Maestro.MetricsURL}
	for _, ms := range r.extraMaestro {
		if exited, _ := ms.Process().Exited(); !exited {
			urls = append(urls, ms.MetricsURL)
		}
	}
	return urls
}

// SetMaestroServers runs n of the region's Maestro server instances (1 to
// Config.MaestroServers), starting or stopping the instances beyond the first: a benchmark
// compares one status reader with several in one region. The first always runs.
func (r *Region) SetMaestroServers(ctx context.Context, n int) error {
	if n < 1 || n > 1+len(r.extraMaestro) {
		return fmt.Errorf("run %d Maestro servers: this region has 1 to %d (Config.MaestroServers)", n, 1+len(r.extraMaestro))
	}
	for i, ms := range r.extraMaestro {
		exited, _ := ms.Process().Exited()
		running := !exited
		switch {
		case i+2 <= n && !running:
			if err := ms.Restart(ctx); err != nil {
				return fmt.Errorf("start Maestro server %d: %w", i+2, err)
			}
			r.supervise(ms.Process())
		case i+2 > n && running:
			ms.Stop()
		}
	}
	return nil
}

// startBouncer puts PgBouncer (pgserver.Bouncer) between PostgreSQL and the services named:
// their DSNs and password files then lead through it. The Maestro server is the one that needs
// it: it keeps only two idle connections and opens a new PostgreSQL session for every burst
// above that (docs/perf-data/run-log-2026-11.md, "Where the machine's CPU goes at 100 clusters").
func (r *Region) startBouncer(ctx context.Context, pg *pgserver.Server, services ...string) error {
	var logins []pgserver.BouncerLogin
	for _, svc := range services {
		role, err := r.Info.Postgres.Role(svc)
		if err != nil {
			return err
		}
		logins = append(logins, pgserver.BouncerLogin{Role: role.Role, Database: role.Database})
	}
	r.step("starting PgBouncer for %s", strings.Join(services, ", "))
	b, err := pg.StartBouncer(ctx, pgserver.BouncerOptions{Dir: filepath.Join(r.stateDir, "pgbouncer"),
		LogPath: filepath.Join(r.logDir, "pgbouncer.log"), CAFile: r.pki.CAFile, Logins: logins})
	if err != nil {
		return err
	}
	r.onStop(b.Stop)
	r.bouncer = b
	// Both Maestro servers reach their database only through it: a crashed bouncer is
	// restarted as every other child is (bouncersupervise.go).
	superviseRestartable(BouncerComponent, b, mgmtcluster.DefaultRestartPolicy(r.reportCrash))
	if pg.SocketOnly {
		r.Info.Postgres.BouncerSocket = b.SocketDir()
	} else {
		r.holders.bouncer = b
		r.Info.Postgres.BouncerAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	}
	r.Info.Postgres.BouncerLog = b.LogPath
	for i, role := range r.Info.Postgres.Roles {
		if !slices.Contains(services, role.Service) {
			continue
		}
		if err := b.WritePassFile(role.PassFile, role.Role, role.Database, r.dbPasswords[role.Service]); err != nil {
			return err
		}
		r.Info.Postgres.Roles[i].DSN = b.RoleDSN(role.Role, role.Database, r.pki.CAFile)
		r.Info.Postgres.Roles[i].Pooled = true
	}
	return nil
}

// secretsDir holds the region's generated secrets (database password files, the Cluster
// Service key-encryption keys), each 0600 in a 0700 directory.
func (r *Region) secretsDir() string { return filepath.Join(r.stateDir, "secrets") }

// Secrets returns every secret the region generated (database passwords, Cluster Service's
// key-encryption key, the pull secret's credentials), for tests that prove none of them leaks
// into a log or a command line; the private keys are the PKI's *.key files (PKI().Dir).
func (r *Region) Secrets() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.secrets...)
}

// pgEnv is the environment that gives a service its database password.
func pgEnv(l PostgresRoleInfo) []string { return []string{"PGPASSFILE=" + l.PassFile} }

// PKI is the region's dev PKI, for tests that rotate a certificate or need an identity's files;
// nil for an attached region (Attach).
func (r *Region) PKI() *pki.Region { return r.pki }

// RegionFile is the path of region.json.
func (r *Region) RegionFile() string { return r.cfg.RegionFile }
