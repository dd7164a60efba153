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

	"google.golang.org/grpc"

	"github.com/openhcp/openhcp/backend/pkg/monitor"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
	csserver "github.com/openhcp/openhcp/cluster-service/pkg/server"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestRunServesTheFleetsHealth runs the command's wiring against a real Cluster Service and
// document store: /metrics soon shows the registered shard's capacity and every bucket held.
func TestRunServesTheFleetsHealth(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pg := pgservertest.Start(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := csstore.Open(ctx, pgservertest.NewDatabase(t, pg), log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	srv := csserver.New(db, csserver.Config{KeepAlive: time.Second, Log: log})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(func() { srv.Drain(); g.Stop() })
	if _, err := db.RegisterShard(ctx, placement.Shard{Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 7}); err != nil {
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
		clusterService: l.Addr().String(),
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
