package mgmtcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/sockdir"
)

// MosquittoOptions configures the region's MQTT broker, the local stand-in for Event Grid
// namespaces. The zero TLS and ACL settings give a plaintext broker on loopback where every client
// may use every topic; set TLS and ACL to make per-client certificates and topic ACLs mandatory.
type MosquittoOptions struct {
	// Dir holds the generated mosquitto.conf (and acl file). It is created if missing.
	Dir string
	// LogDir receives mosquitto.log.
	LogDir string
	// Binary is the mosquitto executable; default: "mosquitto" on PATH, then /usr/sbin/mosquitto.
	Binary string
	// Port on 127.0.0.1 of the broker's address; 0 picks a free one. mosquitto itself listens
	// only on a unix socket in a directory of its own (0700); the address is a capped forward
	// to it (MosquittoForwardLimits).
	Port int
	// MaxConns caps the connections forwarded to the broker at once; 0 means BrokerMaxConns.
	MaxConns int
	// TLS, when set, makes the only listener a TLS listener.
	TLS *MosquittoTLS
	// ACL, when non-nil, is written to an acl_file and enforced: a client may then use only the
	// topics a rule grants it. An empty non-nil slice denies everything.
	ACL []MosquittoACLRule
	// ShareGuard, when set, loads the share_guard plugin: only its Subscribers may make shared
	// subscriptions ($share/<group>/<filter>); the broker refuses anyone else's.
	ShareGuard *MosquittoShareGuard
}

// MosquittoShareGuard configures the share_guard plugin (MosquittoShareGuardPlugin). mosquitto
// alone grants a shared subscription to any client and checks the ACL only when it delivers, so
// a client that joins a share group makes the broker drop the group's messages it is handed;
// with the plugin such a SUBSCRIBE is refused (docs/security.md).
type MosquittoShareGuard struct {
	// Plugin is the compiled plugin's path.
	Plugin string
	// Subscribers are the usernames (certificate CNs) that may join share groups.
	Subscribers []string
	// Filters, when set, are the only subscription filters any client may hold (%u: the
	// client's username); every other SUBSCRIBE is refused. mosquitto alone grants any number
	// of subscriptions and checks the ACL only when it delivers, so one certificate could make
	// it hold tens of thousands (a probe: 60,000 took 200 MB); with Filters a client holds at
	// most len(Filters).
	Filters []string
	// ClusterNameTopics, when set, are topic filters (+: one level) on which a PUBLISH must be
	// a binary-mode CloudEvent whose clustername extension (user property ce-clustername) is
	// the publisher's username, and nothing else. Maestro's server takes the management cluster
	// a status event speaks for from that extension, not from the topic, so without it a client
	// allowed its own status topic could speak for any management cluster (docs/security.md).
	ClusterNameTopics []string
}

// MosquittoTLS is the broker's TLS listener configuration. All paths must be readable by the
// broker process.
type MosquittoTLS struct {
	CAFile, CertFile, KeyFile string
	// RequireClientCert makes every client present a certificate signed by CAFile; its subject
	// CN then becomes the MQTT username that ACL rules (and %u in patterns) refer to, and also
	// the client ID, whatever the client asked for. That binds a session to an identity, as
	// Event Grid namespaces do: a client can take over (disconnect) only a session of its own
	// identity, never another client's.
	RequireClientCert bool
}

// MosquittoACLRule grants one topic filter. Rules with an empty User are mosquitto "pattern"
// rules that apply to every client, where %u is the client's username (the certificate CN under
// RequireClientCert) and %c its client ID.
type MosquittoACLRule struct {
	User   string
	Access string // read, write, readwrite or deny
	Topic  string
}

// MaestroACL returns the topic rules of the Maestro topic layout: each server instance
// (usernames serverUsers) publishes spec events to and receives status events from every
// consumer, and an agent, whose username is its consumer name, may use only
// sources/maestro/consumers/<itself>/…. (mosquitto checks a shared subscription,
// $share/<group>/<filter>, against <filter>.)
func MaestroACL(serverUsers ...string) []MosquittoACLRule {
	var rules []MosquittoACLRule
	for _, u := range serverUsers {
		rules = append(rules,
			MosquittoACLRule{User: u, Access: "write", Topic: "sources/maestro/consumers/+/sourceevents"},
			MosquittoACLRule{User: u, Access: "read", Topic: "sources/maestro/consumers/+/agentevents"},
			MosquittoACLRule{User: u, Access: "write", Topic: "sources/maestro/sourcebroadcast"},
			MosquittoACLRule{User: u, Access: "read", Topic: "sources/maestro/agentbroadcast"})
	}
	return append(rules,
		MosquittoACLRule{Access: "read", Topic: "sources/maestro/consumers/%u/sourceevents"},
		MosquittoACLRule{Access: "write", Topic: "sources/maestro/consumers/%u/agentevents"})
}

// MaestroSubscribeFilters are the only subscriptions Maestro's clients make (sdk-go's MQTT
// options subscribe to the configured topics, and no broadcast topic is configured): a server's
// status subscription, shared by its instances or not, and an agent's own spec topic (%u: the
// client's username, its consumer name).
func MaestroSubscribeFilters() []string {
	return []string{maestroServerSharedAgentEvents, maestroServerAgentEvents, "sources/maestro/consumers/%u/sourceevents"}
}

// SecureBrokerOptions is the region's broker: TLS with the region PKI's broker certificate,
// every client authenticated by its own certificate from the region CA (CN = username = client
// ID), MaestroACL with the maestro-server identity and those of extraServers as the server
// instances, and the share guard (sharePlugin, from MosquittoShareGuardPlugin) letting only
// those instances join share groups, every client hold only MaestroSubscribeFilters, and a
// status event on an agent's topic speak only for the agent that sends it.
func SecureBrokerOptions(p *pki.Region, dir, logDir, sharePlugin string, extraServers ...string) (MosquittoOptions, error) {
	f, err := p.Files(pki.Broker)
	if err != nil {
		return MosquittoOptions{}, err
	}
	if sharePlugin == "" {
		return MosquittoOptions{}, errors.New("the region's broker needs the share_guard plugin (MosquittoShareGuardPlugin)")
	}
	servers := append([]string{pki.MaestroServer}, extraServers...)
	return MosquittoOptions{Dir: dir, LogDir: logDir,
		TLS: &MosquittoTLS{CAFile: p.CAFile, CertFile: f.Cert, KeyFile: f.Key, RequireClientCert: true},
		ACL: MaestroACL(servers...),
		ShareGuard: &MosquittoShareGuard{Plugin: sharePlugin, Subscribers: servers, Filters: MaestroSubscribeFilters(),
			ClusterNameTopics: []string{maestroServerAgentEvents}},
	}, nil
}

// ClientID is the client ID the broker gives a client that authenticates as username and asks
// for requested: with client certificates required it is the username.
func (o MosquittoOptions) ClientID(username, requested string) string {
	if o.TLS != nil && o.TLS.RequireClientCert {
		return username
	}
	return requested
}

// Mosquitto is a running broker.
type Mosquitto struct {
	// Addr is host:port of the broker's address (the forward), for a Maestro MQTT config's
	// brokerHost.
	Addr string
	// Socket is the unix socket mosquitto listens on, the only one.
	Socket     string
	ConfigPath string
	Proc       *Process
	// Forward is the capped forward from Addr to Socket.
	Forward *maestrogate.Forwarder

	listener  net.Listener
	socketDir string
}

// BrokerMaxConns is the region broker's connection cap. Its clients are the Maestro servers and
// one agent per management cluster, a few tens of connections; mosquitto keeps about 42 KiB a
// connection (a probe: 20,000 silent sockets, 850 MB), so the cap bounds what any local
// process can make it hold to some 22 MB, and its descriptors far below its file limit.
const BrokerMaxConns = 512

// MosquittoForwardLimits are the limits of the forward in front of the broker. Under mutual
// TLS a connection stays once proven (maestrogate.ClientCertProof: the broker answered it twice
// with application data, which it does only after a handshake with a certificate of the region
// CA: session tickets, then MQTT answers); at the cap one not yet proven, an UnfinishedGrace
// old, is closed for a waiting caller, so no flood of silent sockets, ClientHellos or
// handshakes without a certificate keeps a client out. A plaintext broker
// (tests) has no such proof: a caller's first byte keeps its connection. There is no idle
// timeout: mosquitto closes a client silent for 1.5 times its MQTT keep-alive itself.
func MosquittoForwardLimits(o MosquittoOptions) maestrogate.ForwardLimits {
	l := maestrogate.ForwardLimits{MaxConns: o.MaxConns}
	if l.MaxConns <= 0 {
		l.MaxConns = BrokerMaxConns
	}
	if o.TLS != nil && o.TLS.RequireClientCert {
		l.Proof = maestrogate.ClientCertProof
	}
	return l
}

const (
	// mosquittoSocketDirPrefix begins the name of the broker's socket directory, under the
	// temporary directory; mosquittoSocket is the socket's name in it.
	mosquittoSocketDirPrefix = "mqtt-"
	mosquittoSocket          = "mqtt.sock"
)

// StartMosquitto writes a config for o and starts mosquitto with it, returning once the
// listener accepts connections. MQTT v5 (which Maestro needs for user properties) is on by
// default in mosquitto 2.
func StartMosquitto(ctx context.Context, o MosquittoOptions) (*Mosquitto, error) {
	bin, err := mosquittoBinary(o.Binary)
	if err != nil {
		return nil, err
	}
	if o.Port == 0 {
		if o.Port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create mosquitto dir: %w", err)
	}
	// A unix socket's path is at most 107 bytes: the socket has a short directory of its own,
	// which only the broker's user may enter (internal/sockdir).
	socketDir, err := sockdir.New("", mosquittoSocketDirPrefix, mosquittoSocket)
	if err != nil {
		return nil, fmt.Errorf("mosquitto: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			sockdir.Remove(socketDir)
		}
	}()
	socket := filepath.Join(socketDir, mosquittoSocket)
	conf, err := mosquittoConfig(o, socket)
	if err != nil {
		return nil, err
	}
	if o.ACL != nil {
		if err := os.WriteFile(filepath.Join(o.Dir, "acl"), []byte(mosquittoACL(o.ACL)), 0o644); err != nil {
			return nil, fmt.Errorf("write mosquitto acl: %w", err)
		}
	}
	confPath := filepath.Join(o.Dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("write mosquitto config: %w", err)
	}
	p, err := StartProcess(ctx, ProcSpec{Name: "mosquitto", Path: bin, Args: []string{"-c", confPath}, Dir: o.Dir, LogDir: o.LogDir})
	if err != nil {
		return nil, err
	}
	if err := p.WaitFor(ctx, 15*time.Second, "MQTT socket "+socket, unixReady(socket)); err != nil {
		p.Stop(2 * time.Second)
		return nil, err
	}
	l, err := net.Listen("tcp", net127(o.Port))
	if err != nil {
		p.Stop(2 * time.Second)
		return nil, fmt.Errorf("listen for the broker: %w", err)
	}
	fwd := maestrogate.NewForwarder(MosquittoForwardLimits(o), func(ctx context.Context) (net.Conn, error) {
		return dialUnixWaiting(ctx, socket)
	}, slog.Default().With("component", "mosquitto-forward"))
	go fwd.Serve(l)
	ok = true
	return &Mosquitto{Addr: l.Addr().String(), Socket: socket, ConfigPath: confPath, Proc: p, Forward: fwd, listener: l, socketDir: socketDir}, nil
}

// dialUnixWaiting dials the unix socket at path, trying again while its accept queue is full
// until ctx ends. A unix socket refuses a connection at once (EAGAIN) when its listener's queue
// (mosquitto's: 100) is full, where TCP would wait: a burst of callers at the forward, a flood
// or every client reconnecting after a restart, would otherwise be reset.
func dialUnixWaiting(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		c, err := d.DialContext(ctx, "unix", path)
		if err == nil || !errors.Is(err, syscall.EAGAIN) {
			return c, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// unixReady succeeds once the unix socket at path accepts a connection.
func unixReady(path string) func(context.Context) error {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "unix", path)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// Stop ends the broker and its forward.
func (m *Mosquitto) Stop() {
	_ = m.listener.Close()
	m.Proc.Stop(5 * time.Second)
	sockdir.Remove(m.socketDir)
}

// Restart stops the broker and starts it again with the same configuration, returning once it
// listens. mosquitto 2.0 re-reads its certificate and key on SIGHUP but not its cafile, so a CA
// rollover needs this; clients reconnect (and, without persistence, resubscribe).
func (m *Mosquitto) Restart(ctx context.Context) error {
	m.Proc.Stop(5 * time.Second)
	p, err := StartProcess(ctx, m.Proc.Spec)
	if err != nil {
		return fmt.Errorf("restart mosquitto: %w", err)
	}
	if err := p.WaitFor(ctx, 15*time.Second, "MQTT socket "+m.Socket, unixReady(m.Socket)); err != nil {
		p.Stop(2 * time.Second)
		return fmt.Errorf("restart mosquitto: %w", err)
	}
	m.Proc = p
	return nil
}

// MaxMQTTPacket is the largest MQTT packet the broker takes (max_packet_size); a client that
// announces a larger one is disconnected at the packet's header. Without it mosquitto reads a
// packet of up to 256 MiB whole before its ACL refuses the topic, so any client certificate could
// hold that much of the broker's memory per connection. Maestro's largest messages are far
// below it: a work's manifests are at most 500 KiB (Cluster Service's manifests.ManifestsLimit),
// and an agent's status feedback is read to 4 MiB.
const MaxMQTTPacket = 16 << 20

func net127(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func mosquittoBinary(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", errors.New("mosquitto not found: run 'hack/ensure-packages.sh mosquitto' (make deps)")
}

func mosquittoConfig(o MosquittoOptions, socket string) (string, error) {
	var b strings.Builder
	b.WriteString("# generated by dev-infrastructure/localregion; do not edit\n")
	// Logging goes to stderr, unbuffered, which the launcher captures in <LogDir>/mosquitto.log
	// (stdout into a file is block-buffered, so a crash would lose the last lines).
	b.WriteString("log_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\nlog_type information\nlog_timestamp_format %Y-%m-%dT%H:%M:%S\n")
	b.WriteString("persistence false\n")
	// QoS 1 messages for an agent that is briefly away are queued, not dropped; the default of
	// 1000 is below a resync burst of a busy management cluster.
	b.WriteString("max_queued_messages 10000\n")
	fmt.Fprintf(&b, "max_packet_size %d\n", MaxMQTTPacket)
	if os.Geteuid() == 0 {
		// Under root mosquitto would switch to the "mosquitto" user, which may not exist or may
		// not read the (root-owned) config, certificates and log directory the launcher made.
		u, err := user.Current()
		if err != nil {
			return "", fmt.Errorf("current user: %w", err)
		}
		fmt.Fprintf(&b, "user %s\n", u.Username)
	}
	// The only listener: a unix socket (port 0), behind the capped forward (StartMosquitto).
	fmt.Fprintf(&b, "listener 0 %s\n", socket)
	if t := o.TLS; t != nil {
		if t.CAFile == "" || t.CertFile == "" || t.KeyFile == "" {
			return "", errors.New("mosquitto TLS needs CAFile, CertFile and KeyFile")
		}
		fmt.Fprintf(&b, "cafile %s\ncertfile %s\nkeyfile %s\ntls_version tlsv1.2\n", t.CAFile, t.CertFile, t.KeyFile)
		if t.RequireClientCert {
			b.WriteString("require_certificate true\nuse_identity_as_username true\nuse_username_as_clientid true\n")
		}
	}
	// Authentication is by client certificate or not at all; there are no passwords.
	b.WriteString("allow_anonymous true\n")
	if o.ACL != nil {
		fmt.Fprintf(&b, "acl_file %s\n", filepath.Join(o.Dir, "acl"))
	}
	if g := o.ShareGuard; g != nil {
		if g.Plugin == "" {
			return "", errors.New("mosquitto share guard needs the plugin's path")
		}
		for _, u := range g.Subscribers {
			if u == "" || strings.ContainsAny(u, ", \t\n") {
				return "", fmt.Errorf("mosquitto share guard: subscriber %q is not a plain username", u)
			}
		}
		for _, f := range append(append([]string(nil), g.Filters...), g.ClusterNameTopics...) {
			if f == "" || strings.ContainsAny(f, ", \t\n") {
				return "", fmt.Errorf("mosquitto share guard: filter %q has a comma or a space", f)
			}
		}
		// The plugin asks before the acl_file (mosquitto initialises plugins first) and defers
		// everything but a shared SUBSCRIBE by a client not listed and a SUBSCRIBE to a filter
		// not listed.
		fmt.Fprintf(&b, "plugin %s\nplugin_opt_shared_subscribers %s\n", g.Plugin, strings.Join(g.Subscribers, ","))
		if len(g.Filters) > 0 {
			fmt.Fprintf(&b, "plugin_opt_subscribe_filters %s\n", strings.Join(g.Filters, ","))
		}
		if len(g.ClusterNameTopics) > 0 {
			fmt.Fprintf(&b, "plugin_opt_clustername_topics %s\n", strings.Join(g.ClusterNameTopics, ","))
		}
	}
	return b.String(), nil
}

func mosquittoACL(rules []MosquittoACLRule) string {
	var b strings.Builder
	b.WriteString("# generated by dev-infrastructure/localregion; do not edit\n")
	// Pattern rules first: mosquitto applies lines to the last "user" seen, so they must not
	// follow one.
	for _, r := range rules {
		if r.User == "" {
			fmt.Fprintf(&b, "pattern %s %s\n", r.Access, r.Topic)
		}
	}
	var users []string
	byUser := map[string][]MosquittoACLRule{}
	for _, r := range rules {
		if r.User == "" {
			continue
		}
		if _, ok := byUser[r.User]; !ok {
			users = append(users, r.User)
		}
		byUser[r.User] = append(byUser[r.User], r)
	}
	for _, u := range users {
		fmt.Fprintf(&b, "\nuser %s\n", u)
		for _, r := range byUser[u] {
			fmt.Fprintf(&b, "topic %s %s\n", r.Access, r.Topic)
		}
	}
	return b.String()
}
