package pgserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// floodEnv names the doors (network:address, comma-separated) a re-executed test binary floods
// (TestFloodHelper).
const floodEnv = "PGSERVER_TEST_FLOOD"

// floodReport is what the flood says when it ends: how many connections it opened, and its
// dial errors by text.
type floodReport struct {
	Opened int64
	Errors map[string]int64
}

// TestFloodHelper is not a test: run as another OS user by flood, it opens silent connections
// to each door in floodEnv for a few seconds and reopens each one as soon as the server closes
// it (a probe's reconnecting flood, about a thousand at once), then prints a floodReport.
func TestFloodHelper(t *testing.T) {
	doors := os.Getenv(floodEnv)
	if doors == "" {
		t.Skip("run by flood only")
	}
	var opened atomic.Int64
	var mu sync.Mutex
	errs := map[string]int64{}
	// Cancelled, not timed out: a dial cut short by the end then fails only after ctx.Err is set.
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(8*time.Second, cancel).Stop()
	var wg sync.WaitGroup
	fmt.Println("flooding")
	for _, door := range strings.Split(doors, ",") {
		network, addr, _ := strings.Cut(door, ":")
		for range 1000 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var d net.Dialer
				for ctx.Err() == nil {
					c, err := d.DialContext(ctx, network, addr)
					if err != nil {
						if ctx.Err() == nil {
							msg := err.Error()
							if i := strings.LastIndex(msg, ": "); i >= 0 {
								msg = msg[i+2:]
							}
							mu.Lock()
							errs[msg]++
							mu.Unlock()
						}
						select {
						case <-ctx.Done():
						case <-time.After(50 * time.Millisecond):
						}
						continue
					}
					opened.Add(1)
					stop := context.AfterFunc(ctx, func() { c.Close() })
					_, _ = io.Copy(io.Discard, c) // silent until the server closes it
					stop()
					c.Close()
				}
			}()
		}
	}
	wg.Wait()
	b, _ := json.Marshal(floodReport{Opened: opened.Load(), Errors: errs})
	fmt.Printf("report %s\n", b)
}

// flood runs TestFloodHelper as the OS user "nobody" against doors while during runs, and
// returns its report. The test binary is copied where nobody may run it.
func flood(t *testing.T, doors []string, during func()) floodReport {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a flood as another user needs root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "openhcp-pg-flood-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "flood.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestFloodHelper$", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{floodEnv + "=" + strings.Join(doors, ","), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "flooding" {
	}
	during()
	var rep floodReport
	found := false
	for lines.Scan() {
		if j, ok := strings.CutPrefix(lines.Text(), "report "); ok {
			if err := json.Unmarshal([]byte(j), &rep); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flood: %v", err)
	}
	if !found {
		t.Fatal("the flood printed no report")
	}
	return rep
}

// TestAnotherUsersFloodLeavesServiceLoginsWorking: PostgreSQL forks a backend for every
// connection before it reads a byte and has no limit per source, so an unprivileged local
// process that reopened each silent socket at once (about 180 a second against the 5 s login
// timeout) made 5 of 6 service logins fail "sorry, too many clients already" (a probe). With
// no TCP port and the socket in a directory only the server's user (and root, the services'
// user) may enter, the flood, as "nobody", opens nothing and every login works, straight or
// through the bouncer (which has no TCP port either).
func TestAnotherUsersFloodLeavesServiceLoginsWorking(t *testing.T) {
	c := startSecureWith(t, true)
	b := startBouncer(t, c)
	// Every door there was: PostgreSQL's and the bouncer's TCP ports (now closed) and sockets.
	doors := []string{"tcp:" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.pg.Port)),
		"unix:" + filepath.Join(c.pg.SocketDir(), ".s.PGSQL."+strconv.Itoa(c.pg.Port)),
		"tcp:" + net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)), "unix:" + b.SocketPath()}
	var failed []string
	logins := 0
	rep := flood(t, doors, func() {
		// Logins through the flood's 8 s, each with a 10 s deadline like a service's.
		for deadline := time.Now().Add(7 * time.Second); time.Now().Before(deadline); {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			conn, err := c.connect(ctx, "frontend", c.passwords["frontend"], "docs", "verify-full", c.pki.CAFile)
			if logins%2 == 1 {
				conn, err = connectVia(ctx, b, "othersvc", c.passwords["othersvc"], "other", "verify-full", c.pki.CAFile)
			}
			if err == nil {
				err = conn.Ping(ctx)
				conn.Close(ctx)
			}
			cancel()
			logins++
			if err != nil {
				failed = append(failed, err.Error())
			}
			time.Sleep(500 * time.Millisecond) // a service's pace, not a wait on a condition
		}
	})
	t.Logf("flood as nobody: %+v; %d service logins, %d failed", rep, logins, len(failed))
	if len(failed) > 0 {
		t.Errorf("%d of %d service logins failed during the flood, first: %s", len(failed), logins, failed[0])
	}
	if rep.Opened > 0 {
		t.Errorf("the flood, as nobody, opened %d connections to PostgreSQL", rep.Opened)
	}
	for msg := range rep.Errors {
		if !strings.Contains(msg, "connection refused") && !strings.Contains(msg, "permission denied") {
			t.Errorf("the flood failed with %q, want only connection refused (no port) or permission denied (the socket)", msg)
		}
	}
}

// TestSocketOnlyClusterAdmitsEachRoleToItsOwnDatabase: without a TCP port the refusals of a
// locked-down cluster hold over the Unix socket, straight and through the bouncer (SCRAM, each
// role to its own database, the bouncer's own logins only), and the superuser gets in only as
// the launcher's OS user (peer).
func TestSocketOnlyClusterAdmitsEachRoleToItsOwnDatabase(t *testing.T) {
	c := startSecureWith(t, true)
	b := startBouncer(t, c)
	ctx := context.Background()
	if _, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.pg.Port))); err == nil {
		t.Fatalf("PostgreSQL listens on TCP port %d", c.pg.Port)
	}
	if _, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))); err == nil {
		t.Fatalf("the bouncer listens on TCP port %d", b.Port)
	}
	for _, tc := range []struct {
		name, role, db, password, wantErr string
		viaBouncer                        bool
	}{
		{name: "wrong_password_refused", role: "frontend", db: "docs", password: "not-the-password-at-all", wantErr: "password authentication failed"},
		{name: "superuser_as_the_launcher_by_peer", role: "postgres", db: "postgres", password: "anything-at-all-xx"},
		{name: "role_refused_on_another_services_database", role: "frontend", db: "other", wantErr: "permission denied for database"},
		{name: "frontend_on_its_database", role: "frontend", db: "docs"},
		{name: "backend_on_the_shared_database", role: "backend", db: "docs"},
		{name: "bouncer_wrong_password_refused", role: "othersvc", db: "other", password: "not-the-password-at-all", wantErr: "SASL authentication failed", viaBouncer: true},
		{name: "bouncer_refuses_a_login_not_given_to_it", role: "backend", db: "docs", wantErr: "SASL authentication failed", viaBouncer: true},
		{name: "bouncer_refuses_a_database_not_given_to_it", role: "othersvc", db: "postgres", wantErr: "no such database", viaBouncer: true},
		{name: "othersvc_on_its_database_through_the_bouncer", role: "othersvc", db: "other", viaBouncer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pw := tc.password
			if pw == "" {
				pw = c.passwords[tc.role]
			}
			dsn := c.pg.RoleDSN(tc.role, tc.db, "")
			if tc.viaBouncer {
				dsn = b.RoleDSN(tc.role, tc.db, "")
			}
			conn, err := connectDSN(ctx, dsn, pw, "verify-full")
			if tc.role == "postgres" {
				// The launcher is root or postgres itself: peer lets it in as postgres whatever
				// the password, which is how the launcher creates roles; a service logs in as
				// its own role (the superuser has no password to steal).
				if err != nil {
					t.Fatalf("superuser over the socket as the launcher: %v", err)
				}
				conn.Close(ctx)
				return
			}
			if tc.wantErr != "" {
				if err == nil {
					conn.Close(ctx)
					t.Fatalf("connected; want an error containing %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var user string
			if err := conn.QueryRow(ctx, "SELECT session_user").Scan(&user); err != nil {
				t.Fatal(err)
			}
			if user != tc.role {
				t.Fatalf("session user %q, want %q", user, tc.role)
			}
		})
	}
}
