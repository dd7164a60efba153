// Package notify posts the ARM async notification of every operation that ended and asked for
// one (Azure-AsyncNotificationUri), on its own workers, with retries and backoff, under the
// egress policy, and records each delivery in the operation document (oprecord.Notification).
//
// Delivery is at least once. The POST is made first and recorded after, conditionally on the
// ETag read before it; every replica reads this record before posting, and only the leader
// posts (the lease fences the POST as it fences writes). So a notification is sent twice only
// if the process dies, or loses its lease, in the moment between the receiver's 2xx and that
// write. Recording before posting would turn that window into a lost notification instead,
// and a lost notification leaves ARM waiting for its poll interval, while a repeated one only
// makes ARM read the operation status again: at-least-once is the safer side.
package notify

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/openhcp/openhcp/backend/pkg/egress"
	"github.com/openhcp/openhcp/backend/pkg/metrics"
	"github.com/openhcp/openhcp/backend/pkg/oprecord"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/backoff"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/logattr"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Config tunes the notifier; the controller's Config documents and defaults each field.
type Config struct {
	// Workers is the number of notifications posted at once; Timeout bounds one POST, dial to
	// last byte; GiveUp is how long after an operation ended its notification is retried before
	// it is recorded as abandoned.
	Workers int
	Timeout time.Duration
	GiveUp  time.Duration
	// AllowedCIDRs and RootCAs are the egress policy's exceptions and roots (egress.Policy).
	AllowedCIDRs []netip.Prefix
	RootCAs      *x509.CertPool
}

// Guard grants a write (or a POST): it returns a context that ends when the grant does, or an
// error when nothing may be written now. The caller calls the returned cancel.
type Guard func(ctx context.Context) (context.Context, context.CancelFunc, error)

// Notifier delivers notifications.
type Notifier struct {
	store   docstore.Store
	log     *slog.Logger
	metrics *metrics.Metrics
	guard   Guard
	cfg     Config
	now     func() time.Time
	// client posts under the egress policy: HTTPS only, no redirects, no loopback, private or
	// link-local address unless AllowedCIDRs names it.
	client *http.Client
	queue  *reconcile.Queue[key]
}

type key struct{ partition, id string }

// New returns a notifier. m may be nil.
func New(st docstore.Store, log *slog.Logger, m *metrics.Metrics, guard Guard, cfg Config) *Notifier {
	return &Notifier{
		store: st, log: log, metrics: m, guard: guard, cfg: cfg, now: time.Now,
		client: egress.Policy{AllowedCIDRs: cfg.AllowedCIDRs, RootCAs: cfg.RootCAs, Timeout: cfg.Timeout}.Client(),
		// A failed bookkeeping attempt is retried after 250ms doubling to 30s.
		queue: reconcile.NewQueue[key](reconcile.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second}),
	}
}

// Enqueue asks for the notification of operation id in partition to be looked at.
func (n *Notifier) Enqueue(partition, id string) { n.queue.Add(key{partition, id}) }

// Run posts notifications on Workers workers until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := 0; i < n.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.worker(ctx)
		}()
	}
	<-ctx.Done()
	n.queue.ShutDown()
	wg.Wait()
}

// notifyBackoff is the wait after the n-th failed attempt: 1s doubling to 5 min, jittered
// (internal/backoff), so receivers that failed together are not all tried again together.
func notifyBackoff(n int) time.Duration {
	return backoff.Policy{Initial: time.Second, Max: 5 * time.Minute}.After(n)
}

func (c *Notifier) worker(ctx context.Context) {
	for reconcile.Process(ctx, c.queue, c.deliver, func(r reconcile.Result[key]) {
		if r.Outcome == reconcile.OutcomeError {
			c.log.Warn("notification bookkeeping failed; retrying", "partition", r.Key.partition, logattr.OperationID(r.Key.id), "error", r.Err)
		}
	}) {
	}
}

// deliver posts one operation's notification if it is due, and records the result. It returns
// when to try again.
func (c *Notifier) deliver(ctx context.Context, k key) (time.Duration, error) {
	doc, err := c.store.Get(ctx, k.partition, k.id)
	if errors.Is(err, docstore.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get operation %s: %w", k.id, err)
	}
	var op oprecord.Record
	if err := json.Unmarshal(doc.Body, &op); err != nil {
		return 0, fmt.Errorf("decode operation %s: %w", k.id, err)
	}
	if !op.NeedsNotification() {
		return 0, nil
	}
	n := op.Notification
	if n == nil {
		n = &oprecord.Notification{State: oprecord.NotifyPending}
	}
	now := c.now()
	if n.NextAttempt != nil && now.Before(*n.NextAttempt) {
		return n.NextAttempt.Sub(now), nil
	}
	log := c.log.With(logattr.OperationID(op.ID), logattr.ResourceID(op.ExternalID), logattr.CorrelationRequestID(op.CorrelationID))
	ended := op.LastTransitionTime
	if op.EndTime != nil {
		ended = *op.EndTime
	}
	if now.Sub(ended) > c.cfg.GiveUp {
		n.State = oprecord.NotifyAbandoned
		n.NextAttempt = nil
		log.Error("notification abandoned", "attempts", n.Attempts, "lastError", n.LastError)
		c.metrics.Notified("abandoned")
		return 0, c.recordNotification(ctx, doc, &op, n)
	}

	gctx, cancel, err := c.guard(ctx)
	if err != nil {
		cancel()
		return 0, err
	}
	postErr := c.post(gctx, &op, k.partition)
	cancel()
	if postErr != nil && ctx.Err() != nil {
		return 0, ctx.Err()
	}
	n.Attempts++
	retryIn := notifyBackoff(n.Attempts)
	if postErr == nil {
		t := c.now()
		n.State, n.DeliveredAt, n.NextAttempt, n.LastError = oprecord.NotifyDelivered, &t, nil, ""
		log.Info("notification delivered", "attempts", n.Attempts)
		c.metrics.Notified("delivered")
	} else {
		next := c.now().Add(retryIn)
		n.NextAttempt, n.LastError = &next, postErr.Error()
		log.Warn("notification failed; will retry", "attempts", n.Attempts, "next", next, "error", postErr)
		c.metrics.Notified("failed")
	}
	if err := c.recordNotification(ctx, doc, &op, n); err != nil {
		if postErr == nil {
			// Delivered, but not recorded: keep trying to record it without posting again.
			return 0, c.recordDelivered(ctx, k, n)
		}
		return 0, err
	}
	if postErr != nil {
		return retryIn, nil
	}
	return 0, nil
}

// post sends the ARM async notification: the operation status body, as GET on the
// Azure-AsyncOperation URL returns it, to the URI ARM gave. Any 2xx is delivery; anything else,
// a redirect included, is a failure. The URI is checked here, and the address again at dial
// time (egress.Policy): a refused target is a failure like any other, retried until the
// give-up time and logged each time, so the operator sees it.
func (c *Notifier) post(ctx context.Context, op *oprecord.Record, partition string) error {
	if _, err := egress.CheckURL(op.NotificationURI); err != nil {
		return fmt.Errorf("notification URI refused: %w", err)
	}
	body, err := json.Marshal(operationStatusBody(op, partition))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, op.NotificationURI, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build notification request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if op.CorrelationID != "" {
		req.Header.Set("x-ms-correlation-request-id", op.CorrelationID)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("post notification: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, egress.MaxResponseBody))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post notification: receiver answered %s", resp.Status)
	}
	return nil
}

// operationStatusBody is the notification's body: the operation status as the frontend answers
// it at its status URL (armdoc.StatusAt).
func operationStatusBody(op *oprecord.Record, partition string) armdoc.OperationStatus {
	sub := partition
	if id, err := arm.ParseResourceID(op.ExternalID); err == nil {
		sub = id.SubscriptionID
	}
	return op.StatusAt("/subscriptions/" + sub + "/providers/Microsoft.RedHatOpenShift/locations/" + op.Location + "/hcpOperationStatuses/" + op.ID)
}

// recordNotification writes n on the operation, conditional on the document read.
func (c *Notifier) recordNotification(ctx context.Context, doc *docstore.Document, op *oprecord.Record, n *oprecord.Notification) error {
	op.Notification = n
	body, err := json.Marshal(op)
	if err != nil {
		return fmt.Errorf("encode operation %s: %w", op.ID, err)
	}
	next := *doc
	next.Body = body
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return err
	}
	if _, err := c.store.Replace(wctx, &next, doc.ETag); err != nil {
		return fmt.Errorf("record notification of operation %s: %w", op.ID, err)
	}
	return nil
}

// recordDelivered re-reads the operation and records a delivery that already happened, for
// when the first record lost a race with another write to the document.
func (c *Notifier) recordDelivered(ctx context.Context, k key, n *oprecord.Notification) error {
	for attempt := 0; attempt < 5; attempt++ {
		doc, err := c.store.Get(ctx, k.partition, k.id)
		if errors.Is(err, docstore.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var op oprecord.Record
		if err := json.Unmarshal(doc.Body, &op); err != nil {
			return err
		}
		if !op.NeedsNotification() {
			return nil
		}
		err = c.recordNotification(ctx, doc, &op, n)
		if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return err
		}
	}
	return fmt.Errorf("record delivered notification of operation %s: kept conflicting", k.id)
}
