// Package leader elects one active backend replica through a lease document in the document
// store: the holder renews it with ETag-conditional replaces, a candidate takes it over once it
// has seen no renewal for a whole lease duration, and a holder that cannot renew in time stops
// before anyone else can start. It works on any docstore.Store (PostgreSQL or Cosmos DB).
package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/docstore"
)

// Where the lease lives. The partition is not a subscription ID, so no resource query of the
// frontend or the backend ever meets it.
const (
	Partition = "openhcp-leases"
	TypeLease = "lease"
)

// ErrNotLeader is returned by Guard once this replica's lease may have expired.
var ErrNotLeader = errors.New("this replica does not hold the leader lease")

// Config tunes an Elector. Zero values take the documented defaults.
type Config struct {
	// Name is the lease's document ID (default "backend").
	Name string
	// Holder identifies this replica in the lease (required; hostname plus a random suffix).
	Holder string
	// LeaseDuration is how long a candidate waits after the last renewal it saw before it takes
	// over (default 15s). Failover after a crash takes at most this long plus RetryPeriod.
	LeaseDuration time.Duration
	// RenewPeriod is how often the holder renews (default LeaseDuration/3).
	RenewPeriod time.Duration
	// RetryPeriod is how often a candidate looks at the lease (default LeaseDuration/10).
	RetryPeriod time.Duration
	Log         *slog.Logger
	// Registerer, when set, receives backend_leader and backend_leader_transitions_total.
	Registerer prometheus.Registerer
}

func (c *Config) defaults() error {
	if c.Holder == "" {
		return errors.New("leader: Holder is required")
	}
	if c.Name == "" {
		c.Name = "backend"
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewPeriod <= 0 {
		c.RenewPeriod = c.LeaseDuration / 3
	}
	if c.RetryPeriod <= 0 {
		c.RetryPeriod = c.LeaseDuration / 10
	}
	if c.RenewPeriod >= c.LeaseDuration/2 {
		return fmt.Errorf("leader: renew period %s must be under half the lease duration %s", c.RenewPeriod, c.LeaseDuration)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// record is the lease document's body.
type record struct {
	Holder        string    `json:"holder"`
	Term          int64     `json:"term"`
	AcquireTime   time.Time `json:"acquireTime"`
	RenewTime     time.Time `json:"renewTime"`
	LeaseDuration string    `json:"leaseDuration"`
}

// Elector campaigns for the lease and runs work while it holds it.
type Elector struct {
	st  docstore.Store
	cfg Config

	isLeader    prometheus.Gauge
	transitions prometheus.Counter

	mu sync.Mutex
	// validUntil is the monotonic time after which this replica must assume it lost the lease:
	// the start of its last successful write plus the lease duration less a safety margin. A
	// candidate waits a full lease duration from when it saw that write, which is later.
	validUntil time.Time
	term       int64
	etag       string
}

// New returns an elector; it does nothing until Run.
func New(st docstore.Store, cfg Config) (*Elector, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	e := &Elector{st: st, cfg: cfg,
		isLeader:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "backend_leader", Help: "1 while this replica holds the leader lease and processes operations, else 0."}),
		transitions: prometheus.NewCounter(prometheus.CounterOpts{Name: "backend_leader_transitions_total", Help: "Times this replica became leader."}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(e.isLeader, e.transitions)
	}
	return e, nil
}

// margin keeps the holder's own view of its lease shorter than the candidates' view: it covers
// a write that commits after the client stopped waiting and clock-rate differences.
func (e *Elector) margin() time.Duration { return e.cfg.LeaseDuration / 5 }

// Guard returns a context that ends when this replica's lease may have run out, so a write
// made with it cannot be started, nor waited on, after another replica may have taken over. It
// fails with ErrNotLeader once the lease is not held.
func (e *Elector) Guard(ctx context.Context) (context.Context, context.CancelFunc, error) {
	e.mu.Lock()
	until := e.validUntil
	e.mu.Unlock()
	if until.IsZero() || !time.Now().Before(until) {
		return ctx, func() {}, ErrNotLeader
	}
	gctx, cancel := context.WithDeadline(ctx, until)
	return gctx, cancel, nil
}

// Term is the lease term this replica holds, 0 when it holds none.
func (e *Elector) Term() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.validUntil.IsZero() {
		return 0
	}
	return e.term
}

// Run campaigns until ctx ends. Each time it gains the lease it calls lead with a context that
// is canceled as soon as the lease may be lost, and waits for lead to return before it
// campaigns again. On shutdown it releases the lease so another replica takes over at once.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	for ctx.Err() == nil {
		if err := e.acquire(ctx); err != nil {
			return nil //nolint:nilerr // only ctx ends acquire
		}
		e.isLeader.Set(1)
		e.transitions.Inc()
		e.cfg.Log.Info("became leader", "holder", e.cfg.Holder, "term", e.Term())
		leadCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); lead(leadCtx) }()
		e.renew(leadCtx, cancel)
		cancel()
		// Writes are refused from here on (Guard); the gauge says so at once, not when the
		// controller has wound down.
		e.isLeader.Set(0)
		<-done
		e.cfg.Log.Warn("stopped leading", "holder", e.cfg.Holder, "term", e.Term())
		e.release()
	}
	return nil
}

// acquire blocks until this replica holds the lease or ctx ends.
func (e *Elector) acquire(ctx context.Context) error {
	var seenETag string
	var seenAt time.Time
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, etag, err := e.tryAcquire(ctx, seenETag, seenAt)
		switch {
		case err != nil && ctx.Err() == nil:
			e.cfg.Log.Warn("read leader lease", "error", err)
		case ok:
			return nil
		case etag != seenETag:
			seenETag, seenAt = etag, time.Now()
		}
		t := time.NewTimer(e.cfg.RetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (e *Elector) tryAcquire(ctx context.Context, seenETag string, seenAt time.Time) (bool, string, error) {
	start := time.Now()
	doc, err := e.st.Get(ctx, Partition, e.cfg.Name)
	if errors.Is(err, docstore.ErrNotFound) {
		return e.write(ctx, nil, 1, start)
	}
	if err != nil {
		return false, "", err
	}
	var rec record
	if err := json.Unmarshal(doc.Body, &rec); err != nil {
		return false, doc.ETag, fmt.Errorf("decode lease: %w", err)
	}
	// Expired: released, or unchanged for a whole lease duration by this replica's own clock
	// (the holder's clock is never compared with ours).
	expired := rec.Holder == "" || (doc.ETag == seenETag && time.Since(seenAt) > e.cfg.LeaseDuration)
	if !expired {
		return false, doc.ETag, nil
	}
	return e.write(ctx, doc, rec.Term+1, start)
}

// write creates or takes over the lease at term, conditional on what was read.
func (e *Elector) write(ctx context.Context, cur *docstore.Document, term int64, start time.Time) (bool, string, error) {
	now := time.Now().UTC()
	body, err := json.Marshal(record{Holder: e.cfg.Holder, Term: term, AcquireTime: now, RenewTime: now, LeaseDuration: e.cfg.LeaseDuration.String()})
	if err != nil {
		return false, "", err
	}
	var written *docstore.Document
	if cur == nil {
		written, err = e.st.Create(ctx, &docstore.Document{PartitionKey: Partition, ID: e.cfg.Name, Type: TypeLease, ResourceID: e.cfg.Name, Body: body})
	} else {
		next := *cur
		next.Body = body
		written, err = e.st.Replace(ctx, &next, cur.ETag)
	}
	if errors.Is(err, docstore.ErrAlreadyExists) || errors.Is(err, docstore.ErrPreconditionFailed) {
		return false, "", nil // another candidate won
	}
	if err != nil {
		return false, "", err
	}
	e.mu.Lock()
	e.term, e.etag = term, written.ETag
	e.validUntil = start.Add(e.cfg.LeaseDuration - e.margin())
	e.mu.Unlock()
	return true, written.ETag, nil
}

// renew keeps the lease until it cannot, then calls lost. It returns when leadership ends.
func (e *Elector) renew(ctx context.Context, lost context.CancelFunc) {
	t := time.NewTicker(e.cfg.RenewPeriod)
	defer t.Stop()
	for {
		e.mu.Lock()
		until := e.validUntil
		e.mu.Unlock()
		expiry := time.NewTimer(time.Until(until))
		select {
		case <-ctx.Done():
			expiry.Stop()
			return
		case <-expiry.C:
			e.cfg.Log.Error("leader lease ran out before it could be renewed; stopping", "holder", e.cfg.Holder)
			e.drop()
			lost()
			return
		case <-t.C:
			expiry.Stop()
		}
		if err := e.renewOnce(ctx); err != nil {
			if errors.Is(err, docstore.ErrPreconditionFailed) || errors.Is(err, ErrNotLeader) {
				e.cfg.Log.Error("leader lease taken by another replica; stopping", "holder", e.cfg.Holder, "error", err)
				e.drop()
				lost()
				return
			}
			e.cfg.Log.Warn("renew leader lease; retrying", "error", err)
		}
	}
}

func (e *Elector) renewOnce(ctx context.Context) error {
	start := time.Now()
	e.mu.Lock()
	term, etag, until := e.term, e.etag, e.validUntil
	e.mu.Unlock()
	// A renewal that takes longer than the lease has left must not count.
	rctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	doc, err := e.st.Get(rctx, Partition, e.cfg.Name)
	if err != nil {
		return err
	}
	var rec record
	if err := json.Unmarshal(doc.Body, &rec); err != nil {
		return fmt.Errorf("decode lease: %w", err)
	}
	if doc.ETag != etag || rec.Holder != e.cfg.Holder || rec.Term != term {
		return fmt.Errorf("%w: lease now held by %q term %d", ErrNotLeader, rec.Holder, rec.Term)
	}
	rec.RenewTime = time.Now().UTC()
	body, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	next := *doc
	next.Body = body
	written, err := e.st.Replace(rctx, &next, etag)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.etag = written.ETag
	e.validUntil = start.Add(e.cfg.LeaseDuration - e.margin())
	e.mu.Unlock()
	return nil
}

// drop forgets the lease locally, so Guard refuses every further write.
func (e *Elector) drop() {
	e.mu.Lock()
	e.validUntil = time.Time{}
	e.mu.Unlock()
}

// release gives the lease up, if still ours, so a candidate need not wait for it to expire.
func (e *Elector) release() {
	e.mu.Lock()
	etag, held := e.etag, !e.validUntil.IsZero()
	e.validUntil = time.Time{}
	e.mu.Unlock()
	if !held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	doc, err := e.st.Get(ctx, Partition, e.cfg.Name)
	if err != nil || doc.ETag != etag {
		return
	}
	var rec record
	if json.Unmarshal(doc.Body, &rec) != nil {
		return
	}
	rec.Holder = ""
	body, _ := json.Marshal(rec)
	next := *doc
	next.Body = body
	if _, err := e.st.Replace(ctx, &next, etag); err != nil {
		e.cfg.Log.Warn("release leader lease", "error", err)
	}
}
