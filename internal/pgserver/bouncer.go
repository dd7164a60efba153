package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/sockdir"
)

// A Bouncer is a PgBouncer in front of a secure Server, for a client that opens and closes
// PostgreSQL connections faster than it should. The pinned Maestro server is one: it sets only
// database/sql's SetMaxOpenConns, so every burst above database/sql's two idle connections
// opens new sessions and closes them again, and each new session costs PostgreSQL a backend
// process, a TLS handshake and a SCRAM exchange (about 50 ms of CPU on the 2-core machine,
// hack/pg-connection-cost.sh). Behind the bouncer a client's new connection costs a TLS
// handshake with the bouncer and reuses a server session the bouncer keeps.
//
// The bouncer pools in session mode: a client holds one server session for as long as it is
// connected, so LISTEN/NOTIFY (Maestro's "events" and "status_events" channels) and session
// state behave as on a direct connection, and a closed client's session (after DISCARD ALL)
// serves the next one. It is as locked down as the Server: clients must use TLS (the server's
// own certificate, so a client verifies it exactly as it verifies PostgreSQL) and a SCRAM
// password; the bouncer verifies PostgreSQL's certificate (verify-full) and logs in with the
// role's SCRAM secret, copied from pg_authid, so no password is stored in clear for it. Only
// the logins and databases given to StartBouncer are known to it, PostgreSQL's CONNECT
// privilege still decides which of them a role may open, and there is no admin console.
//
// In front of a server without a TCP port (Options.SocketOnly) the bouncer has none either: it
// listens on a Unix socket in a directory only the server's user (and root) may enter, reaches
// PostgreSQL over PostgreSQL's socket, and uses no TLS (there is none on a Unix socket); SCRAM
// and its logins are as above.
//
// A bouncer that crashed is started again, on the same port and socket, by Restart; the local
// region does so as it restarts every other child (localregion's superviseRestartable).
//
// In Azure the managed server offers the same facility (Azure Database for PostgreSQL flexible
// server's built-in PgBouncer, port 6432); the local region runs Debian's pgbouncer.
type Bouncer struct {
	Port    int
	Dir     string
	LogPath string

	serverPort int
	server     *Server
	sock       string // the Unix socket's directory, when the server has no TCP port
	caSrc      string
	// bin and ini start pgbouncer again with the same configuration (Restart).
	bin, ini string

	live                // the current pgbouncer, which Restart replaces
	mu       sync.Mutex // guards stopping, and is held while a pgbouncer is started
	stopping bool
	stopped  chan struct{} // closed by Stop: ends a supervisor's wait at once
}

// BouncerOptions configures StartBouncer.
type BouncerOptions struct {
	// Dir holds pgbouncer.ini and the auth file; it is created, owned by the server's user.
	Dir string
	// LogPath receives PgBouncer's log; default Dir/pgbouncer.log.
	LogPath string
	// Port to listen on, 127.0.0.1 only; 0 picks a free port.
	Port int
	// CAFile verifies PostgreSQL's certificate.
	CAFile string
	// Logins are the role/database pairs the bouncer admits; each role must exist (CreateLoginRole).
	Logins []BouncerLogin
	// PoolSize is how many server sessions one login may hold (default 64). In session mode a
	// client connection beyond it waits for one to close, so it must cover the client's own
	// connection limit (Maestro's --db-max-open-connections, 50 by default, plus its two
	// listeners).
	PoolSize int
}

// BouncerLogin is one role and the one database it may reach through the bouncer.
type BouncerLogin struct {
	Role, Database string
}

// bouncerStrangerRoom is how many connections beyond its logins' own the bouncer admits, and
// loginTimeoutSeconds how long a connection to the bouncer or to PostgreSQL may take to log in
// (bouncerConfig, Start).
const (
	bouncerStrangerRoom = 1024
	loginTimeoutSeconds = 5
)

// bouncerBinary is Debian's pgbouncer (make deps installs it).
const bouncerBinary = "/usr/sbin/pgbouncer"

// StartBouncer starts a PgBouncer in front of s (see Bouncer). It returns once the bouncer
// accepts TCP connections.
func (s *Server) StartBouncer(ctx context.Context, o BouncerOptions) (*Bouncer, error) {
	if !s.Secure {
		return nil, errors.New("pgbouncer: the server must be secure (started with TLS or SocketOnly)")
	}
	if o.Dir == "" || (o.CAFile == "" && !s.SocketOnly) || len(o.Logins) == 0 {
		return nil, errors.New("pgbouncer: Dir, CAFile and Logins are required")
	}
	bin, err := exec.LookPath(bouncerBinary)
	if err != nil {
		return nil, fmt.Errorf("pgbouncer not installed (run 'make deps' or apt-get install pgbouncer): %w", err)
	}
	if o.PoolSize == 0 {
		o.PoolSize = 64
	}
	if o.LogPath == "" {
		o.LogPath = filepath.Join(o.Dir, "pgbouncer.log")
	}
	if o.Port == 0 {
		if o.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.Dir, err)
	}
	// The socket directory (0700, internal/sockdir) is made while its parent is still this
	// user's: under root both then go to the postgres user.
	sock := ""
	if s.SocketOnly {
		sock = filepath.Join(o.Dir, "sock")
		if err := sockdir.At(sock, socketName(o.Port)); err != nil {
			return nil, fmt.Errorf("pgbouncer: %w", err)
		}
	}
	for _, d := range []string{o.Dir, sock} {
		if d == "" {
			continue
		}
		if err := s.chown(d); err != nil {
			return nil, err
		}
	}
	caCopy := filepath.Join(o.Dir, "ca.crt")
	if o.CAFile != "" {
		// The CA may sit where the server's user cannot read it (a 0700 state directory of root's).
		ca, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("pgbouncer: read CA: %w", err)
		}
		if err := s.writeOwned(caCopy, ca); err != nil {
			return nil, err
		}
	}
	var users strings.Builder
	for _, l := range o.Logins {
		secret, err := s.scramSecret(ctx, l.Role)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&users, "%s %s\n", bouncerQuote(l.Role), bouncerQuote(secret))
	}
	authFile := filepath.Join(o.Dir, "userlist.txt")
	if err := s.writeOwned(authFile, []byte(users.String())); err != nil {
		return nil, err
	}
	ini := filepath.Join(o.Dir, "pgbouncer.ini")
	if err := s.writeOwned(ini, []byte(bouncerConfig(s, o, authFile, caCopy, sock))); err != nil {
		return nil, err
	}
	b := &Bouncer{Port: o.Port, Dir: o.Dir, LogPath: o.LogPath, serverPort: s.Port, server: s, sock: sock, caSrc: o.CAFile, bin: bin, ini: ini, stopped: make(chan struct{})}
	if err := b.start(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// start execs pgbouncer and waits until it accepts connections; a pgbouncer that does not is
// killed. It holds mu while it forks, so a Stop that comes meanwhile finds the new process.
func (b *Bouncer) start(ctx context.Context) error {
	b.mu.Lock()
	if b.stopping {
		b.mu.Unlock()
		return errors.New("pgbouncer: stopped")
	}
	// PgBouncer refuses to run as root: it runs as the server's user, in the foreground.
	run, err := spawnLogged("pgbouncer", b.LogPath, b.server.cred, b.bin, "-q", b.ini)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.set(run)
	b.mu.Unlock()
	done := run.done
	if err := b.waitListening(ctx, done, 30*time.Second); err != nil {
		select {
		case <-done: // it exited by itself: its process group may be gone already
		default:
			_ = syscall.Kill(-run.pid(), syscall.SIGKILL)
			<-done
		}
		return err
	}
	return nil
}

// Restart starts pgbouncer again with the same configuration, port and socket directory once
// it has exited (a crash), and waits until it accepts connections. PgBouncer replaces the
// socket file a killed one left behind (it finds nothing listening on it). It is an error
// while pgbouncer still runs, and after Stop.
func (b *Bouncer) Restart(ctx context.Context) error {
	return b.current().startAgain(ctx, "pgbouncer", b.start)
}

// bouncerConfig is pgbouncer.ini for o (see the Bouncer comment for each choice); sock is the
// directory of its Unix socket when the server has no TCP port.
func bouncerConfig(s *Server, o BouncerOptions, authFile, caFile, sock string) string {
	var c strings.Builder
	c.WriteString("; generated by internal/pgserver (StartBouncer); do not edit\n[databases]\n")
	serverHost := "127.0.0.1"
	if s.SocketOnly {
		serverHost = s.sock
	}
	for _, l := range o.Logins {
		// No user= here: the server session is the client's own login (PgBouncer proves it to
		// PostgreSQL with the client's SCRAM keys), and PostgreSQL's CONNECT privilege still
		// decides which database a role may open.
		fmt.Fprintf(&c, "%s = host=%s port=%d dbname=%s\n", l.Database, serverHost, s.Port, l.Database)
	}
	c.WriteString("[pgbouncer]\n")
	doors := [][2]string{
		{"listen_addr", "127.0.0.1"},
		{"listen_port", strconv.Itoa(o.Port)},
		// No Unix socket: TCP with TLS is the only way in.
		{"unix_socket_dir", ""},
		{"client_tls_sslmode", "require"},
		{"client_tls_cert_file", s.tlsPath("server.crt")},
		{"client_tls_key_file", s.tlsPath("server.key")},
		{"client_tls_protocols", "tlsv1.2,tlsv1.3"},
		{"server_tls_sslmode", "verify-full"},
		{"server_tls_ca_file", caFile},
		{"server_tls_protocols", "tlsv1.2,tlsv1.3"},
	}
	if s.SocketOnly {
		doors = [][2]string{
			// No TCP port: the socket, in a directory only the server's user and root may
			// enter, is the only way in, and PostgreSQL's socket the way on. Neither speaks TLS.
			{"listen_addr", ""},
			{"listen_port", strconv.Itoa(o.Port)},
			{"unix_socket_dir", sock},
			{"unix_socket_mode", "0700"},
			{"client_tls_sslmode", "disable"},
			{"server_tls_sslmode", "disable"},
		}
	}
	for _, kv := range doors {
		fmt.Fprintf(&c, "%s = %s\n", kv[0], kv[1])
	}
	for _, kv := range [][2]string{
		{"logfile", ""},
		{"pidfile", ""},
		{"auth_type", "scram-sha-256"},
		{"auth_file", authFile},
		{"pool_mode", "session"},
		{"default_pool_size", strconv.Itoa(o.PoolSize)},
		// Room for connections that have not logged in, beyond the logins' own: any local
		// process can open one without a credential, and at the cap the bouncer refuses every
		// login, a restarted service's own included. Each must log in within
		// client_login_timeout (PgBouncer's default is a minute), so holding the room takes a
		// steady stream of new connections, not a few held ones. PgBouncer has no limit per
		// source.
		{"max_client_conn", strconv.Itoa(2*o.PoolSize*len(o.Logins) + bouncerStrangerRoom)},
		{"client_login_timeout", strconv.Itoa(loginTimeoutSeconds)},
		{"max_db_connections", strconv.Itoa(o.PoolSize)},
		// lib/pq (Maestro's listener) sends it; the bouncer would otherwise refuse the login.
		{"ignore_startup_parameters", "extra_float_digits"},
		// A kept session lives an hour at most, and goes after ten idle minutes (the defaults,
		// written out because they are what keeps the pool warm).
		{"server_lifetime", "3600"},
		{"server_idle_timeout", "600"},
		// Every client connect would otherwise be two log lines.
		{"log_connections", "0"},
		{"log_disconnections", "0"},
		{"stats_period", "60"},
	} {
		fmt.Fprintf(&c, "%s = %s\n", kv[0], kv[1])
	}
	return c.String()
}

// bouncerQuote quotes a value for PgBouncer's auth file ("" doubles a quote).
func bouncerQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// scramSecret reads role's SCRAM-SHA-256 secret from pg_authid (superuser only).
func (s *Server) scramSecret(ctx context.Context, role string) (string, error) {
	var secret string
	err := s.admin(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT coalesce(rolpassword, '') FROM pg_authid WHERE rolname = $1", role).Scan(&secret)
	})
	if err != nil {
		return "", fmt.Errorf("pgbouncer: read the secret of role %s: %w", role, err)
	}
	if !strings.HasPrefix(secret, "SCRAM-SHA-256$") {
		return "", fmt.Errorf("pgbouncer: role %s has no SCRAM secret", role)
	}
	return secret, nil
}

func (b *Bouncer) waitListening(ctx context.Context, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	network, addr := b.address()
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("pgbouncer exited during start-up; log %s:\n%s", b.LogPath, tail(b.LogPath))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if b.Accepting() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pgbouncer not listening on %s %s after %s; log %s:\n%s", network, addr, timeout, b.LogPath, tail(b.LogPath))
}

// address is where the bouncer listens: its Unix socket when the server has no TCP port, else
// its loopback port.
func (b *Bouncer) address() (network, addr string) {
	if b.sock != "" {
		return "unix", b.SocketPath()
	}
	return "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
}

// Accepting reports whether a connection to the bouncer is accepted now (within a second).
func (b *Bouncer) Accepting() bool {
	network, addr := b.address()
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// SocketPath is the bouncer's Unix socket, when the server has no TCP port (else "").
func (b *Bouncer) SocketPath() string {
	if b.sock == "" {
		return ""
	}
	return filepath.Join(b.sock, socketName(b.Port))
}

// SocketDir is the directory of the bouncer's Unix socket, when the server has no TCP port.
func (b *Bouncer) SocketDir() string { return b.sock }

// RoleDSN is role's TLS connection string for db through the bouncer, without a password; the
// bouncer's certificate (the server's) is verified against caFile, including 127.0.0.1. In
// front of a server without a TCP port it leads over the bouncer's Unix socket instead.
func (b *Bouncer) RoleDSN(role, db, caFile string) string {
	if b.sock != "" {
		return socketDSN(role, db, b.sock, b.Port)
	}
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {caFile}}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?%s", url.PathEscape(role), b.Port, url.PathEscape(db), q.Encode())
}

// WritePassFile writes a libpq password file (0600) holding role's password for db through
// the bouncer, and straight to the server (a client may be switched between the two).
func (b *Bouncer) WritePassFile(path, role, db, password string) error {
	return writePassFile(path, role, db, password, b.Port, b.serverPort)
}

// ReloadTLS makes the bouncer use the TLS files as they are now: the CA it verifies PostgreSQL
// with is copied again from BouncerOptions.CAFile, and the certificate it presents is the
// server's copy, which Server.ReloadTLS refreshes (call that first). PgBouncer reads both again
// on SIGHUP; new connections use them, open ones keep theirs. A bouncer that has exited (a
// crash, before its Restart) has nothing to signal: the files are written all the same.
func (b *Bouncer) ReloadTLS() error {
	if b.sock != "" {
		return errors.New("pgbouncer: reload TLS: it uses no TLS (Unix socket only)")
	}
	ca, err := os.ReadFile(b.caSrc)
	if err != nil {
		return fmt.Errorf("pgbouncer: read CA: %w", err)
	}
	if err := b.server.writeOwned(filepath.Join(b.Dir, "ca.crt"), ca); err != nil {
		return err
	}
	p := b.current().cmd.Process
	if err := p.Signal(syscall.SIGHUP); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			// It crashed and waits for its restart (Restart), which reads the files as they are now.
			return nil
		}
		return fmt.Errorf("pgbouncer: reload: %w", err)
	}
	return nil
}

// Err is how the bouncer's current process exited (nil while it runs).
func (b *Bouncer) Err() error {
	return b.current().exitErr()
}

// Stopped is closed by Stop: a supervisor ends its wait to restart the bouncer.
func (b *Bouncer) Stopped() <-chan struct{} { return b.stopped }

// LogTail is the end of the bouncer's log, for a crash report.
func (b *Bouncer) LogTail() string { return tail(b.LogPath) }

// Stop shuts the bouncer down at once (SIGTERM: open client connections are closed), killing
// it after 10 s, and for good: Restart refuses afterwards.
func (b *Bouncer) Stop() {
	b.mu.Lock()
	if !b.stopping {
		b.stopping = true
		close(b.stopped)
	}
	run := b.current()
	b.mu.Unlock()
	run.stop(syscall.SIGTERM)
}
