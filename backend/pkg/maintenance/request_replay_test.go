package maintenance

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/docstore"
)

// lockedBuffer is a log sink read by the test while the consumer writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReplayedRequestIsNotCarriedOutAgain: a request the maintenance service carried out is
// never carried out again, whatever its document says later: one flipped back to Pending in the
// store, or deleted and inserted again with its signature, fails as a replay, changes nothing,
// is logged and counted (maintenance_request_replays_refused). A request whose outcome was not
// recorded (the service stopped after carrying it out) is recorded once, not refused.
func TestReplayedRequestIsNotCarriedOutAgain(t *testing.T) {
	h := newRequestHarness(t, 20)
	ctx := context.Background()
	f, st := h.f, h.st
	dsn := h.dsn
	logs := &lockedBuffer{}
	submitter := h.submitter.WithTypes(TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{}))
	consumerOn := func(s docstore.Store) *Requests { return h.consumer(s, slog.New(slog.NewTextHandler(logs, nil))) }
	consumer := consumerOn(st)
	tasks, windows := NewTasks(st), NewWindows(st, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(tasks, consumer.campaigns, consumer))

	do := func(t *testing.T, r *Request) *Request {
		t.Helper()
		out := submitAsAlice(t, submitter, r)
		if err := consumer.Process(ctx); err != nil {
			t.Fatal(err)
		}
		if got := requestOutcome(t, submitter, out.ID); got.State != RequestDone {
			t.Fatalf("%s: %s %q; want Done", r.Action, got.State, got.Message)
		}
		return out
	}
	pendingAgain := func(body []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		m["state"] = string(RequestPending)
		delete(m, "finished")
		delete(m, "message")
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// flip writes the request's document back to Pending, as a write that got past the admin
	// login's row-level security could (the test's store login is an owner).
	flip := func(t *testing.T, id string) {
		d, err := st.Get(ctx, RequestPartition, "request/"+id)
		if err != nil {
			t.Fatal(err)
		}
		d.Body = pendingAgain(d.Body)
		if _, err := st.Replace(ctx, d, d.ETag); err != nil {
			t.Fatal(err)
		}
	}
	// reinsert deletes the request's document (as the purger does after its retention) and
	// inserts it again Pending, as the admin login may.
	reinsert := func(t *testing.T, id string) {
		d, err := st.Get(ctx, RequestPartition, "request/"+id)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Delete(ctx, RequestPartition, d.ID, d.ETag); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Create(ctx, &docstore.Document{PartitionKey: RequestPartition, ID: d.ID, Type: TypeRequest, ResourceID: d.ResourceID,
			Body: pendingAgain(d.Body)}); err != nil {
			t.Fatal(err)
		}
	}
	// forge deletes the request's document and inserts one Pending under its ID that says
	// something else (another requester and cluster), with the ETag the maintenance service's
	// record names: the admin login can read the record and write any ETag in its insert.
	forge := func(t *testing.T, id, cluster string) {
		reinsert(t, id)
		rd, err := st.Get(ctx, Partition, "request/"+id)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			ETag string `json:"requestEtag"`
		}
		if err := json.Unmarshal(rd.Body, &rec); err != nil || rec.ETag == "" {
			t.Fatalf("record of %s: %s %v", id, rd.Body, err)
		}
		d, err := st.Get(ctx, RequestPartition, "request/"+id)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(d.Body, &m); err != nil {
			t.Fatal(err)
		}
		m["requestedBy"], m["cluster"] = "mallory", cluster
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "UPDATE documents SET body = $3::jsonb, etag = $4 WHERE partition_key = $1 AND id = $2",
			RequestPartition, d.ID, string(b), rec.ETag); err != nil {
			t.Fatal(err)
		}
	}
	windowETag := func(t *testing.T, cluster string) string {
		d, err := st.Get(ctx, Partition, "window/"+cluster)
		if err != nil {
			t.Fatal(err)
		}
		return d.ETag
	}
	nightly := &Window{Start: 2 * time.Hour, Length: 4 * time.Hour}
	weekends := &Window{Days: []time.Weekday{time.Saturday}, Start: time.Hour, Length: 8 * time.Hour}

	for i, tc := range []struct {
		name   string
		action RequestAction
		// replay does the request, what follows it, and replays it; check says nothing changed.
		replay func(t *testing.T, cluster string) (id string, check func(t *testing.T))
	}{
		{"a_done_set_window_flipped_to_pending", ActionSetWindow, func(t *testing.T, cluster string) (string, func(*testing.T)) {
			r := do(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: nightly})
			before := windowETag(t, cluster)
			flip(t, r.ID)
			return r.ID, func(t *testing.T) {
				if after := windowETag(t, cluster); after != before {
					t.Fatal("the window was written again")
				}
			}
		}},
		{"a_done_clear_window_flipped_to_pending_after_a_newer_set", ActionClearWindow, func(t *testing.T, cluster string) (string, func(*testing.T)) {
			do(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: nightly})
			r := do(t, &Request{Action: ActionClearWindow, Cluster: cluster})
			do(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: weekends})
			flip(t, r.ID)
			return r.ID, func(t *testing.T) {
				if got, err := windows.Get(ctx, cluster); err != nil || got == nil || got.String() != weekends.String() {
					t.Fatalf("window %v %v; want the newer set's %v", got, err, weekends)
				}
			}
		}},
		{"a_done_cancel_task_flipped_to_pending", ActionCancelTask, func(t *testing.T, cluster string) (string, func(*testing.T)) {
			task := do(t, &Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeZStreamUpgrade, Params: map[string]string{ParamFromVersion: "4.19.16"}}})
			r := do(t, &Request{Action: ActionCancelTask, TaskID: task.ID})
			before, err := tasks.Get(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			flip(t, r.ID)
			return r.ID, func(t *testing.T) {
				if after, err := tasks.Get(ctx, task.ID); err != nil || len(after.History) != len(before.History) {
					t.Fatalf("the task was cancelled again: %+v %v", after, err)
				}
			}
		}},
		{"a_done_set_window_deleted_and_inserted_again_pending", ActionSetWindow, func(t *testing.T, cluster string) (string, func(*testing.T)) {
			r := do(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: nightly})
			before := windowETag(t, cluster)
			reinsert(t, r.ID)
			return r.ID, func(t *testing.T) {
				if after := windowETag(t, cluster); after != before {
					t.Fatal("the window was written again")
				}
			}
		}},
		{"a_done_set_window_inserted_again_with_its_recorded_etag_saying_something_else", ActionSetWindow, func(t *testing.T, cluster string) (string, func(*testing.T)) {
			r := do(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: nightly})
			before := windowETag(t, cluster)
			other := f.createCluster("forged", "4.19.16")
			forge(t, r.ID, other)
			return r.ID, func(t *testing.T) {
				if after := windowETag(t, cluster); after != before {
					t.Fatal("the window was written again")
				}
				if got := requestOutcome(t, submitter, r.ID); got.RequestedBy != "mallory" {
					t.Fatalf("the forged document was not the one refused: %+v", got)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := f.createCluster("r"+string(rune('a'+i)), "4.19.16")
			refused := max(gauge(t, reg, "maintenance_request_replays_refused", "action="+string(tc.action)), 0)
			id, check := tc.replay(t, cluster)
			if err := consumer.Process(ctx); err != nil {
				t.Fatal(err)
			}
			if got := requestOutcome(t, submitter, id); got.State != RequestFailed || !strings.Contains(got.Message, "replay") {
				t.Fatalf("replayed request: %s %q; want Failed as a replay", got.State, got.Message)
			}
			check(t)
			if got := gauge(t, reg, "maintenance_request_replays_refused", "action="+string(tc.action)); got != refused+1 {
				t.Fatalf("maintenance_request_replays_refused{action=%s} = %v; want %v", tc.action, got, refused+1)
			}
			if !strings.Contains(logs.String(), "replay") || !strings.Contains(logs.String(), id) {
				t.Fatalf("the refused replay of %s was not logged:\n%s", id, logs.String())
			}
		})
	}

	t.Run("a_request_whose_outcome_was_not_recorded_is_recorded_once_not_refused", func(t *testing.T) {
		cluster := f.createCluster("unrecorded", "4.19.16")
		r, err := submitter.Submit(ctx, &Request{Action: ActionSetWindow, Cluster: cluster, Window: nightly, RequestedBy: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if err := consumerOn(&unrecordedStore{Store: st, fails: 1}).Process(ctx); err == nil {
			t.Fatal("the consumer that stopped before recording reported no error")
		}
		refused := max(gauge(t, reg, "maintenance_request_replays_refused", "action="+string(ActionSetWindow)), 0)
		if err := consumer.Process(ctx); err != nil {
			t.Fatal(err)
		}
		if got := requestOutcome(t, submitter, r.ID); got.State != RequestDone || !strings.Contains(got.Message, "set") {
			t.Fatalf("request: %s %q; want Done", got.State, got.Message)
		}
		if got := max(gauge(t, reg, "maintenance_request_replays_refused", "action="+string(ActionSetWindow)), 0); got != refused {
			t.Fatalf("a request recorded after a restart was counted as a replay (%v, was %v)", got, refused)
		}
	})
}
