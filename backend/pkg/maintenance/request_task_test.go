package maintenance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// TestTaskAndWindowRequests: an SRE's single task (of any registered type), task cancel and
// window set/clear are requests like a campaign's: refused naming the field before they are
// stored, carried out by the maintenance service once across a crash, failed with the reason.
func TestTaskAndWindowRequests(t *testing.T) {
	h := newRequestHarness(t, 10)
	ctx := context.Background()
	st := h.st
	cluster := h.f.createCluster("a", "4.19.16")
	const unknownCluster = "0123456789abcdefghijklmnopqrstuv"
	// The admin API's side knows the types by name only (no Cluster Service).
	submitter := h.submitter.WithTypes(TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{}))
	consumerOn := func(s docstore.Store) *Requests { return h.consumer(s, nil) }
	tasks, windows := NewTasks(st), NewWindows(st, nil)
	submit, outcome := h.submit, h.outcome
	process := func(t *testing.T) {
		t.Helper()
		if err := consumerOn(&unrecordedStore{Store: st}).Process(ctx); err != nil {
			t.Fatalf("process: %v", err)
		}
	}

	t.Run("submit_refuses_naming_the_field_and_stores_nothing", func(t *testing.T) {
		wantRefused(t, submitter, []refusal{
			{"an_unknown_task_type", Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: "reboot-everything"}}, "type"},
			{"a_node_pool_task_without_its_pool", Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeNodePoolZStreamUpgrade}}, "params.nodePool"},
			{"a_parameter_the_type_does_not_take", Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeZStreamUpgrade, Params: map[string]string{"force": "yes"}}}, "params.force"},
			{"a_parameter_value_with_a_newline", Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeZStreamUpgrade, Params: map[string]string{ParamFromVersion: "4.19.16\n"}}}, "params.fromVersion"},
			{"a_task_without_a_type", Request{Action: ActionCreateTask, Cluster: cluster}, "task"},
			{"a_cluster_id_that_is_no_id", Request{Action: ActionCreateTask, Cluster: "../x", Task: &TaskSpec{Type: TypeZStreamUpgrade}}, "cluster"},
			{"a_cancel_without_a_task", Request{Action: ActionCancelTask}, "taskId"},
			{"a_window_of_no_length", Request{Action: ActionSetWindow, Cluster: cluster, Window: &Window{Start: time.Hour}}, "window"},
			{"a_window_starting_after_the_day", Request{Action: ActionSetWindow, Cluster: cluster, Window: &Window{Start: 25 * time.Hour, Length: time.Hour}}, "window"},
			{"a_window_naming_a_day_twice", Request{Action: ActionSetWindow, Cluster: cluster, Window: &Window{Days: []time.Weekday{time.Monday, time.Monday}, Length: time.Hour}}, "window"},
			{"a_set_without_a_window", Request{Action: ActionSetWindow, Cluster: cluster}, "window"},
			{"a_clear_with_a_window", Request{Action: ActionClearWindow, Cluster: cluster, Window: &Window{Length: time.Hour}}, "window"},
			{"a_campaign_over_an_unknown_target", Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "z9", FromVersion: "4.19.16", ChannelGroup: "stable", Target: "machines"}}, "target"},
		})
	})

	var created *Task
	t.Run("create_task_makes_one_task_of_the_request_across_a_crash_before_its_record", func(t *testing.T) {
		r := submit(t, &Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeZStreamUpgrade, Params: map[string]string{ParamFromVersion: "4.19.16"}}})
		if r.TaskID != r.ID {
			t.Fatalf("the request names task %q; want its own ID %s", r.TaskID, r.ID)
		}
		h.crashBeforeRecord(t, func(s docstore.Store) error { return consumerOn(s).Process(ctx) }, r.ID)
		process(t)
		got := outcome(t, r.ID)
		if got.State != RequestDone || !strings.Contains(got.Message, "task "+r.ID) {
			t.Fatalf("request: %s %q; want Done naming task %s", got.State, got.Message, r.ID)
		}
		task, err := tasks.Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if task.Type != TypeZStreamUpgrade || task.Cluster != cluster || task.Params[ParamFromVersion] != "4.19.16" || task.State != StatePending ||
			!strings.Contains(task.RequestedBy, "alice") || !strings.Contains(task.RequestedBy, r.ID) || len(task.History) != 1 {
			t.Fatalf("task as created: %+v", task)
		}
		all, err := tasks.List(ctx)
		if err != nil || len(all) != 1 {
			t.Fatalf("%d tasks after the request was carried out twice (%v); want 1", len(all), err)
		}
		created = task
	})

	t.Run("cancel_task_cancels_the_task_and_its_history_names_the_request", func(t *testing.T) {
		if created == nil {
			t.Skip("no task was created")
		}
		r := submit(t, &Request{Action: ActionCancelTask, TaskID: created.ID})
		process(t)
		if got := outcome(t, r.ID); got.State != RequestDone || !strings.Contains(got.Message, "Cancelled") {
			t.Fatalf("request: %s %q", got.State, got.Message)
		}
		task, err := tasks.Get(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := task.History[len(task.History)-1]
		if task.State != StateCancelled || last.Request != r.ID || !strings.Contains(last.Message, "alice") {
			t.Fatalf("task after the cancel: %s, last history %+v", task.State, last)
		}
		// A second cancel of the cancelled task changes nothing and is Done.
		again := submit(t, &Request{Action: ActionCancelTask, TaskID: created.ID})
		process(t)
		if got := outcome(t, again.ID); got.State != RequestDone {
			t.Fatalf("second cancel: %s %q", got.State, got.Message)
		}
		if after, err := tasks.Get(ctx, created.ID); err != nil || len(after.History) != len(task.History) {
			t.Fatalf("the second cancel changed the task: %+v %v", after, err)
		}
	})

	t.Run("set_and_clear_window_change_the_clusters_window", func(t *testing.T) {
		win := &Window{Days: []time.Weekday{time.Saturday, time.Sunday}, Start: 2 * time.Hour, Length: 4 * time.Hour}
		r := submit(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: win})
		process(t)
		if got := outcome(t, r.ID); got.State != RequestDone || !strings.Contains(got.Message, "Sat,Sun 02:00 UTC") {
			t.Fatalf("set: %s %q", got.State, got.Message)
		}
		got, err := windows.Get(ctx, cluster)
		if err != nil || got == nil || got.Start != win.Start || got.Length != win.Length || len(got.Days) != 2 {
			t.Fatalf("window after set: %+v %v", got, err)
		}
		r = submit(t, &Request{Action: ActionClearWindow, Cluster: cluster})
		process(t)
		if out := outcome(t, r.ID); out.State != RequestDone {
			t.Fatalf("clear: %s %q", out.State, out.Message)
		}
		if got, err := windows.Get(ctx, cluster); err != nil || got != nil {
			t.Fatalf("window after clear: %+v %v; want none", got, err)
		}
	})

	storeSigned := func(t *testing.T, r *Request, forge func(*Request)) *Request {
		t.Helper()
		r.ID, r.State, r.RequestedBy, r.Created = strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")[:40], RequestPending, "alice", time.Now().UTC()
		if r.Action == ActionCreateTask {
			r.TaskID = r.ID
		}
		h.storeSigned(t, r, forge, "")
		return r
	}
	for _, c := range []struct {
		name, reason string
		request      func(t *testing.T) *Request
	}{
		{"a_task_on_a_cluster_cluster_service_does_not_know", "no such cluster", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCreateTask, Cluster: unknownCluster, Task: &TaskSpec{Type: TypeZStreamUpgrade}})
		}},
		{"a_window_of_a_cluster_cluster_service_does_not_know", "no such cluster", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionSetWindow, Cluster: unknownCluster, Window: &Window{Length: time.Hour}})
		}},
		{"a_cancel_of_an_unknown_task", "no task nosuch", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCancelTask, TaskID: "nosuch"})
		}},
		{"a_task_type_the_service_does_not_run_stored_past_the_admin_api", "unknown task type", func(t *testing.T) *Request {
			return storeSigned(t, &Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: "reboot-everything"}}, nil)
		}},
		{"a_window_changed_after_the_signature", "signature", func(t *testing.T) *Request {
			return storeSigned(t, &Request{Action: ActionSetWindow, Cluster: cluster, Window: &Window{Start: 2 * time.Hour, Length: time.Hour}},
				func(r *Request) { r.Window = &Window{Length: 7 * 24 * time.Hour} })
		}},
		{"a_task_parameter_changed_after_the_signature", "signature", func(t *testing.T) *Request {
			return storeSigned(t, &Request{Action: ActionCreateTask, Cluster: cluster, Task: &TaskSpec{Type: TypeZStreamUpgrade, Params: map[string]string{ParamFromVersion: "4.19.16"}}},
				func(r *Request) { r.Task.Params[ParamFromVersion] = "4.18.26" })
		}},
	} {
		t.Run("fails_"+c.name+"_with_its_reason_changing_nothing", func(t *testing.T) {
			before, err := tasks.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			r := c.request(t)
			process(t)
			if got := outcome(t, r.ID); got.State != RequestFailed || !strings.Contains(got.Message, c.reason) {
				t.Fatalf("request %s: %s %q; want Failed with %q", r.ID, got.State, got.Message, c.reason)
			}
			if after, err := tasks.List(ctx); err != nil || len(after) != len(before) {
				t.Fatalf("%d tasks after a failed request, %d before (%v)", len(after), len(before), err)
			}
			if w, err := windows.Get(ctx, cluster); err != nil || w != nil {
				t.Fatalf("window after a failed request: %+v %v", w, err)
			}
		})
	}
}

// A campaign request's statement is what it was before requests could name tasks, windows and
// node pools: a request signed by an older admin API still verifies.
func TestCampaignStatementKeepsItsShape(t *testing.T) {
	r := &Request{ID: "r1", Action: ActionResumeCampaign, Campaign: "z1", RequestedBy: "alice", Created: time.Unix(0, 0).UTC()}
	st, err := r.statement()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(string(st), requestDomain)), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cluster", "task", "taskId", "window", "spec"} {
		if _, ok := m[k]; ok {
			t.Errorf("the statement of a campaign request names %q: %s", k, st)
		}
	}
	create := &Request{ID: "r2", Action: ActionCreateCampaign, Campaign: "z1", RequestedBy: "alice",
		Spec: &CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable"}}
	if st, err := create.statement(); err != nil || strings.Contains(string(st), "target") {
		t.Errorf("the statement of a create over clusters names a target: %s %v", st, err)
	}
}
