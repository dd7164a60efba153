package maintenance

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// listAll decodes every document q finds, page by page, and returns them oldest first (ties by
// ID, so the order is the same on every read). what names the kind in errors.
func listAll[T any](ctx context.Context, st docstore.Store, q docstore.Query, what string,
	decode func(*docstore.Document) (T, error), key func(T) (time.Time, string)) ([]T, error) {
	var out []T
	for {
		p, err := st.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		for _, d := range p.Documents {
			v, err := decode(d)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		if p.Continuation == "" {
			break
		}
		q.Continuation = p.Continuation
	}
	sort.Slice(out, func(i, j int) bool {
		ti, idi := key(out[i])
		tj, idj := key(out[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return idi < idj
	})
	return out, nil
}
