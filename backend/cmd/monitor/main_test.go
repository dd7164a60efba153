package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/backend/pkg/monitor"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestParseFlags(t *testing.T) {
	dsn := "postgres://monitor@127.0.0.1/resourceprovider"
	for _, tc := range []struct {
		name         string
		args         []string
		env          map[string]string
		wantErr      string
		wantInterval time.Duration
		wantHosted   bool
	}{
		{name: "defaults_with_a_store_are_valid", args: []string{"--db-dsn", dsn}, wantInterval: 30 * time.Second, wantHosted: true},
		{name: "store_and_interval_from_the_environment", env: map[string]string{"MONITOR_DB_DSN": dsn, "MONITOR_INTERVAL": "5s"}, wantInterval: 5 * time.Second, wantHosted: true},
		{name: "flag_overrides_the_environment", args: []string{"--db-dsn", dsn, "--interval", "2s"}, env: map[string]string{"MONITOR_INTERVAL": "5s"}, wantInterval: 2 * time.Second, wantHosted: true},
		{name: "hosted_apiserver_probes_can_be_switched_off", args: []string{"--db-dsn", dsn, "--probe-hosted-apiservers=false"}, wantInterval: 30 * time.Second},
		{name: "no_store_names_the_flag", wantErr: "--db-dsn"},
		{name: "bad_duration_from_the_environment_names_flag_and_variable", args: []string{"--db-dsn", dsn}, env: map[string]string{"MONITOR_STALE_AFTER": "soon"}, wantErr: "--stale-after from MONITOR_STALE_AFTER"},
		{name: "too_many_buckets", args: []string{"--db-dsn", dsn, "--buckets", "2000"}, wantErr: "--buckets"},
		{name: "short_lease", args: []string{"--db-dsn", dsn, "--lease-duration", "1s"}, wantErr: "--lease-duration"},
		{name: "short_interval", args: []string{"--db-dsn", dsn, "--interval", "10ms"}, wantErr: "--interval"},
		{name: "bad_shard_probe", args: []string{"--db-dsn", dsn, "--shard-probe", "mgmt-1"}, wantErr: "shard-probe"},
		{name: "positional_arguments_are_refused", args: []string{"--db-dsn", dsn, "extra"}, wantErr: "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseFlags(tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseFlags: %v", err)
				}
				if f.store.DSN != dsn || f.interval != tc.wantInterval || f.share.Buckets != 16 || f.share.LeaseDuration != 15*time.Second || f.clusterService != "127.0.0.1:8090" || f.probeHosted != tc.wantHosted {
					t.Errorf("flags %+v, want the DSN, interval %s and the defaults", f, tc.wantInterval)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseFlags: %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestRunServesTheFleetsHealth runs the command's wiring against a real Cluster Service and
// document store: /metrics soon shows the registered shard's capacity and every bucket held.
func TestRunServesTheFleetsHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pg := pgservertest.Start(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cs := servertest.Start(t, pg)
	if _, err := cs.Store.RegisterShard(ctx, placement.Shard{Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 7}); err != nil {
		t.Fatal(err)
	}
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ml.Addr().String()
	ml.Close()

	f := flags{
		store:          storeconfig.Flags{Backend: storeconfig.Postgres, DSN: pgservertest.NewDatabase(t, pg)},
		clusterService: cs.Addr,
		metricsListen:  metricsAddr,
		share:          monitor.ShareConfig{Holder: "m1", Buckets: 4, LeaseDuration: 2 * time.Second},
		interval:       200 * time.Millisecond,
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, f, log) }()
	deadline := time.Now().Add(30 * time.Second)
	var body string
	for {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, `monitor_shard_max_clusters{shard="mgmt-1"} 7`) && strings.Contains(body, "monitor_buckets_held 4") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed mgmt-1's capacity and 4 buckets held: %v\n%s", err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
