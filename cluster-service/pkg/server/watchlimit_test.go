package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestWatchesPerCallerAreBounded: a caller holding DefaultMaxWatchesPerCaller open watches has its
// next one refused ResourceExhausted, and counted; once it closes one, a new one is served.
// Before the bound, one caller's watches were limited only by its connections' stream limits.
// The test server runs without the authz interceptors, so its callers share the unidentified
// bound.
func TestWatchesPerCallerAreBounded(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cancels []context.CancelFunc
	// refused counts the refusals the server answered, each of which the metric must count: the
	// poll below may be refused again while the closed watch is being released.
	refused := 0
	open := func() (csv1.Clusters_WatchClustersClient, error) {
		wctx, wcancel := context.WithCancel(ctx)
		cancels = append(cancels, wcancel)
		w, err := e.clusters.WatchClusters(wctx, &csv1.WatchClustersRequest{})
		if err == nil {
			_, err = w.Recv() // the BOOKMARK of an empty snapshot, or the refusal
		}
		if status.Code(err) == codes.ResourceExhausted {
			refused++
		}
		return w, err
	}
	for i := range DefaultMaxWatchesPerCaller {
		if _, err := open(); err != nil {
			t.Fatalf("watch %d of %d: %v", i+1, DefaultMaxWatchesPerCaller, err)
		}
	}
	for _, tc := range []struct {
		name   string
		before func()
		want   codes.Code
	}{
		{"one_beyond_the_bound_is_resource_exhausted", nil, codes.ResourceExhausted},
		{"closing_one_makes_room", func() { cancels[0]() }, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			// A closed watch is released when its handler returns, soon after the cancel: poll.
			deadline := time.Now().Add(time.Minute)
			for {
				_, err := open()
				if status.Code(err) == tc.want {
					return
				}
				if tc.want == codes.OK && status.Code(err) == codes.ResourceExhausted && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				t.Fatalf("watch with %d open: %v, want %v", DefaultMaxWatchesPerCaller, err, tc.want)
			}
		})
	}
	want := fmt.Sprintf(`
# HELP cluster_service_watches_refused_total Watch streams refused because their caller identity held the most allowed open.
# TYPE cluster_service_watches_refused_total counter
cluster_service_watches_refused_total{caller="unidentified"} %d
`, refused)
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), "cluster_service_watches_refused_total"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cancels {
		c()
	}
}

// TestWatchLimiterCountsEachCallerApart: one caller at its bound leaves another's room alone, and
// a release given twice frees one watch only.
func TestWatchLimiterCountsEachCallerApart(t *testing.T) {
	w := newWatchLimiter(2)
	steps := []struct {
		name    string
		caller  string
		release int // release the watch acquired at this step index instead of acquiring; -1: acquire
		refused bool
	}{
		{"backend_first", "backend", -1, false},
		{"backend_second", "backend", -1, false},
		{"backend_third_refused", "backend", -1, true},
		{"frontend_unaffected", "frontend", -1, false},
		{"backend_releases_its_first", "backend", 0, false},
		{"backend_releases_its_first_again", "backend", 0, false},
		{"backend_one_more", "backend", -1, false},
		{"backend_still_bounded", "backend", -1, true},
	}
	releases := map[int]func(){}
	for i, s := range steps {
		if s.release >= 0 {
			releases[s.release]()
			continue
		}
		rel, err := w.acquire(s.caller)
		if (err != nil) != s.refused {
			t.Fatalf("%s: err %v, refused want %v", s.name, err, s.refused)
		}
		if err != nil && status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("%s: %v, want ResourceExhausted", s.name, err)
		}
		if rel != nil {
			releases[i] = rel
		}
	}
}

// TestHealthWatchesShareTheCallersBound: the health service's Watch streams count against the
// same per-caller bound as the model's watches. Before, a caller at the bound could still open
// health watches without limit (the 65th below was served).
func TestHealthWatchesShareTheCallersBound(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range DefaultMaxWatchesPerCaller {
		w, err := e.health.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv() // the current status
		}
		if err != nil {
			t.Fatalf("health watch %d of %d: %v", i+1, DefaultMaxWatchesPerCaller, err)
		}
	}
	for _, tc := range []struct {
		name string
		open func() error
	}{
		{"another_health_watch", func() error {
			w, err := e.health.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return err
			}
			_, err = w.Recv()
			return err
		}},
		{"a_model_watch", func() error {
			w, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{})
			if err != nil {
				return err
			}
			_, err = w.Recv()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.open(); status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("with %d health watches open: %v, want ResourceExhausted", DefaultMaxWatchesPerCaller, err)
			}
		})
	}
}
