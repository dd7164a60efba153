package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/backoff"
)

// drain takes every ready key without blocking, marking each Done.
func drain[K comparable](q *Queue[K]) []K {
	var got []K
	for q.Len() > 0 {
		k, ok := q.Get()
		if !ok {
			break
		}
		got = append(got, k)
		q.Done(k)
	}
	return got
}

func TestQueue(t *testing.T) {
	tests := []struct {
		name string
		run  func(q *Queue[string]) []string
		want []string
	}{
		{
			name: "duplicate_adds_are_one_key_in_first_add_order",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				q.Add("b")
				q.Add("a")
				return drain(q)
			},
			want: []string{"a", "b"},
		},
		{
			name: "key_added_while_processing_is_queued_again_at_done",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				k, _ := q.Get()
				q.Add("a") // a worker has it: not ready until Done
				before := q.Len()
				q.Done(k)
				return append([]string{k, fmt.Sprintf("len=%d", before)}, drain(q)...)
			},
			want: []string{"a", "len=0", "a"},
		},
		{
			name: "done_without_re-add_leaves_queue_empty",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				k, _ := q.Get()
				q.Done(k)
				return drain(q)
			},
			want: nil,
		},
		{
			name: "urgent_keys_go_first_in_their_own_order",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				q.Add("b")
				q.AddUrgent("c")
				q.AddUrgent("d")
				return drain(q)
			},
			want: []string{"c", "d", "a", "b"},
		},
		{
			name: "urgent_add_moves_a_waiting_normal_key_up_once",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				q.Add("b")
				q.AddUrgent("b")
				q.Add("b") // stays urgent
				return append([]string{fmt.Sprintf("len=%d", q.Len())}, drain(q)...)
			},
			want: []string{"len=2", "b", "a"},
		},
		{
			name: "urgent_add_while_processing_is_queued_urgent_at_done",
			run: func(q *Queue[string]) []string {
				q.Add("a")
				k, _ := q.Get()
				q.Add("b")
				q.Add("a")
				q.AddUrgent("a")
				q.Done(k)
				return drain(q)
			},
			want: []string{"a", "b"},
		},
		{
			name: "a_normal_key_is_served_after_a_burst_of_urgent_ones",
			run: func(q *Queue[string]) []string {
				q.Add("n1")
				q.Add("n2")
				for i := range UrgentBurst + 2 {
					q.AddUrgent(fmt.Sprintf("u%d", i))
				}
				got := drain(q)
				// Compress the order to the positions of the normal keys.
				return []string{fmt.Sprint(slices.Index(got, "n1")), fmt.Sprint(slices.Index(got, "n2")), fmt.Sprint(len(got))}
			},
			want: []string{fmt.Sprint(UrgentBurst), fmt.Sprint(UrgentBurst + 3), fmt.Sprint(UrgentBurst + 4)},
		},
		{
			name: "adds_after_shutdown_are_ignored",
			run: func(q *Queue[string]) []string {
				q.ShutDown()
				q.Add("a")
				q.AddAfter("b", time.Millisecond)
				time.Sleep(10 * time.Millisecond)
				if q.Len() != 0 {
					return []string{"queued after shutdown"}
				}
				return nil
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[string](Backoff{Base: time.Millisecond, Max: time.Second})
			defer q.ShutDown()
			if got := tt.run(q); !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQueueAddAfter(t *testing.T) {
	tests := []struct {
		name   string
		delays []time.Duration
		// readyBy is when the key must be ready; notBefore, when it must not be yet.
		notBefore, readyBy time.Duration
	}{
		{name: "zero_delay_is_ready_at_once", delays: []time.Duration{0}, notBefore: 0, readyBy: 0},
		{name: "key_is_ready_after_its_delay", delays: []time.Duration{50 * time.Millisecond}, notBefore: 20 * time.Millisecond, readyBy: time.Second},
		{name: "earlier_delay_replaces_a_later_one", delays: []time.Duration{time.Hour, 30 * time.Millisecond}, notBefore: 10 * time.Millisecond, readyBy: time.Second},
		{name: "later_delay_does_not_postpone_an_earlier_one", delays: []time.Duration{30 * time.Millisecond, time.Hour}, notBefore: 10 * time.Millisecond, readyBy: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[string](Backoff{Base: time.Millisecond, Max: time.Second})
			defer q.ShutDown()
			start := time.Now()
			for _, d := range tt.delays {
				q.AddAfter("a", d)
			}
			if tt.notBefore > 0 {
				time.Sleep(tt.notBefore)
				if q.Len() != 0 {
					t.Fatalf("key ready before %s", tt.notBefore)
				}
			}
			k, ok := getWithin(t, q, tt.readyBy-time.Since(start)+10*time.Millisecond)
			if !ok || k != "a" {
				t.Fatalf("Get = %q, %v; want a, true", k, ok)
			}
			q.Done(k)
			// One waiting key holds one timer: nothing else comes.
			time.Sleep(60 * time.Millisecond)
			if n := q.Len(); n != 0 {
				t.Fatalf("Len after the delayed add = %d, want 0", n)
			}
		})
	}
}

// getWithin calls Get and fails the test if it blocks longer than d.
func getWithin[K comparable](t *testing.T, q *Queue[K], d time.Duration) (K, bool) {
	t.Helper()
	type got struct {
		k  K
		ok bool
	}
	ch := make(chan got, 1)
	go func() {
		k, ok := q.Get()
		ch <- got{k, ok}
	}()
	select {
	case g := <-ch:
		return g.k, g.ok
	case <-time.After(max(d, 0) + 100*time.Millisecond):
		q.ShutDown() // release the Get
		t.Fatalf("Get blocked longer than %s", d)
		var zero K
		return zero, false
	}
}

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name string
		b    Backoff
		want []time.Duration // delays of the 1st, 2nd, … failure before jitter
	}{
		{
			name: "backend_250ms_doubling_to_30s",
			b:    Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second},
			want: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
				8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second},
		},
		{
			name: "cluster_service_200ms_doubling_to_1m",
			b:    Backoff{Base: 200 * time.Millisecond, Max: time.Minute},
			want: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond,
				3200 * time.Millisecond, 6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond,
				51200 * time.Millisecond, time.Minute, time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Jitter only lengthens a wait, by up to half, and never past Max; near Max the
			// un-jittered delay is lowered to leave room for it.
			floor := time.Duration(float64(tt.b.Max) / (1 + backoff.Jitter))
			for n, want := range tt.want {
				lo, hi := min(want, floor), min(time.Duration(float64(want)*(1+backoff.Jitter)), tt.b.Max)
				seen := map[time.Duration]bool{}
				for range 20 {
					d := tt.b.delay(n)
					if d < lo || d > hi {
						t.Fatalf("delay after %d failures = %s, want within [%s, %s]", n+1, d, lo, hi)
					}
					seen[d] = true
				}
				if len(seen) < 2 {
					t.Fatalf("delay after %d failures is always %v: not jittered", n+1, seen)
				}
			}
			if d := tt.b.delay(1 << 20); d < floor || d > tt.b.Max {
				t.Fatalf("delay after very many failures = %s, want within [%s, %s]", d, floor, tt.b.Max)
			}
		})
	}
}

func TestQueueAddRateLimitedAndForget(t *testing.T) {
	tests := []struct {
		name string
		// steps: "fail" retries the key with AddRateLimited and waits for it, "forget" forgets it.
		steps []string
		// wantMin is the least wait of each "fail" step, in order; wantBelow, when not 0, the
		// wait that step must stay under.
		wantMin, wantBelow []time.Duration
		wantRetries        int
	}{
		{
			name:  "each_failure_doubles_the_wait_up_to_the_max",
			steps: []string{"fail", "fail", "fail", "fail"},
			// 80ms/1.5: at the max, jitter spreads the wait below it (internal/backoff).
			wantMin:     []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 53 * time.Millisecond, 53 * time.Millisecond},
			wantRetries: 4,
		},
		{
			name:        "forget_starts_the_wait_at_the_base_again",
			steps:       []string{"fail", "fail", "fail", "forget", "fail"},
			wantMin:     []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 20 * time.Millisecond},
			wantBelow:   []time.Duration{0, 0, 0, 160 * time.Millisecond}, // not forgotten: at least 160ms
			wantRetries: 1,
		},
		{
			name:        "forget_clears_the_count",
			steps:       []string{"fail", "fail", "forget"},
			wantMin:     []time.Duration{20 * time.Millisecond, 40 * time.Millisecond},
			wantRetries: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[string](Backoff{Base: 20 * time.Millisecond, Max: 320 * time.Millisecond})
			defer q.ShutDown()
			var waits []time.Duration
			for _, step := range tt.steps {
				if step == "forget" {
					q.Forget("a")
					continue
				}
				start := time.Now()
				q.AddRateLimited("a")
				k, ok := getWithin(t, q, time.Second)
				waits = append(waits, time.Since(start))
				if !ok {
					t.Fatal("Get = false")
				}
				q.Done(k)
			}
			for i, w := range waits {
				if w < tt.wantMin[i] {
					t.Fatalf("wait %d = %s, want at least %s (waits %v)", i, w, tt.wantMin[i], waits)
				}
				if i < len(tt.wantBelow) && tt.wantBelow[i] > 0 && w >= tt.wantBelow[i] {
					t.Fatalf("wait %d = %s, want under %s (waits %v)", i, w, tt.wantBelow[i], waits)
				}
			}
			if got := q.NumRequeues("a"); got != tt.wantRetries {
				t.Fatalf("NumRequeues = %d, want %d", got, tt.wantRetries)
			}
		})
	}
}

func TestQueueShutDownUnblocksGet(t *testing.T) {
	tests := []struct {
		name   string
		queued []string
	}{
		{name: "empty_queue"},
		{name: "keys_still_queued_are_not_handed_out", queued: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[string](Backoff{Base: time.Millisecond, Max: time.Second})
			blocked := NewQueue[string](Backoff{Base: time.Millisecond, Max: time.Second})
			var wg sync.WaitGroup
			results := make(chan bool, 3)
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, ok := blocked.Get()
					results <- ok
				}()
			}
			for _, k := range tt.queued {
				q.Add(k)
			}
			time.Sleep(20 * time.Millisecond)
			blocked.ShutDown()
			q.ShutDown()
			wg.Wait()
			close(results)
			for ok := range results {
				if ok {
					t.Fatal("a blocked Get returned ok after ShutDown")
				}
			}
			if _, ok := q.Get(); ok {
				t.Fatal("Get returned ok after ShutDown with keys queued")
			}
		})
	}
}

func TestProcess(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		after     time.Duration
		err       error
		cancelled bool
		prior     int // failures of the key before this reconcile
		want      Outcome
		// wantRetries is NumRequeues afterwards; wantWaiting, whether the key was put back.
		wantRetries int
		wantWaiting bool
	}{
		{name: "success_forgets_failures", prior: 2, want: OutcomeOK, wantRetries: 0},
		{name: "requested_delay_requeues_and_forgets_failures", after: time.Hour, prior: 2, want: OutcomeRequeue, wantRetries: 0, wantWaiting: true},
		{name: "error_retries_with_backoff", err: boom, prior: 2, want: OutcomeError, wantRetries: 3, wantWaiting: true},
		{name: "error_while_stopping_is_not_retried", err: boom, cancelled: true, prior: 2, want: OutcomeOK, wantRetries: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := NewQueue[string](Backoff{Base: time.Hour, Max: time.Hour})
			defer q.ShutDown()
			q.failures["a"] = tt.prior
			q.Add("a")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			var got []Result[string]
			ok := Process(ctx, q, func(ctx context.Context, key string) (time.Duration, error) {
				return tt.after, tt.err
			}, func(r Result[string]) { got = append(got, r) })
			if !ok || len(got) != 1 {
				t.Fatalf("Process = %v with %d reports, want true with 1", ok, len(got))
			}
			r := got[0]
			if r.Key != "a" || r.Outcome != tt.want || !errors.Is(r.Err, tt.err) || r.Retries != tt.prior {
				t.Fatalf("result %+v, want key a, outcome %s, error %v, retries %d", r, tt.want, tt.err, tt.prior)
			}
			if n := q.NumRequeues("a"); n != tt.wantRetries {
				t.Fatalf("NumRequeues = %d, want %d", n, tt.wantRetries)
			}
			q.mu.Lock()
			_, waiting := q.waiting["a"]
			processing := q.processing["a"]
			q.mu.Unlock()
			if waiting != tt.wantWaiting || processing {
				t.Fatalf("waiting=%v processing=%v, want waiting=%v processing=false", waiting, processing, tt.wantWaiting)
			}
		})
	}

	t.Run("shut_down_queue_reconciles_nothing", func(t *testing.T) {
		q := NewQueue[string](Backoff{Base: time.Millisecond, Max: time.Second})
		q.Add("a")
		q.ShutDown()
		if Process(context.Background(), q, func(context.Context, string) (time.Duration, error) {
			t.Fatal("reconciled after ShutDown")
			return 0, nil
		}, nil) {
			t.Fatal("Process = true after ShutDown")
		}
	})
}
