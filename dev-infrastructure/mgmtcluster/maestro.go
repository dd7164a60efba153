package mgmtcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// The Maestro topic layout (the same as upstream's charts). The server subscribes to every
// consumer's agentevents; an agent uses only its own pair of topics.
//
// Several server instances take the agents' status through an MQTT shared subscription
// (MaestroServerOptions.SharedStatus), as the maestro-server chart does: the broker hands each
// event to one of them, so they read the agents' status in parallel; one instance reads every
// event, one at a time (docs/perf-data/run-log-2026-11.md, "Where Available → Maestro stream goes").
const (
	maestroServerSourceEvents      = "sources/maestro/consumers/+/sourceevents"
	maestroServerAgentEvents       = "sources/maestro/consumers/+/agentevents"
	maestroServerSharedAgentEvents = "$share/statussubscribers/" + maestroServerAgentEvents
)

// MaestroMQTTTLS is an MQTT client's TLS material (the broker's CA and the client's own
// certificate). Nil means plaintext, acceptable on loopback only.
type MaestroMQTTTLS struct {
	CAFile, CertFile, KeyFile string
}

// MaestroServerOptions configures one Maestro server instance.
type MaestroServerOptions struct {
	// Binary is the maestro executable built by hack/tool.sh.
	Binary string
	// DSN is the server's PostgreSQL database, postgres://user[:password]@host:port/db, with
	// optional sslmode and sslrootcert parameters.
	DSN string
	// DBPassword, when set, is the database password (it then need not be in DSN). It reaches
	// maestro only through a 0600 file.
	DBPassword string
	// MQTTAddr is the broker's host:port.
	MQTTAddr string
	// MQTTTLS, when set, makes the server's broker connection TLS with a client certificate.
	MQTTTLS *MaestroMQTTTLS
	// ClientID is the server's MQTT client ID (and its instance ID in the database); default
	// "maestro-server". With per-client certificates it must match the certificate's CN.
	ClientID string
	// Name names the process and its log (<LogDir>/<Name>.log); default "maestro-server". A
	// second instance of the same region needs a name of its own.
	Name string
	// SharedStatus subscribes to the agents' status through the shared subscription, for
	// several instances. Only for a broker that refuses agents that subscription: mosquitto
	// alone grants it to any client and drops the events it then hands to one that may not
	// read them; SecureBrokerOptions' share guard refuses it to all but the server instances
	// (docs/security.md).
	SharedStatus bool
	// TLS, when set, serves the REST API over HTTPS and the gRPC source API with Maestro's own
	// mutual-TLS authentication and its SubjectAccessReview authorizer (see maestroauthz.go).
	TLS *MaestroServerTLS
	// Dir holds the generated config and credential files.
	Dir string
	// LogDir receives maestro-migration.log and maestro-server.log.
	LogDir string
	// Verbosity is klog's -v; default 2.
	Verbosity int
	// GRPCMaxConns caps the host's forward of the gRPC port (with TLS; 0: that of
	// maestrogate.InboundForwardLimits). Tests lower it to reach the cap cheaply.
	GRPCMaxConns int
}

// MaestroServerTLS is the server side of Maestro's REST and gRPC TLS.
type MaestroServerTLS struct {
	// CertFile and KeyFile are the server's certificate, for REST and gRPC alike. Maestro
	// reads them once at start: a renewal needs a restart (Restart).
	CertFile, KeyFile string
	// CAFile verifies the server's certificate, for the launcher's own calls.
	CAFile string
	// ClientCAFile is what gRPC client certificates must chain to (--grpc-client-ca-file).
	ClientCAFile string
	// AuthorizerKubeconfig is the apiserver that authorizes each source's pub/sub
	// (--grpc-authorizer-config; MaestroAuthorizer.Kubeconfig).
	AuthorizerKubeconfig string
	// RESTClients are the identities (certificate CNs, chaining to ClientCAFile) that may call
	// the REST API, and what each may do; every other caller is refused (maestroisolation.go).
	RESTClients maestrogate.Rules
	// ClientCertFile and ClientKeyFile are the launcher's own REST identity (for RESTClient:
	// registering consumers, the stuck-delete watchdog); it must be a read-write RESTClient.
	ClientCertFile, ClientKeyFile string
}

// MaestroServer is a running Maestro server.
type MaestroServer struct {
	// RESTURL is the base URL of the REST API (consumers, resource bundles), without a path:
	// https:// with TLS.
	RESTURL string
	// RESTClient reaches RESTURL (it trusts MaestroServerTLS.CAFile); http.DefaultClient
	// without TLS.
	RESTClient *http.Client
	// GRPCAddr is host:port of the gRPC source server that Cluster Service publishes to.
	GRPCAddr string
	// GRPCForward is the host's forward of GRPCAddr into the server's namespace (with TLS; nil
	// without).
	GRPCForward *maestrogate.Forwarder
	MetricsURL  string
	HealthURL   string
	// Args is the server's command line, for logs and docs.
	Args []string
	// Proc is the running process (a new one after Restart); Process reads it safely while a
	// Restart may run.
	Proc *Process

	spec      ProcSpec
	isolation *maestroIsolation // with TLS: the server's namespace and the gate
	mu        sync.Mutex
}

// StartMaestroServer migrates the database and starts `maestro server` with the MQTT broker,
// the REST API, the gRPC source server, health and metrics each on a free loopback port. It
// returns once /healthcheck reports the instance ready and the gRPC port accepts connections.
func StartMaestroServer(ctx context.Context, o MaestroServerOptions) (*MaestroServer, error) {
	if o.Binary == "" || o.DSN == "" || o.MQTTAddr == "" || o.Dir == "" {
		return nil, errors.New("maestro server: Binary, DSN, MQTTAddr and Dir are required")
	}
	if o.ClientID == "" {
		o.ClientID = "maestro-server"
	}
	if o.Name == "" {
		o.Name = "maestro-server"
	}
	if o.Verbosity == 0 {
		o.Verbosity = 2
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create maestro dir: %w", err)
	}
	dbFlags, err := writeMaestroDBFiles(filepath.Join(o.Dir, "db"), o.DSN, o.DBPassword)
	if err != nil {
		return nil, err
	}
	mqttConfig := filepath.Join(o.Dir, "mqtt.json")
	agentEvents := maestroServerAgentEvents
	if o.SharedStatus {
		agentEvents = maestroServerSharedAgentEvents
	}
	if err := writeMaestroMQTTConfig(mqttConfig, o.MQTTAddr, o.MQTTTLS, maestroServerSourceEvents, agentEvents); err != nil {
		return nil, err
	}

	// maestro reads relative credential paths against its source tree; every path here is
	// absolute, and migration is idempotent, so it runs on every start.
	migrate, err := StartProcess(ctx, ProcSpec{Name: "maestro-migration", Path: o.Binary,
		Args: append([]string{"migration"}, dbFlags...), Dir: o.Dir, LogDir: o.LogDir})
	if err != nil {
		return nil, err
	}
	select {
	case <-migrate.Done():
	case <-ctx.Done():
		migrate.Kill()
		return nil, ctx.Err()
	}
	if _, err := migrate.Exited(); err != nil {
		return nil, fmt.Errorf("maestro migration: %w; log tail:\n%s", err, migrate.LogTail(3000))
	}

	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	httpPort, grpcPort, metricsPort, healthPort := ports[0], ports[1], ports[2], ports[3]
	args := append([]string{"server"}, dbFlags...)
	scheme, restClient := "http", http.DefaultClient
	if t := o.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" || t.ClientCAFile == "" || t.AuthorizerKubeconfig == "" ||
			len(t.RESTClients) == 0 || t.ClientCertFile == "" || t.ClientKeyFile == "" {
			return nil, errors.New("maestro server TLS: CertFile, KeyFile, CAFile, ClientCAFile, AuthorizerKubeconfig, RESTClients, ClientCertFile and ClientKeyFile are required")
		}
		// The server must be the Maestro server (CertFile carries its name, identity.ServerName),
		// not whatever else holds a certificate of the same CA.
		clientTLS, err := tlsconfig.Files{CA: t.CAFile, Cert: t.ClientCertFile, Key: t.ClientKeyFile,
			ServerName: identity.ServerName(identity.MaestroServer)}.Client("127.0.0.1")
		if err != nil {
			return nil, fmt.Errorf("maestro server TLS: %w", err)
		}
		scheme = "https"
		restClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS}}
		args = append(args,
			// REST: HTTPS with the server certificate, inside the server's own network
			// namespace. Maestro's REST API has no client authentication of its own; the gate
			// in front of it on the host does that (maestroisolation.go, docs/security.md).
			"--enable-https=true", "--https-cert-file="+t.CertFile, "--https-key-file="+t.KeyFile,
			// gRPC: TLS 1.3, a client certificate from ClientCAFile required, and every
			// publish/subscribe authorized per source by a SubjectAccessReview.
			"--grpc-tls-cert-file="+t.CertFile, "--grpc-tls-key-file="+t.KeyFile,
			"--grpc-authn-type=mtls", "--grpc-client-ca-file="+t.ClientCAFile,
			"--grpc-authorizer-config="+t.AuthorizerKubeconfig,
		)
	}
	args = append(args,
		"--server-hostname=127.0.0.1",
		"--http-server-bindport="+strconv.Itoa(httpPort),
		"--enable-grpc-server=true",
		"--grpc-server-bindport="+strconv.Itoa(grpcPort),
		"--metrics-server-bindport="+strconv.Itoa(metricsPort),
		"--health-check-server-bindport="+strconv.Itoa(healthPort),
		"--message-broker-type=mqtt",
		"--message-broker-config-file="+mqttConfig,
		"--client-id="+o.ClientID,
		"--source-id=maestro",
		// One instance: "shared" needs no consistent-hash ring. A heartbeat every 3 s marks the
		// instance ready within about a second instead of upstream's 5-15 s.
		"--subscription-type=shared",
		"--heartbeat-interval=3",
		"-v="+strconv.Itoa(o.Verbosity),
	)
	s := &MaestroServer{
		RESTURL:    fmt.Sprintf("%s://127.0.0.1:%d", scheme, httpPort),
		RESTClient: restClient,
		GRPCAddr:   fmt.Sprintf("127.0.0.1:%d", grpcPort),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		HealthURL:  fmt.Sprintf("http://127.0.0.1:%d/healthcheck", healthPort),
		Args:       args,
		spec: ProcSpec{Name: o.Name, Path: o.Binary, Args: args, Dir: o.Dir, LogDir: o.LogDir,
			// development is upstream's default environment, but it turns klog up to -v=10; the
			// flag above wins. Named here so that nobody's shell environment picks another.
			Env: []string{"MAESTRO_ENV=development"}},
	}
	if t := o.TLS; t != nil {
		dbAddr, err := dsnAddr(o.DSN)
		if err != nil {
			return nil, err
		}
		authzAddr, err := kubeconfigAddr(t.AuthorizerKubeconfig)
		if err != nil {
			return nil, fmt.Errorf("maestro server: authorizer: %w", err)
		}
		if s.isolation, err = isolateMaestro(t, httpPort, inboundPorts{gRPC: grpcPort, gRPCMaxConns: o.GRPCMaxConns, plain: []int{metricsPort, healthPort}},
			[]string{o.MQTTAddr, dbAddr, authzAddr}, filepath.Join(o.LogDir, o.Name+"-gate.log")); err != nil {
			return nil, err
		}
		s.GRPCForward = s.isolation.grpc
		s.spec.Start = s.isolation.ns.Start
	}
	if err := s.start(ctx); err != nil {
		s.closeIsolation()
		return nil, err
	}
	return s, nil
}

// Close stops the server and, when it is isolated, its gate and namespace. Stop keeps them, so
// that a Restart finds the same ports.
func (s *MaestroServer) Close() {
	s.Stop()
	s.closeIsolation()
}

func (s *MaestroServer) closeIsolation() {
	if s.isolation != nil {
		s.isolation.Close()
	}
}

func (s *MaestroServer) start(ctx context.Context) error {
	p, err := StartProcess(ctx, s.spec)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		what  string
		check func(context.Context) error
	}{
		{"health " + s.HealthURL, HTTPReady(nil, s.HealthURL)},
		{"REST API", HTTPReady(s.RESTClient, s.RESTURL+"/api/maestro/v1/consumers?size=1")},
		{"gRPC " + s.GRPCAddr, s.grpcReady()},
	} {
		if err := p.WaitFor(ctx, 60*time.Second, w.what, w.check); err != nil {
			p.Stop(5 * time.Second)
			return err
		}
	}
	s.mu.Lock()
	s.Proc = p
	s.mu.Unlock()
	return nil
}

// grpcReady checks that the gRPC port accepts connections: Maestro's own, inside its namespace
// when isolated (the host's forwarder accepts before Maestro listens).
func (s *MaestroServer) grpcReady() func(context.Context) error {
	if s.isolation == nil {
		return TCPReady(s.GRPCAddr)
	}
	return func(ctx context.Context) error {
		c, err := s.isolation.ns.DialContext(ctx, "tcp", s.GRPCAddr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// Stop ends the server.
func (s *MaestroServer) Stop() { s.Process().Stop(10 * time.Second) }

// Kill ends the server with SIGKILL, as a crash would.
func (s *MaestroServer) Kill() { s.Process().Kill() }

// Restart starts the server again, stopping it first if it still runs, with the same command
// line and ports, and waits until it is ready. Proc is the new process afterwards.
func (s *MaestroServer) Restart(ctx context.Context) error {
	s.Stop()
	return s.start(ctx)
}

// RestartWithDB restarts the server (Restart) connected to another address of its database:
// dsn and password as in MaestroServerOptions. Benchmarks use it to compare a direct
// connection with PgBouncer in one region.
func (s *MaestroServer) RestartWithDB(ctx context.Context, dsn, password string) error {
	if _, err := writeMaestroDBFiles(filepath.Join(s.spec.Dir, "db"), dsn, password); err != nil {
		return err
	}
	if s.isolation != nil {
		addr, err := dsnAddr(dsn)
		if err != nil {
			return err
		}
		if addr != "" {
			if err := s.isolation.addOutbound(addr); err != nil {
				return err
			}
		}
	}
	return s.Restart(ctx)
}

// Process is the server's current process (Proc, a new one after each Restart).
func (s *MaestroServer) Process() *Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Proc
}

// writeMaestroDBFiles writes the db.* files maestro reads its connection from and returns the
// flags that point at them. password, when set, wins over the DSN's.
func writeMaestroDBFiles(dir, dsn, password string) ([]string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("maestro DSN %q: want postgres://user@host:port/db", redactDSN(dsn))
	}
	if password == "" {
		password, _ = u.User.Password()
	}
	host, port := dsnHostPort(u)
	db := strings.TrimPrefix(u.Path, "/")
	if host == "" || u.User.Username() == "" || db == "" {
		return nil, fmt.Errorf("maestro DSN %q: host, user and database are required", redactDSN(dsn))
	}
	// Maestro writes the host into a keyword/value DSN unquoted: a path with a space or a
	// quote would not survive.
	if strings.ContainsAny(host, " '\\") {
		return nil, fmt.Errorf("maestro DSN %q: host %q has a space, quote or backslash", redactDSN(dsn), host)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create maestro db dir: %w", err)
	}
	files := []struct{ flag, name, value string }{
		{"--db-host-file", "db.host", host},
		{"--db-port-file", "db.port", port},
		{"--db-name-file", "db.name", db},
		{"--db-user-file", "db.user", u.User.Username()},
		{"--db-password-file", "db.password", password},
	}
	flags := make([]string, 0, len(files)+1)
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.value), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		flags = append(flags, f.flag+"="+path)
	}
	sslmode := u.Query().Get("sslmode")
	if sslmode == "" || strings.HasPrefix(host, "/") {
		// A Unix socket (host is its directory) has no TLS; pgx ignores sslmode there, but
		// lib/pq (Maestro's LISTEN connection) would ask for TLS on it.
		sslmode = "disable"
	}
	flags = append(flags, "--db-sslmode="+sslmode)
	if ca := u.Query().Get("sslrootcert"); ca != "" {
		flags = append(flags, "--db-rootcert="+ca)
	}
	return flags, nil
}

// dsnHostPort is the host and port of a postgres:// DSN: the URL's, or its host and port
// parameters (a Unix socket's directory: postgres://user@/db?host=/dir&port=N).
func dsnHostPort(u *url.URL) (host, port string) {
	host, port = u.Hostname(), u.Port()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if p := u.Query().Get("port"); p != "" {
		port = p
	}
	if port == "" {
		port = "5432"
	}
	return host, port
}

func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}

// writeMaestroMQTTConfig writes the MQTT config (sdk-go's MQTTConfig; JSON is valid YAML) that
// both `maestro server` and `maestro agent` read.
func writeMaestroMQTTConfig(path, brokerAddr string, t *MaestroMQTTTLS, sourceEvents, agentEvents string) error {
	cfg := map[string]any{
		"brokerHost": brokerAddr,
		"topics":     map[string]string{"sourceEvents": sourceEvents, "agentEvents": agentEvents},
	}
	if t != nil {
		cfg["caFile"], cfg["clientCertFile"], cfg["clientKeyFile"] = t.CAFile, t.CertFile, t.KeyFile
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write maestro MQTT config: %w", err)
	}
	return nil
}

// MaestroREST is a client of a Maestro server's REST API.
type MaestroREST struct {
	URL string
	// Client reaches URL; nil means http.DefaultClient (a plaintext server on loopback).
	Client *http.Client
}

// REST is the server's REST API.
func (s *MaestroServer) REST() MaestroREST { return MaestroREST{URL: s.RESTURL, Client: s.RESTClient} }

func (m MaestroREST) client() *http.Client {
	if m.Client == nil {
		return http.DefaultClient
	}
	return m.Client
}

// RegisterConsumer makes sure Maestro has a consumer called name; an existing one is fine. Each
// management cluster is one consumer, named like its provision shard.
func (m MaestroREST) RegisterConsumer(ctx context.Context, name string) error {
	restURL := m.URL
	found, err := m.consumerExists(ctx, name)
	if err != nil {
		return err
	}
	if found {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"name": name})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, restURL+"/api/maestro/v1/consumers", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client().Do(req)
	if err != nil {
		return fmt.Errorf("register maestro consumer %s: %w", name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode == http.StatusCreated {
		return nil
	}
	// Another registrar may have won the race; that is success too.
	if found, err := m.consumerExists(ctx, name); err == nil && found {
		return nil
	}
	return fmt.Errorf("register maestro consumer %s: %d %s", name, resp.StatusCode, bytes.TrimSpace(msg))
}

// MaestroConsumer is the part of Maestro's consumer resource the region uses.
type MaestroConsumer struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ListConsumers returns every consumer registered with the Maestro server.
func (m MaestroREST) ListConsumers(ctx context.Context) ([]MaestroConsumer, error) {
	var out []MaestroConsumer
	for page := 1; ; page++ {
		var list struct {
			Items []MaestroConsumer `json:"items"`
			Total int               `json:"total"`
		}
		if err := m.getJSON(ctx, fmt.Sprintf("%s/api/maestro/v1/consumers?page=%d&size=100", m.URL, page), &list); err != nil {
			return nil, fmt.Errorf("list maestro consumers: %w", err)
		}
		out = append(out, list.Items...)
		if len(list.Items) == 0 || len(out) >= list.Total {
			return out, nil
		}
	}
}

func (m MaestroREST) consumerExists(ctx context.Context, name string) (bool, error) {
	var list struct {
		Items []MaestroConsumer `json:"items"`
	}
	q := url.Values{"search": {fmt.Sprintf("name = '%s'", strings.ReplaceAll(name, "'", "''"))}}
	if err := m.getJSON(ctx, m.URL+"/api/maestro/v1/consumers?"+q.Encode(), &list); err != nil {
		return false, fmt.Errorf("look up maestro consumer %s: %w", name, err)
	}
	for _, c := range list.Items {
		if c.Name == name {
			return true, nil
		}
	}
	return false, nil
}

func (m MaestroREST) getJSON(ctx context.Context, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := m.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, into)
}

// MaestroAgentOptions configures the agent of one management cluster.
type MaestroAgentOptions struct {
	Binary string
	// ConsumerName is the management cluster's consumer (and provision shard) name.
	ConsumerName string
	// Kubeconfig of the management cluster's kube-apiserver.
	Kubeconfig string
	MQTTAddr   string
	// MQTTTLS, when set, is the agent's own client certificate; its CN must be ConsumerName for
	// the topic ACL to let it in.
	MQTTTLS *MaestroMQTTTLS
	Dir     string
	LogDir  string
	// StatusSyncInterval is how often the agent re-reads applied objects for status feedback;
	// default 10s, upstream's.
	StatusSyncInterval time.Duration
	// MaxFeedbackWatch caps the informers the agent runs for watched feedback (one per resource
	// type and namespace: a cluster in transition costs one for its HostedCluster, one for its
	// secrets and one for its NodePools); beyond it the agent polls. Cluster Service asks for
	// Watch only while a transition is in flight, so this bounds concurrent transitions per
	// management cluster, not clusters. Default 500 (upstream: 50): 35 creates/s that each take
	// about 3 s to become ready keep about 100 clusters, 300 informers, in flight at once.
	MaxFeedbackWatch int
	// KubeAPIQPS and KubeAPIBurst limit the agent's requests to its apiserver; default 200 and
	// 400. Upstream's 50/100 caps a management cluster at about 12 applied works/s here, since
	// every work costs several requests (apply, AppliedManifestWork, status reads).
	KubeAPIQPS   float64
	KubeAPIBurst int
	Verbosity    int
	// ServingTLS, when set, is the certificate its health and metrics port serves (through a
	// library-go GenericOperatorConfig, --config), so a scraper can verify it; without it the
	// agent serves a self-signed one it makes at start-up, which nothing can verify. The agent
	// reloads the files when they change.
	ServingTLS *MaestroAgentServingTLS
}

// MaestroAgentServingTLS is the agent's serving certificate and key (PEM files).
type MaestroAgentServingTLS struct{ CertFile, KeyFile string }

// writeAgentServingConfig writes the library-go operator config that names the agent's serving
// certificate. It is JSON, which the YAML reader accepts.
func writeAgentServingConfig(path string, t *MaestroAgentServingTLS) error {
	b, err := json.Marshal(map[string]any{
		"apiVersion":  "operator.openshift.io/v1alpha1",
		"kind":        "GenericOperatorConfig",
		"servingInfo": map[string]string{"certFile": t.CertFile, "keyFile": t.KeyFile},
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write maestro agent serving config: %w", err)
	}
	return nil
}

// MaestroAgent is a running agent.
type MaestroAgent struct {
	ConsumerName string
	// ClientID is the agent's MQTT client ID: sdk-go's MQTT agent options connect as
	// "<--cloudevents-client-id>-client" (mosquitto.log shows it).
	ClientID string
	// HealthURL is the agent's HTTPS /healthz (a self-signed certificate, or ServingTLS's).
	HealthURL string
	Args      []string
	// Proc is the running process (a new one after Restart).
	Proc *Process

	spec ProcSpec
	mu   sync.Mutex
}

// StartMaestroAgent starts `maestro agent` for one consumer with the MQTT workload source and
// returns once its health endpoint answers.
func StartMaestroAgent(ctx context.Context, o MaestroAgentOptions) (*MaestroAgent, error) {
	if o.Binary == "" || o.ConsumerName == "" || o.Kubeconfig == "" || o.MQTTAddr == "" || o.Dir == "" {
		return nil, errors.New("maestro agent: Binary, ConsumerName, Kubeconfig, MQTTAddr and Dir are required")
	}
	if o.StatusSyncInterval == 0 {
		o.StatusSyncInterval = 10 * time.Second
	}
	if o.MaxFeedbackWatch == 0 {
		o.MaxFeedbackWatch = 500
	}
	if o.KubeAPIQPS == 0 {
		o.KubeAPIQPS = 200
	}
	if o.KubeAPIBurst == 0 {
		o.KubeAPIBurst = 400
	}
	if o.Verbosity == 0 {
		o.Verbosity = 2
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create maestro agent dir: %w", err)
	}
	mqttConfig := filepath.Join(o.Dir, "mqtt.json")
	topic := "sources/maestro/consumers/" + o.ConsumerName + "/"
	if err := writeMaestroMQTTConfig(mqttConfig, o.MQTTAddr, o.MQTTTLS, topic+"sourceevents", topic+"agentevents"); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := []string{"agent",
		"--consumer-name=" + o.ConsumerName,
		"--workload-source-driver=mqtt",
		"--workload-source-config=" + mqttConfig,
		"--cloudevents-client-id=" + o.ConsumerName + "-work-agent", // MQTT client ID: MaestroAgent.ClientID
		"--kubeconfig=" + o.Kubeconfig,
		// Events of the agent itself go to "default"; outside a pod it cannot detect its namespace.
		"--namespace=default",
		// Its health/metrics server; upstream's default is 0.0.0.0:8443 for every agent.
		"--listen=127.0.0.1:" + strconv.Itoa(port),
		"--status-sync-interval=" + o.StatusSyncInterval.String(),
		"--max-feedback-watch=" + strconv.Itoa(o.MaxFeedbackWatch),
		"--kube-api-qps=" + strconv.FormatFloat(o.KubeAPIQPS, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(o.KubeAPIBurst),
		"-v=" + strconv.Itoa(o.Verbosity),
	}
	if o.ServingTLS != nil {
		cfg := filepath.Join(o.Dir, "serving.json")
		if err := writeAgentServingConfig(cfg, o.ServingTLS); err != nil {
			return nil, err
		}
		args = append(args, "--config="+cfg)
	}
	// Without a serving certificate the agent's library-go command makes a self-signed one in
	// a new os.MkdirTemp directory on every start and never removes it: pointed at its own
	// directory, it no longer leaves one in the host's /tmp per start.
	tmp := filepath.Join(o.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create maestro agent temp dir: %w", err)
	}
	a := &MaestroAgent{ConsumerName: o.ConsumerName, ClientID: o.ConsumerName + "-work-agent-client", HealthURL: fmt.Sprintf("https://127.0.0.1:%d/healthz", port), Args: args,
		spec: ProcSpec{Name: "maestro-agent-" + o.ConsumerName, Path: o.Binary, Args: args, Dir: o.Dir, LogDir: o.LogDir, Env: []string{"TMPDIR=" + tmp}}}
	if err := a.start(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *MaestroAgent) start(ctx context.Context) error {
	p, err := StartProcess(ctx, a.spec)
	if err != nil {
		return err
	}
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The agent may serve a self-signed certificate it made at start-up; only liveness is
		// checked here, nothing secret crosses.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	if err := p.WaitFor(ctx, 60*time.Second, "health "+a.HealthURL, HTTPReady(insecure, a.HealthURL)); err != nil {
		p.Stop(5 * time.Second)
		return err
	}
	a.mu.Lock()
	a.Proc = p
	a.mu.Unlock()
	return nil
}

// Stop ends the agent.
func (a *MaestroAgent) Stop() { a.process().Stop(10 * time.Second) }

// Kill ends the agent with SIGKILL, as a crash would.
func (a *MaestroAgent) Kill() { a.process().Kill() }

// Restart starts the agent again, stopping it first if it still runs, with the same command
// line, and waits for its health endpoint. Proc is the new process afterwards.
func (a *MaestroAgent) Restart(ctx context.Context) error {
	a.Stop()
	return a.start(ctx)
}

func (a *MaestroAgent) process() *Process {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.Proc
}
