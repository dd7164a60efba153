package controller

import (
	"testing"

	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// TestWithFeedbackMode: Watch while an object is not READY or its spec changed since the steady
// form last applied, Poll once steady, and always Poll with PollFeedbackOnly.
func TestWithFeedbackMode(t *testing.T) {
	build := func(spec string) func(bool) (*workv1.ManifestWork, error) {
		return func(watch bool) (*workv1.ManifestWork, error) {
			w := &workv1.ManifestWork{}
			w.Annotations = map[string]string{manifests.AnnotationSpecHash: spec + "/" + map[bool]string{true: "watch", false: "poll"}[watch]}
			return w, nil
		}
	}
	tests := []struct {
		name       string
		pollOnly   bool
		ready      bool
		lastSteady string // "" = none applied yet
		spec       string
		want       string
	}{
		{name: "creating", spec: "a", want: "a/watch"},
		{name: "ready_first_seen", ready: true, spec: "a", want: "a/poll"},
		{name: "ready_unchanged", ready: true, lastSteady: "a/poll", spec: "a", want: "a/poll"},
		{name: "ready_spec_changed", ready: true, lastSteady: "a/poll", spec: "b", want: "b/watch"},
		{name: "poll_only_creating", pollOnly: true, spec: "a", want: "a/poll"},
		{name: "poll_only_spec_changed", pollOnly: true, ready: true, lastSteady: "a/poll", spec: "b", want: "b/poll"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Controller{cfg: Config{PollFeedbackOnly: tt.pollOnly}, steady: map[string]string{}}
			if tt.lastSteady != "" {
				c.steady["k"] = tt.lastSteady
			}
			w, steady, err := c.withFeedbackMode("k", tt.ready, build(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Annotations[manifests.AnnotationSpecHash]; got != tt.want || steady != tt.spec+"/poll" {
				t.Fatalf("work %q steady %q, want %q and %q", got, steady, tt.want, tt.spec+"/poll")
			}
		})
	}
}
