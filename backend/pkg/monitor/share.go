package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// Where the Monitor's leases live: in the document store the backend already uses for its leader
// lease, in a partition of their own that no resource query meets.
const (
	Partition  = "openhcp-monitor"
	TypeBucket = "monitor-bucket"
	TypeMember = "monitor-member"
)

// ShareConfig tunes a Sharer. Zero values take the documented defaults.
type ShareConfig struct {
	// Holder names this replica in the leases (required; hostname plus pid).
	Holder string
	// Buckets is how many parts the fleet is cut into (default 16). Every replica must use the
	// same number; a cluster's bucket is BucketOf(its ID).
	Buckets int
	// LeaseDuration is how long a replica waits after the last renewal of a bucket it saw before
	// it takes the bucket over (default 15s): a dead replica's share moves within this plus
	// RetryPeriod.
	LeaseDuration time.Duration
	// RetryPeriod is how often the Sharer renews, looks at the others and rebalances (default
	// LeaseDuration/5).
	RetryPeriod time.Duration
	Log         *slog.Logger
}

func (c *ShareConfig) defaults() error {
	if c.Holder == "" {
		return errors.New("monitor: Holder is required")
	}
	if c.Buckets <= 0 {
		c.Buckets = 16
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = c.LeaseDuration / 5
	}
	if c.RetryPeriod >= c.LeaseDuration/2 {
		return fmt.Errorf("monitor: retry period %s must be under half the lease duration %s", c.RetryPeriod, c.LeaseDuration)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// BucketOf is the bucket a cluster or shard name falls into: FNV-1a of the name modulo buckets.
func BucketOf(name string, buckets int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(buckets))
}

// leaseRecord is the body of a bucket lease and of a member document.
type leaseRecord struct {
	Holder    string    `json:"holder"`
	RenewTime time.Time `json:"renewTime"`
}

// seen is what this replica last saw of a document: its ETag and, by this replica's own clock,
// when that ETag first appeared. Another replica's clock is never compared with ours.
type seen struct {
	etag   string
	holder string
	at     time.Time
}

// Sharer holds a fair share of the buckets: each replica renews a member document, counts the
// members it has seen renew within a lease duration, and holds ceil(buckets/members) buckets at
// most, taking free or expired ones and releasing any beyond its share. A bucket is held by one
// replica at a time: a holder stops counting it as its own before a lease duration has passed
// since its last successful write, and no one takes it before seeing it unchanged that long.
type Sharer struct {
	st  docstore.Store
	cfg ShareConfig

	mu sync.Mutex
	// held maps a bucket to the monotonic time its lease is ours until, and its ETag.
	held      map[int]heldLease
	seenDocs  map[string]seen
	members   int
	memberTag string
}

type heldLease struct {
	until time.Time
	etag  string
}

// NewSharer returns a Sharer; it holds nothing until Run.
func NewSharer(st docstore.Store, cfg ShareConfig) (*Sharer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Sharer{st: st, cfg: cfg, held: map[int]heldLease{}, seenDocs: map[string]seen{}}, nil
}

// Buckets is the configured number of buckets.
func (s *Sharer) Buckets() int { return s.cfg.Buckets }

// Owns says whether this replica holds the bucket of name now; a check may only run while it does.
func (s *Sharer) Owns(name string) bool {
	b := BucketOf(name, s.cfg.Buckets)
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[b]
	return ok && time.Now().Before(h.until)
}

// Held returns the buckets this replica holds now, sorted.
func (s *Sharer) Held() []int {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for b, h := range s.held {
		if now.Before(h.until) {
			out = append(out, b)
		}
	}
	sort.Ints(out)
	return out
}

// Members is how many replicas this one counted at its last look, itself included.
func (s *Sharer) Members() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members
}

// margin keeps this replica's view of its own lease shorter than the others' view of it.
func (s *Sharer) margin() time.Duration { return s.cfg.LeaseDuration / 5 }

// Run renews, rebalances and takes over buckets every RetryPeriod until ctx ends, then releases
// what it holds so the other replicas take it at once.
func (s *Sharer) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.RetryPeriod)
	defer t.Stop()
	for {
		if err := s.Step(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("monitor leases", "holder", s.cfg.Holder, "error", err)
		}
		select {
		case <-ctx.Done():
			s.releaseAll()
			return
		case <-t.C:
		}
	}
}

// Step is one round: renew the member document and the held buckets, count the members, release
// buckets beyond the fair share, and take free or expired ones up to it.
func (s *Sharer) Step(ctx context.Context) error {
	if err := s.renewMember(ctx); err != nil {
		return fmt.Errorf("renew member %s: %w", s.cfg.Holder, err)
	}
	docs, err := s.list(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	buckets := map[int]*docstore.Document{}
	members := 1
	s.mu.Lock()
	live := map[string]bool{}
	for _, d := range docs {
		prev, ok := s.seenDocs[d.ID]
		var rec leaseRecord
		_ = json.Unmarshal(d.Body, &rec)
		if !ok || prev.etag != d.ETag {
			s.seenDocs[d.ID] = seen{etag: d.ETag, holder: rec.Holder, at: now}
		}
		live[d.ID] = true
		switch d.Type {
		case TypeMember:
			if rec.Holder != s.cfg.Holder && rec.Holder != "" && !s.expiredLocked(d.ID, now) {
				members++
			}
		case TypeBucket:
			if b, err := strconv.Atoi(d.ID[len("bucket-"):]); err == nil && b >= 0 && b < s.cfg.Buckets {
				buckets[b] = d
			}
		}
	}
	for id := range s.seenDocs {
		if !live[id] {
			delete(s.seenDocs, id)
		}
	}
	s.members = members
	s.mu.Unlock()

	share := (s.cfg.Buckets + members - 1) / members
	var errs []error
	// Renew what is ours; forget what another replica took.
	mine := 0
	for _, b := range s.heldBuckets() {
		if err := s.renewBucket(ctx, b, buckets[b]); err != nil {
			errs = append(errs, err)
			continue
		}
		mine++
	}
	// Release beyond the share, highest bucket first, so the others find free ones at once.
	for held := s.heldBuckets(); mine > share && len(held) > 0; held = held[:len(held)-1] {
		s.releaseBucket(ctx, held[len(held)-1])
		mine--
	}
	// Take free or expired buckets up to the share.
	for b := 0; b < s.cfg.Buckets && mine < share; b++ {
		if s.holds(b) {
			continue
		}
		d := buckets[b]
		if d != nil {
			s.mu.Lock()
			sn := s.seenDocs[d.ID]
			free := sn.holder == "" || s.expiredLocked(d.ID, now)
			s.mu.Unlock()
			if !free {
				continue
			}
		}
		ok, err := s.takeBucket(ctx, b, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			mine++
		}
	}
	return errors.Join(errs...)
}

// expiredLocked: unchanged for a whole lease duration by this replica's clock.
func (s *Sharer) expiredLocked(id string, now time.Time) bool {
	sn, ok := s.seenDocs[id]
	return ok && now.Sub(sn.at) > s.cfg.LeaseDuration
}

func (s *Sharer) heldBuckets() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.held))
	for b := range s.held {
		out = append(out, b)
	}
	sort.Ints(out)
	return out
}

func (s *Sharer) holds(b int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[b]
	return ok
}

func bucketID(b int) string { return "bucket-" + strconv.Itoa(b) }

func (s *Sharer) list(ctx context.Context) ([]*docstore.Document, error) {
	var out []*docstore.Document
	q := docstore.Query{Partition: Partition}
	for {
		p, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list monitor leases: %w", err)
		}
		out = append(out, p.Documents...)
		if p.Continuation == "" {
			return out, nil
		}
		q.Continuation = p.Continuation
	}
}

func (s *Sharer) body() []byte {
	b, _ := json.Marshal(leaseRecord{Holder: s.cfg.Holder, RenewTime: time.Now().UTC()})
	return b
}

func (s *Sharer) renewMember(ctx context.Context) error {
	id := "member-" + s.cfg.Holder
	s.mu.Lock()
	etag := s.memberTag
	s.mu.Unlock()
	var written *docstore.Document
	var err error
	if etag == "" {
		written, err = s.st.Create(ctx, &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeMember, ResourceID: id, Body: s.body()})
		if errors.Is(err, docstore.ErrAlreadyExists) {
			// A previous run of this replica: take its document over.
			var cur *docstore.Document
			if cur, err = s.st.Get(ctx, Partition, id); err == nil {
				next := *cur
				next.Body = s.body()
				written, err = s.st.Replace(ctx, &next, cur.ETag)
			}
		}
	} else {
		next := &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeMember, ResourceID: id, Body: s.body()}
		written, err = s.st.Replace(ctx, next, etag)
		if errors.Is(err, docstore.ErrPreconditionFailed) || errors.Is(err, docstore.ErrNotFound) {
			s.mu.Lock()
			s.memberTag = ""
			s.mu.Unlock()
		}
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.memberTag = written.ETag
	s.mu.Unlock()
	return nil
}

// renewBucket keeps bucket b if the stored lease is still the one this replica wrote.
func (s *Sharer) renewBucket(ctx context.Context, b int, cur *docstore.Document) error {
	start := time.Now()
	s.mu.Lock()
	h := s.held[b]
	s.mu.Unlock()
	if cur == nil || cur.ETag != h.etag || !start.Before(h.until) {
		s.drop(b, "lease changed or ran out")
		return nil
	}
	rctx, cancel := context.WithDeadline(ctx, h.until)
	defer cancel()
	next := *cur
	next.Body = s.body()
	written, err := s.st.Replace(rctx, &next, cur.ETag)
	if err != nil {
		if errors.Is(err, docstore.ErrPreconditionFailed) || errors.Is(err, docstore.ErrNotFound) {
			s.drop(b, "lease taken")
			return nil
		}
		return fmt.Errorf("renew bucket %d: %w", b, err)
	}
	s.keep(b, written.ETag, start)
	return nil
}

func (s *Sharer) takeBucket(ctx context.Context, b int, cur *docstore.Document) (bool, error) {
	start := time.Now()
	var written *docstore.Document
	var err error
	if cur == nil {
		id := bucketID(b)
		written, err = s.st.Create(ctx, &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeBucket, ResourceID: id, Body: s.body()})
	} else {
		next := *cur
		next.Body = s.body()
		written, err = s.st.Replace(ctx, &next, cur.ETag)
	}
	if errors.Is(err, docstore.ErrAlreadyExists) || errors.Is(err, docstore.ErrPreconditionFailed) {
		return false, nil // another replica was first
	}
	if err != nil {
		return false, fmt.Errorf("take bucket %d: %w", b, err)
	}
	s.keep(b, written.ETag, start)
	s.cfg.Log.Info("monitor bucket taken", "holder", s.cfg.Holder, "bucket", b)
	return true, nil
}

func (s *Sharer) keep(b int, etag string, start time.Time) {
	s.mu.Lock()
	s.held[b] = heldLease{until: start.Add(s.cfg.LeaseDuration - s.margin()), etag: etag}
	s.mu.Unlock()
}

func (s *Sharer) drop(b int, why string) {
	s.mu.Lock()
	delete(s.held, b)
	s.mu.Unlock()
	s.cfg.Log.Info("monitor bucket lost", "holder", s.cfg.Holder, "bucket", b, "reason", why)
}

// releaseBucket gives bucket b up, if still ours, so another replica takes it without waiting.
func (s *Sharer) releaseBucket(ctx context.Context, b int) {
	s.mu.Lock()
	h, ok := s.held[b]
	delete(s.held, b)
	s.mu.Unlock()
	if !ok {
		return
	}
	body, _ := json.Marshal(leaseRecord{RenewTime: time.Now().UTC()})
	id := bucketID(b)
	if _, err := s.st.Replace(ctx, &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeBucket, ResourceID: id, Body: body}, h.etag); err != nil {
		s.cfg.Log.Debug("release monitor bucket", "bucket", b, "error", err)
	}
}

// releaseAll releases every bucket and the member document on shutdown.
func (s *Sharer) releaseAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, b := range s.heldBuckets() {
		s.releaseBucket(ctx, b)
	}
	s.mu.Lock()
	etag := s.memberTag
	s.memberTag = ""
	s.mu.Unlock()
	if etag != "" {
		_ = s.st.Delete(ctx, Partition, "member-"+s.cfg.Holder, etag)
	}
}
