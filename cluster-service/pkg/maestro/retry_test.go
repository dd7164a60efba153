package maestro

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRetryTriesAgainOnlyWhatAnotherTryCanFix(t *testing.T) {
	gr := schema.GroupResource{Group: "work.open-cluster-management.io", Resource: "manifestworks"}
	notFound := apierrors.NewNotFound(gr, "w")
	conflict := apierrors.NewConflict(gr, "w", errors.New("moved on"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ManifestWork"}, "w", nil)
	for _, tc := range []struct {
		name      string
		write     bool // notFoundRetriable
		err       error
		wantCalls int
	}{
		{"a_write_tries_NotFound_five_times", true, notFound, 5},
		{"a_read_returns_NotFound_at_once", false, notFound, 1},
		{"a_conflict_is_tried_five_times", false, conflict, 5},
		{"an_invalid_work_is_not_tried_again", true, invalid, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := retry(context.Background(), tc.write, func() error { calls++; return tc.err })
			if calls != tc.wantCalls || err != tc.err {
				t.Fatalf("%d calls, error %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.err)
			}
		})
	}
	t.Run("success_after_a_conflict_ends_the_tries", func(t *testing.T) {
		calls := 0
		err := retry(context.Background(), false, func() error {
			calls++
			if calls < 3 {
				return conflict
			}
			return nil
		})
		if calls != 3 || err != nil {
			t.Fatalf("%d calls, error %v; want 3 calls and no error", calls, err)
		}
	})
	t.Run("a_cancelled_context_ends_the_waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retry(ctx, false, func() error { calls++; cancel(); return conflict })
		if calls != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("%d calls, error %v; want 1 call and context.Canceled", calls, err)
		}
	})
}
