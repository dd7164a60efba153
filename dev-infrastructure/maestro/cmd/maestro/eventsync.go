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
//
// The variable drives two loops of the pinned Maestro (pkg/controllers), on every server
// instance, each started once with JitterUntil (period 5 s, jitter 0.25, sliding: the next run
// 5-6.25 s after the last one ended):
//   - KindControllerManager.syncEvents (framework.go): DeleteAllReconciledEvents, then
//     FindAllUnreconciledEvents, which lists every unreconciled event with no limit, and adds
//     each ID to the queue. Its cost grows with the backlog: after a long broker outage with
//     many writes, every instance reads the whole backlog every 5 s until it is published (the
//     queue keeps one entry per ID, so the work queued does not grow with it).
//   - StatusController.syncStatusEvents (status_controller.go): the status-event purge. It
//     reads the ready server instances (FindReadyIDs), the status events every one of them has
//     handled (GetEventsAssociatedWithInstances, grouped over event_instances), and deletes those
//     in batches of 500 (event_instances rows go with them, ON DELETE CASCADE). Nothing reads a
//     status event again once every ready instance handled it: an instance takes status events
//     only from the database notification, never by listing the table, so purging within
//     seconds instead of hours loses nothing a slower purge would have kept.
//
// Nothing else reads it: the oldest-event gauge and the notification-queue report have periods
// of their own (defaultOldestEventReportPeriod, defaultNotificationQueueReportPeriod).
const unreconciledEventsSync = 5 * time.Second

// installEventsSync sets the spec event controller's sync period to unreconciledEventsSync.
func installEventsSync() { eventsSyncPeriod = unreconciledEventsSync }
