package mgmtcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// OrphanedAppliedWorkSweeper works around a defect of the pinned Maestro agent (OCM's work
// agent; docs/reliability.md, defect 5): after its management kube-apiserver has been away, the
// agent's AppliedManifestWork informer comes back up to tens of seconds after the apiserver
// does, and until then the agent trusts its stale cache. A work applied in that window gets an
// AppliedManifestWork the cache does not show, and if the work is deleted in that window the
// agent's finalizer finds "no AppliedManifestWork", deletes nothing and reports the work
// deleted. Maestro then drops the bundle, and the AppliedManifestWork, with every namespace and
// object it owns, stays on the management cluster for ever: nothing in the agent ever looks at
// an AppliedManifestWork whose work is gone (it only evicts those of another hub).
//
// The sweeper deletes such an orphan: an AppliedManifestWork whose resource bundle (its
// spec.manifestWorkName is the bundle's ID) Maestro has not held for Confirm, seen at two
// sweeps at least that far apart. Deleting it is what the agent would have done: the agent's own
// AppliedManifestWork finalizer then removes the applied objects. A bundle exists in Maestro
// before any agent can apply it, and Maestro drops it only after its agent reported it deleted,
// so a live work is never swept; Confirm guards against a transient answer. A lookup that fails
// is no answer, and keeps the AppliedManifestWork. Remove the sweeper when the agent's pin
// carries a finalizer that reads the apiserver rather than its cache.
type OrphanedAppliedWorkSweeper struct {
	o       OrphanedAppliedWorkSweeperOptions
	log     *slog.Logger
	clients map[string]dynamic.NamespaceableResourceInterface // consumer → its AppliedManifestWorks

	mu sync.Mutex
	// missingSince is, per consumer/AppliedManifestWork, the first sweep that found its bundle
	// gone, since which every sweep did; heldAt the last sweep that found it held.
	missingSince map[string]time.Time
	heldAt       map[string]time.Time
	swept        int
}

// OrphanedAppliedWorkSweeperOptions configures the sweeper.
type OrphanedAppliedWorkSweeperOptions struct {
	// Bundles answers whether Maestro still holds a resource bundle (MaestroREST does).
	Bundles BundleLookup
	// Clusters maps each consumer to a client config of its management cluster's apiserver.
	Clusters map[string]*rest.Config
	// Confirm is how long a bundle must have been seen missing before its AppliedManifestWork
	// is deleted (default 20s).
	Confirm time.Duration
	// Interval between sweeps (default 10s).
	Interval time.Duration
	// RecheckHeld: a bundle found held is looked up again only this long after (default 30s), so
	// the sweeper costs Maestro one GET per AppliedManifestWork per 30 s, not per Interval, and an
	// orphan is still swept within about a minute (the chaos invariants re-read for 2 minutes).
	RecheckHeld time.Duration
	Logger      *slog.Logger
}

// AppliedManifestWorkGVR is the resource of the agent's AppliedManifestWorks.
var AppliedManifestWorkGVR = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "appliedmanifestworks"}

// BundleLookup says whether Maestro still holds a resource bundle.
type BundleLookup interface {
	BundleExists(ctx context.Context, id string) (bool, error)
}

// NewOrphanedAppliedWorkSweeper makes a sweeper; Sweep runs one pass, Start runs them.
func NewOrphanedAppliedWorkSweeper(o OrphanedAppliedWorkSweeperOptions) (*OrphanedAppliedWorkSweeper, error) {
	if o.Confirm <= 0 {
		o.Confirm = 20 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.RecheckHeld <= 0 {
		o.RecheckHeld = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &OrphanedAppliedWorkSweeper{o: o, log: o.Logger.With("component", "orphaned-applied-work-sweeper"),
		clients: map[string]dynamic.NamespaceableResourceInterface{}, missingSince: map[string]time.Time{}, heldAt: map[string]time.Time{}}
	for consumer, cfg := range o.Clusters {
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("client of management cluster %s: %w", consumer, err)
		}
		s.clients[consumer] = d.Resource(AppliedManifestWorkGVR)
	}
	return s, nil
}

// Start sweeps every Interval until ctx ends.
func (s *OrphanedAppliedWorkSweeper) Start(ctx context.Context) {
	go func() {
		t := time.NewTicker(s.o.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := s.Sweep(ctx, time.Now()); err != nil && ctx.Err() == nil {
					s.log.Warn("sweep failed", "error", err)
				}
			}
		}
	}()
}

// Swept is how many orphaned AppliedManifestWorks the sweeper has deleted; nil has deleted none.
func (s *OrphanedAppliedWorkSweeper) Swept() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.swept
}

// Sweep looks at every AppliedManifestWork of every management cluster once, at time now.
func (s *OrphanedAppliedWorkSweeper) Sweep(ctx context.Context, now time.Time) error {
	consumers := make([]string, 0, len(s.clients))
	for c := range s.clients {
		consumers = append(consumers, c)
	}
	sort.Strings(consumers)
	var errs []error
	listed := map[string]bool{}
	for _, consumer := range consumers {
		if err := s.sweepConsumer(ctx, consumer, now, listed); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	for key := range s.missingSince {
		if !listed[key] {
			delete(s.missingSince, key)
		}
	}
	for key := range s.heldAt {
		if !listed[key] {
			delete(s.heldAt, key)
		}
	}
	s.mu.Unlock()
	return errors.Join(errs...)
}

func (s *OrphanedAppliedWorkSweeper) sweepConsumer(ctx context.Context, consumer string, now time.Time, listed map[string]bool) error {
	list, err := s.clients[consumer].List(ctx, metav1.ListOptions{})
	if err != nil {
		// Forget nothing of a cluster that did not answer.
		s.mu.Lock()
		for _, m := range []map[string]time.Time{s.missingSince, s.heldAt} {
			for key := range m {
				if c, _, _ := strings.Cut(key, "/"); c == consumer {
					listed[key] = true
				}
			}
		}
		s.mu.Unlock()
		return fmt.Errorf("list AppliedManifestWorks of %s: %w", consumer, err)
	}
	var errs []error
	for i := range list.Items {
		amw := &list.Items[i]
		if amw.GetDeletionTimestamp() != nil {
			continue // the agent is removing it already
		}
		key := consumer + "/" + amw.GetName()
		bundle, _, _ := unstructured.NestedString(amw.Object, "spec", "manifestWorkName")
		if bundle == "" {
			continue
		}
		listed[key] = true
		s.mu.Lock()
		heldAt, wasHeld := s.heldAt[key]
		s.mu.Unlock()
		if wasHeld && now.Sub(heldAt) < s.o.RecheckHeld {
			continue
		}
		held, err := s.o.Bundles.BundleExists(ctx, bundle)
		if err != nil {
			errs = append(errs, fmt.Errorf("look up bundle %s of %s: %w", bundle, key, err))
			continue
		}
		s.mu.Lock()
		since, seen := s.missingSince[key]
		switch {
		case held:
			delete(s.missingSince, key)
			s.heldAt[key] = now
		case !seen:
			delete(s.heldAt, key)
			s.missingSince[key] = now
		}
		s.mu.Unlock()
		if held || !seen || now.Sub(since) < s.o.Confirm {
			continue
		}
		uid := amw.GetUID()
		err = s.clients[consumer].Delete(ctx, amw.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete orphaned AppliedManifestWork %s: %w", key, err))
			continue
		}
		s.log.Warn("deleted an AppliedManifestWork whose resource bundle Maestro no longer holds; the agent now removes what it applied (pinned agent, docs/reliability.md defect 5)",
			"consumer", consumer, "applied_work", amw.GetName(), "bundle", bundle, "missing_for", now.Sub(since).Round(time.Second).String())
		s.mu.Lock()
		s.swept++
		delete(s.missingSince, key)
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// BundleExists says whether Maestro holds the resource bundle id (a GET by ID: 200 yes, 404 no).
func (m MaestroREST) BundleExists(ctx context.Context, id string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/api/maestro/v1/resource-bundles/"+url.PathEscape(id), nil)
	if err != nil {
		return false, err
	}
	resp, err := m.client().Do(req)
	if err != nil {
		return false, fmt.Errorf("get maestro resource bundle %s: %w", id, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("get maestro resource bundle %s: %d", id, resp.StatusCode)
}
