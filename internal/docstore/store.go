// Package docstore owns the document store contract shared by the frontend and the backend:
// JSON documents partitioned by subscription ID, conditional writes on ETags, transactions within
// one partition, TTL, and a change feed. PostgreSQL is the default implementation (package
// store/postgres); Cosmos DB is the Azure one. Both must pass the same conformance suite.
package docstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Document kinds stored side by side in one partition.
const (
	TypeSubscription = "subscription"
	TypeResource     = "resource"
	TypeOperation    = "operation"
)

var (
	ErrNotFound           = errors.New("document not found")
	ErrAlreadyExists      = errors.New("document already exists")
	ErrPreconditionFailed = errors.New("etag does not match")
	// ErrETagRequired is returned for a replace or delete without an ETag: every write is
	// conditional.
	ErrETagRequired = errors.New("etag required for a conditional write")
	// ErrInvalidContinuation is returned by Query for a continuation token it did not issue.
	ErrInvalidContinuation = errors.New("invalid continuation token")
	// ErrUnavailable marks a call that failed because the store could not be reached (down,
	// restarting, connection lost): the caller may retry later. A store wraps the cause in it.
	ErrUnavailable = errors.New("document store unavailable")
	// ErrTooManySteps is returned by Transact for more than MaxTransactSteps steps.
	ErrTooManySteps = errors.New("too many steps in one transaction")
	// ErrInvalidCheckpoint is returned by Changes and WaitForChanges for a checkpoint the store
	// did not issue.
	ErrInvalidCheckpoint = errors.New("invalid change feed checkpoint")
)

// Document is one stored JSON document.
type Document struct {
	// PartitionKey is the lowercase subscription ID.
	PartitionKey string
	// ID is unique within the partition: the lowercase resource ID for resources and
	// subscriptions, the operation ID for operations.
	ID string
	// Type is one of the Type* constants.
	Type string
	// ResourceID is the lowercase ARM resource ID the document is about, for prefix queries.
	ResourceID string
	Body       json.RawMessage
	// TTL, when positive, makes the document expire TTL after this write. On read it is set to
	// the time left, so a read-modify-replace keeps the document's expiry.
	TTL time.Duration

	// Set by the store on read and write.
	ETag      string
	ExpiresAt time.Time
	// Seq is the position of the document's last write in the change feed.
	Seq int64
}

// Query selects documents. An empty Partition queries across all partitions.
type Query struct {
	Partition        string
	Type             string
	ResourceIDPrefix string
	// Limit is the page size; 0 means the store's default.
	Limit int
	// Continuation is the token from the previous page.
	Continuation string
}

// Page is one page of a query. An empty Continuation means there are no more pages.
type Page struct {
	Documents    []*Document
	Continuation string
}

// TxKind says what a transaction step does.
type TxKind int

const (
	TxCreate TxKind = iota + 1
	TxReplace
	TxDelete
)

// TxOp is one step of a transaction. Replace and Delete need IfMatch.
type TxOp struct {
	Kind    TxKind
	Doc     *Document
	IfMatch string
}

// Change is one entry of the change feed: the document as written, or Deleted with its key.
type Change struct {
	// Seq is the change's position in its feed: PostgreSQL's sequence number, Cosmos's LSN of
	// the change's feed range (LSNs of different ranges are not comparable).
	Seq     int64
	Deleted bool
	Doc     *Document
}

// Checkpoint is a position in the change feed. It is opaque: only the store that issued it
// reads it (PostgreSQL keeps its sequence number in it, Cosmos the SDK's continuation token
// over every feed range). The zero value is the start of the feed.
type Checkpoint string

// ChangePage is one read of the change feed. Next is where the following read starts; a follower
// adopts it even when Changes is empty, because a store may have moved past changes it does not
// report (Cosmos skips logically expired documents).
type ChangePage struct {
	Changes []Change
	Next    Checkpoint
}

// HeadQuerier is implemented by a store that can list a page without reading bodies and then
// read the bodies of a chosen set of documents, or read one document without its body when it
// still has a known ETag, so a caller that keeps rendered documents by ETag only transfers the
// bodies that changed. PostgreSQL implements it.
type HeadQuerier interface {
	// GetUnlessETag is Get in one round trip, except that the document comes with its Body nil
	// when its ETag is etag (a non-empty etag: a stored body is never nil).
	GetUnlessETag(ctx context.Context, partition, id, etag string) (*Document, error)
	// QueryHeads returns the page Query would return for q (same order, same page size, same
	// continuation) with every document's Body nil.
	QueryHeads(ctx context.Context, q Query) (Page, error)
	// GetMany returns the current version of each listed document of partition and type typ
	// that exists, ordered by ID (byte order), in one round trip per 1000 IDs. Missing or expired
	// IDs, and documents of another type, are left out.
	GetMany(ctx context.Context, partition, typ string, ids []string) ([]*Document, error)
}

// Unwrapper is a Store that wraps another (to add a readiness check, to count calls) and says
// which, so that what the inner store implements beyond Store is not hidden by the wrapper.
type Unwrapper interface {
	Unwrap() Store
}

// HeadsOf returns s as a HeadQuerier: s itself if it is one, else the first store under it
// (following Unwrap) that is one; false if there is none.
func HeadsOf(s Store) (HeadQuerier, bool) {
	for s != nil {
		if hq, ok := s.(HeadQuerier); ok {
			return hq, true
		}
		u, ok := s.(Unwrapper)
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}

// MaxTransactSteps is the most steps one Transact holds in every implementation: a Cosmos DB
// transactional batch holds at most 100 operations, and PostgreSQL refuses more as well, so a
// caller that fits one store fits the other (storetest checks both).
const MaxTransactSteps = 100

// Store is the document store. Every implementation must pass storetest.Run.
type Store interface {
	Get(ctx context.Context, partition, id string) (*Document, error)
	// Create fails with ErrAlreadyExists if the ID is taken.
	Create(ctx context.Context, doc *Document) (*Document, error)
	// Replace writes doc if the stored ETag equals ifMatch.
	Replace(ctx context.Context, doc *Document, ifMatch string) (*Document, error)
	// Delete removes the document if the stored ETag equals ifMatch.
	Delete(ctx context.Context, partition, id, ifMatch string) error
	Query(ctx context.Context, q Query) (Page, error)
	// Transact applies ops, all in one partition, all or nothing. It returns the written
	// documents in order (nil for deletes). More than MaxTransactSteps ops are refused
	// (ErrTooManySteps).
	Transact(ctx context.Context, partition string, ops []TxOp) ([]*Document, error)
	// Changes returns changes after checkpoint, at most limit, and the checkpoint after them.
	// Following Next until a page is empty reads every change once. PostgreSQL orders the
	// whole feed oldest first; Cosmos orders each feed range (physical partition) oldest first,
	// so changes to one partition key are in order but different partitions may interleave.
	Changes(ctx context.Context, checkpoint Checkpoint, limit int) (ChangePage, error)
	// WaitForChanges blocks until a change after checkpoint may exist, or ctx ends. It lets a
	// follower sleep instead of polling; spurious wake-ups are allowed.
	WaitForChanges(ctx context.Context, checkpoint Checkpoint) error
	Close()
}
