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
// were answered (served), the ID of the last of them (after) and of the first left (next).
type pageCursor struct {
	store       string
	served      int
	after, next string
}

// The $skipToken of a cut page is "<store>.<served>.<after>.<next>", both IDs in base64url: a
// store's own token is base64url, so it holds no '.', and a token without one is a store's token
// as it was issued.
func (c pageCursor) String() string {
	if c.after == "" {
		return c.store
	}
	enc := base64.RawURLEncoding.EncodeToString
	return c.store + "." + strconv.Itoa(c.served) + "." + enc([]byte(c.after)) + "." + enc([]byte(c.next))
}

// parsePageCursor reads a $skipToken; a malformed one is docstore.ErrInvalidContinuation.
func parsePageCursor(tok string) (pageCursor, error) {
	parts := strings.Split(tok, ".")
	if len(parts) == 1 {
		return pageCursor{store: tok}, nil
	}
	bad := fmt.Errorf("list page token: %w", docstore.ErrInvalidContinuation)
	if len(parts) != 4 {
		return pageCursor{}, bad
	}
	served, err := strconv.Atoi(parts[1])
	if err != nil || served < 1 || strconv.Itoa(served) != parts[1] {
		return pageCursor{}, bad
	}
	after, err1 := base64.RawURLEncoding.DecodeString(parts[2])
	next, err2 := base64.RawURLEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(after) == 0 || len(next) == 0 {
		return pageCursor{}, bad
	}
	return pageCursor{store: parts[0], served: served, after: string(after), next: string(next)}, nil
}

// unserved is the documents of a store page that c has not answered yet: those after c.after;
// when that document is gone (deleted since), those from c.next on; when both are, those after
// the first c.served-1 (what was answered, less the deleted one). The store orders a page by
// document ID, but in its own collation, so a page is searched, never compared by ID.
func (c pageCursor) unserved(docs []*docstore.Document) []*docstore.Document {
	if c.after == "" {
		return docs
	}
	for i, d := range docs {
		if d.ID == c.after {
			return docs[i+1:]
		}
	}
	for i, d := range docs {
		if d.ID == c.next {
			return docs[i:]
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
