package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// StepResult says what a step that returned no error did: Wait zero means it completed; a
// positive Wait means what it waits for has not happened yet and it is to run again after Wait.
type StepResult struct {
	Wait time.Duration
	// Message, when set, says what the step waits for; it goes into the task's message.
	Message string
}

// Step is one small piece of a task type. Run must be idempotent: after a crash the step the
// task stopped in runs again, so it first looks whether its effect is already there.
type Step struct {
	Name string
	Run  func(ctx context.Context, t *Task) (StepResult, error)
}

// TaskType is a kind of maintenance: its ordered steps and how often a step may fail.
type TaskType struct {
	Name  string
	Steps []Step
	// MaxAttempts is how many step errors a task of this type survives before it fails
	// (default 3). A step returns Permanent(err) to fail the task at once.
	MaxAttempts int
	// Estimate is how long a task of this type is expected to run, so one is not started when
	// its maintenance window closes before that (default 1h).
	Estimate time.Duration
	// Params are the parameters (Task.Params) a task of this type takes, for whoever creates one
	// from outside (an SRE's request): a request naming a parameter not listed, or missing a
	// required one, is refused before it is stored. nil: the type lists none and takes any
	// parameters; its steps check them.
	Params []Param
	// Region says a task of this type works on the region itself (Task.Region), not on a
	// cluster: a request to create one names the region where it would name the cluster, and
	// Cluster Service is not asked about it.
	Region bool
}

// Param is one parameter of a task type.
type Param struct {
	Name     string `json:"name"`
	Required bool   `json:"required,omitempty"`
	// Doc says what the parameter holds, for the admin API's refusals and hcpctl's help.
	Doc string `json:"doc,omitempty"`
	// Check, when set, is the one check of a value given: the task's step calls it too, and the
	// admin API refuses a request whose value it fails before it signs the request.
	Check func(string) error `json:"-"`
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks a step error that retrying cannot fix: the task fails at once.
func Permanent(err error) error { return permanentError{err} }

// Gate decides whether a task may start now; when not, next is the earliest time it may.
// Maintenance windows and blackout dates are a Gate.
type Gate interface {
	Allow(ctx context.Context, t *Task, estimate time.Duration, now time.Time) (ok bool, next time.Time, why string, err error)
}

// ActuatorConfig tunes an Actuator. Zero values take the documented defaults.
type ActuatorConfig struct {
	// Holder names this actuator in the tasks it runs (required; hostname plus pid).
	Holder string
	// MaxInFlight is how many tasks run at once across every actuator (default 4): a running
	// task holds one of MaxInFlight slot documents. Every actuator must use the same number.
	MaxInFlight int
	// LeaseDuration is how long a Running task stays with its actuator after its last write
	// (default 30s); a step must return within half of it. A task whose lease has passed is
	// resumed by another actuator at the step it reached. Leases compare wall clocks of the
	// actuators, so their skew must stay well under LeaseDuration.
	LeaseDuration time.Duration
	// Poll is how often the actuator looks for runnable tasks (default 1s).
	Poll time.Duration
	// Retry is how long a task waits after a step error before the step runs again (default 5s).
	Retry time.Duration
	Gate  Gate
	Now   func() time.Time
	Log   *slog.Logger
}

func (c *ActuatorConfig) defaults() error {
	if c.Holder == "" {
		return errors.New("maintenance: Holder is required")
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 30 * time.Second
	}
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Retry <= 0 {
		c.Retry = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Actuator claims runnable tasks and runs their steps. Any number of actuators may run against
// one store: a claim is one transaction that moves the task to Running and creates the lock of
// its target and one of the in-flight slots, so a target has one running task and the region at
// most MaxInFlight.
type Actuator struct {
	tasks *Tasks
	types map[string]TaskType
	cfg   ActuatorConfig

	mu      sync.Mutex
	running map[string]bool
	wg      sync.WaitGroup
}

// NewActuator returns an actuator for the given task types; it runs nothing until Run.
func NewActuator(tasks *Tasks, types []TaskType, cfg ActuatorConfig) (*Actuator, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m := map[string]TaskType{}
	for _, tt := range types {
		if tt.MaxAttempts <= 0 {
			tt.MaxAttempts = 3
		}
		if tt.Estimate <= 0 {
			tt.Estimate = time.Hour
		}
		m[tt.Name] = tt
	}
	return &Actuator{tasks: tasks, types: m, cfg: cfg, running: map[string]bool{}}, nil
}

// Run claims and runs tasks until ctx ends, then waits for its task runners to stop. A runner
// stopped this way leaves its task Running at the step it reached, for another actuator to
// resume once the lease has passed.
func (a *Actuator) Run(ctx context.Context) {
	defer a.wg.Wait()
	t := time.NewTicker(a.cfg.Poll)
	defer t.Stop()
	for {
		if err := a.claimRound(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Log.Warn("maintenance claim round failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Actuator) isRunning(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running[id]
}

// claimRound looks at every task once and starts runners for the ones it claims.
func (a *Actuator) claimRound(ctx context.Context) error {
	all, err := a.tasks.List(ctx)
	if err != nil {
		return err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Priority > all[j].Priority })
	now := a.cfg.Now()
	for _, t := range all {
		if ctx.Err() != nil {
			return nil
		}
		if a.isRunning(t.ID) || now.Before(t.RunAfter) {
			continue
		}
		var claimed bool
		switch {
		case t.State == StatePending:
			claimed, err = a.claimPending(ctx, t, now)
		case t.State == StateRunning && now.After(t.LeaseUntil):
			claimed, err = a.takeOver(ctx, t, now)
		}
		if err != nil {
			a.cfg.Log.Warn("maintenance claim failed", "taskID", t.ID, "error", err)
			continue
		}
		if claimed {
			a.mu.Lock()
			a.running[t.ID] = true
			a.mu.Unlock()
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				defer func() { a.mu.Lock(); delete(a.running, t.ID); a.mu.Unlock() }()
				a.runTask(ctx, t)
			}()
		}
	}
	return nil
}

type lockBody struct {
	Task string `json:"task"`
}

func lockDoc(id, task string) *docstore.Document {
	b, _ := json.Marshal(lockBody{Task: task})
	return &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeLock, ResourceID: id, Body: b}
}

func slotID(i int) string { return "slot/" + strconv.Itoa(i) }

func conflict(err error) bool {
	return errors.Is(err, docstore.ErrAlreadyExists) || errors.Is(err, docstore.ErrPreconditionFailed) || errors.Is(err, docstore.ErrNotFound)
}

// claimPending moves a Pending task to Running in one transaction with its target lock and a
// free slot. false without error: the target is busy, no slot is free, the gate says not now,
// or someone else won the race.
func (a *Actuator) claimPending(ctx context.Context, t *Task, now time.Time) (bool, error) {
	tt, ok := a.types[t.Type]
	if !ok {
		return false, nil // an actuator of another version may know it
	}
	if _, err := a.tasks.st.Get(ctx, Partition, "lock/"+t.Target()); err == nil {
		return false, nil
	} else if !errors.Is(err, docstore.ErrNotFound) {
		return false, fmt.Errorf("read lock of %s: %w", t.Target(), err)
	}
	if a.cfg.Gate != nil {
		ok, next, why, err := a.cfg.Gate.Allow(ctx, t, tt.Estimate, now)
		if err != nil {
			return false, fmt.Errorf("check maintenance window of task %s: %w", t.ID, err)
		}
		if !ok {
			if !next.Equal(t.RunAfter) {
				t.RunAfter = next
				t.Message = why
				if err := a.tasks.replace(ctx, t); err != nil && !conflict(err) {
					return false, err
				}
			}
			return false, nil
		}
	}
	for i := range a.cfg.MaxInFlight {
		if _, err := a.tasks.st.Get(ctx, Partition, slotID(i)); err == nil {
			continue
		} else if !errors.Is(err, docstore.ErrNotFound) {
			return false, fmt.Errorf("read slot %d: %w", i, err)
		}
		next := *t
		next.History = append([]Transition(nil), t.History...)
		next.State, next.Holder, next.LeaseUntil, next.Slot = StateRunning, a.cfg.Holder, now.Add(a.cfg.LeaseDuration), i
		next.record(now, "claimed by "+a.cfg.Holder)
		d, err := taskDoc(&next)
		if err != nil {
			return false, err
		}
		out, err := a.tasks.st.Transact(ctx, Partition, []docstore.TxOp{
			{Kind: docstore.TxReplace, Doc: d, IfMatch: t.etag},
			{Kind: docstore.TxCreate, Doc: lockDoc("lock/"+t.Target(), t.ID)},
			{Kind: docstore.TxCreate, Doc: lockDoc(slotID(i), t.ID)},
		})
		if conflict(err) {
			return false, nil // raced with another actuator; the next round looks again
		}
		if err != nil {
			return false, fmt.Errorf("claim task %s: %w", t.ID, err)
		}
		next.etag = out[0].ETag
		*t = next
		a.cfg.Log.Info("maintenance task claimed", "taskID", t.ID, "type", t.Type, "target", t.Target(), "slot", i)
		return true, nil
	}
	return false, nil
}

// takeOver resumes a Running task whose actuator stopped renewing it: its locks stay, the task
// changes holder and goes on at the step it reached.
func (a *Actuator) takeOver(ctx context.Context, t *Task, now time.Time) (bool, error) {
	if _, ok := a.types[t.Type]; !ok {
		return false, nil
	}
	prev := t.Holder
	t.Holder, t.LeaseUntil = a.cfg.Holder, now.Add(a.cfg.LeaseDuration)
	t.record(now, fmt.Sprintf("resumed at step %d by %s (lease of %s passed)", t.Step, a.cfg.Holder, prev))
	if err := a.tasks.replace(ctx, t); conflict(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	a.cfg.Log.Info("maintenance task taken over", "taskID", t.ID, "type", t.Type, "step", t.Step, "previous_holder", prev)
	return true, nil
}

var errLost = errors.New("task is no longer held by this actuator")

// save writes change applied to t; when someone else wrote the task meanwhile (an admin's
// cancel) it applies change to what is stored, as long as the task is still ours.
func (a *Actuator) save(ctx context.Context, t *Task, change func(*Task)) error {
	cur := t
	for range 10 {
		change(cur)
		cur.LeaseUntil = a.cfg.Now().Add(a.cfg.LeaseDuration)
		err := a.tasks.replace(ctx, cur)
		if err == nil {
			*t = *cur
			return nil
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return err
		}
		fresh, err := a.tasks.Get(ctx, t.ID)
		if err != nil {
			return err
		}
		if fresh.State != StateRunning || fresh.Holder != a.cfg.Holder {
			return errLost
		}
		cur = fresh
	}
	return fmt.Errorf("save task %s: kept conflicting", t.ID)
}

// finish ends the task in a terminal state and releases its target lock and slot, all in one
// transaction.
func (a *Actuator) finish(ctx context.Context, t *Task, s State, msg string) error {
	for range 10 {
		lock, err := a.tasks.st.Get(ctx, Partition, "lock/"+t.Target())
		if err != nil {
			return fmt.Errorf("read lock of %s: %w", t.Target(), err)
		}
		slot, err := a.tasks.st.Get(ctx, Partition, slotID(t.Slot))
		if err != nil {
			return fmt.Errorf("read slot %d: %w", t.Slot, err)
		}
		next := *t
		next.History = append([]Transition(nil), t.History...)
		next.State, next.Holder, next.LeaseUntil = s, "", time.Time{}
		next.record(a.cfg.Now(), msg)
		d, err := taskDoc(&next)
		if err != nil {
			return err
		}
		_, err = a.tasks.st.Transact(ctx, Partition, []docstore.TxOp{
			{Kind: docstore.TxReplace, Doc: d, IfMatch: t.etag},
			{Kind: docstore.TxDelete, Doc: lock, IfMatch: lock.ETag},
			{Kind: docstore.TxDelete, Doc: slot, IfMatch: slot.ETag},
		})
		if err == nil {
			*t = next
			a.cfg.Log.Info("maintenance task finished", "taskID", t.ID, "type", t.Type, "state", string(s), "message", msg)
			return nil
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return fmt.Errorf("finish task %s: %w", t.ID, err)
		}
		fresh, gerr := a.tasks.Get(ctx, t.ID)
		if gerr != nil {
			return gerr
		}
		if fresh.State != StateRunning || fresh.Holder != a.cfg.Holder {
			return errLost
		}
		fresh.Data, fresh.Step = t.Data, t.Step
		*t = *fresh
	}
	return fmt.Errorf("finish task %s: kept conflicting", t.ID)
}

// runTask runs t's steps from the one it reached until it ends, the lease is lost or ctx ends.
func (a *Actuator) runTask(ctx context.Context, t *Task) {
	tt := a.types[t.Type]
	log := a.cfg.Log.With("taskID", t.ID, "type", t.Type, "target", t.Target())
	for ctx.Err() == nil {
		if t.CancelRequested {
			a.end(ctx, log, t, StateCancelled, fmt.Sprintf("cancelled before step %d", t.Step))
			return
		}
		if t.Step >= len(tt.Steps) {
			a.end(ctx, log, t, StateSucceeded, "all steps done")
			return
		}
		step := tt.Steps[t.Step]
		stepCtx, cancel := context.WithTimeout(ctx, a.cfg.LeaseDuration/2)
		res, err := step.Run(stepCtx, t)
		cancel()
		if ctx.Err() != nil {
			return // stopped: the task stays Running at this step for whoever resumes it
		}
		data := t.Data
		var wait time.Duration
		switch {
		case err != nil && (errors.As(err, new(permanentError)) || t.Attempts+1 >= tt.MaxAttempts):
			a.end(ctx, log, t, StateFailed, fmt.Sprintf("step %s: %v", step.Name, err))
			return
		case err != nil:
			wait = a.cfg.Retry
			err = a.save(ctx, t, func(c *Task) {
				c.Data, c.Attempts = data, c.Attempts+1
				c.record(a.cfg.Now(), fmt.Sprintf("step %s failed (attempt %d of %d): %v", step.Name, c.Attempts, tt.MaxAttempts, err))
			})
		case res.Wait > 0:
			wait = res.Wait
			err = a.save(ctx, t, func(c *Task) { c.Data, c.Message = data, res.Message })
		default:
			next := t.Step + 1
			err = a.save(ctx, t, func(c *Task) {
				c.Data, c.Step = data, next
				c.record(a.cfg.Now(), "step "+step.Name+" done")
			})
		}
		if errors.Is(err, errLost) {
			log.Warn("maintenance task lost its lease", "step", t.Step)
			return
		}
		if err != nil {
			log.Warn("maintenance task write failed", "step", t.Step, "error", err)
			wait = a.cfg.Retry
		}
		if wait > a.cfg.LeaseDuration/3 {
			wait = a.cfg.LeaseDuration / 3 // renew the lease while waiting
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if fresh, err := a.tasks.Get(ctx, t.ID); err == nil && fresh.State == StateRunning && fresh.Holder == a.cfg.Holder {
				fresh.Data = t.Data
				*t = *fresh // see a cancel asked meanwhile
			}
		}
	}
}

func (a *Actuator) end(ctx context.Context, log *slog.Logger, t *Task, s State, msg string) {
	if err := a.finish(ctx, t, s, msg); err != nil {
		log.Warn("maintenance task could not be finished", "state", string(s), "error", err)
	}
}
