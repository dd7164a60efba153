package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestRunRefusesPlaintextOffLoopback: the backend has no server certificate, so its metrics
// stay on loopback, and it reaches a non-loopback Cluster Service only over TLS. Each refusal
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
