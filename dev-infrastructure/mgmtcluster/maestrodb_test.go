package mgmtcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMaestroDBFiles: the pinned Maestro builds its DSN from db.* files ("host=%s port=%d ..."),
// and pgx and lib/pq take a host that starts with "/" for a Unix socket's directory. A socket
// DSN (postgres://user@/db?host=/dir&port=N) gives that directory as the host, sslmode=disable
// (lib/pq, Maestro's LISTEN connection, would ask a socket for TLS) and needs no forward out
// of the server's network namespace; a TCP DSN keeps its host, port and TLS.
func TestMaestroDBFiles(t *testing.T) {
	for _, tc := range []struct {
		name, dsn                          string
		host, port, db, user, sslmode, fwd string
		wantErr                            string
	}{
		{name: "unix_socket", dsn: "postgres://maestro@/maestro?host=%2Frun%2Fpg%2Fsock&port=6432",
			host: "/run/pg/sock", port: "6432", db: "maestro", user: "maestro", sslmode: "disable"},
		{name: "tcp_with_tls", dsn: "postgres://maestro@127.0.0.1:6432/maestro?sslmode=verify-full&sslrootcert=%2Fca.crt",
			host: "127.0.0.1", port: "6432", db: "maestro", user: "maestro", sslmode: "verify-full", fwd: "127.0.0.1:6432"},
		{name: "socket_path_with_a_space_refused", dsn: "postgres://maestro@/maestro?host=%2Fa+b&port=1", wantErr: "space"},
		{name: "no_host_refused", dsn: "postgres://maestro@/maestro", wantErr: "host, user and database are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			flags, err := writeMaestroDBFiles(dir, tc.dsn, "pw")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"db.host": tc.host, "db.port": tc.port, "db.name": tc.db, "db.user": tc.user} {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != want {
					t.Errorf("%s = %q, want %q", name, b, want)
				}
			}
			if !slices.Contains(flags, "--db-sslmode="+tc.sslmode) {
				t.Errorf("flags %v, want --db-sslmode=%s", flags, tc.sslmode)
			}
			fwd, err := dsnAddr(tc.dsn)
			if err != nil || fwd != tc.fwd {
				t.Errorf("forward %q, %v; want %q", fwd, err, tc.fwd)
			}
		})
	}
}
