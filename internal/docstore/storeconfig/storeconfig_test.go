package storeconfig

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func parse(t *testing.T, args []string, env map[string]string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f Flags
	f.Register(fs, "SVC", func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return &f
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		backend string
		wantErr string
	}{
		{"postgres_is_the_default", []string{"--db-dsn=postgres://127.0.0.1/x"}, nil, Postgres, ""},
		{"remote_postgres_without_verified_tls_names_the_flag", []string{"--db-dsn=postgres://db.example.com/x?sslmode=require"}, nil, "", "--db-dsn: database host db.example.com is not loopback"},
		{"postgres_needs_a_dsn", nil, nil, "", "--db-dsn is required (or set SVC_DB_DSN)"},
		{"unknown_store_names_the_flag", []string{"--store=mongo"}, nil, "", `invalid value "mongo" for --store: use postgres or cosmos`},
		{"store_from_env", nil, map[string]string{"SVC_STORE": "cosmos", "SVC_COSMOS_ENDPOINT": "https://a.documents.azure.com:443/"}, Cosmos, ""},
		{"cosmos_needs_an_endpoint", []string{"--store=cosmos"}, nil, "", "--cosmos-endpoint is required with --store=cosmos (or set SVC_COSMOS_ENDPOINT)"},
		{"cosmos_key_credential_needs_a_key", []string{"--store=cosmos", "--cosmos-endpoint=https://a/", "--cosmos-credential=key"}, nil, "", "--cosmos-credential=key needs --cosmos-key"},
		{"cosmos_bad_credential", []string{"--store=cosmos", "--cosmos-endpoint=https://a/", "--cosmos-credential=password"}, nil, "", `invalid value "password" for --cosmos-credential`},
		{"cosmos_key_from_env", []string{"--store=cosmos", "--cosmos-endpoint=https://a/", "--cosmos-credential=key"}, map[string]string{"SVC_COSMOS_KEY": "k"}, Cosmos, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := parse(t, tc.args, tc.env)
			err := f.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if f.Backend != tc.backend {
					t.Fatalf("backend = %q, want %q", f.Backend, tc.backend)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestOpenRefusesBadFlagsBeforeConnecting(t *testing.T) {
	f := parse(t, []string{"--store=sqlite"}, nil)
	_, err := f.Open(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("open = %v, want an error naming --store", err)
	}
}

func TestOpenCosmosReportsUnreachableEndpoint(t *testing.T) {
	f := parse(t, []string{"--store=cosmos", "--cosmos-endpoint=http://127.0.0.1:1/", "--cosmos-key=a2V5"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20e9)
	defer cancel()
	_, err := f.Open(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "--cosmos-endpoint http://127.0.0.1:1/") {
		t.Fatalf("open = %v, want an error naming --cosmos-endpoint", err)
	}
}

// The store Open returns is a wrapper (it adds Ping); it must not hide what the store it wraps
// implements beyond docstore.Store, or the frontend's list loses its heads query.
func TestOpenedPostgresIsAHeadQuerier(t *testing.T) {
	f := parse(t, []string{"--store=postgres", "--db-dsn=" + pgservertest.NewDatabase(t, pg.Get(t))}, nil)
	st, err := f.Open(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, ok := docstore.HeadsOf(st); !ok {
		t.Fatalf("docstore.HeadsOf(%T) finds no HeadQuerier", st)
	}
}

var pg pgservertest.Shared

func TestMain(m *testing.M) { pg.Main(m) }
