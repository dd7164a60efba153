package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/test/chaos/invariant"
)

// opTimeout bounds how long one operation of the chaos run may take to become terminal, kills
// included; an outage test's operations get less (outageOpTimeout).
const opTimeout = 10 * time.Minute

// workload is a mixed ARM workload: each unit creates a cluster, on some works a node pool
// through create, scale and delete, and deletes the cluster again.
type workload struct {
	arm   *armClient
	truth *truth
	sub   string
	// opTimeout bounds each operation (default opTimeout).
	opTimeout time.Duration

	mu        sync.Mutex
	ops       []invariant.Op
	resources map[string]resource
	// inFlight are the operations started and not yet ended, by a sequence number.
	inFlight map[int]string
	next     int
	// ended is when each operation (by sequence number) ended.
	ended map[int]time.Time
}

func newWorkload(ctx context.Context) (*workload, error) {
	arm, err := newARMClient()
	if err != nil {
		return nil, err
	}
	tr, err := newTruth(arm)
	if err != nil {
		return nil, err
	}
	w := &workload{arm: arm, truth: tr, sub: uuid.NewString(), opTimeout: opTimeout, resources: map[string]resource{},
		inFlight: map[int]string{}, ended: map[int]time.Time{}}
	if err := arm.registerSubscription(ctx, w.sub); err != nil {
		return nil, err
	}
	return w, nil
}

// begin registers an operation in flight and returns its number.
func (w *workload) begin(what string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	w.inFlight[w.next] = what
	return w.next
}

func (w *workload) end(n int, op invariant.Op) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.inFlight, n)
	w.ended[n] = op.End
	w.ops = append(w.ops, op)
}

// inFlightNow are the numbers of the operations in flight now.
func (w *workload) inFlightNow() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, 0, len(w.inFlight))
	for n := range w.inFlight {
		out = append(out, n)
	}
	return out
}

// inFlightNamed are the operations in flight now, by number, with what each is.
func (w *workload) inFlightNamed() map[int]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.inFlight)
}

// endedAll returns when the last of ops ended, and false while any is still in flight.
func (w *workload) endedAll(ops []int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, n := range ops {
		t, ok := w.ended[n]
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}

func (w *workload) remember(r resource) {
	w.mu.Lock()
	w.resources[r.path] = r
	w.mu.Unlock()
}

// operate runs one ARM write and follows it to its end: the operation's URL when the answer
// gives one; the resource itself when a retried write may have taken effect unseen (409 for a
// create in progress, 204 for a delete already done).
func (w *workload) operate(ctx context.Context, kind invariant.Kind, r resource, method, path string, body any) invariant.Op {
	n := w.begin(string(kind) + " " + r.path)
	op := invariant.Op{Kind: kind, Resource: r.path, Start: time.Now()}
	a, ambiguous := w.arm.write(ctx, method, path, body)
	gone := method == http.MethodDelete
	switch {
	case (a.Status == http.StatusCreated || a.Status == http.StatusOK || a.Status == http.StatusAccepted) && a.Header.Get("Azure-AsyncOperation") != "":
		op.Final, op.Error = w.arm.waitOperation(ctx, a.Header.Get("Azure-AsyncOperation"), w.opTimeout)
	case gone && a.Status == http.StatusNoContent:
		op.Final = "Succeeded" // nothing to delete (or an earlier attempt deleted it)
	case ambiguous && a.Status == http.StatusConflict:
		op.Final, op.Error = w.arm.waitProvisioned(ctx, path, gone, w.opTimeout)
	default:
		op.Error = fmt.Sprintf("%s answered %d %v: %.300s", method, a.Status, a.Err, a.Raw)
		op.Final = "Rejected"
	}
	if op.Final == "Succeeded" && kind != invariant.DeleteCluster && kind != invariant.DeleteNodePool {
		octx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		if o, err := w.observeSettled(octx, r); err == nil {
			op.After = &o
		} else {
			op.Error = "observe after Succeeded: " + err.Error()
		}
		cancel()
	}
	op.End = time.Now()
	w.end(n, op)
	return op
}

// observeSettled observes a resource after its create Succeeded. Succeeded means the object is
// on its management cluster, so one observation that can be made is the answer; only reads
// that fail (a component down) are retried.
func (w *workload) observeSettled(ctx context.Context, r resource) (invariant.Observed, error) {
	return w.truth.observe(ctx, r)
}

// unit drives one cluster's life; withPool adds node-pool work.
func (w *workload) unit(ctx context.Context, i int, withPool bool) {
	rg := fmt.Sprintf("rg-chaos-%d", i)
	c := resource{path: clusterPath(w.sub, rg, fmt.Sprintf("c%d", i))}
	w.remember(c)
	create := w.operate(ctx, invariant.CreateCluster, c, http.MethodPut, c.path+"?api-version="+clusterAPIVersion, clusterBody(w.sub, rg))
	if create.Final == "Succeeded" {
		id, err := w.truth.clusterID(ctx, c.path)
		if err == nil && id != "" {
			c.csID = id
			w.remember(c)
		}
		if withPool && c.csID != "" {
			p := resource{path: c.path + "/nodePools/pool1", csID: c.csID, poolName: "pool1"}
			w.remember(p)
			url := p.path + "?api-version=" + nodePoolAPIVersion
			if w.operate(ctx, invariant.CreateNodePool, p, http.MethodPut, url, nodePoolBody(2)).Final == "Succeeded" {
				w.operate(ctx, invariant.ScaleNodePool, p, http.MethodPut, url, nodePoolBody(3))
			}
			w.operate(ctx, invariant.DeleteNodePool, p, http.MethodDelete, url, nil)
		}
	} else if id, _ := w.truth.clusterID(ctx, c.path); id != "" {
		c.csID = id
		w.remember(c)
	}
	w.operate(ctx, invariant.DeleteCluster, c, http.MethodDelete, c.path+"?api-version="+clusterAPIVersion, nil)
}

// run drives units of the workload with concurrency workers; every poolEvery-th unit works a
// node pool too. It returns when all have ended.
func (w *workload) run(ctx context.Context, units, concurrency, poolEvery int, r *rand.Rand) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				w.unit(ctx, i, poolEvery > 0 && i%poolEvery == 0)
			}
		}()
	}
	for i := range units {
		select {
		case jobs <- i:
		case <-ctx.Done():
		}
		// A little jitter, so creates and deletes interleave rather than march in step.
		sleep(ctx, time.Duration(r.IntN(500))*time.Millisecond)
	}
	close(jobs)
	wg.Wait()
}

// finalTruth observes every resource the workload touched once more at the end. A delete that
// Succeeded may still be finishing on a management cluster (a namespace terminating), so each
// resource is re-read until it is empty or settle passes; the last reading is the verdict.
func (w *workload) finalTruth(ctx context.Context, settle time.Duration) map[string]invariant.Observed {
	w.mu.Lock()
	res := make([]resource, 0, len(w.resources))
	for _, r := range w.resources {
		res = append(res, r)
	}
	w.mu.Unlock()
	sort.Slice(res, func(i, j int) bool { return res[i].path < res[j].path })
	out := map[string]invariant.Observed{}
	deadline := time.Now().Add(settle)
	for {
		snap, err := w.truth.snapshot(ctx)
		if err == nil {
			clean := true
			for _, r := range res {
				o, err := w.truth.observeOnce(ctx, r, snap)
				if err != nil {
					clean = false
					continue
				}
				out[r.path] = o
				empty := !o.ARMExists && o.Records == 0 && len(o.Placements) == 0 && o.Namespaces == 0 && o.Bundles == 0 && o.AppliedWorks == 0
				clean = clean && empty
			}
			if clean {
				return out
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return out
		}
		sleep(ctx, 2*time.Second)
	}
}
