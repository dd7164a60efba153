package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func openStore(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// runActuator runs an actuator on its own pool until the returned stop is called (or the test ends).
func runActuator(t *testing.T, dsn string, types []TaskType, cfg ActuatorConfig) (stop func()) {
	t.Helper()
	st := openStore(t, dsn)
	if cfg.Poll == 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.Retry == 0 {
		cfg.Retry = 50 * time.Millisecond
	}
	a, err := NewActuator(NewTasks(st), types, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func waitUntil(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunning waits until task id runs with a message that contains each of want: what a task
// waiting on something outside it says it waits for. what names the wait in a failure.
func waitRunning(t *testing.T, tasks *Tasks, id, what string, want ...string) {
	t.Helper()
	waitUntil(t, 2*time.Minute, what, func() error {
		got, err := tasks.Get(context.Background(), id)
		if err != nil {
			return err
		}
		if got.State != StateRunning {
			return fmt.Errorf("state %s: %s", got.State, got.Message)
		}
		for _, w := range want {
			if !strings.Contains(got.Message, w) {
				return fmt.Errorf("state %s: %s", got.State, got.Message)
			}
		}
		return nil
	})
}

// runSteps runs steps on task in the test, as an actuator that then died before recording the
// step reached would have: each must finish without waiting.
func runSteps(t *testing.T, steps []Step, task *Task) {
	t.Helper()
	for _, s := range steps {
		if res, err := s.Run(context.Background(), task); err != nil || res.Wait != 0 {
			t.Fatalf("step %s: %v, %+v", s.Name, err, res)
		}
	}
}

func waitState(t *testing.T, tasks *Tasks, id string, want State, timeout time.Duration) *Task {
	t.Helper()
	var got *Task
	waitUntil(t, timeout, "task "+id+" "+string(want), func() error {
		var err error
		if got, err = tasks.Get(context.Background(), id); err != nil {
			return err
		}
		if got.State != want {
			return fmt.Errorf("state %s step %d: %s", got.State, got.Step, got.Message)
		}
		return nil
	})
	return got
}

// effects counts, per task and step, how often a step ran and how often its side effect
// happened; a step's effect is idempotent the way a real one is: it looks first.
type effects struct {
	mu     sync.Mutex
	calls  map[string]int
	done   map[string]int
	active map[string]int
	peak   map[string]int
}

func newEffects() *effects {
	return &effects{calls: map[string]int{}, done: map[string]int{}, active: map[string]int{}, peak: map[string]int{}}
}

func (e *effects) step(i int, before func(ctx context.Context, t *Task, call int) error) Step {
	return Step{Name: fmt.Sprintf("step-%d", i), Run: func(ctx context.Context, t *Task) (StepResult, error) {
		key := fmt.Sprintf("%s/%d", t.ID, i)
		e.mu.Lock()
		e.calls[key]++
		call := e.calls[key]
		e.mu.Unlock()
		if before != nil {
			if err := before(ctx, t, call); err != nil {
				return StepResult{}, err
			}
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if t.Data[fmt.Sprint(i)] == "" && e.done[key] == 0 {
			e.done[key]++
		}
		if t.Data == nil {
			t.Data = map[string]string{}
		}
		t.Data[fmt.Sprint(i)] = "done"
		return StepResult{}, nil
	}}
}

func (e *effects) get(m map[string]int, key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return m[key]
}

func TestActuator(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	now := time.Now()

	t.Run("a_task_cut_off_mid_step_is_finished_by_a_second_actuator_each_effect_once", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		tasks := NewTasks(openStore(t, dsn))
		e := newEffects()
		entered := make(chan struct{})
		tt := TaskType{Name: "count", Steps: []Step{
			e.step(0, nil),
			e.step(1, func(ctx context.Context, _ *Task, call int) error {
				if call == 1 { // the first actuator dies in here
					close(entered)
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}),
			e.step(2, nil),
		}}
		if _, err := tasks.Create(ctx, &Task{ID: "t1", Cluster: "c1", Type: "count", RequestedBy: "test"}, now); err != nil {
			t.Fatal(err)
		}
		const lease = 6 * time.Second
		stopA := runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: lease})
		select {
		case <-entered:
		case <-time.After(time.Minute):
			t.Fatal("actuator a never reached step 1")
		}
		stopA()
		mid, err := tasks.Get(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if mid.State != StateRunning || mid.Step != 1 || mid.Holder != "a" {
			t.Fatalf("after a stopped: %s step %d holder %q; want Running at step 1 held by a", mid.State, mid.Step, mid.Holder)
		}
		runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "b", LeaseDuration: lease})
		got := waitState(t, tasks, "t1", StateSucceeded, 2*time.Minute)
		for i, want := range []int{1, 2, 1} {
			key := fmt.Sprintf("t1/%d", i)
			if n := e.get(e.calls, key); n != want {
				t.Errorf("step %d ran %d times, want %d", i, n, want)
			}
			if n := e.get(e.done, key); n != 1 {
				t.Errorf("step %d side effect happened %d times, want 1", i, n)
			}
		}
		var resumed bool
		for _, h := range got.History {
			resumed = resumed || strings.Contains(h.Message, "resumed at step 1 by b")
		}
		if !resumed || got.Step != 3 {
			t.Fatalf("history %+v step %d; want a resume at step 1 by b and step 3", got.History, got.Step)
		}
		for _, id := range []string{"lock/cluster/c1", "slot/0"} {
			if _, err := tasks.st.Get(ctx, Partition, id); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("%s after the task ended: %v; want released", id, err)
			}
		}
	})

	t.Run("one_task_per_cluster_and_at_most_max_in_flight_across_actuators", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		tasks := NewTasks(openStore(t, dsn))
		var mu sync.Mutex
		perCluster, peakCluster := map[string]int{}, map[string]int{}
		var global, peakGlobal int
		hold := func(ctx context.Context, task *Task, _ int) error {
			mu.Lock()
			perCluster[task.Cluster]++
			global++
			peakCluster[task.Cluster] = max(peakCluster[task.Cluster], perCluster[task.Cluster])
			peakGlobal = max(peakGlobal, global)
			mu.Unlock()
			select { // hold the slot long enough for the others to try
			case <-ctx.Done():
			case <-time.After(150 * time.Millisecond):
			}
			mu.Lock()
			perCluster[task.Cluster]--
			global--
			mu.Unlock()
			return nil
		}
		e := newEffects()
		tt := TaskType{Name: "hold", Steps: []Step{e.step(0, hold), e.step(1, nil)}}
		var ids []string
		for i := range 8 {
			cl := "busy"
			if i%2 == 1 {
				cl = fmt.Sprintf("c%d", i)
			}
			id := fmt.Sprintf("t%d", i)
			ids = append(ids, id)
			if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: cl, Type: "hold", RequestedBy: "test"}, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range []string{"a", "b", "c"} {
			runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: h, MaxInFlight: 2, LeaseDuration: 10 * time.Second})
		}
		for _, id := range ids {
			waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
		}
		mu.Lock()
		defer mu.Unlock()
		if peakCluster["busy"] != 1 {
			t.Errorf("cluster busy ran %d tasks at once, want 1", peakCluster["busy"])
		}
		if peakGlobal > 2 || peakGlobal < 1 {
			t.Errorf("%d tasks ran at once, want at most MaxInFlight 2", peakGlobal)
		}
	})

	t.Run("cancel_of_a_pending_task_ends_it_and_of_a_running_one_stops_it_between_steps", func(t *testing.T) {
		dsn := pgservertest.NewDatabase(t, pg)
		tasks := NewTasks(openStore(t, dsn))
		if _, err := tasks.Create(ctx, &Task{ID: "p", Cluster: "c1", Type: "none", RequestedBy: "test"}, now); err != nil {
			t.Fatal(err)
		}
		if got, err := tasks.Cancel(ctx, "p", "sre", now); err != nil || got.State != StateCancelled {
			t.Fatalf("cancel pending: %v %v; want Cancelled", got, err)
		}
		release := make(chan struct{})
		e := newEffects()
		tt := TaskType{Name: "slow", Steps: []Step{
			e.step(0, func(ctx context.Context, _ *Task, _ int) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}),
			e.step(1, nil),
		}}
		if _, err := tasks.Create(ctx, &Task{ID: "r", Cluster: "c2", Type: "slow", RequestedBy: "test"}, now); err != nil {
			t.Fatal(err)
		}
		runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second})
		waitState(t, tasks, "r", StateRunning, time.Minute)
		if got, err := tasks.Cancel(ctx, "r", "sre", now); err != nil || !got.CancelRequested {
			t.Fatalf("cancel running: %v %v; want cancel requested", got, err)
		}
		close(release)
		got := waitState(t, tasks, "r", StateCancelled, time.Minute)
		if got.Step != 1 || e.get(e.calls, "r/1") != 0 {
			t.Fatalf("cancelled at step %d, step 1 ran %d times; want stopped before step 1", got.Step, e.get(e.calls, "r/1"))
		}
	})
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
