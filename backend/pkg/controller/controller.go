// Package controller drives every asynchronous ARM operation to a terminal state. In watch mode
// it learns of new operations from the document store's change feed and of Cluster Service
// changes from each operation kind's watch stream (package csfollow), and repairs anything either
// missed with a periodic resync; in poll mode it lists active operations on a timer, as the ARO
// HCP backend used to. It wires the notifier (package notify) and the subscription cascade
// (package subscriptions) to the same feed. The reconcilers are level-triggered and idempotent,
// so they are safe to run again after any crash.
package controller

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/openhcp/openhcp/backend/pkg/csfollow"
	"github.com/openhcp/openhcp/backend/pkg/metrics"
	"github.com/openhcp/openhcp/backend/pkg/notify"
	"github.com/openhcp/openhcp/backend/pkg/oprecord"
	"github.com/openhcp/openhcp/backend/pkg/subscriptions"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/logattr"
	"github.com/openhcp/openhcp/internal/opkind"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Config tunes the controller. Zero values take the documented defaults.
type Config struct {
	// ResyncPeriod is how often every active operation is checked even without events
	// (default 30s).
	ResyncPeriod time.Duration
	// CreateDeadline bounds create and update operations (default 60m); DeleteDeadline bounds
	// deletes (default 12h). An operation past its deadline ends Failed.
	CreateDeadline time.Duration
	DeleteDeadline time.Duration
	// NotFoundGrace is how long a create may find its cluster unknown to Cluster Service, and an
	// update may wait for the frontend to record Cluster Service's answer, before it fails; the
	// frontend writes the operation just before it calls Cluster Service (default 2m).
	NotFoundGrace time.Duration
	// Workers is the number of operations reconciled at once (default 4).
	Workers int
	// StatusMode is ModeWatch (default) or ModePoll.
	StatusMode StatusMode
	// PollInterval is how often poll mode lists active operations (default 10s).
	PollInterval time.Duration
	// Fence, when set, guards every write: nothing is written unless it grants a context, and
	// that context ends when the grant does. The leader lease is the fence of a replicated
	// backend; nil means this is the only writer.
	Fence Fence
	// NotifyWorkers is the number of notifications posted at once (default 4); NotifyTimeout
	// bounds one POST, dial to last byte (default 10s); NotifyGiveUp is how long after an
	// operation ended its notification is retried before it is recorded as abandoned (default 1h).
	NotifyWorkers int
	NotifyTimeout time.Duration
	NotifyGiveUp  time.Duration
	// NotifyAllowedCIDRs are addresses a notification may reach although the notification
	// policy refuses them (loopback, private, link-local, ...): a test and development knob, for
	// receivers on loopback; empty in production (egress.Policy).
	NotifyAllowedCIDRs []netip.Prefix
	// NotifyRootCAs verifies notification receivers (default: the system's roots).
	NotifyRootCAs *x509.CertPool
	// OperationTTL is how long the operation documents the backend creates are kept
	// (default 7 days, as the frontend does).
	OperationTTL time.Duration
	// NodePools is Cluster Service's node pool client, for node pool operations
	// (csfollow/child.go).
	NodePools csv1.NodePoolsClient
	// ExternalAuths is Cluster Service's external auth client, for external auth operations
	// (csfollow/child.go).
	ExternalAuths csv1.ExternalAuthsClient
	// Credentials is Cluster Service's break-glass client, for the requestAdminCredential and
	// revokeCredentials actions (csfollow/credentials.go).
	Credentials csv1.CredentialsClient
}

// StatusMode selects how the controller learns of changes.
type StatusMode string

const (
	// ModeWatch follows the store's change feed and Cluster Service's watch stream, with a
	// periodic resync.
	ModeWatch StatusMode = "watch"
	// ModePoll lists the active operations every PollInterval and asks Cluster Service about
	// each, as the ARO HCP backend used to.
	ModePoll StatusMode = "poll"
)

// Fence grants writes. Guard returns a context that ends when the grant does, or an error
// when no write may be made now.
type Fence interface {
	Guard(ctx context.Context) (context.Context, context.CancelFunc, error)
}

func (c *Config) defaults() {
	if c.ResyncPeriod <= 0 {
		c.ResyncPeriod = 30 * time.Second
	}
	if c.CreateDeadline <= 0 {
		c.CreateDeadline = 60 * time.Minute
	}
	if c.DeleteDeadline <= 0 {
		c.DeleteDeadline = 12 * time.Hour
	}
	if c.NotFoundGrace <= 0 {
		c.NotFoundGrace = armdoc.NotFoundGrace
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.StatusMode == "" {
		c.StatusMode = ModeWatch
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 10 * time.Second
	}
	if c.NotifyWorkers <= 0 {
		c.NotifyWorkers = 4
	}
	if c.NotifyTimeout <= 0 {
		c.NotifyTimeout = 10 * time.Second
	}
	if c.NotifyGiveUp <= 0 {
		c.NotifyGiveUp = time.Hour
	}
	if c.OperationTTL <= 0 {
		c.OperationTTL = 7 * 24 * time.Hour
	}
}

// guard asks the fence for a write context. The caller must call the returned cancel.
func (c *Controller) guard(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if c.cfg.Fence == nil {
		return ctx, func() {}, nil
	}
	return c.cfg.Fence.Guard(ctx)
}

// Controller reconciles operation documents against Cluster Service.
type Controller struct {
	store   docstore.Store
	log     *slog.Logger
	metrics *metrics.Metrics
	cfg     Config
	now     func() time.Time

	queue *reconcile.Queue[opKey]
	// kinds is the backend's part of every operation kind (csfollow.Kinds).
	kinds map[opkind.Kind]csfollow.Kind
	// notifier posts the ARM async notifications of ended operations.
	notifier *notify.Notifier
	// subs cascades the deletion of Deleted subscriptions.
	subs *subscriptions.Cascader

	mu sync.Mutex
	// byCluster indexes active operations by Cluster Service ID, so a watch event finds the
	// operations it concerns without a query; the value feeds the in-flight metrics.
	byCluster map[string]map[opKey]trackedOp
}

type opKey struct{ partition, id string }

// newQueue makes the controller's work queue; a failed reconcile is retried after 250ms
// doubling to 30s.
func newQueue() *reconcile.Queue[opKey] {
	return reconcile.NewQueue[opKey](reconcile.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second})
}

// trackedOp is what the in-flight metrics need of an active operation.
type trackedOp struct {
	request armdoc.OperationRequest
	start   time.Time
}

// New returns a controller. m may be nil.
func New(st docstore.Store, cs csv1.ClustersClient, log *slog.Logger, m *metrics.Metrics, cfg Config) *Controller {
	cfg.defaults()
	c := &Controller{
		store: st, log: log, metrics: m, cfg: cfg, now: time.Now,
		queue:     newQueue(),
		byCluster: map[string]map[opKey]trackedOp{},
		kinds: csfollow.Kinds(csfollow.Clients{Clusters: cs, NodePools: cfg.NodePools,
			ExternalAuths: cfg.ExternalAuths, Credentials: cfg.Credentials}),
	}
	c.notifier = notify.New(st, log, m, c.guard, notify.Config{Workers: cfg.NotifyWorkers, Timeout: cfg.NotifyTimeout,
		GiveUp: cfg.NotifyGiveUp, AllowedCIDRs: cfg.NotifyAllowedCIDRs, RootCAs: cfg.NotifyRootCAs})
	c.subs = subscriptions.New(st, cs, log, m, c.guard, subscriptions.Config{ResyncPeriod: cfg.ResyncPeriod, OperationTTL: cfg.OperationTTL},
		func(partition, opID, clusterID string, start time.Time) {
			k := opKey{partition, opID}
			c.track(k, clusterID, armdoc.OperationDelete, start)
			c.queue.Add(k)
		})
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	run := func(name string, f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
			c.log.Debug("loop stopped", "loop", name)
		}()
	}
	for i := 0; i < c.cfg.Workers; i++ {
		run("worker", c.worker)
	}
	run("notifier", c.notifier.Run)
	run("subscriptions", c.subs.Run)
	switch c.cfg.StatusMode {
	case ModePoll:
		run("poll", c.pollLoop)
	default:
		run("feed", c.followFeed)
		for _, reg := range opkind.All() {
			k := c.kinds[reg.Kind]
			if k.Follow == nil {
				continue
			}
			changed := c.enqueueOpsOf
			if reg.Kind == opkind.Cluster {
				// backend_cluster_events_total counts the cluster watch's events.
				changed = func(id string) { c.metrics.ObserveEvent(); c.enqueueOpsOf(id) }
			}
			run(string(reg.Kind)+"-watch", func(ctx context.Context) { k.Follow(ctx, c.log, changed) })
		}
		run("resync", c.resyncLoop)
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.metrics.ClearInFlight()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for reconcile.Process(ctx, c.queue, func(ctx context.Context, k opKey) (time.Duration, error) {
		return c.Reconcile(ctx, k.partition, k.id)
	}, func(r reconcile.Result[opKey]) {
		if r.Outcome == reconcile.OutcomeError {
			c.log.Warn("reconcile operation failed; retrying", "partition", r.Key.partition, logattr.OperationID(r.Key.id), "error", r.Err)
		}
	}) {
	}
}

// Reconcile brings one operation, and the resource it acts on, in line with Cluster Service.
// It returns a delay after which the operation should be looked at again even without events.
func (c *Controller) Reconcile(ctx context.Context, partition, id string) (time.Duration, error) {
	doc, err := c.store.Get(ctx, partition, id)
	if errors.Is(err, docstore.ErrNotFound) {
		c.untrack(opKey{partition, id}, "")
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get operation %s: %w", id, err)
	}
	var op oprecord.Record
	if err := json.Unmarshal(doc.Body, &op); err != nil {
		return 0, fmt.Errorf("decode operation %s: %w", id, err)
	}
	key := opKey{partition, id}
	if op.Status.Terminal() {
		c.untrack(key, op.InternalID)
		if op.NeedsNotification() {
			c.notifier.Enqueue(key.partition, key.id)
		}
		return 0, nil
	}
	c.track(key, op.InternalID, op.Request, op.StartTime)
	log := c.log.With(logattr.OperationID(op.ID), logattr.ResourceID(op.ExternalID), logattr.ClusterID(op.InternalID),
		"request", op.Request, logattr.CorrelationRequestID(op.CorrelationID))

	callCtx := metadata.AppendToOutgoingContext(ctx, "x-ms-correlation-request-id", op.CorrelationID)
	// The time is taken before Cluster Service is read: what the read saw is judged by the
	// earliest moment it can have seen it. Taken after, a slow read that found nothing within
	// NotFoundGrace would be judged past it, and a create that landed meanwhile, within the
	// grace, failed, or the delete that canceled it finished, leaving a cluster no document
	// names (TestGraceIsJudgedByWhenClusterServiceWasRead).
	now := c.now()
	obs, err := c.observe(callCtx, &op.OperationDocument)
	if err != nil {
		return 0, err
	}
	out := obs.Out
	age := now.Sub(op.StartTime)
	if !obs.Known && op.Request != armdoc.OperationDelete {
		if age < c.cfg.NotFoundGrace {
			// The frontend may still be between writing the operation and calling Cluster Service.
			return c.cfg.NotFoundGrace - age, nil
		}
		canceled, ok, err := c.interrupted(ctx, partition, &op.OperationDocument)
		if err != nil {
			return 0, err
		}
		if ok {
			out = canceled
		}
	}
	var hold time.Duration
	if out.Gone && op.AfterCreate != nil {
		if hold, err = c.createMayLand(ctx, partition, &op.OperationDocument, now); err != nil {
			return 0, err
		}
		if hold > 0 {
			// The create this delete canceled may still reach Cluster Service: a delete
			// finished now would leave that cluster with no document (armdoc.AfterCreate).
			out = csfollow.Outcome{Status: armdoc.StateDeleting}
		}
	}
	if out.Resend && age > c.cfg.NotFoundGrace {
		// A delete Cluster Service never received (docs/architecture.md, Crash safety): the
		// frontend stopped between recording it and its call, or the call ended without an
		// answer. Past the frontend's grace nothing else will send it.
		c.resendDelete(callCtx, log, &op.OperationDocument)
	}
	fromCS := true
	if out.Unrecorded && age > c.cfg.NotFoundGrace {
		// The frontend wrote the update but never recorded Cluster Service's answer: the call
		// failed without a definitive answer, or the frontend stopped (docs/architecture.md,
		// Crash safety). Whether Cluster Service took the change is unknown; the same request
		// again settles it: the frontend compares a write to a resource whose last update ended
		// so with what Cluster Service holds, and sends what it lacks.
		fromCS = false
		out = csfollow.Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code: UpdateNotRecordedCode,
			Message: fmt.Sprintf("The update was not confirmed by the service within %s; it may or may not have been applied. "+
				"Send the same request again.", c.cfg.NotFoundGrace),
		}}
	}
	if deadline := c.deadline(op.Request); !out.Status.Terminal() && age > deadline {
		fromCS = false
		out = csfollow.Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{
			Code:    "OperationTimedOut",
			Message: fmt.Sprintf("The %s operation did not finish within %s.", strings.ToLower(string(op.Request)), deadline),
		}}
	}
	changed := op.Status != out.Status
	if err := c.write(ctx, doc, &op, out, now); err != nil {
		return 0, err
	}
	if changed && fromCS && !out.Unrecorded && !out.Resend && obs.Updated != nil {
		// How long Cluster Service's view took to reach the documents ARM reads. An update
		// whose Cluster Service call is not recorded yet is Updating, and a delete Cluster
		// Service has not received is Deleting, on no change of Cluster Service's (obs.Updated
		// is then the object's previous change, any age).
		c.metrics.ObservePropagation(c.now().Sub(obs.Updated.AsTime()))
	}
	if out.Status.Terminal() {
		log.Info("operation finished", "status", out.Status, "duration", age)
		c.metrics.Finished(op.Request, out.Status, age)
		c.untrack(key, op.InternalID)
		if op.NeedsNotification() {
			c.notifier.Enqueue(key.partition, key.id)
		}
		return 0, nil
	}
	if c.cfg.StatusMode == ModePoll {
		// The next poll looks again; nothing else may, or this would not be poll mode.
		return 0, nil
	}
	// Check again before the deadline (or an unrecorded update's grace) passes, even if no
	// event arrives.
	limit := c.deadline(op.Request)
	if out.Unrecorded || (out.Resend && age <= c.cfg.NotFoundGrace) {
		limit = c.cfg.NotFoundGrace
	}
	next := min(c.cfg.ResyncPeriod, max(limit-age, time.Second))
	if hold > 0 {
		next = min(next, hold)
	}
	return next, nil
}

// observe asks Cluster Service about what the operation acts on, through its kind's
// registration (csfollow.Kinds).
func (c *Controller) observe(ctx context.Context, op *armdoc.OperationDocument) (csfollow.Observation, error) {
	k, err := c.kindOf(op)
	if err != nil {
		return csfollow.Observation{}, err
	}
	return k.Observe(ctx, op)
}

// kindOf is the backend's part of the operation's kind (internal/opkind, csfollow.Kinds). An
// operation on anything that is neither a cluster's child nor an action is a cluster's, as the
// frontend writes no other.
func (c *Controller) kindOf(op *armdoc.OperationDocument) (csfollow.Kind, error) {
	kind := opkind.Cluster
	if reg, ok := opkind.Of(op); ok {
		kind = reg.Kind
	}
	k, ok := c.kinds[kind]
	if !ok {
		return csfollow.Kind{}, fmt.Errorf("operation %s: the backend has no registration for kind %s", op.ID, kind)
	}
	return k, nil
}

// createMayLand tells how long the delete op, which canceled a create (AfterCreate) and finds
// its object unknown to Cluster Service, must wait before that means done: until NotFoundGrace
// after the create's start and after the delete's own, unless the backend has seen the object
// in Cluster Service (the resource document records the revision it saw), in which case the
// create landed and the object is gone for good. The delete's start counts because a client's
// retry of the create PUT calls Cluster Service's create again for as long as the create runs:
// the last such call starts before the delete does, however long after the create. Only this
// rare path reads the resource document.
func (c *Controller) createMayLand(ctx context.Context, partition string, op *armdoc.OperationDocument, now time.Time) (time.Duration, error) {
	lastCall := *op.AfterCreate
	if op.StartTime.After(lastCall) {
		lastCall = op.StartTime
	}
	wait := lastCall.Add(c.cfg.NotFoundGrace).Sub(now)
	if wait <= 0 {
		return 0, nil
	}
	_, rd, err := c.resource(ctx, partition, op.ExternalID)
	if err != nil || rd == nil || rd.InternalRevision > 0 {
		return 0, err
	}
	return wait, nil
}

// resendDelete sends the delete of op's object to Cluster Service again, under the write fence
// (only the leader acts). A failure is logged: the next reconcile of the operation (at most
// ResyncPeriod later) sends it again.
func (c *Controller) resendDelete(ctx context.Context, log *slog.Logger, op *armdoc.OperationDocument) {
	k, err := c.kindOf(op)
	if err != nil || k.Delete == nil {
		return
	}
	gctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err == nil {
		err = k.Delete(gctx, op)
	}
	if err != nil {
		log.Warn("delete not received by cluster service; sending it again failed", "error", err)
		return
	}
	c.metrics.DeleteResent()
	log.Info("delete not received by cluster service; sent it again")
}

// interrupted tells, for a create or update of a cluster's child that Cluster Service does not
// know once the grace has passed, whether a delete removed the child before the backend saw the
// child's UNINSTALLING (it was paused or restarting across both): the child's own document is
// being deleted or is gone, or its cluster's document is being deleted or is gone. It then returns the
// kind's Canceled outcome (csfollow.Kind.Interrupted) and true. Otherwise the create never reached
// Cluster Service (the frontend stopped before its call) and the operation ends as observed. Only
// this rare path reads the documents.
func (c *Controller) interrupted(ctx context.Context, partition string, op *armdoc.OperationDocument) (csfollow.Outcome, bool, error) {
	k, err := c.kindOf(op)
	if err != nil || k.Interrupted == nil {
		return csfollow.Outcome{}, false, err
	}
	id, err := arm.ParseResourceID(op.ExternalID)
	if err != nil {
		return csfollow.Outcome{}, false, fmt.Errorf("operation %s: parse its resource ID: %w", op.ID, err)
	}
	own, err := c.resourceDeletion(ctx, partition, id)
	if err != nil {
		return csfollow.Outcome{}, false, err
	}
	switch own {
	case resourceDeleting:
		return k.Interrupted(true), true, nil
	case resourceGone:
		// The frontend writes a child's document with its create's operation and rolls both
		// back together; only a delete removes the document alone, and a running create or
		// update outlives only its cluster's (the child's own delete cancels it): a finished
		// cluster delete, or the cascade of one whose cluster's document is gone. The cluster's
		// document may be there again, a new cluster of the same name.
		return k.Interrupted(false), true, nil
	}
	cluster, err := c.resourceDeletion(ctx, partition, id.Parent())
	if err != nil {
		return csfollow.Outcome{}, false, err
	}
	if cluster != resourcePresent {
		return k.Interrupted(false), true, nil
	}
	return csfollow.Outcome{}, false, nil
}

// deletion is what a resource's document says of its deletion.
type deletion int

const (
	resourcePresent  deletion = iota
	resourceDeleting          // Deleting: the frontend wrote a delete operation with this state
	resourceGone              // the document is removed, as a finished delete does
)

// resourceDeletion reads the document of resource id and says whether it is being deleted or
// gone. Without an ID (a child's ID names its cluster, so never) there is no sign of a delete.
func (c *Controller) resourceDeletion(ctx context.Context, partition string, id *arm.ResourceID) (deletion, error) {
	if id == nil {
		return resourcePresent, nil
	}
	_, rd, err := c.resource(ctx, partition, id.String())
	if err != nil {
		return 0, err
	}
	if rd == nil {
		return resourceGone, nil
	}
	if rd.ProvisioningState == armdoc.StateDeleting {
		return resourceDeleting, nil
	}
	return resourcePresent, nil
}

// resource reads the document of the ARM resource id and decodes it; nil, nil when it is gone.
func (c *Controller) resource(ctx context.Context, partition, id string) (*docstore.Document, *armdoc.ResourceDocument, error) {
	d, err := c.store.Get(ctx, partition, strings.ToLower(id))
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get resource %s: %w", id, err)
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		return nil, nil, fmt.Errorf("decode resource %s: %w", id, err)
	}
	return d, &rd, nil
}

func (c *Controller) deadline(r armdoc.OperationRequest) time.Duration {
	if r == armdoc.OperationDelete {
		return c.cfg.DeleteDeadline
	}
	return c.cfg.CreateDeadline
}

// write stores the outcome on the operation and on its resource in one transaction, both
// conditional on the ETags read, so a concurrent writer makes this attempt fail and retry. A
// terminal operation with a notification URI gets its pending notification in the same write.
func (c *Controller) write(ctx context.Context, opDoc *docstore.Document, op *oprecord.Record, out csfollow.Outcome, now time.Time) error {
	partition := opDoc.PartitionKey
	var ops []docstore.TxOp

	res, rd, err := c.resource(ctx, partition, op.ExternalID)
	if err != nil {
		return err
	}
	// An action never owns its cluster's document (internal/armdoc/actions.go).
	if res != nil && !opkind.IsAction(op.Request) {
		// A newer operation owns the resource's state; this one only records its own end. An idle
		// resource takes only a terminal outcome: a running state from an operation that no
		// longer owns it (one the frontend rolled back after Cluster Service refused it) would
		// leave the resource Updating for ever.
		owns := rd.ActiveOperationID == op.ID || (rd.ActiveOperationID == "" && out.Status.Terminal())
		switch {
		case owns && out.Gone:
			children, err := c.childResourceDeletes(ctx, partition, res.ID)
			if err != nil {
				return err
			}
			// The cluster's document and its operation go in the last transaction, so a
			// crash before it leaves the operation running and the next reconcile deletes
			// what is left. Children beyond what fits with them go first, in transactions of
			// their own (a cluster's node pools have no limit in number).
			if room := docstore.MaxTransactSteps - 2; len(children) > room {
				if err := c.deleteInBatches(ctx, partition, children[:len(children)-room]); err != nil {
					return fmt.Errorf("record %s on operation %s: %w", out.Status, op.ID, err)
				}
				children = children[len(children)-room:]
			}
			ops = append(ops, docstore.TxOp{Kind: docstore.TxDelete, Doc: res, IfMatch: res.ETag})
			ops = append(ops, children...)
		// The first revision seen of the object is written even without a state change: it says
		// the object reached Cluster Service (createMayLand).
		case owns && (rd.ProvisioningState != out.Status || (out.Status.Terminal() && rd.ActiveOperationID != "") ||
			(rd.InternalRevision == 0 && out.Revision > 0)):
			rd.ProvisioningState = out.Status
			rd.InternalRevision = max(rd.InternalRevision, out.Revision)
			if out.Status.Terminal() {
				rd.ActiveOperationID = ""
			}
			body, err := json.Marshal(rd)
			if err != nil {
				return fmt.Errorf("encode resource %s: %w", op.ExternalID, err)
			}
			next := *res
			next.Body = body
			ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: &next, IfMatch: res.ETag})
		}
	}

	if op.Status != out.Status || out.Status.Terminal() {
		op.Status = out.Status
		op.LastTransitionTime = now
		op.Error = out.Err
		if out.Status.Terminal() {
			t := now
			op.EndTime = &t
			op.PendNotification()
		}
		body, err := json.Marshal(op)
		if err != nil {
			return fmt.Errorf("encode operation %s: %w", op.ID, err)
		}
		next := *opDoc
		next.Body = body
		ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: &next, IfMatch: opDoc.ETag})
	}
	if len(ops) == 0 {
		return nil
	}
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return fmt.Errorf("record %s on operation %s: %w", out.Status, op.ID, err)
	}
	if _, err := c.store.Transact(wctx, partition, ops); err != nil {
		return fmt.Errorf("record %s on operation %s: %w", out.Status, op.ID, err)
	}
	c.metrics.ObserveUpdate()
	return nil
}

// deleteInBatches applies deletes in transactions of at most docstore.MaxTransactSteps steps,
// each under the write fence.
func (c *Controller) deleteInBatches(ctx context.Context, partition string, deletes []docstore.TxOp) error {
	for batch := range slices.Chunk(deletes, docstore.MaxTransactSteps) {
		wctx, cancel, err := c.guard(ctx)
		if err == nil {
			_, err = c.store.Transact(wctx, partition, batch)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("delete %d child documents: %w", len(batch), err)
		}
		c.metrics.ObserveUpdate()
	}
	return nil
}

func (c *Controller) track(k opKey, clusterID string, req armdoc.OperationRequest, start time.Time) {
	if clusterID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	set := c.byCluster[clusterID]
	if set == nil {
		set = map[opKey]trackedOp{}
		c.byCluster[clusterID] = set
	}
	set[k] = trackedOp{request: req, start: start}
	c.publishInFlightLocked()
}

func (c *Controller) untrack(k opKey, clusterID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if clusterID != "" {
		delete(c.byCluster[clusterID], k)
		if len(c.byCluster[clusterID]) == 0 {
			delete(c.byCluster, clusterID)
		}
	} else {
		for id, set := range c.byCluster {
			delete(set, k)
			if len(set) == 0 {
				delete(c.byCluster, id)
			}
		}
	}
	c.publishInFlightLocked()
}

func (c *Controller) publishInFlightLocked() {
	n := map[armdoc.OperationRequest]int{armdoc.OperationCreate: 0, armdoc.OperationUpdate: 0, armdoc.OperationDelete: 0}
	oldest := map[armdoc.OperationRequest]time.Time{}
	for _, set := range c.byCluster {
		for _, op := range set {
			n[op.request]++
			if o, ok := oldest[op.request]; !ok || op.start.Before(o) {
				oldest[op.request] = op.start
			}
		}
	}
	c.metrics.SetInFlight(n, oldest)
}

func (c *Controller) opsForCluster(clusterID string) []opKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]opKey, 0, len(c.byCluster[clusterID]))
	for k := range c.byCluster[clusterID] {
		keys = append(keys, k)
	}
	return keys
}

// childResourceDeletes are the deletes of every resource document below parentID (a cluster's
// node pools), so a finished cluster delete removes them in the same transaction: Cluster
// Service deleted the pools with the cluster.
func (c *Controller) childResourceDeletes(ctx context.Context, partition, parentID string) ([]docstore.TxOp, error) {
	var ops []docstore.TxOp
	q := docstore.Query{Partition: partition, Type: docstore.TypeResource, ResourceIDPrefix: strings.ToLower(parentID) + "/", Limit: feedPage}
	for {
		page, err := c.store.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list resources below %s: %w", parentID, err)
		}
		for _, d := range page.Documents {
			ops = append(ops, docstore.TxOp{Kind: docstore.TxDelete, Doc: d, IfMatch: d.ETag})
		}
		if page.Continuation == "" {
			return ops, nil
		}
		q.Continuation = page.Continuation
	}
}

// UpdateNotRecordedCode is the ARM error code of an update whose Cluster Service call was never
// recorded in its operation (armdoc.CodeUpdateNotRecorded).
const UpdateNotRecordedCode = armdoc.CodeUpdateNotRecorded
