package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRunRefusesPlaintextOffLoopback: without a server certificate the backend's metrics stay on
// loopback, and it reaches a non-loopback Cluster Service only over TLS. Each refusal
// names its flag and happens before anything is dialled or opened.
func TestRunRefusesPlaintextOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       flags
		wantErr string
	}{
		{"metrics_off_loopback", flags{metricsListen: "0.0.0.0:8081", clusterService: "127.0.0.1:8090"}, "--metrics-listen"},
		{"plaintext_to_remote_cluster_service", flags{metricsListen: "127.0.0.1:0", clusterService: "cs.example.com:8090"}, "--cluster-service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.f, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run = %v, want a refusal naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestRunRefusesBadNotificationFlags: the notification policy's knobs stop start-up, naming the
// flag, when they cannot be read.
func TestRunRefusesBadNotificationFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       flags
		wantErr string
	}{
		{"allow_list_with_host_bits", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyAllowedCIDRs: "127.0.0.1/8"}, "--notification-allowed-cidrs"},
		{"allow_list_with_a_name", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyAllowedCIDRs: "localhost"}, "--notification-allowed-cidrs"},
		{"ca_missing", flags{metricsListen: "127.0.0.1:0", clusterService: "127.0.0.1:8090", notifyCA: "/nonexistent/ca.crt"}, "--notification-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.f, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run = %v, want a refusal naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	dsn := "postgres://backend@127.0.0.1/resourceprovider"
	for _, tc := range []struct {
		name        string
		args        []string
		env         map[string]string
		wantErr     string
		wantWorkers int
		wantLeader  bool
	}{
		{name: "defaults_with_a_store_are_valid", args: []string{"--db-dsn", dsn}, wantWorkers: 4, wantLeader: true},
		{name: "workers_and_leader_election_from_the_environment", env: map[string]string{"BACKEND_DB_DSN": dsn, "BACKEND_WORKERS": "8", "BACKEND_LEADER_ELECT": "false"}, wantWorkers: 8},
		{name: "flags_override_the_environment", args: []string{"--db-dsn", dsn, "--workers", "2", "--leader-elect=true"}, env: map[string]string{"BACKEND_WORKERS": "8", "BACKEND_LEADER_ELECT": "false"}, wantWorkers: 2, wantLeader: true},
		{name: "no_store_names_the_flag", wantErr: "--db-dsn"},
		{name: "bad_workers_from_the_environment_names_flag_and_variable", args: []string{"--db-dsn", dsn}, env: map[string]string{"BACKEND_WORKERS": "four"}, wantErr: "--workers from BACKEND_WORKERS"},
		{name: "bad_duration_from_the_environment_names_flag_and_variable", args: []string{"--db-dsn", dsn}, env: map[string]string{"BACKEND_RESYNC_PERIOD": "soon"}, wantErr: "--resync-period from BACKEND_RESYNC_PERIOD"},
		{name: "unknown_status_mode", args: []string{"--db-dsn", dsn, "--status-mode", "push"}, wantErr: "--status-mode"},
		{name: "zero_workers", args: []string{"--db-dsn", dsn, "--workers", "0"}, wantErr: "--workers"},
		{name: "short_lease", args: []string{"--db-dsn", dsn, "--lease-duration", "1s"}, wantErr: "--lease-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseFlags(tc.args, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags: %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if f.store.DSN != dsn || f.cfg.Workers != tc.wantWorkers || f.leaderElect != tc.wantLeader || f.cfg.StatusMode != "watch" || f.cfg.ResyncPeriod != 30*time.Second {
				t.Errorf("flags %+v, want the DSN, %d workers, leader election %v and the defaults", f, tc.wantWorkers, tc.wantLeader)
			}
		})
	}
}
