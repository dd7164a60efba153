// Package pgserver runs a private, throwaway PostgreSQL cluster with the system's initdb and
// postgres binaries. The local region and every test that needs PostgreSQL start one; nothing
// assumes a server is already there.
//
// By default the cluster trusts every loopback connection (tests). With Options.TLS it is
// locked down the way the region needs it: TCP connections must use TLS and a password (SCRAM),
// the superuser can log in only over the Unix socket as the OS user that started it, and each
// service gets a login role that may connect only to the database it owns (CreateRole,
// CreateOwnedDatabase). With Options.SocketOnly it is locked down the same way but has no TCP
// port: every role logs in with its SCRAM password over the Unix socket, whose directory only
// the server's user (and root) may enter.
package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/procstat"
	"github.com/openhcp/openhcp/internal/sockdir"
	"github.com/openhcp/openhcp/internal/spawn"
)

// Options says where the cluster lives.
type Options struct {
	// Dir holds the data directory and socket; it is created and owned by the server's user.
	Dir string
	// LogPath receives the server log; default Dir/postgres.log.
	LogPath string
	// Port to listen on, 127.0.0.1 only; 0 picks a free port. With SocketOnly it only names the
	// socket (Dir/sock/.s.PGSQL.<Port>).
	Port int
	// SocketOnly takes the TCP port away: the server listens on its Unix socket only, in a
	// directory nobody but the server's user (and root) may enter, and is locked down as with
	// TLS (see the package comment), every login role with its SCRAM password over the socket.
	// No other local user can then open a connection at all, so none can fill PostgreSQL's
	// backends with silent ones (PostgreSQL forks one per connection before it reads a byte
	// and has no limit per source). TLS may still be set, for the certificate the bouncer
	// presents; PostgreSQL uses no TLS on a Unix socket.
	SocketOnly bool
	// TLS, when set, turns on SSL with this server certificate and locks the cluster down (see
	// the package comment). The files are copied into Dir, readable only by the server's user;
	// ReloadTLS picks up new ones.
	TLS *TLSFiles
}

// TLSFiles are the PEM files of the server certificate and its key.
type TLSFiles struct {
	CertFile, KeyFile string
}

// Server is a running cluster.
type Server struct {
	Port    int
	Dir     string
	LogPath string
	// Secure reports a locked-down cluster (Options.TLS or Options.SocketOnly).
	Secure bool
	// SocketOnly reports a cluster without a TCP port (Options.SocketOnly).
	SocketOnly bool

	tls  *TLSFiles
	sock string
	cred *syscall.Credential
	// bin and args start the postmaster again on the same data directory (Restart).
	bin  string
	args []string

	live // the current postmaster, which Restart replaces
}

// BinDir finds the directory of the system's PostgreSQL server binaries.
func BinDir() (string, error) {
	if d := os.Getenv("OPENHCP_PG_BINDIR"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found: run 'make deps' or apt-get install postgresql")
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initialises a new cluster in o.Dir and starts it. Under root the server runs as the
// "postgres" user, because PostgreSQL refuses to run as root.
func Start(ctx context.Context, o Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	if o.Port == 0 {
		if o.Port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if o.LogPath == "" {
		o.LogPath = filepath.Join(o.Dir, "postgres.log")
	}
	data := filepath.Join(o.Dir, "data")
	sock := filepath.Join(o.Dir, "sock")
	if err := sockdir.Fits(sock, socketName(o.Port)); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", o.Dir, err)
	}
	// The socket is the superuser's only way in: nobody but the server's user (and root) may
	// reach it (a 0700 directory, internal/sockdir).
	if err := sockdir.At(sock, socketName(o.Port)); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	secure := o.TLS != nil || o.SocketOnly
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		for _, d := range []string{o.Dir, sock} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, fmt.Errorf("chown %s to postgres: %w", d, err)
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb %s: %w: %s", data, err, out)
	}
	s := &Server{Port: o.Port, Dir: o.Dir, LogPath: o.LogPath, Secure: secure, SocketOnly: o.SocketOnly, tls: o.TLS, sock: sock, cred: cred}
	listen := "127.0.0.1"
	if o.SocketOnly {
		listen = ""
	}
	args := []string{"-D", data, "-p", strconv.Itoa(o.Port),
		"-c", "listen_addresses=" + listen, "-c", "unix_socket_directories=" + sock,
		// Only the server's user may use the socket; the directory (0700) is the door.
		"-c", "unix_socket_permissions=0700",
		// fsync off and a small footprint: this cluster is throwaway by design, and a crash of
		// the machine may lose it. A crash of the server alone must not lose a commit, though
		// (chaos tests kill it): synchronous_commit stays on, so a commit is in the kernel's
		// page cache before it is acknowledged, where a killed postmaster cannot lose it.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB",
		// A connection that has not logged in within loginTimeout is closed. PostgreSQL forks a
		// process per connection before it reads anything, and those count against its limit of
		// children: with its default of a minute, about 900 silent sockets from any local
		// process (no credential needed) made every service's next login "sorry, too many
		// clients already" (a probe). PgBouncer has the same timeout (bouncerConfig).
		"-c", "authentication_timeout=" + strconv.Itoa(loginTimeoutSeconds) + "s"}
	if secure {
		if err := s.lockDown(data); err != nil {
			return nil, err
		}
		args = append(args, "-c", "password_encryption=scram-sha-256")
	}
	if o.TLS != nil {
		args = append(args, "-c", "ssl=on",
			"-c", "ssl_cert_file="+s.tlsPath("server.crt"), "-c", "ssl_key_file="+s.tlsPath("server.key"),
			"-c", "ssl_min_protocol_version=TLSv1.2")
	}
	s.bin, s.args = filepath.Join(bin, "postgres"), args
	if err := s.startPostmaster(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// startPostmaster execs the postmaster on the data directory and waits until it accepts
// connections.
func (s *Server) startPostmaster(ctx context.Context) error {
	run, err := spawnLogged("postgres", s.LogPath, s.cred, s.bin, s.args...)
	if err != nil {
		return err
	}
	s.set(run)
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.Stop()
		return err
	}
	return nil
}

// Restart starts the postmaster again on the same data directory, port and configuration once
// it has exited (a crash, Kill or Stop), and waits until it accepts connections; clients
// reconnect as they would after a database failover. It is an error while it still runs.
func (s *Server) Restart(ctx context.Context) error {
	return s.current().startAgain(ctx, "postgres", s.startPostmaster)
}

// Kill ends the postmaster and every backend with SIGKILL, as a crash of the database host
// would, waits until they have all exited, and returns the PID of the postmaster it killed.
// Each backend leads a process group of its own (PostgreSQL calls setsid in every child), so
// they are found by parent and killed one by one: a backend left alive would hold the shared
// memory, and a new postmaster would refuse to start beside it.
func (s *Server) Kill() int {
	run := s.current()
	pid, done := run.pid(), run.done
	children := childPIDs(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	<-done
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := false
		for _, c := range children {
			alive = alive || running(c)
		}
		if !alive {
			break
		}
	}
	return pid
}

// childPIDs are the processes whose parent is pid (from /proc).
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(n); ok && ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// running reports whether pid exists and is not a zombie (a zombie holds no memory; in a
// container without an init that reaps, orphans stay zombies).
func running(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads the parent PID and state of pid from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	st, err := procstat.Read(pid)
	return st.PPID, st.State, err == nil
}

// socketName is the name of a PostgreSQL (or PgBouncer) socket for port in its directory.
func socketName(port int) string { return ".s.PGSQL." + strconv.Itoa(port) }

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres user (apt-get install postgresql): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.Done():
			return fmt.Errorf("postgres exited during start-up; log %s:\n%s", s.LogPath, tail(s.LogPath))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		c, err := pgx.Connect(ctx, s.AdminDSN("postgres"))
		if err == nil {
			c.Close(ctx)
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("postgres not ready after %s: %v", timeout, last)
}

// DSN is the superuser's TCP connection string for database db. A secure cluster refuses it
// (no TLS, and the superuser has no password); use AdminDSN there.
func (s *Server) DSN(db string) string {
	if s.SocketOnly {
		return s.AdminDSN(db)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// AdminDSN is the superuser's connection string for database db: over the Unix socket for a
// secure cluster, else DSN. Only the launcher uses it, to create roles and databases.
func (s *Server) AdminDSN(db string) string {
	if !s.Secure {
		return s.DSN(db)
	}
	return fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=postgres", db, s.sock, s.Port)
}

// CreateDatabase creates db unless it exists, and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context, db string) (string, error) {
	c, err := pgx.Connect(ctx, s.AdminDSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect to postgres: %w", err)
	}
	defer c.Close(ctx)
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return "", fmt.Errorf("check database %s: %w", db, err)
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			return "", fmt.Errorf("create database %s: %w", db, err)
		}
	}
	return s.DSN(db), nil
}

// SocketDir is the directory of the server's Unix socket (.s.PGSQL.<Port>).
func (s *Server) SocketDir() string { return s.sock }

// Stop shuts the server down (fast shutdown), killing it after 10 s.
func (s *Server) Stop() {
	s.current().stop(syscall.SIGINT)
}

// live holds the current run of a server's process (the postmaster, the pgbouncer), which a
// restart replaces.
type live struct {
	mu  sync.Mutex
	run *proc
}

func (r *live) current() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.run
}

func (r *live) set(p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run = p
}

// PID of the current process (after a Restart, the new one).
func (r *live) PID() int { return r.current().pid() }

// Done is closed when the current process has exited.
func (r *live) Done() <-chan struct{} { return r.current().done }

// proc is one run of a server's process (PostgreSQL's postmaster, a pgbouncer).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited, after err is set
	err  error         // how it exited
}

// spawnLogged execs bin as cred in a process group of its own that ends with its parent
// (Pdeathsig), its output appended to logPath; what names it in errors.
func spawnLogged(what, logPath string, cred *syscall.Credential, bin string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", what, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := spawn.Start(cmd); err != nil { // internal/spawn: Pdeathsig follows the forking thread
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// startAgain runs start once p has exited (a crash, or a stop); what names the server in errors.
func (p *proc) startAgain(ctx context.Context, what string, start func(context.Context) error) error {
	select {
	case <-p.done:
	default:
		return fmt.Errorf("restart %s (pid %d): it is still running", what, p.pid())
	}
	if err := start(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", what, err)
	}
	return nil
}

// exitErr is how it exited: nil while it runs.
func (p *proc) exitErr() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// stop sends sig to the process and waits until it has exited, killing its whole process group
// after 10 s.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}
