package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// unavailableClusterService is a fake of Cluster Service during an outage: every GetCluster
// answers Unavailable.
type unavailableClusterService struct{ ClusterService }

func (unavailableClusterService) GetCluster(context.Context, *csv1.GetClusterRequest, ...grpc.CallOption) (*csv1.Cluster, error) {
	return nil, status.Error(codes.Unavailable, "injected: Cluster Service is unavailable")
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
	submitter := h.submitter.WithTypes(TaskTypes(nil, ZStreamConfig{}))
	// lateSubmitter's requests were made a minute ago (an admin API replica whose insert was
	// slow), so they are older than submitter's.
	lateSubmitter := NewRequests(st, nil, func() time.Time { return time.Now().Add(-time.Minute) }, nil).SignWith(key).WithTypes(TaskTypes(nil, ZStreamConfig{}))
	consumer := h.consumer(st, nil)
	outage := NewRequests(st, NewCampaigns(NewTasks(st), unavailableClusterService{f.cs}, nil), nil, nil).VerifyWith(pub).WithTypes(TaskTypes(f.cs, ZStreamConfig{}))
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
