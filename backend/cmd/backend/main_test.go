package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
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
