package mgmtcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// StuckDeleteWatchdog works around a defect of the pinned Maestro (docs/maestro.md, "Known
// issue: a delete the agent loses"): now and then the agent's in-memory store loses a
// ManifestWork's deletion (open-cluster-management-io/sdk-go#232), so the agent never reports
// it deleted, and this Maestro server never sends the delete again (fixed upstream by
// openshift-online/maestro#576, after our pin). The resource bundle then stays soft-deleted for
// ever and the cluster it belongs to never finishes deleting.
//
// What recovers it without losing anything is what an agent does after any reconnect: it sends
// a spec resync request, and Maestro answers with every deleting resource of that consumer, so
// the agent learns of the deletion again and runs its normal cleanup (the manifests are removed
// and Deleted is reported). The watchdog therefore looks for bundles that have been deleting
// for longer than StuckAfter and makes that consumer's agent reconnect (KickMQTTClient), with a
// doubling pause per bundle. It logs every kick: each one is an occurrence of the upstream bug
// (or a delete slower than StuckAfter). Remove it once the pin carries #576.
//
// A kick is not free: the agent is off the broker until its reconnect (the pinned agent's
// backoff starts at 5-10 s and grows to a minute after repeated drops), and no status flows
// meanwhile. Under a mass delete on a loaded machine many bundles are slower than StuckAfter
// without being lost; kicking then cost the benchmark's agents 1-2 minutes offline per batch
// (docs/performance.md). So a consumer is kicked only when its agent has been quiet for
// StuckAfter: no bundle of it finished deleting and no deleting bundle of it changed its status
// since StuckAfter ago, and no kick of it in that time (one resync already covers every deleting
// bundle of the consumer). After a kick the consumer is spared for ReconnectWait more: the agent
// must come back before its resync can work, and a second kick that lands as it reconnects cuts
// off the resync answer it came back for and lengthens its next backoff (seen in a P4 run on
// 2026-11-25: the agent reconnected 50 s after a kick, the next kick came 9 ms later, and the
// lost delete's retry could not be published for another minute or more). A finished delete
// shows the agent is working through them, and a lost one is still there when it is done. A status change of a deleting bundle shows the same one
// step earlier: the pinned Maestro server handles the agents' status events one at a time, so
// under a mass delete they reach the server tens of seconds to minutes after the agent sent them,
// and until the queue drains no delete can be seen to finish although the agent has done its
// part (docs/performance.md, P4). A bundle whose delete the agent lost gets no further status
// from the agent's deletion; if its status still changes for other reasons, its kick waits until
// the consumer is quiet.
//
// A consumer under a steady stream of deletes is never quiet, so the quiet rule alone would
// spare a lost delete for as long as the stream lasts (the first full chaos run, 2026-11-26: a
// delete lost at 12:32:57 on mgmt-1 was never kicked while other deletes kept finishing, and ended
// only when a chaos kill restarted that agent ten minutes later). A bundle is therefore also kicked
// when it is overtaken: a delete of the same consumer requested StuckAfter or more after it has
// finished while it has not. The agent is then working, and working past it; a mass delete that is
// merely slow finishes in about the order it was requested and overtakes nothing by that much. Such
// a kick, too, comes no sooner than ReconnectWait + StuckAfter after the consumer's last kick.
type StuckDeleteWatchdog struct {
	o   StuckDeleteWatchdogOptions
	log *slog.Logger

	mu    sync.Mutex
	kicks int
	next  map[string]time.Time     // bundle ID → earliest next kick for it
	pause map[string]time.Duration // bundle ID → pause after its next kick
	// deleting is each consumer's bundles being deleted at the last scan (bundle ID → its status
	// as listed), and busyAt the last time one of them finished deleting or changed its status,
	// or, after a kick of the consumer's agent, the kick's time plus ReconnectWait (so in the
	// future until then). The consumer's quiet time counts from busyAt.
	deleting map[string]map[string]deletingBundle
	busyAt   map[string]time.Time
	// finishedUpTo is, per consumer, the latest deletion time of a bundle seen to finish
	// deleting; a bundle deleted StuckAfter before it is overtaken. kickedAt is the consumer's
	// last kick.
	finishedUpTo map[string]time.Time
	kickedAt     map[string]time.Time
}

// deletingBundle is what a scan remembers of a bundle being deleted.
type deletingBundle struct {
	status    string
	deletedAt time.Time
}

// StuckDeleteWatchdogOptions configures the watchdog.
type StuckDeleteWatchdogOptions struct {
	// Maestro is the Maestro server's REST API; the watchdog only lists the resource bundles
	// being deleted (ListDeletingBundles).
	Maestro MaestroREST
	// BrokerAddr is the MQTT broker's host:port.
	BrokerAddr string
	// AgentClientIDs maps each consumer to its agent's MQTT client ID (as the broker sees it).
	AgentClientIDs map[string]string
	// AgentTLS maps each consumer to the TLS client config of a kick (nil or missing:
	// plaintext). A broker that binds client IDs to certificate identities (ours, and Event
	// Grid) lets only the agent's own identity take its session over, so this carries the
	// agent's own certificate: see KickMQTTClient and docs/security.md.
	AgentTLS map[string]*tls.Config
	// StuckAfter: a bundle deleting for longer is considered stuck (default 45s; a HostedCluster
	// delete takes seconds here).
	StuckAfter time.Duration
	// ReconnectWait is how long a kicked agent may take to come back. The pinned agent waits
	// 5 s × 5ⁿ with up to 100 % jitter, capped at a minute, between reconnects (sdk-go's
	// clients.DelayFn, reset after 10 minutes without one), so after repeated kicks it can be
	// off the broker for up to 2 minutes. A consumer is kicked again no sooner than
	// ReconnectWait + StuckAfter after its last kick. Default 2m.
	ReconnectWait time.Duration
	// Interval between scans (default 10s).
	Interval time.Duration
	Logger   *slog.Logger
}

// StartStuckDeleteWatchdog scans until ctx ends.
func StartStuckDeleteWatchdog(ctx context.Context, o StuckDeleteWatchdogOptions) *StuckDeleteWatchdog {
	if o.StuckAfter <= 0 {
		o.StuckAfter = 45 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	w := newStuckDeleteWatchdog(o)
	go func() {
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := w.Scan(ctx, time.Now()); err != nil && ctx.Err() == nil {
					w.log.Warn("scan failed", "error", err)
				}
			}
		}
	}()
	return w
}

func newStuckDeleteWatchdog(o StuckDeleteWatchdogOptions) *StuckDeleteWatchdog {
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 2 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &StuckDeleteWatchdog{o: o, log: o.Logger.With("component", "stuck-delete-watchdog"),
		next: map[string]time.Time{}, pause: map[string]time.Duration{},
		deleting: map[string]map[string]deletingBundle{}, busyAt: map[string]time.Time{},
		finishedUpTo: map[string]time.Time{}, kickedAt: map[string]time.Time{}}
}

// Kicks is how many agent reconnects the watchdog has caused; a nil watchdog (a region that
// runs none, such as a mutual-TLS test region) has caused none.
func (w *StuckDeleteWatchdog) Kicks() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kicks
}

// MaestroBundle is the part of a Maestro resource bundle the watchdog reads.
type MaestroBundle struct {
	ID           string     `json:"id"`
	ConsumerName string     `json:"consumer_name"`
	DeletedAt    *time.Time `json:"deleted_at"`
	Metadata     struct {
		Name string `json:"name"`
	} `json:"metadata"`
	// Status is the bundle's status as the server last stored it from its agent (its status
	// sequence ID changes with every newer status); compared between scans, never interpreted.
	Status json.RawMessage `json:"status"`
}

// Scan looks at every resource bundle being deleted once and kicks the agents of consumers
// with stuck ones.
func (w *StuckDeleteWatchdog) Scan(ctx context.Context, now time.Time) error {
	bundles, err := w.o.Maestro.ListDeletingBundles(ctx)
	if err != nil {
		return err
	}
	stuck := map[string][]MaestroBundle{} // consumer → its stuck bundles due for a kick
	seen := map[string]bool{}
	w.mu.Lock()
	deleting := map[string]map[string]deletingBundle{}
	for _, b := range bundles {
		if b.DeletedAt != nil {
			if deleting[b.ConsumerName] == nil {
				deleting[b.ConsumerName] = map[string]deletingBundle{}
			}
			deleting[b.ConsumerName][b.ID] = deletingBundle{status: string(b.Status), deletedAt: *b.DeletedAt}
		}
	}
	for consumer, before := range w.deleting {
		for id, was := range before {
			// Finished, or a newer status, since the last scan: the agent is working.
			listed, ok := deleting[consumer][id]
			if !ok || listed.status != was.status {
				w.markBusy(consumer, now)
			}
			if !ok && was.deletedAt.After(w.finishedUpTo[consumer]) {
				w.finishedUpTo[consumer] = was.deletedAt
			}
		}
	}
	w.deleting = deleting
	for _, b := range bundles {
		if b.DeletedAt == nil || now.Sub(*b.DeletedAt) < w.o.StuckAfter {
			continue
		}
		seen[b.ID] = true
		quiet := now.Sub(w.busyAt[b.ConsumerName]) >= w.o.StuckAfter
		overtaken := w.finishedUpTo[b.ConsumerName].Sub(*b.DeletedAt) >= w.o.StuckAfter &&
			now.Sub(w.kickedAt[b.ConsumerName]) >= w.o.ReconnectWait+w.o.StuckAfter
		if now.Before(w.next[b.ID]) || !(quiet || overtaken) {
			continue
		}
		if _, ok := w.o.AgentClientIDs[b.ConsumerName]; ok {
			stuck[b.ConsumerName] = append(stuck[b.ConsumerName], b)
		}
	}
	for id := range w.next { // bundles that are gone need no more kicks
		if !seen[id] {
			delete(w.next, id)
			delete(w.pause, id)
		}
	}
	w.mu.Unlock()

	for consumer, bs := range stuck {
		clientID := w.o.AgentClientIDs[consumer]
		for _, b := range bs {
			w.log.Warn("resource bundle deleting for too long; making its agent reconnect and resync (pinned Maestro, docs/maestro.md)",
				"consumer", consumer, "bundle", b.ID, "work", b.Metadata.Name, "deletingFor", now.Sub(*b.DeletedAt).Round(time.Second).String())
		}
		if err := KickMQTTClient(ctx, w.o.BrokerAddr, clientID, w.o.AgentTLS[consumer]); err != nil {
			return fmt.Errorf("kick agent of %s: %w", consumer, err)
		}
		w.mu.Lock()
		w.kicks++
		w.kickedAt[consumer] = now
		w.markBusy(consumer, now.Add(w.o.ReconnectWait))
		for _, b := range bs {
			p := w.pause[b.ID]
			if p == 0 {
				p = w.o.StuckAfter
			}
			w.next[b.ID] = now.Add(p)
			w.pause[b.ID] = min(2*p, 10*time.Minute)
		}
		w.mu.Unlock()
	}
	return nil
}

// markBusy moves the consumer's busyAt to t unless it is later already (a kick's
// ReconnectWait is not cut short by a status that arrives meanwhile). Called with w.mu held.
func (w *StuckDeleteWatchdog) markBusy(consumer string, t time.Time) {
	if t.After(w.busyAt[consumer]) {
		w.busyAt[consumer] = t
	}
}

// DeletingBundlesSearch is the Maestro list search that selects the bundles being deleted.
// Maestro's resource-bundle list reads soft-deleted rows too (its DAO lists unscoped) and
// accepts a tree-search-language "search" that it turns into SQL, so the server filters in its
// database and sends only those bundles: normally none, instead of every bundle of the region
// with its manifests (tens of KB each) every scan. Measured in docs/performance.md (P4).
const DeletingBundlesSearch = "deleted_at is not null"

// ListDeletingBundles lists the resource bundles that have a deletion timestamp, all pages.
func (m MaestroREST) ListDeletingBundles(ctx context.Context) ([]MaestroBundle, error) {
	return m.ListBundles(ctx, DeletingBundlesSearch)
}

// ListBundles lists the resource bundles that match a Maestro search, all pages; an empty
// search lists every bundle with its manifests (what the watchdog did before it searched; the
// P4 benchmark measures both).
//
// Maestro pages by offset: a bundle removed (a delete finished) between two pages moves every
// later one up a place, and the walk would miss one that the watchdog then takes for finished.
// So a walk whose total changes from one page to the next starts again, a few times at most. A
// finish and a new delete between the same two pages leave the total as it was and are not
// seen; the overtaken rule's own limits (StuckAfter of lead, one kick per ReconnectWait +
// StuckAfter) bound what such a rare miss costs.
func (m MaestroREST) ListBundles(ctx context.Context, search string) ([]MaestroBundle, error) {
	const walks = 5
	for walk := 1; ; walk++ {
		out, consistent, err := m.listBundlesOnce(ctx, search)
		if err != nil || consistent {
			return out, err
		}
		if walk == walks {
			return nil, fmt.Errorf("list maestro resource bundles: the list changed under each of %d walks", walks)
		}
	}
}

// listBundlesOnce walks the pages once; consistent is false when the total changed on the way.
func (m MaestroREST) listBundlesOnce(ctx context.Context, search string) (out []MaestroBundle, consistent bool, err error) {
	total := -1
	for page := 1; ; page++ {
		var list struct {
			Items []MaestroBundle `json:"items"`
			Total int             `json:"total"`
		}
		q := url.Values{"page": {strconv.Itoa(page)}, "size": {"200"}}
		if search != "" {
			q.Set("search", search)
		}
		u := m.URL + "/api/maestro/v1/resource-bundles?" + q.Encode()
		if err := m.getJSON(ctx, u, &list); err != nil {
			return nil, false, fmt.Errorf("list maestro resource bundles: %w", err)
		}
		if total >= 0 && list.Total != total {
			return nil, false, nil
		}
		total = list.Total
		out = append(out, list.Items...)
		if len(list.Items) == 0 || len(out) >= list.Total {
			return out, true, nil
		}
	}
}
