// Package cosmos is the Azure Cosmos DB implementation of docstore.Store: one container partitioned
// by /partitionKey, _etag optimistic concurrency, TransactionalBatch for transactions, the
// container's change feed for the feed, and native TTL. docs/storage.md says how each store
// concept maps onto Cosmos and where the two backends differ.
package cosmos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/openhcp/openhcp/internal/docstore"
)

const (
	// DefaultContainer is the container every document lives in.
	DefaultContainer = "Resources"
	// partitionKeyPath is the container's partition key; its value is the subscription ID.
	partitionKeyPath = "/partitionKey"

	defaultPageSize = 100
	maxPageSize     = 1000
)

// Options tune the store. The zero value is usable.
type Options struct {
	// Container is the container name (default "Resources").
	Container string
	// CreateIfMissing creates the database and container when they do not exist. Production
	// accounts are provisioned by infrastructure templates and leave this off.
	CreateIfMissing bool
	// TombstoneTTL is how long a deleted document stays in the container as a tombstone, so the
	// change feed (which has no deletes of its own) reports the delete (default 7 days). A
	// follower whose checkpoint is older than this may miss deletes and must resync.
	TombstoneTTL time.Duration
	// PollInterval is how often WaitForChanges asks the change feed for news (default 1s):
	// Cosmos has no push notification.
	PollInterval time.Duration
}

func (o *Options) defaults() {
	if o.Container == "" {
		o.Container = DefaultContainer
	}
	if o.TombstoneTTL <= 0 {
		o.TombstoneTTL = 7 * 24 * time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
}

// Store is a docstore.Store on Cosmos DB.
type Store struct {
	container *azcosmos.ContainerClient
	feed      changeFeed
	opts      Options
}

var _ docstore.Store = (*Store)(nil)

// New returns a store on database db of client, creating the database and container first if
// o.CreateIfMissing is set. It checks the container is reachable.
func New(ctx context.Context, client *azcosmos.Client, db string, o Options) (*Store, error) {
	o.defaults()
	if o.CreateIfMissing {
		if err := ensureContainer(ctx, client, db, o.Container); err != nil {
			return nil, err
		}
	}
	c, err := client.NewContainer(db, o.Container)
	if err != nil {
		return nil, fmt.Errorf("cosmos container %s/%s: %w", db, o.Container, err)
	}
	s := &Store{container: c, feed: c, opts: o}
	resp, err := c.Read(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("read cosmos container %s/%s: %w", db, o.Container, err)
	}
	if err := checkContainer(resp.ContainerProperties); err != nil {
		return nil, fmt.Errorf("cosmos container %s/%s: %w", db, o.Container, err)
	}
	return s, nil
}

// checkContainer refuses a container this store cannot work with: the partition key must be
// /partitionKey, and TTL must be on (defaultTtl -1 or a value) or tombstones and expired
// documents would never be removed.
func checkContainer(p *azcosmos.ContainerProperties) error {
	if p == nil {
		return errors.New("no container properties")
	}
	if paths := p.PartitionKeyDefinition.Paths; len(paths) != 1 || paths[0] != partitionKeyPath {
		return fmt.Errorf("partition key is %v; the store needs [%s]", paths, partitionKeyPath)
	}
	if p.DefaultTimeToLive == nil {
		return errors.New("time to live is off; set the container's defaultTtl to -1 (on, no default expiry)")
	}
	return nil
}

// Ping reads the container's properties: a cheap check that the account, database and
// container answer.
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.container.Read(ctx, nil); err != nil {
		return fmt.Errorf("read cosmos container %s: %w", s.container.ID(), err)
	}
	return nil
}

func ensureContainer(ctx context.Context, client *azcosmos.Client, db, container string) error {
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil && statusOf(err) != http.StatusConflict {
		return fmt.Errorf("create cosmos database %s: %w", db, err)
	}
	d, err := client.NewDatabase(db)
	if err != nil {
		return fmt.Errorf("cosmos database %s: %w", db, err)
	}
	// DefaultTimeToLive -1: TTL is on, and documents without a ttl field never expire.
	ttlOn := int32(-1)
	_, err = d.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID:                     container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{partitionKeyPath}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
		DefaultTimeToLive:      &ttlOn,
	}, nil)
	if err != nil && statusOf(err) != http.StatusConflict {
		return fmt.Errorf("create cosmos container %s/%s: %w", db, container, err)
	}
	return nil
}

// changeFeed is the part of the SDK's container client that Changes uses: the seam a test
// replaces with a feed of several feed ranges, which no emulator here presents.
type changeFeed interface {
	ReadChangeFeed(ctx context.Context, o *azcosmos.ChangeFeedOptions) (azcosmos.ChangeFeedResponse, error)
}

// Close implements docstore.Store. The azcosmos client holds no resources that need releasing.
func (s *Store) Close() {}

// item is the stored shape of a document. The Cosmos id cannot hold '/', so the store's ID is
// kept in key and escaped into id.
type item struct {
	ID           string          `json:"id"`
	PartitionKey string          `json:"partitionKey"`
	Key          string          `json:"key"`
	DocType      string          `json:"docType"`
	ResourceID   string          `json:"resourceId"`
	Properties   json.RawMessage `json:"properties,omitempty"`
	// ExpiresAt is the logical expiry in Unix milliseconds (0: never). It, not Cosmos's ttl,
	// decides visibility: Cosmos's ttl counts whole seconds from _ts, which is too coarse to
	// keep a document's expiry across a read-modify-replace.
	ExpiresAt int64 `json:"expiresAt"`
	// TTL is Cosmos's native ttl in seconds: it removes the document a little after ExpiresAt.
	TTL     *int64 `json:"ttl,omitempty"`
	Deleted bool   `json:"deleted"`

	ETag string `json:"_etag,omitempty"`
	LSN  int64  `json:"_lsn,omitempty"`
}

// cosmosID escapes the characters Cosmos forbids in an id ('/', '\', '?', '#') and '%' itself.
func cosmosID(id string) string {
	r := strings.NewReplacer("%", "%25", "/", "%2F", `\`, "%5C", "?", "%3F", "#", "%23")
	return r.Replace(id)
}

func (it *item) live(now time.Time) bool {
	return !it.Deleted && (it.ExpiresAt == 0 || it.ExpiresAt > now.UnixMilli())
}

func (it *item) document() *docstore.Document {
	d := &docstore.Document{
		PartitionKey: it.PartitionKey,
		ID:           it.Key,
		Type:         it.DocType,
		ResourceID:   it.ResourceID,
		Body:         it.Properties,
		ETag:         it.ETag,
		Seq:          it.LSN,
	}
	if it.ExpiresAt != 0 {
		d.ExpiresAt = time.UnixMilli(it.ExpiresAt).UTC()
		d.TTL = max(time.Until(d.ExpiresAt), time.Microsecond)
	}
	return d
}

func toItem(doc *docstore.Document, now time.Time) *item {
	it := &item{
		ID:           cosmosID(doc.ID),
		PartitionKey: doc.PartitionKey,
		Key:          doc.ID,
		DocType:      doc.Type,
		ResourceID:   strings.ToLower(doc.ResourceID),
		Properties:   doc.Body,
	}
	if doc.TTL > 0 {
		exp := now.Add(doc.TTL)
		it.ExpiresAt = exp.UnixMilli()
		// One second more than the logical TTL, rounded up: Cosmos counts from _ts (whole
		// seconds), and must never remove a document before it is logically expired.
		secs := int64(math.Ceil(doc.TTL.Seconds())) + 1
		it.TTL = &secs
	}
	return it
}

func tombstone(partition, id string, old *item, ttl time.Duration) *item {
	secs := int64(math.Ceil(ttl.Seconds()))
	t := &item{ID: cosmosID(id), PartitionKey: partition, Key: id, Deleted: true, TTL: &secs}
	if old != nil {
		t.DocType, t.ResourceID = old.DocType, old.ResourceID
	}
	return t
}

func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// mapStatus turns a Cosmos status into the store's errors.
func mapStatus(code int) error {
	switch code {
	case http.StatusNotFound:
		return docstore.ErrNotFound
	case http.StatusConflict:
		return docstore.ErrAlreadyExists
	case http.StatusPreconditionFailed:
		return docstore.ErrPreconditionFailed
	}
	return nil
}

func wrap(op string, partition, id string, err error) error {
	if mapped := mapStatus(statusOf(err)); mapped != nil {
		return mapped
	}
	return fmt.Errorf("%s document %s/%s: %w", op, partition, id, err)
}

// sessionLSN reads the global LSN from a session token ("<range>:<version>#<lsn>[#...]"): the
// write's position in its feed range's change feed. 0 when the token has none.
func sessionLSN(token string) int64 {
	_, rest, ok := strings.Cut(token, "#")
	if !ok {
		return 0
	}
	num, _, _ := strings.Cut(rest, "#")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (s *Store) readItem(ctx context.Context, partition, id string) (*item, error) {
	resp, err := s.container.ReadItem(ctx, azcosmos.NewPartitionKeyString(partition), cosmosID(id), nil)
	if err != nil {
		return nil, err
	}
	var it item
	if err := json.Unmarshal(resp.Value, &it); err != nil {
		return nil, fmt.Errorf("decode document %s/%s: %w", partition, id, err)
	}
	it.ETag = string(resp.ETag)
	return &it, nil
}

// Get implements docstore.Store. Tombstones and logically expired documents are not found.
func (s *Store) Get(ctx context.Context, partition, id string) (*docstore.Document, error) {
	it, err := s.readItem(ctx, partition, id)
	if err != nil {
		return nil, wrap("get", partition, id, err)
	}
	if !it.live(time.Now()) {
		return nil, docstore.ErrNotFound
	}
	return it.document(), nil
}

func written(it *item, etag azcore.ETag, session *string) *docstore.Document {
	it.ETag = string(etag)
	if session != nil {
		it.LSN = sessionLSN(*session)
	}
	return it.document()
}

// Create implements docstore.Store. A tombstone or an expired document under the same ID does not
// block a create: it is replaced, conditional on its ETag, so two racing creates still have
// one winner.
func (s *Store) Create(ctx context.Context, doc *docstore.Document) (*docstore.Document, error) {
	if err := docstore.Check(doc); err != nil {
		return nil, err
	}
	it := toItem(doc, time.Now())
	body, err := json.Marshal(it)
	if err != nil {
		return nil, err
	}
	pk := azcosmos.NewPartitionKeyString(doc.PartitionKey)
	resp, err := s.container.CreateItem(ctx, pk, body, nil)
	if err == nil {
		return written(it, resp.ETag, resp.SessionToken), nil
	}
	if statusOf(err) != http.StatusConflict {
		return nil, wrap("create", doc.PartitionKey, doc.ID, err)
	}
	old, rerr := s.readItem(ctx, doc.PartitionKey, doc.ID)
	if rerr != nil {
		if statusOf(rerr) == http.StatusNotFound {
			// Removed between our create and read (TTL): one more try.
			resp, err = s.container.CreateItem(ctx, pk, body, nil)
			if err != nil {
				return nil, wrap("create", doc.PartitionKey, doc.ID, err)
			}
			return written(it, resp.ETag, resp.SessionToken), nil
		}
		return nil, wrap("create", doc.PartitionKey, doc.ID, rerr)
	}
	if old.live(time.Now()) {
		return nil, docstore.ErrAlreadyExists
	}
	etag := azcore.ETag(old.ETag)
	resp, err = s.container.ReplaceItem(ctx, pk, it.ID, body, &azcosmos.ItemOptions{IfMatchEtag: &etag})
	switch {
	case err == nil:
		return written(it, resp.ETag, resp.SessionToken), nil
	case statusOf(err) == http.StatusPreconditionFailed:
		return nil, docstore.ErrAlreadyExists // another create won
	}
	return nil, wrap("create", doc.PartitionKey, doc.ID, err)
}

// Replace implements docstore.Store.
func (s *Store) Replace(ctx context.Context, doc *docstore.Document, ifMatch string) (*docstore.Document, error) {
	if err := docstore.Check(doc); err != nil {
		return nil, err
	}
	if ifMatch == "" {
		return nil, docstore.ErrETagRequired
	}
	it := toItem(doc, time.Now())
	body, err := json.Marshal(it)
	if err != nil {
		return nil, err
	}
	etag := azcore.ETag(ifMatch)
	resp, err := s.container.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(doc.PartitionKey), it.ID, body, &azcosmos.ItemOptions{IfMatchEtag: &etag})
	if err != nil {
		return nil, s.writeFailure(ctx, "replace", doc.PartitionKey, doc.ID, err)
	}
	return written(it, resp.ETag, resp.SessionToken), nil
}

// writeFailure explains a failed conditional write: a 412 on a tombstone or an expired
// document means the document is gone, not that the caller's ETag is stale.
func (s *Store) writeFailure(ctx context.Context, op, partition, id string, err error) error {
	if statusOf(err) != http.StatusPreconditionFailed {
		return wrap(op, partition, id, err)
	}
	old, rerr := s.readItem(ctx, partition, id)
	if rerr != nil {
		if statusOf(rerr) == http.StatusNotFound {
			return docstore.ErrNotFound
		}
		return wrap(op, partition, id, rerr)
	}
	if !old.live(time.Now()) {
		return docstore.ErrNotFound
	}
	return docstore.ErrPreconditionFailed
}

// Delete implements docstore.Store. The document is replaced by a tombstone that Cosmos's TTL
// removes after Options.TombstoneTTL, so the change feed carries the delete.
func (s *Store) Delete(ctx context.Context, partition, id, ifMatch string) error {
	if ifMatch == "" {
		return docstore.ErrETagRequired
	}
	// The tombstone keeps type and resource ID for followers, so read them first. The read's
	// ETag is not used: the write is conditional on the caller's.
	old, err := s.readItem(ctx, partition, id)
	if err != nil {
		return wrap("delete", partition, id, err)
	}
	if !old.live(time.Now()) {
		return docstore.ErrNotFound
	}
	body, err := json.Marshal(tombstone(partition, id, old, s.opts.TombstoneTTL))
	if err != nil {
		return err
	}
	etag := azcore.ETag(ifMatch)
	_, err = s.container.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(partition), cosmosID(id), body, &azcosmos.ItemOptions{IfMatchEtag: &etag})
	if err != nil {
		return s.writeFailure(ctx, "delete", partition, id, err)
	}
	return nil
}

func kindName(k docstore.TxKind) string {
	switch k {
	case docstore.TxCreate:
		return "create"
	case docstore.TxReplace:
		return "replace"
	case docstore.TxDelete:
		return "delete"
	}
	return strconv.Itoa(int(k))
}

// Transact implements docstore.Store with one TransactionalBatch (at most
// docstore.MaxTransactSteps operations, all in one partition, as Cosmos requires).
func (s *Store) Transact(ctx context.Context, partition string, ops []docstore.TxOp) ([]*docstore.Document, error) {
	// More than Cosmos holds in one batch is refused by every store, so a caller that fits one
	// fits the other.
	if err := docstore.CheckTransaction(partition, ops); err != nil {
		return nil, err
	}
	// A create over a tombstone or an expired document becomes a replace conditional on its
	// ETag (see Create). Such steps are found when the batch fails on them; each retry turns
	// at least one more create into a replace, so this ends.
	overwrite := map[int]string{}
	for attempt := 0; attempt <= len(ops); attempt++ {
		out, failed, err := s.runBatch(ctx, partition, ops, overwrite)
		if err == nil {
			return out, nil
		}
		if failed < 0 {
			return nil, err
		}
		op := ops[failed]
		code := statusOf(err)
		if op.Kind == docstore.TxCreate && code == http.StatusConflict {
			old, rerr := s.readItem(ctx, partition, op.Doc.ID)
			if rerr == nil && !old.live(time.Now()) && overwrite[failed] != old.ETag {
				overwrite[failed] = old.ETag
				continue
			}
		}
		if op.Kind != docstore.TxCreate && code == http.StatusPreconditionFailed {
			err = s.writeFailure(ctx, kindName(op.Kind), partition, op.Doc.ID, err)
		} else if op.Kind == docstore.TxCreate && code == http.StatusPreconditionFailed {
			err = docstore.ErrAlreadyExists // a racing create took the tombstone first
		} else {
			err = wrap(kindName(op.Kind), partition, op.Doc.ID, err)
		}
		return nil, fmt.Errorf("transaction step %d (%s %s): %w", failed, kindName(op.Kind), op.Doc.ID, err)
	}
	return nil, fmt.Errorf("transaction in %s: too many retries", partition)
}

// runBatch sends the batch. On failure it returns the index of the failing step (or -1) and an
// error carrying that step's status.
func (s *Store) runBatch(ctx context.Context, partition string, ops []docstore.TxOp, overwrite map[int]string) ([]*docstore.Document, int, error) {
	now := time.Now()
	b := s.container.NewTransactionalBatch(azcosmos.NewPartitionKeyString(partition))
	items := make([]*item, len(ops))
	for i, op := range ops {
		var it *item
		switch op.Kind {
		case docstore.TxCreate, docstore.TxReplace:
			it = toItem(op.Doc, now)
		case docstore.TxDelete:
			// The batch cannot read first, so a tombstone from a transaction has no type or
			// resource ID unless the caller's Doc carries them.
			it = tombstone(partition, op.Doc.ID, &item{DocType: op.Doc.Type, ResourceID: strings.ToLower(op.Doc.ResourceID)}, s.opts.TombstoneTTL)
		}
		items[i] = it
		body, err := json.Marshal(it)
		if err != nil {
			return nil, -1, err
		}
		switch {
		case op.Kind == docstore.TxCreate && overwrite[i] != "":
			etag := azcore.ETag(overwrite[i])
			b.ReplaceItem(it.ID, body, &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &etag})
		case op.Kind == docstore.TxCreate:
			b.CreateItem(body, nil)
		default:
			etag := azcore.ETag(op.IfMatch)
			b.ReplaceItem(it.ID, body, &azcosmos.TransactionalBatchItemOptions{IfMatchETag: &etag})
		}
	}
	resp, err := s.container.ExecuteTransactionalBatch(ctx, b, nil)
	if err != nil {
		return nil, -1, fmt.Errorf("transaction in %s: %w", partition, err)
	}
	if !resp.Success {
		for i, r := range resp.OperationResults {
			if r.StatusCode != http.StatusFailedDependency && r.StatusCode >= 300 {
				return nil, i, &azcore.ResponseError{StatusCode: int(r.StatusCode), ErrorCode: http.StatusText(int(r.StatusCode))}
			}
		}
		return nil, -1, fmt.Errorf("transaction in %s failed without a failing step", partition)
	}
	lsn := sessionLSN(resp.SessionToken)
	out := make([]*docstore.Document, len(ops))
	for i, op := range ops {
		if op.Kind == docstore.TxDelete {
			continue
		}
		items[i].ETag = string(resp.OperationResults[i].ETag)
		items[i].LSN = lsn
		out[i] = items[i].document()
	}
	return out, -1, nil
}

// queryToken is the store's continuation: Cosmos's own token, bound to the query's partition.
type queryToken struct {
	P string `json:"p"`
	C string `json:"c"`
}

func encodeToken(partition, cosmos string) string {
	b, _ := json.Marshal(queryToken{P: partition, C: cosmos})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(s string) (queryToken, error) {
	var t queryToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return t, docstore.ErrInvalidContinuation
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil || t.C == "" {
		return t, docstore.ErrInvalidContinuation
	}
	return t, nil
}

// Query implements docstore.Store. Within a partition, documents come ordered by ID; across
// partitions the order is Cosmos's (the gateway cannot ORDER BY across physical partitions).
func (s *Store) Query(ctx context.Context, q docstore.Query) (docstore.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)
	opts := &azcosmos.QueryOptions{PageSizeHint: int32(limit)}
	if q.Continuation != "" {
		t, err := decodeToken(q.Continuation)
		if err != nil {
			return docstore.Page{}, err
		}
		if t.P != q.Partition {
			return docstore.Page{}, docstore.ErrInvalidContinuation
		}
		opts.ContinuationToken = &t.C
	}
	where := []string{"c.deleted = false", "(c.expiresAt = 0 OR c.expiresAt > @now)"}
	opts.QueryParameters = []azcosmos.QueryParameter{{Name: "@now", Value: time.Now().UnixMilli()}}
	if q.Type != "" {
		where = append(where, "c.docType = @type")
		opts.QueryParameters = append(opts.QueryParameters, azcosmos.QueryParameter{Name: "@type", Value: q.Type})
	}
	if q.ResourceIDPrefix != "" {
		where = append(where, "STARTSWITH(c.resourceId, @prefix)")
		opts.QueryParameters = append(opts.QueryParameters, azcosmos.QueryParameter{Name: "@prefix", Value: strings.ToLower(q.ResourceIDPrefix)})
	}
	sql := "SELECT * FROM c WHERE " + strings.Join(where, " AND ")
	pk := azcosmos.NewPartitionKey() // cross-partition
	if q.Partition != "" {
		pk = azcosmos.NewPartitionKeyString(q.Partition)
		sql += " ORDER BY c.key"
	}
	pager := s.container.NewQueryItemsPager(sql, pk, opts)
	var page docstore.Page
	// The gateway may answer with empty pages that still carry a continuation; keep going until
	// there is something to return or nothing left.
	for pager.More() {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			if statusOf(err) == http.StatusBadRequest && q.Continuation != "" {
				return docstore.Page{}, fmt.Errorf("%w: %v", docstore.ErrInvalidContinuation, err)
			}
			return docstore.Page{}, fmt.Errorf("query documents: %w", err)
		}
		for _, raw := range resp.Items {
			var it item
			if err := json.Unmarshal(raw, &it); err != nil {
				return docstore.Page{}, fmt.Errorf("query documents: decode: %w", err)
			}
			page.Documents = append(page.Documents, it.document())
		}
		if resp.ContinuationToken != nil && *resp.ContinuationToken != "" {
			page.Continuation = encodeToken(q.Partition, *resp.ContinuationToken)
		} else {
			page.Continuation = ""
		}
		if len(page.Documents) > 0 {
			break
		}
	}
	return page, nil
}

// wholeContainer is the feed range of every partition key: the SDK splits it into the
// container's physical partitions and keeps one continuation per partition in its token.
var wholeContainer = azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}

// Changes implements docstore.Store over the container's change feed ("latest version" mode).
// The checkpoint is the SDK's own composite continuation token, passed through untouched: it
// holds a position for every feed range (physical partition) and the SDK follows the ranges
// through splits. Each read returns what the SDK's next page holds: changes from one range, in
// that range's LSN order, at most limit (a transactional batch, which Cosmos commits at one
// LSN, is never split across pages by the service). Deletes appear as the tombstones Delete
// writes. A document removed by TTL leaves the feed without a tombstone (Cosmos's
// latest-version feed has no deletes), unlike PostgreSQL where the purger records one.
func (s *Store) Changes(ctx context.Context, after docstore.Checkpoint, limit int) (docstore.ChangePage, error) {
	if limit <= 0 {
		limit = defaultPageSize
	}
	opts := &azcosmos.ChangeFeedOptions{MaxItemCount: int32(limit)}
	if after != "" {
		// The token's format is the SDK's; the store only refuses what cannot be one.
		if !json.Valid([]byte(after)) {
			return docstore.ChangePage{}, fmt.Errorf("%w: not an SDK continuation token", docstore.ErrInvalidCheckpoint)
		}
		tok := string(after)
		opts.Continuation = &tok
	} else {
		r := wholeContainer
		opts.FeedRange = &r
	}
	resp, err := s.feed.ReadChangeFeed(ctx, opts)
	if err != nil {
		if statusOf(err) == http.StatusBadRequest && after != "" {
			return docstore.ChangePage{}, fmt.Errorf("%w: %v", docstore.ErrInvalidCheckpoint, err)
		}
		return docstore.ChangePage{}, fmt.Errorf("read change feed: %w", err)
	}
	page := docstore.ChangePage{Next: after}
	if resp.ContinuationToken != "" {
		page.Next = docstore.Checkpoint(resp.ContinuationToken)
	}
	now := time.Now()
	for _, raw := range resp.Items {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return docstore.ChangePage{}, fmt.Errorf("read change feed: decode: %w", err)
		}
		if !it.Deleted && !it.live(now) {
			continue // expired, not yet removed by TTL
		}
		d := it.document()
		if it.Deleted {
			d.ETag, d.Body, d.TTL, d.ExpiresAt = "", nil, 0, time.Time{}
		}
		page.Changes = append(page.Changes, docstore.Change{Seq: it.LSN, Deleted: it.Deleted, Doc: d})
	}
	return page, nil
}

// WaitForChanges implements docstore.Store by polling the change feed every Options.PollInterval:
// Cosmos pushes nothing. An empty poll costs about one request unit per feed range.
func (s *Store) WaitForChanges(ctx context.Context, checkpoint docstore.Checkpoint) error {
	for {
		page, err := s.Changes(ctx, checkpoint, 1)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if len(page.Changes) > 0 {
			return nil
		}
		// Expired documents the page skipped are behind the new checkpoint.
		checkpoint = page.Next
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.opts.PollInterval):
		}
	}
}

// DropContainer deletes the store's container and everything in it. Tests use it to clean up
// on real accounts.
func (s *Store) DropContainer(ctx context.Context) error {
	if _, err := s.container.Delete(ctx, nil); err != nil {
		return fmt.Errorf("delete cosmos container %s: %w", s.container.ID(), err)
	}
	return nil
}
