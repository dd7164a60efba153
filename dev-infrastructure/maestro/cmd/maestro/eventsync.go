package main

import (
	"time"
	_ "unsafe" // go:linkname

	_ "github.com/openshift-online/maestro/pkg/controllers"
)

// The pinned Maestro server's spec event controller (pkg/controllers, KindControllerManager)
// publishes each resource event to the broker. A publish that fails (the CloudEvents client is
// reconnecting) is retried by the workqueue's per-event backoff, 5 ms doubling to 1000 s, and
// the controller queues every unreconciled event again only every 10 hours
// (defaultEventsSyncPeriod). After a broker outage an event that had failed for t seconds next
// tried about t seconds after its last failure: a one-minute outage left creates unpublished
// 36-41 s after the server was back on the broker (docs/reliability.md, broker outage). The
// agents' spec resync after their reconnect does not cover it: they reconnect before the
// server, and their request reaches no server. Maestro has no option for either; the period is
// a package variable read when the controller starts, so the command sets it before that.

//go:linkname eventsSyncPeriod github.com/openshift-online/maestro/pkg/controllers.defaultEventsSyncPeriod
var eventsSyncPeriod time.Duration

// unreconciledEventsSync is how often the server queues every unreconciled spec event again
// (with 25 % jitter): the longest an event waits for its publish once the server is back on
// the broker. Each sync is two statements on the events table (delete the reconciled ones, list
// the rest), and an event already queued or in flight is not queued twice.
const unreconciledEventsSync = 5 * time.Second

// installEventsSync sets the spec event controller's sync period to unreconciledEventsSync.
func installEventsSync() { eventsSyncPeriod = unreconciledEventsSync }
