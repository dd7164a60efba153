package controller

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// A reconcile that follows a status event used to read the work back from Maestro's REST API
// (one more request to a Maestro server that is, under load, the region's slowest stage:
// docs/performance.md). The event already holds what that read returns, so the controller keeps
// the latest status event of every work it watches and a reconcile takes its status from there,
// once, instead of reading it (Config.StatusFromMaestroOnly turns this off).
//
// What a status event holds, and why it is enough. Maestro stores an agent's status only when it
// was written for the work's current generation and is newer (status sequence ID) than the one
// stored, and the event it then streams is the stored status with the work's metadata as the
// agent held it: its generation (the event's resource version) and its annotations, among them
// manifests.AnnotationSpecHash. So an event whose spec hash is the hash the controller last
// applied is a status of the current spec, for the generation it names, exactly what a REST read
// at that moment would return. Anything else goes to Maestro:
//   - an event of an older spec (the agent has not reported on the latest one yet): the REST
//     read tells how far behind the work is, for the lost-update repair (republish.go);
//   - a work seen through the REST API rather than a status event (a watch's first list, or the
//     list Maestro's client makes after a reconnect), which carries the source's metadata, not
//     the agent's: it drops what is kept for that work, since events may have been missed;
//   - a second reconcile after the same event (a resync, a retry, a requeue): each event is used
//     once, so every other reconcile reads Maestro as before and a wrong cache cannot persist;
//   - a deleting work, and a shard whose watch restarted (everything kept for it is dropped).
//
// Events of one work can reach the controller out of order when several Maestro servers
// broadcast them; the one with the higher status sequence ID (a Snowflake ID, increasing per
// agent) is kept.

// observedWorks is the latest status event per work, keyed by shard and work name.
type observedWorks struct {
	mu sync.Mutex
	m  map[observedKey]observedWork
}

type observedKey struct{ shard, name string }

type observedWork struct {
	work *workv1.ManifestWork
	seq  uint64 // the status sequence ID
	used bool   // a reconcile has taken it
}

func newObservedWorks() *observedWorks { return &observedWorks{m: map[observedKey]observedWork{}} }

// record keeps ev's work if it is a status event newer than what is kept, and drops what is kept
// for a deleted work or one seen through the REST API.
func (o *observedWorks) record(shard string, ev maestro.WorkEvent) {
	if ev.Work == nil {
		return
	}
	k := observedKey{shard, ev.Work.Name}
	seq, fromStatus := statusSequence(ev.Work)
	o.mu.Lock()
	defer o.mu.Unlock()
	if ev.Type == watch.Deleted || !fromStatus || !ev.Work.DeletionTimestamp.IsZero() {
		delete(o.m, k)
		return
	}
	if have, ok := o.m[k]; ok && have.seq >= seq {
		return
	}
	o.m[k] = observedWork{work: ev.Work, seq: seq}
}

// statusSequence is the status sequence ID that Maestro's client sets on a work decoded from a
// status event; false for a work that did not come from one.
func statusSequence(w *workv1.ManifestWork) (uint64, bool) {
	s, ok := w.Annotations[cecommon.CloudEventsSequenceIDAnnotationKey]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// take returns the kept status of the work if it was written for the spec with specHash and no
// reconcile has taken it yet, shaped like maestro.Client.Get's answer (status generation
// annotation set, generation the status's); nil sends the caller to Maestro.
func (o *observedWorks) take(shard, name, specHash string) *workv1.ManifestWork {
	k := observedKey{shard, name}
	o.mu.Lock()
	have, ok := o.m[k]
	if !ok || have.used || have.work.Annotations[manifests.AnnotationSpecHash] != specHash {
		o.mu.Unlock()
		return nil
	}
	have.used = true
	o.m[k] = have
	o.mu.Unlock()
	w := have.work.DeepCopy()
	w.Name = name
	delete(w.Annotations, cecommon.CloudEventsSequenceIDAnnotationKey)
	w.Annotations[maestro.AnnotationStatusGeneration] = strconv.FormatInt(w.Generation, 10)
	return w
}

// forgetShard drops everything kept for shard (its watch is starting over).
func (o *observedWorks) forgetShard(shard string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.m {
		if k.shard == shard {
			delete(o.m, k)
		}
	}
}
