package cosmos

import (
	"context"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
)

// follow reads the feed from cp until a read brings nothing, and returns the new checkpoint and
// the keys read.
func follow(t *testing.T, ctx context.Context, s *Store, cp docstore.Checkpoint, limit int) (docstore.Checkpoint, []string) {
	t.Helper()
	var keys []string
	for range 100 {
		page, err := s.Changes(ctx, cp, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Changes) > limit {
			t.Fatalf("limit %d returned %d changes", limit, len(page.Changes))
		}
		cp = page.Next
		if len(page.Changes) == 0 {
			return cp, keys
		}
		for _, ch := range page.Changes {
			keys = append(keys, ch.Doc.ID)
		}
	}
	t.Fatal("the feed never ran dry")
	return "", nil
}
