package maestro

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"
)

// fakeWorks stands in for Maestro's work client of one consumer, as far as Apply and List use
// it, and records the calls made. Like Maestro's client, Create refuses an existing work and
// Patch a missing one.
type fakeWorks struct {
	workv1client.ManifestWorkInterface // other methods are not used
	stored                             map[string]*workv1.ManifestWork
	calls                              []string
}

func (f *fakeWorks) Get(_ context.Context, name string, _ metav1.GetOptions) (*workv1.ManifestWork, error) {
	f.calls = append(f.calls, "get")
	w, ok := f.stored[name]
	if !ok {
		return nil, apierrors.NewNotFound(cecommon.ManifestWorkGR, name)
	}
	return w.DeepCopy(), nil
}

func (f *fakeWorks) Create(_ context.Context, w *workv1.ManifestWork, _ metav1.CreateOptions) (*workv1.ManifestWork, error) {
	f.calls = append(f.calls, "create")
	if _, ok := f.stored[w.Name]; ok {
		return nil, apierrors.NewAlreadyExists(cecommon.ManifestWorkGR, w.Name)
	}
	f.stored[w.Name] = w.DeepCopy()
	return w, nil
}

func (f *fakeWorks) Patch(_ context.Context, name string, _ types.PatchType, data []byte, _ metav1.PatchOptions, _ ...string) (*workv1.ManifestWork, error) {
	f.calls = append(f.calls, "patch")
	w, ok := f.stored[name]
	if !ok {
		return nil, apierrors.NewNotFound(cecommon.ManifestWorkGR, name)
	}
	var ops []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &ops); err != nil {
		return nil, err
	}
	for _, o := range ops {
		var err error
		switch o.Path {
		case "/metadata/labels":
			err = json.Unmarshal(o.Value, &w.Labels)
		case "/metadata/annotations":
			err = json.Unmarshal(o.Value, &w.Annotations)
		case "/spec":
			w.Spec = workv1.ManifestWorkSpec{}
			err = json.Unmarshal(o.Value, &w.Spec)
		}
		if err != nil {
			return nil, err
		}
	}
	w.Generation++
	return w.DeepCopy(), nil
}

func (f *fakeWorks) List(_ context.Context, _ metav1.ListOptions) (*workv1.ManifestWorkList, error) {
	f.calls = append(f.calls, "list")
	l := &workv1.ManifestWorkList{}
	for _, w := range f.stored {
		l.Items = append(l.Items, *w.DeepCopy())
	}
	return l, nil
}

// TestApplyReadsOnlyWhenItMust: Apply creates a work it has no memory of and patches one it
// remembers differently without reading it first (Maestro's client reads it anyway), reads and
// compares only when its memory says nothing changed, and recovers when its memory is wrong.
func TestApplyReadsOnlyWhenItMust(t *testing.T) {
	work := func(v string) *workv1.ManifestWork {
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: "w", Annotations: map[string]string{"openhcp.io/spec-hash": v}},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"data":{"k":"` + v + `"}}`)}}}}},
		}
	}
	type step struct {
		do    string // apply:<value>, list, delete-behind (removed without this client), new-client
		calls string // the calls the step makes, space-separated
	}
	for _, tc := range []struct {
		name      string
		readFirst bool // Config.ReadBeforeWrite
		steps     []step
	}{
		{name: "new_work_is_created_without_a_read", steps: []step{{"apply:1", "create"}}},
		{name: "unchanged_work_is_read_and_left", steps: []step{{"apply:1", "create"}, {"apply:1", "get"}}},
		{name: "changed_work_is_patched_without_a_read", steps: []step{{"apply:1", "create"}, {"apply:2", "patch"}, {"apply:3", "patch"}}},
		{name: "existing_work_unknown_to_the_client", steps: []step{{"apply:1", "create"}, {"new-client", ""}, {"apply:2", "create get patch"}}},
		{name: "existing_unchanged_work_unknown_to_the_client", steps: []step{{"apply:1", "create"}, {"new-client", ""}, {"apply:1", "create get"}}},
		{name: "listed_work_is_known", steps: []step{{"apply:1", "create"}, {"new-client", ""}, {"list", "list"}, {"apply:2", "patch"}}},
		{name: "work_removed_behind_the_clients_back", steps: []step{{"apply:1", "create"}, {"delete-behind", ""}, {"apply:2", "patch get create"}}},
		{name: "unchanged_work_removed_behind_the_clients_back", steps: []step{{"apply:1", "create"}, {"delete-behind", ""}, {"apply:1", "get create"}}},
		{name: "read_before_write_baseline", readFirst: true, steps: []step{{"apply:1", "get create"}, {"apply:2", "get patch"}, {"apply:2", "get"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeWorks{stored: map[string]*workv1.ManifestWork{}}
			newClient := func() *Client {
				return &Client{cfg: Config{ReadBeforeWrite: tc.readFirst}, ctx: context.Background(), klogger: logr.Discard(), consumers: map[string]*consumerClient{
					"mgmt-1": {name: "mgmt-1", works: fake, hub: newHub(), held: map[string][32]byte{}}}}
			}
			c := newClient()
			ctx := context.Background()
			var last string
			for i, s := range tc.steps {
				fake.calls = nil
				switch v, apply := strings.CutPrefix(s.do, "apply:"); {
				case apply:
					if err := c.Apply(ctx, "mgmt-1", work(v)); err != nil {
						t.Fatalf("step %d (%s): %v", i, s.do, err)
					}
					last = v
				case s.do == "list":
					if _, err := c.List(ctx, "mgmt-1"); err != nil {
						t.Fatal(err)
					}
				case s.do == "delete-behind":
					delete(fake.stored, "w")
				case s.do == "new-client":
					c = newClient()
				}
				if got := strings.Join(fake.calls, " "); got != s.calls {
					t.Fatalf("step %d (%s): calls %q, want %q", i, s.do, got, s.calls)
				}
			}
			got := fake.stored["w"]
			if got == nil || got.Annotations["openhcp.io/spec-hash"] != last || !slices.ContainsFunc(got.Spec.Workload.Manifests, func(m workv1.Manifest) bool {
				return strings.Contains(string(m.Raw), `"k":"`+last+`"`)
			}) {
				t.Fatalf("Maestro holds %+v, want the work applied last (%s)", got, last)
			}
		})
	}
}
