package tlsconfig

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
)

func TestRequireDatabaseTLS(t *testing.T) {
	p, err := pki.Create(filepath.Join(t.TempDir(), "pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ca := p.CAFile
	tests := []struct {
		name, dsn, wantErr string
	}{
		{"loopback_plaintext_allowed", "postgres://u@127.0.0.1:5432/db?sslmode=disable", ""},
		{"localhost_default_allowed", "postgres://u@localhost/db", ""},
		{"unix_socket_allowed", "host=/var/run/postgresql dbname=db user=u", ""},
		{"remote_verify_full_allowed", "postgres://u@db.example.com/db?sslmode=verify-full&sslrootcert=" + ca, ""},
		{"remote_verify_ca_allowed", "postgres://u@db.example.com/db?sslmode=verify-ca&sslrootcert=" + ca, ""},
		{"remote_disable_refused", "postgres://u@db.example.com/db?sslmode=disable", "db.example.com"},
		{"remote_default_prefer_refused", "postgres://u@10.0.0.5/db", "verify-full"},
		{"remote_require_without_root_refused", "postgres://u@db.example.com/db?sslmode=require", "verify-full"},
		{"remote_allow_refused", "postgres://u@db.example.com/db?sslmode=allow", "verify-full"},
		{"plaintext_fallback_host_refused", "postgres://u@127.0.0.1,db.example.com/db?sslmode=disable", "db.example.com"},
		{"password_not_repeated", "postgres://u:hunter2-secret@db.example.com/db?sslmode=bogus", "parse database DSN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := RequireDatabaseTLS(tc.dsn)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("RequireDatabaseTLS = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("RequireDatabaseTLS = %v, want an error containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2-secret") {
				t.Fatalf("the error repeats the password: %v", err)
			}
		})
	}
}
