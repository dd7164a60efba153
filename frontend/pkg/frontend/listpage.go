package frontend

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openhcp/openhcp/internal/docstore"
)

// DefaultPageBytes bounds the rendered resources of one list page (Config.PageBytes), as
// Config.PageSize bounds their number: a hundred large clusters (a body may be up to 4 MiB)
// would otherwise make one answer of hundreds of megabytes. A page holds at least one resource
// whatever its size; the rest are reached by nextLink.
const DefaultPageBytes = 4 << 20

// pageCursor is where a list page starts: a store page (its continuation, "" for the first)
// and, when an earlier page was cut inside that store page by size, how many of its documents
// were answered (served) and the ID of the last of them (after).
type pageCursor struct {
	store  string
	served int
	after  string
}

// The $skipToken of a cut page is "<store>.<served>.<after in base64url>": a store's own token
// is base64url, so it holds no '.', and a token without one is a store's token as it was issued.
func (c pageCursor) String() string {
	if c.after == "" {
		return c.store
	}
	return c.store + "." + strconv.Itoa(c.served) + "." + base64.RawURLEncoding.EncodeToString([]byte(c.after))
}

// parsePageCursor reads a $skipToken; a malformed one is docstore.ErrInvalidContinuation.
func parsePageCursor(tok string) (pageCursor, error) {
	store, rest, cut := strings.Cut(tok, ".")
	if !cut {
		return pageCursor{store: tok}, nil
	}
	n, enc, ok := strings.Cut(rest, ".")
	served, err := strconv.Atoi(n)
	if !ok || err != nil || served < 1 || strconv.Itoa(served) != n {
		return pageCursor{}, fmt.Errorf("list page token: %w", docstore.ErrInvalidContinuation)
	}
	after, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(after) == 0 {
		return pageCursor{}, fmt.Errorf("list page token: %w", docstore.ErrInvalidContinuation)
	}
	return pageCursor{store: store, served: served, after: string(after)}, nil
}

// unserved is the documents of a store page that c has not answered yet: those after c.after,
// or, when that document is gone (deleted since), after the first c.served-1 (those before it),
// so a resource is neither lost nor repeated while the others stay.
func (c pageCursor) unserved(docs []*docstore.Document) []*docstore.Document {
	if c.after == "" {
		return docs
	}
	for i, d := range docs {
		if d.ID == c.after {
			return docs[i+1:]
		}
	}
	return docs[min(c.served-1, len(docs)):]
}

// cutPage returns how many of a page's items (aligned with its documents, nil for a document
// not listed) fit in maxBytes: at least the first listed one, and the page's length when they
// all fit.
func cutPage(items []json.RawMessage, maxBytes int) int {
	size, listed := 0, 0
	for i, it := range items {
		if it == nil {
			continue
		}
		size += len(it) + 1 // its comma
		if listed > 0 && size > maxBytes {
			return i
		}
		listed++
	}
	return len(items)
}
