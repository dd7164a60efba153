package frontend

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/openhcp/openhcp/internal/docstore"
)

// DefaultPageBytes bounds the rendered resources of one list page (Config.PageBytes), as
// Config.PageSize bounds their number: a hundred large clusters (a body may be up to 4 MiB)
// would otherwise make one answer of hundreds of megabytes. A page holds at least one resource
// whatever its size; the rest are reached by nextLink.
const DefaultPageBytes = 4 << 20

// pageCursor is where a list page starts: a store page (its continuation, "" for the first)
// and, when an earlier page was cut inside that store page by size, the documents of it already
// answered (served: a 64-bit FNV-1a hash of each ID). The next page reads the same store page
// again and answers the documents not among them, in the store's order: a document deleted
// between the pages is simply not there, one inserted into the store page is listed, and none is
// answered twice. A store page holds at most Config.PageSize documents, so the set is bounded too
// (8 bytes a document; maxServed for a token a caller wrote).
type pageCursor struct {
	store  string
	served []uint64
}

// maxServed bounds the served set a $skipToken may carry: more than any store page holds.
const maxServed = 4096

// The $skipToken of a cut page is "<store>.<served>", the hashes as 8-byte big-endian words in
// base64url: a store's own token is base64url, so it holds no '.', and a token without one is a
// store's token as it was issued.
func (c pageCursor) String() string {
	if len(c.served) == 0 {
		return c.store
	}
	b := make([]byte, 0, 8*len(c.served))
	for _, h := range c.served {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return c.store + "." + base64.RawURLEncoding.EncodeToString(b)
}

// parsePageCursor reads a $skipToken; a malformed one is docstore.ErrInvalidContinuation.
func parsePageCursor(tok string) (pageCursor, error) {
	store, set, cut := strings.Cut(tok, ".")
	if !cut {
		return pageCursor{store: tok}, nil
	}
	bad := fmt.Errorf("list page token: %w", docstore.ErrInvalidContinuation)
	b, err := base64.RawURLEncoding.DecodeString(set)
	if err != nil || len(b) == 0 || len(b)%8 != 0 || len(b)/8 > maxServed {
		return pageCursor{}, bad
	}
	c := pageCursor{store: store, served: make([]uint64, 0, len(b)/8)}
	for i := 0; i < len(b); i += 8 {
		c.served = append(c.served, binary.BigEndian.Uint64(b[i:]))
	}
	return c, nil
}

// idHash is the served set's hash of a document ID.
func idHash(id string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	return h.Sum64()
}

// unserved is the documents of a store page that c has not answered yet, in the page's order.
func (c pageCursor) unserved(docs []*docstore.Document) []*docstore.Document {
	if len(c.served) == 0 {
		return docs
	}
	served := make(map[uint64]bool, len(c.served))
	for _, h := range c.served {
		served[h] = true
	}
	var out []*docstore.Document
	for _, d := range docs {
		if !served[idHash(d.ID)] {
			out = append(out, d)
		}
	}
	return out
}

// after is the cursor of the page that answers these documents of c's store page too.
func (c pageCursor) after(answered []*docstore.Document) pageCursor {
	next := pageCursor{store: c.store, served: slices.Clone(c.served)}
	for _, d := range answered {
		next.served = append(next.served, idHash(d.ID))
	}
	next.served = next.served[max(0, len(next.served)-maxServed):]
	return next
}

// into is the cursor of the store page that follows c's (its continuation, store): c's store
// page, read again, may have come back shorter than when its first part was answered (resources
// created before the cut since, or a store whose page size is a hint), so answered documents
// that page no longer holds (all of docs) may stand first in the next one; they stay served
// there. Those deleted since are carried too, harmlessly, at most maxServed in all.
func (c pageCursor) into(store string, docs []*docstore.Document) pageCursor {
	next := pageCursor{store: store}
	if len(c.served) == 0 {
		return next
	}
	held := make(map[uint64]bool, len(docs))
	for _, d := range docs {
		held[idHash(d.ID)] = true
	}
	for _, h := range c.served {
		if !held[h] {
			next.served = append(next.served, h)
		}
	}
	return next
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
