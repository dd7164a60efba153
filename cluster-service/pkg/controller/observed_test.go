package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// statusEvent is a work as Maestro's client decodes a status event: the agent's metadata (spec
// hash), the status's generation and sequence ID, and a condition to tell events apart.
func statusEvent(name, specHash string, generation int64, seq, reason string) maestro.WorkEvent {
	a := map[string]string{manifests.AnnotationSpecHash: specHash}
	if seq != "" {
		a[cecommon.CloudEventsSequenceIDAnnotationKey] = seq
	}
	return maestro.WorkEvent{Type: watch.Modified, Work: &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation, Annotations: a},
		Status:     workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: reason}}},
	}}
}

func TestObservedWorks(t *testing.T) {
	const shard, name = "mgmt-1", "w"
	deleted := statusEvent(name, "h1", 2, "300", "gone")
	deleted.Type = watch.Deleted
	for _, tc := range []struct {
		name   string
		events []maestro.WorkEvent
		shard  string // where the work is looked up; default shard
		hash   string
		takes  int    // take is called this often; default 1
		want   string // reason of the status the last take returns; "" for nil
	}{
		{name: "current_spec", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a")}, hash: "h1", want: "a"},
		{name: "older_spec_goes_to_maestro", events: []maestro.WorkEvent{statusEvent(name, "h0", 1, "100", "a")}, hash: "h1"},
		{name: "nothing_seen", hash: "h1"},
		{name: "other_shard", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a")}, shard: "mgmt-2", hash: "h1"},
		{name: "newest_sequence_wins", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "200", "new"), statusEvent(name, "h1", 2, "100", "old")}, hash: "h1", want: "new"},
		{name: "later_sequence_replaces", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "old"), statusEvent(name, "h1", 2, "200", "new")}, hash: "h1", want: "new"},
		{name: "listed_work_drops_it", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a"), statusEvent(name, "h1", 2, "", "listed")}, hash: "h1"},
		{name: "unparsable_sequence_drops_it", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a"), statusEvent(name, "h1", 2, "x", "b")}, hash: "h1"},
		{name: "deleted_drops_it", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a"), deleted}, hash: "h1"},
		{name: "used_once", events: []maestro.WorkEvent{statusEvent(name, "h1", 2, "100", "a")}, hash: "h1", takes: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newObservedWorks()
			for _, ev := range tc.events {
				o.record(shard, ev)
			}
			at := tc.shard
			if at == "" {
				at = shard
			}
			takes := max(tc.takes, 1)
			var got *workv1.ManifestWork
			for range takes {
				got = o.take(at, name, tc.hash)
			}
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("take = %v, want nil (read Maestro)", got.Status.Conditions)
			case tc.want == "":
			case got == nil:
				t.Fatalf("take = nil, want the status %q", tc.want)
			case got.Status.Conditions[0].Reason != tc.want:
				t.Fatalf("take's status = %q, want %q", got.Status.Conditions[0].Reason, tc.want)
			default:
				if g := maestro.StatusGeneration(got); g != got.Generation || g != 2 {
					t.Fatalf("status generation %d, generation %d; want both 2", g, got.Generation)
				}
				if _, ok := got.Annotations[cecommon.CloudEventsSequenceIDAnnotationKey]; ok {
					t.Fatal("the sequence ID annotation is handed on")
				}
			}
		})
	}

	t.Run("watch_restart_forgets_the_shard", func(t *testing.T) {
		o := newObservedWorks()
		o.record(shard, statusEvent(name, "h1", 2, "100", "a"))
		o.record("mgmt-2", statusEvent(name, "h1", 2, "100", "a"))
		o.forgetShard(shard)
		if o.take(shard, name, "h1") != nil {
			t.Fatal("kept a status of a shard whose watch started over")
		}
		if o.take("mgmt-2", name, "h1") == nil {
			t.Fatal("forgot another shard's status")
		}
	})
}
