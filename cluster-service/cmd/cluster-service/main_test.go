package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/envelope"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"

	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

func TestParseConfig(t *testing.T) {
	base := []string{"--db-dsn", "postgres://127.0.0.1/x", "--secret-kek-file", "kek", "--maestro-grpc", "127.0.0.1:8090", "--maestro-rest", "http://127.0.0.1:8000"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // substring naming the flag; empty = valid
		check   func(t *testing.T, c config)
	}{
		{name: "defaults", args: base, check: func(t *testing.T, c config) {
			if c.listen != "127.0.0.1:8090" || c.envName != "dev" || c.resyncPeriod != 5*time.Minute || c.workers != 4 || c.placementPolicy != (placement.LeastLoaded{}) || c.pollFeedbackOnly || c.fixedRepublishWait {
				t.Fatalf("config = %+v", c)
			}
		}},
		{name: "env_fallback", args: base, env: map[string]string{"CLUSTER_SERVICE_ENV_NAME": "int", "CLUSTER_SERVICE_RESYNC_PERIOD": "30s"},
			check: func(t *testing.T, c config) {
				if c.envName != "int" || c.resyncPeriod != 30*time.Second {
					t.Fatalf("config = %+v", c)
				}
			}},
		{name: "flag_beats_env", args: append([]string{"--env-name", "stage"}, base...), env: map[string]string{"CLUSTER_SERVICE_ENV_NAME": "int"},
			check: func(t *testing.T, c config) {
				if c.envName != "stage" {
					t.Fatalf("env name = %q", c.envName)
				}
			}},
		{name: "missing_dsn", args: []string{"--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2"}, wantErr: "--db-dsn"},
		{name: "missing_maestro", args: []string{"--db-dsn", "postgres://127.0.0.1/x", "--secret-kek-file", "kek"}, wantErr: "--maestro-grpc"},
		{name: "plaintext_to_remote_database_refused", args: []string{"--db-dsn", "postgres://db.example.com/cs?sslmode=disable", "--secret-kek-file", "kek", "--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2"}, wantErr: "--db-dsn"},
		{name: "missing_kek", args: []string{"--db-dsn", "postgres://127.0.0.1/x", "--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2"}, wantErr: "--secret-kek-file"},
		{name: "bad_resync", args: append([]string{"--resync-period", "often"}, base...), wantErr: "--resync-period"},
		{name: "bad_resync_env", args: base, env: map[string]string{"CLUSTER_SERVICE_RESYNC_PERIOD": "10ms"}, wantErr: "--resync-period"},
		{name: "bad_retention", args: append([]string{"--tombstone-retention", "5s"}, base...), wantErr: "--tombstone-retention"},
		{name: "bad_workers", args: append([]string{"--workers", "0"}, base...), wantErr: "--workers"},
		{name: "feedback_poll_only", args: append([]string{"--feedback-watch=false"}, base...), check: func(t *testing.T, c config) {
			if !c.pollFeedbackOnly {
				t.Fatalf("pollFeedbackOnly = false with --feedback-watch=false")
			}
		}},
		{name: "secrets_read_live", args: append([]string{"--watch-secrets=false"}, base...), check: func(t *testing.T, c config) {
			if !c.readSecretsLive {
				t.Fatalf("readSecretsLive = false with --watch-secrets=false")
			}
		}},
		{name: "republish_fixed_wait", args: append([]string{"--republish-adaptive=false"}, base...), check: func(t *testing.T, c config) {
			if !c.fixedRepublishWait {
				t.Fatalf("fixedRepublishWait = false with --republish-adaptive=false")
			}
		}},
		{name: "status_from_maestro_only", args: append([]string{"--status-from-watch=false"}, base...), check: func(t *testing.T, c config) {
			if !c.statusFromMaestroOnly {
				t.Fatalf("statusFromMaestroOnly = false with --status-from-watch=false")
			}
		}},
		{name: "status_from_watch_default", args: base, check: func(t *testing.T, c config) {
			if c.statusFromMaestroOnly {
				t.Fatalf("statusFromMaestroOnly = true by default")
			}
		}},
		{name: "status_events_in_order", args: append([]string{"--status-events-first=false"}, base...), check: func(t *testing.T, c config) {
			if !c.statusEventsInOrder {
				t.Fatalf("statusEventsInOrder = false with --status-events-first=false")
			}
		}},
		{name: "status_events_first_default", args: base, check: func(t *testing.T, c config) {
			if c.statusEventsInOrder || c.readBeforeWrite || c.pipelinedWrites || c.pollFeedbackOnly || c.fixedRepublishWait || c.resyncAtOnce || c.readSecretsLive {
				t.Fatalf("a baseline flag is on by default: %+v", c)
			}
		}},
		{name: "bad_status_events_first", args: append([]string{"--status-events-first", "soon"}, base...), wantErr: "--status-events-first"},
		{name: "resync_at_once", args: append([]string{"--resync-spread=false"}, base...), check: func(t *testing.T, c config) {
			if !c.resyncAtOnce {
				t.Fatalf("resyncAtOnce = false with --resync-spread=false")
			}
		}},
		{name: "resync_at_once_env", args: base, env: map[string]string{"CLUSTER_SERVICE_RESYNC_SPREAD": "false"}, check: func(t *testing.T, c config) {
			if !c.resyncAtOnce {
				t.Fatalf("resyncAtOnce = false with CLUSTER_SERVICE_RESYNC_SPREAD=false")
			}
		}},
		{name: "bad_resync_spread", args: append([]string{"--resync-spread", "wide"}, base...), wantErr: "--resync-spread"},
		{name: "maestro_read_before_write", args: append([]string{"--maestro-read-before-write=true"}, base...), check: func(t *testing.T, c config) {
			if !c.readBeforeWrite {
				t.Fatalf("readBeforeWrite = false with --maestro-read-before-write=true")
			}
		}},
		{name: "bad_maestro_read_before_write", args: append([]string{"--maestro-read-before-write", "twice"}, base...), wantErr: "--maestro-read-before-write"},
		{name: "store_pipelined_writes", args: append([]string{"--store-pipelined-writes=true"}, base...), check: func(t *testing.T, c config) {
			if !c.pipelinedWrites {
				t.Fatalf("pipelinedWrites = false with --store-pipelined-writes=true")
			}
		}},
		{name: "bad_store_pipelined_writes", args: append([]string{"--store-pipelined-writes", "maybe"}, base...), wantErr: "--store-pipelined-writes"},
		{name: "bad_status_from_watch", args: append([]string{"--status-from-watch", "often"}, base...), wantErr: "--status-from-watch"},
		{name: "bad_republish_adaptive", args: append([]string{"--republish-adaptive", "maybe"}, base...), wantErr: "--republish-adaptive"},
		{name: "bad_feedback_watch", args: append([]string{"--feedback-watch", "sometimes"}, base...), wantErr: "--feedback-watch"},
		{name: "bad_env_name", args: append([]string{"--env-name", "Prod_1"}, base...), wantErr: "--env-name"},
		{name: "bad_dev_identity", args: append([]string{"--dev-workload-identity-client-id", "abc"}, base...), wantErr: "--dev-workload-identity-client-id"},
		{name: "base_domain_and_issuer_defaults", args: base, check: func(t *testing.T, c config) {
			if c.baseDomain != "hypershift.local" || c.oidcIssuerBaseURL != "https://oidc.hypershift.local" {
				t.Fatalf("base domain %q, issuer base %q", c.baseDomain, c.oidcIssuerBaseURL)
			}
		}},
		{name: "base_domain_env", args: base, env: map[string]string{"CLUSTER_SERVICE_BASE_DOMAIN": "westus3.example.com"}, check: func(t *testing.T, c config) {
			if c.baseDomain != "westus3.example.com" {
				t.Fatalf("base domain %q", c.baseDomain)
			}
		}},
		{name: "bad_base_domain", args: append([]string{"--base-domain", "Example.COM"}, base...), wantErr: "--base-domain"},
		{name: "single_label_base_domain", args: append([]string{"--base-domain", "local"}, base...), wantErr: "--base-domain"},
		{name: "http_issuer_refused", args: append([]string{"--oidc-issuer-base-url", "http://oidc.example.com"}, base...), wantErr: "--oidc-issuer-base-url"},
		{name: "bad_log_level", args: append([]string{"--log-level", "loud"}, base...), wantErr: "--log-level"},
		{name: "bad_listen", args: append([]string{"--listen", "8090"}, base...), wantErr: "--listen"},
		{name: "plaintext_on_public_listen_refused", args: append([]string{"--listen", "0.0.0.0:8090"}, base...), wantErr: "--listen"},
		{name: "plaintext_to_remote_maestro_refused", args: []string{"--db-dsn", "postgres://127.0.0.1/x", "--secret-kek-file", "kek", "--maestro-grpc", "maestro.example.com:8090", "--maestro-rest", "http://127.0.0.1:8000"}, wantErr: "--maestro-grpc"},
		{name: "plaintext_to_remote_maestro_rest_refused", args: []string{"--db-dsn", "postgres://127.0.0.1/x", "--secret-kek-file", "kek", "--maestro-grpc", "127.0.0.1:8090", "--maestro-rest", "http://maestro.example.com:8000"}, wantErr: "--maestro-rest"},
		{name: "tls_key_without_cert", args: append([]string{"--listen", "0.0.0.0:8090", "--tls-key", "k.pem"}, base...), wantErr: "--tls-cert"},
		{name: "spread_by_zone", args: append([]string{"--placement-policy", "spread:zone"}, base...), check: func(t *testing.T, c config) {
			if c.placementPolicy != (placement.SpreadByLabel{Key: "zone"}) {
				t.Fatalf("policy = %#v", c.placementPolicy)
			}
		}},
		{name: "bad_placement_policy", args: append([]string{"--placement-policy", "random"}, base...), wantErr: "--placement-policy"},
		{name: "unknown_flag", args: append([]string{"--nope"}, base...), wantErr: "-nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// kekFile writes a fresh key-encryption key file (0600) for a binary under test.
func kekFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kek")
	if _, err := envelope.WriteKeyFile(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestBinary builds and runs the real binary against a real database. Maestro is not running:
// the client connects lazily, so the API must work and shutdown must be clean without it.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "cluster-service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	listen, metrics := freeAddr(t), freeAddr(t)
	kek := kekFile(t)

	t.Run("bad_flag_stops_start_up_naming_it", func(t *testing.T) {
		out, err := exec.Command(bin, "--db-dsn", dsn, "--secret-kek-file", kek, "--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2", "--resync-period", "x").CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !bytes.Contains(out, []byte("--resync-period")) {
			t.Fatalf("err %v, output %s", err, out)
		}
	})
	t.Run("readable_kek_file_stops_start_up_naming_it", func(t *testing.T) {
		loose := filepath.Join(t.TempDir(), "kek")
		if _, err := envelope.WriteKeyFile(loose); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(loose, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--listen", freeAddr(t), "--metrics-listen", freeAddr(t), "--db-dsn", dsn, "--secret-kek-file", loose,
			"--maestro-grpc", "127.0.0.1:1", "--maestro-rest", "http://127.0.0.1:2").CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("--secret-kek-file")) || !bytes.Contains(out, []byte("chmod 600")) {
			t.Fatalf("err %v, output %s", err, out)
		}
	})

	var logs bytes.Buffer
	cmd := exec.Command(bin, "--listen", listen, "--metrics-listen", metrics, "--db-dsn", dsn, "--secret-kek-file", kek,
		"--maestro-grpc", freeAddr(t), "--maestro-rest", "http://"+freeAddr(t), "--shutdown-timeout", "5s")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	// The port opens only after migrations, so the first call must succeed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not listening after 60s; logs:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn, err := grpc.NewClient(listen, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := csv1.NewProvisionShardsClient(conn).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "mc-1", MaxClusters: 3}}); err != nil {
		t.Fatalf("RegisterShard: %v\n%s", err, logs.String())
	}
	watch, err := csv1.NewClustersClient(conn).WatchClusters(ctx, &csv1.WatchClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := watch.Recv(); err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
		t.Fatalf("first event %v, %v", ev, err)
	}
	// The NodePools service is served too.
	poolWatch, err := csv1.NewNodePoolsClient(conn).WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := poolWatch.Recv(); err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
		t.Fatalf("first node pool event %v, %v", ev, err)
	}

	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`cluster_service_shard_capacity_left{shard="mc-1"} 3`, `cluster_service_grpc_requests_total{code="OK",method="/openhcp.clusterservice.v1.ProvisionShards/RegisterShard"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %s:\n%s", want, body)
		}
	}
	if resp, err := http.Get("http://" + metrics + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}

	// SIGTERM with an open watch: the process ends promptly and cleanly.
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("still running 15s after SIGTERM\n%s", logs.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v (watch not drained?)", d)
	}
	if _, err := watch.Recv(); err == nil {
		t.Fatal("watch still open after shutdown")
	}
}
