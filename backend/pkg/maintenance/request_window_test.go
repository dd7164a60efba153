package maintenance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore"
)

// unavailableClusterService is a fake of Cluster Service during an outage: every GetCluster
// answers Unavailable.
type unavailableClusterService struct{ ClusterService }

func (unavailableClusterService) GetCluster(context.Context, *csv1.GetClusterRequest, ...grpc.CallOption) (*csv1.Cluster, error) {
	return nil, status.Error(codes.Unavailable, "injected: Cluster Service is unavailable")
}

// unrecordingStore is a store whose writer stops after carrying a request out and before
// recording it: the next fails record creates fail.
type unrecordingStore struct {
	docstore.Store
	fails int
}

func (s *unrecordingStore) Create(ctx context.Context, d *docstore.Document) (*docstore.Document, error) {
	if d.Type == TypeRequestRecord && s.fails > 0 {
		s.fails--
		return nil, errors.New("injected: the consumer stopped before recording the request")
	}
	return s.Store.Create(ctx, d)
}

// TestWindowRequestsTakeEffectInTheOrderMade: set-window and clear-window requests for one
// cluster take effect in the order the admin API made them (their creation time): a request
// carried out after a newer one for the same cluster changes nothing and fails naming the newer
// one, whichever of set and clear each is, whether it stayed Pending (Cluster Service
// unavailable) or was stored late (another admin API replica).
func TestWindowRequestsTakeEffectInTheOrderMade(t *testing.T) {
	h := newRequestHarness(t, 20)
	ctx := context.Background()
	f, st, pub, key := h.f, h.st, h.pub, h.key
	submitter := h.submitter.WithTypes(TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{}))
	// lateSubmitter's requests were made a minute ago (an admin API replica whose insert was
	// slow), so they are older than submitter's.
	lateSubmitter := NewRequests(st, nil, func() time.Time { return time.Now().Add(-time.Minute) }, nil).SignWith(key).WithTypes(TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{}))
	consumer := h.consumer(st, nil)
	outage := NewRequests(st, NewCampaigns(NewTasks(st), unavailableClusterService{f.cs}, nil), nil, nil).VerifyWith(pub).WithTypes(TaskTypes(f.cs, ZStreamConfig{}, RegionCertConfig{}))
	windows := NewWindows(st, nil)
	nightly := &Window{Start: 2 * time.Hour, Length: 4 * time.Hour}
	weekends := &Window{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: time.Hour, Length: 8 * time.Hour}

	submit, outcome := submitAsAlice, h.outcome
	window := func(win *Window) func(cluster string) *Request {
		return func(cluster string) *Request {
			if win == nil {
				return &Request{Action: ActionClearWindow, Cluster: cluster}
			}
			return &Request{Action: ActionSetWindow, Cluster: cluster, Window: win}
		}
	}

	for i, tc := range []struct {
		name         string
		older, newer func(cluster string) *Request
		// late: the older request is stored after the newer one was carried out; otherwise it
		// is stored first and stays Pending through a Cluster Service outage.
		late bool
		want *Window // the cluster's window at the end: the newer request's
	}{
		{name: "an_older_set_left_pending_by_a_cluster_service_outage_does_not_undo_a_newer_clear",
			older: window(nightly), newer: window(nil), want: nil},
		{name: "an_older_set_stored_late_does_not_undo_a_newer_clear",
			older: window(nightly), newer: window(nil), late: true, want: nil},
		{name: "an_older_clear_stored_late_does_not_remove_a_newer_set",
			older: window(nil), newer: window(weekends), late: true, want: weekends},
		{name: "an_older_set_stored_late_does_not_replace_a_newer_set",
			older: window(nightly), newer: window(weekends), late: true, want: weekends},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := f.createCluster("w"+string(rune('a'+i)), "4.19.16")
			var older *Request
			if tc.late {
				newer := submit(t, submitter, tc.newer(cluster))
				if err := consumer.Process(ctx); err != nil {
					t.Fatal(err)
				}
				if got := outcome(t, newer.ID); got.State != RequestDone {
					t.Fatalf("newer request: %s %q", got.State, got.Message)
				}
				older = submit(t, lateSubmitter, tc.older(cluster))
			} else {
				older = submit(t, lateSubmitter, tc.older(cluster))
				newer := submit(t, submitter, tc.newer(cluster))
				_ = outage.Process(ctx) // the older waits for Cluster Service, the newer is carried out
				if got := outcome(t, older.ID); got.State != RequestPending {
					t.Fatalf("older request during the outage: %s %q; want Pending", got.State, got.Message)
				}
				if got := outcome(t, newer.ID); got.State != RequestDone {
					t.Fatalf("newer request during the outage: %s %q; want Done", got.State, got.Message)
				}
			}
			if err := consumer.Process(ctx); err != nil {
				t.Fatal(err)
			}
			if got := outcome(t, older.ID); got.State != RequestFailed || !strings.Contains(got.Message, "newer") {
				t.Fatalf("older request: %s %q; want Failed naming the newer request", got.State, got.Message)
			}
			got, err := windows.Get(ctx, cluster)
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && got.String() != tc.want.String()) {
				t.Fatalf("window at the end: %v; want the newer request's, %v", got, tc.want)
			}
		})
	}

	t.Run("a_set_that_took_effect_but_was_not_recorded_before_a_newer_clear_says_it_was_superseded", func(t *testing.T) {
		cluster := f.createCluster("superseded", "4.19.16")
		set := submit(t, lateSubmitter, window(nightly)(cluster))
		crashing := NewRequests(&unrecordingStore{Store: st, fails: 1}, NewCampaigns(NewTasks(st), f.cs, nil), nil, nil).VerifyWith(pub).WithTypes(TaskTypes(f.cs, ZStreamConfig{}, RegionCertConfig{}))
		if err := crashing.Process(ctx); err == nil {
			t.Fatal("the consumer that stopped before recording reported no error")
		}
		if got, err := windows.Get(ctx, cluster); err != nil || got == nil || got.String() != nightly.String() {
			t.Fatalf("window after the unrecorded set: %v %v; want %v", got, err, nightly)
		}
		clear := submit(t, submitter, window(nil)(cluster))
		_ = outage.Process(ctx) // the set waits for Cluster Service again, the newer clear is carried out
		if got := outcome(t, clear.ID); got.State != RequestDone {
			t.Fatalf("clear: %s %q; want Done", got.State, got.Message)
		}
		if err := consumer.Process(ctx); err != nil {
			t.Fatal(err)
		}
		got := outcome(t, set.ID)
		if got.State != RequestDone || !strings.Contains(got.Message, "superseded") || !strings.Contains(got.Message, clear.ID) {
			t.Fatalf("set: %s %q; want Done, saying it took effect and was superseded by %s", got.State, got.Message, clear.ID)
		}
		if win, err := windows.Get(ctx, cluster); err != nil || win != nil {
			t.Fatalf("window at the end: %v %v; want none (the clear's)", win, err)
		}
	})

	// The order is the admin API's creation stamps, within the clock allowance too: a clear
	// stamped by a replica whose clock runs two minutes fast orders after a set another replica
	// made later in real time, and wins (docs/maintenance.md says so).
	t.Run("within_the_clock_allowance_the_creation_stamps_order_a_fast_replicas_clear_after_a_later_set", func(t *testing.T) {
		cluster := f.createCluster("skew", "4.19.16")
		fast := NewRequests(st, nil, func() time.Time { return time.Now().Add(2 * time.Minute) }, nil).SignWith(key).WithTypes(TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{}))
		clear := submit(t, fast, window(nil)(cluster))
		set := submit(t, submitter, window(nightly)(cluster))
		_ = outage.Process(ctx) // the set waits for Cluster Service, the clear is carried out
		if err := consumer.Process(ctx); err != nil {
			t.Fatal(err)
		}
		if got := outcome(t, clear.ID); got.State != RequestDone {
			t.Fatalf("clear: %s %q; want Done", got.State, got.Message)
		}
		if got := outcome(t, set.ID); got.State != RequestFailed || !strings.Contains(got.Message, clear.ID) {
			t.Fatalf("set: %s %q; want Failed, superseded by the clear stamped later", got.State, got.Message)
		}
		if win, err := windows.Get(ctx, cluster); err != nil || win != nil {
			t.Fatalf("window at the end: %v %v; want none", win, err)
		}
	})

	t.Run("requests_carried_out_in_order_each_take_effect", func(t *testing.T) {
		cluster := f.createCluster("in-order", "4.19.16")
		for _, win := range []*Window{nightly, nil, weekends} {
			r := submit(t, submitter, window(win)(cluster))
			if err := consumer.Process(ctx); err != nil {
				t.Fatal(err)
			}
			if got := outcome(t, r.ID); got.State != RequestDone {
				t.Fatalf("request %s: %s %q", r.Action, got.State, got.Message)
			}
			got, err := windows.Get(ctx, cluster)
			if err != nil || (got == nil) != (win == nil) || (got != nil && got.String() != win.String()) {
				t.Fatalf("window after %s: %v %v; want %v", r.Action, got, err, win)
			}
		}
	})
}
