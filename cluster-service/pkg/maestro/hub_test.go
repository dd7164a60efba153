package maestro

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
)

func work(name, gen string) *workv1.ManifestWork {
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"gen": gen}}}
}

type step struct {
	initial bool
	typ     watch.EventType
	name    string
	gen     string
}

type delivered struct {
	typ  watch.EventType
	name string
	gen  string
}

func TestSubscriberQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
		want  []delivered
	}{
		{
			name:  "first_sighting_is_added_and_merges_later_changes",
			steps: []step{{typ: watch.Modified, name: "a", gen: "1"}, {typ: watch.Modified, name: "a", gen: "2"}},
			want:  []delivered{{watch.Added, "a", "2"}},
		},
		{
			name:  "works_keep_the_order_they_first_became_pending",
			steps: []step{{typ: watch.Modified, name: "b", gen: "1"}, {typ: watch.Modified, name: "a", gen: "1"}, {typ: watch.Modified, name: "b", gen: "2"}},
			want:  []delivered{{watch.Added, "b", "2"}, {watch.Added, "a", "1"}},
		},
		{
			name:  "added_then_deleted_before_read_is_deleted",
			steps: []step{{typ: watch.Modified, name: "a", gen: "1"}, {typ: watch.Deleted, name: "a", gen: "2"}},
			want:  []delivered{{watch.Deleted, "a", "2"}},
		},
		{
			name:  "initial_list_does_not_override_a_live_event",
			steps: []step{{typ: watch.Modified, name: "a", gen: "live"}, {initial: true, name: "a", gen: "listed"}, {initial: true, name: "b", gen: "listed"}},
			want:  []delivered{{watch.Added, "a", "live"}, {watch.Added, "b", "listed"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHub()
			s := h.subscribe()
			for _, st := range tc.steps {
				if st.initial {
					s.offerInitial(work(st.name, st.gen))
				} else {
					h.publish(st.typ, work(st.name, st.gen))
				}
			}
			for i, w := range tc.want {
				got := mustNext(t, s)
				if got.Type != w.typ || got.Work.Name != w.name || got.Work.Annotations["gen"] != w.gen {
					t.Fatalf("event %d = %s %s gen %s, want %s %s gen %s", i, got.Type, got.Work.Name, got.Work.Annotations["gen"], w.typ, w.name, w.gen)
				}
			}
			assertNothingPending(t, s)
		})
	}
}

func TestSubscriberSeenWorkIsModifiedAndReAddedAfterDelete(t *testing.T) {
	h := newHub()
	s := h.subscribe()
	want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Added}
	types := []watch.EventType{watch.Modified, watch.Modified, watch.Deleted, watch.Modified}
	for i, typ := range types {
		h.publish(typ, work("a", "x"))
		if got := mustNext(t, s); got.Type != want[i] {
			t.Fatalf("event %d = %s, want %s", i, got.Type, want[i])
		}
	}
}

func TestUnsubscribedReaderGetsNothing(t *testing.T) {
	h := newHub()
	s := h.subscribe()
	h.unsubscribe(s)
	h.publish(watch.Modified, work("a", "1"))
	assertNothingPending(t, s)
}

func mustNext(t *testing.T, s *subscriber) WorkEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ev, ok := s.next(ctx, context.Background())
	if !ok {
		t.Fatal("no event pending")
	}
	return ev
}

func assertNothingPending(t *testing.T, s *subscriber) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if ev, ok := s.next(ctx, context.Background()); ok {
		t.Fatalf("unexpected event %s %s", ev.Type, ev.Work.Name)
	}
}

func TestReplaceOpsAndDigest(t *testing.T) {
	cm := func(v string) workv1.Manifest {
		return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"data":{"k":"` + v + `"}}`)}}
	}
	existing := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"old": "1"}},
		Spec: workv1.ManifestWorkSpec{
			Workload:     workv1.ManifestsTemplate{Manifests: []workv1.Manifest{cm("1")}},
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeOrphan},
		},
	}
	same, err1 := digest(existing)
	copied, err2 := digest(existing.DeepCopy())
	if err1 != nil || err2 != nil || same != copied {
		t.Fatalf("identical works have different digests (%v, %v)", err1, err2)
	}
	desired := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"new": "1"}},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{cm("2")}}},
	}
	if d, _ := digest(desired); d == same {
		t.Fatal("a changed work has the same digest")
	}
	patch, err := replaceOps(desired)
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	byPath := map[string]json.RawMessage{}
	for _, o := range ops {
		if o.Op != "add" {
			t.Errorf("op %s on %s, want add (which replaces whole values)", o.Op, o.Path)
		}
		byPath[o.Path] = o.Value
	}
	var spec workv1.ManifestWorkSpec
	if err := json.Unmarshal(byPath["/spec"], &spec); err != nil {
		t.Fatal(err)
	}
	// The whole spec is replaced: the old DeleteOption must not survive, unlike with a merge patch.
	if spec.DeleteOption != nil || len(spec.Workload.Manifests) != 1 || string(spec.Workload.Manifests[0].Raw) != string(cm("2").Raw) {
		t.Errorf("patched spec = %+v", spec)
	}
	if string(byPath["/metadata/labels"]) != `{"new":"1"}` {
		t.Errorf("labels patch = %s", byPath["/metadata/labels"])
	}
}

func TestDigestIgnoresKeyOrderInManifests(t *testing.T) {
	mk := func(raw string) *workv1.ManifestWork {
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w", Annotations: map[string]string{}},
			Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(raw)}}}}},
		}
	}
	// The same config map as Cluster Service marshals it and as Maestro's REST API returns it.
	ours := mk(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"k":"v"}}`)
	theirs := mk(`{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"c"}}`)
	theirs.Annotations = nil
	a, err1 := digest(theirs)
	b, err2 := digest(ours)
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("key order or empty-vs-nil annotations changed the digest (%v, %v)", err1, err2)
	}
	if c, _ := digest(mk(`{"apiVersion":"v1","data":{"k":"other"},"kind":"ConfigMap","metadata":{"name":"c"}}`)); c == a {
		t.Fatal("a changed value has the same digest")
	}
}
