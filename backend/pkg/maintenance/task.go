// Package maintenance owns maintenance that runs itself: tasks stored as documents, the actuator
// that claims and runs them through small idempotent steps, the task types (z-stream
// control-plane upgrade) and campaigns that create tasks in waves. See docs/maintenance.md.
package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// Where maintenance lives: in the document store the backend already uses, in a partition of its
// own that no resource query meets, so a claim can touch a task and its locks in one transaction.
const (
	Partition    = "openhcp-maintenance"
	TypeTask     = "maintenance-task"
	TypeLock     = "maintenance-lock"
	TypeCampaign = "maintenance-campaign"
)

// State is where a task is in its life: Pending → Running → Succeeded, Failed or Cancelled.
type State string

const (
	StatePending   State = "Pending"
	StateRunning   State = "Running"
	StateSucceeded State = "Succeeded"
	StateFailed    State = "Failed"
	StateCancelled State = "Cancelled"
)

// Terminal says whether a task in state s is finished for good.
func (s State) Terminal() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// Transition is one entry of a task's history.
type Transition struct {
	State   State     `json:"state"`
	Step    int       `json:"step"`
	At      time.Time `json:"at"`
	Message string    `json:"message,omitempty"`
	Holder  string    `json:"holder,omitempty"`
	// Request is the maintenance request that made the change (a campaign's resume or cancel).
	Request string `json:"request,omitempty"`
}

// Task is one piece of maintenance on one cluster (or shard). It is data: the actuator reads it,
// runs the next step of its type and writes back the step reached, so whoever claims it next
// goes on from there.
type Task struct {
	ID string `json:"id"`
	// Cluster is the Cluster Service ID of the cluster the task works on; Shard is set instead
	// for a task on a management cluster, Region for a task on the region's own services (its
	// name, the region's ARM location). At most one task per target runs at a time, and one
	// region task at all.
	Cluster string `json:"cluster,omitempty"`
	Shard   string `json:"shard,omitempty"`
	Region  string `json:"region,omitempty"`
	Type    string `json:"type"`
	State   State  `json:"state"`
	// Step is the index of the next step to run: every step before it has completed.
	Step     int `json:"step"`
	Attempts int `json:"attempts"`
	// RunAfter: the task is not started or resumed before this time.
	RunAfter time.Time `json:"runAfter"`
	// Priority: higher runs first among runnable tasks.
	Priority    int    `json:"priority"`
	RequestedBy string `json:"requestedBy"`
	Campaign    string `json:"campaign,omitempty"`
	// Params are the task type's inputs; Data holds what its steps found out (e.g. the target
	// version, the upgrade policy ID) so a later step or a resumed run reads it instead of
	// asking again.
	Params map[string]string `json:"params,omitempty"`
	Data   map[string]string `json:"data,omitempty"`
	// Message says why the task is in its state (the last error, why it waits).
	Message string `json:"message,omitempty"`
	// CancelRequested asks the actuator running the task to stop it between steps.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Holder and LeaseUntil name the actuator running the task and until when; a Running task
	// whose lease has passed is taken over by another actuator at Step.
	Holder     string       `json:"holder,omitempty"`
	LeaseUntil time.Time    `json:"leaseUntil,omitempty"`
	Slot       int          `json:"slot"`
	Created    time.Time    `json:"created"`
	History    []Transition `json:"history"`

	etag string
}

// Target is what the task's per-target lock is named after. Every region task takes the one
// lock "region", whatever region it names: a maintenance service serves one region.
func (t *Task) Target() string {
	switch {
	case t.Cluster != "":
		return "cluster/" + t.Cluster
	case t.Region != "":
		return "region"
	}
	return "shard/" + t.Shard
}

// targets counts the targets a task names; a task must name exactly one.
func (t *Task) targets() int {
	n := 0
	for _, s := range []string{t.Cluster, t.Shard, t.Region} {
		if s != "" {
			n++
		}
	}
	return n
}

func (t *Task) record(now time.Time, msg string) {
	t.Message = msg
	t.History = append(t.History, Transition{State: t.State, Step: t.Step, At: now.UTC(), Message: msg, Holder: t.Holder})
}

// Tasks stores tasks in the document store; every write is conditional on the ETag read.
type Tasks struct {
	st docstore.Store
}

// NewTasks returns the task store on st.
func NewTasks(st docstore.Store) *Tasks { return &Tasks{st: st} }

func taskDoc(t *Task) (*docstore.Document, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return &docstore.Document{PartitionKey: Partition, ID: "task/" + t.ID, Type: TypeTask, ResourceID: "task/" + t.ID, Body: b}, nil
}

func decodeTask(d *docstore.Document) (*Task, error) {
	var t Task
	if err := json.Unmarshal(d.Body, &t); err != nil {
		return nil, fmt.Errorf("decode task %s: %w", d.ID, err)
	}
	t.etag = d.ETag
	return &t, nil
}

// ErrInvalidTask is returned by Create for a task that cannot be run.
var ErrInvalidTask = errors.New("invalid task")

// Create stores a new Pending task. A task ID already taken returns docstore.ErrAlreadyExists,
// so a caller that derives the ID from what the task is for (a campaign and a cluster) creates
// it once however often it retries.
func (s *Tasks) Create(ctx context.Context, t *Task, now time.Time) (*Task, error) {
	if t.ID == "" || t.Type == "" || t.targets() != 1 {
		return nil, fmt.Errorf("%w: needs an id, a type and one of cluster, shard or region", ErrInvalidTask)
	}
	t.State, t.Step, t.Created = StatePending, 0, now.UTC()
	t.History = nil
	t.record(now, "created by "+t.RequestedBy)
	d, err := taskDoc(t)
	if err != nil {
		return nil, err
	}
	out, err := s.st.Create(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("create task %s: %w", t.ID, err)
	}
	t.etag = out.ETag
	return t, nil
}

// Get reads one task.
func (s *Tasks) Get(ctx context.Context, id string) (*Task, error) {
	d, err := s.st.Get(ctx, Partition, "task/"+id)
	if err != nil {
		return nil, fmt.Errorf("get task %s: %w", id, err)
	}
	return decodeTask(d)
}

// List returns every task, sorted by creation time then ID.
func (s *Tasks) List(ctx context.Context) ([]*Task, error) {
	return listAll(ctx, s.st, docstore.Query{Partition: Partition, Type: TypeTask}, "tasks",
		decodeTask, func(t *Task) (time.Time, string) { return t.Created, t.ID })
}

// replace writes t if nobody wrote it since it was read.
func (s *Tasks) replace(ctx context.Context, t *Task) error {
	d, err := taskDoc(t)
	if err != nil {
		return err
	}
	out, err := s.st.Replace(ctx, d, t.etag)
	if err != nil {
		return fmt.Errorf("write task %s: %w", t.ID, err)
	}
	t.etag = out.ETag
	return nil
}

// Cancel stops a task: a Pending one is Cancelled at once; a Running one is asked to stop and
// its actuator ends it Cancelled before its next step. Cancelling a finished task changes
// nothing.
func (s *Tasks) Cancel(ctx context.Context, id, by string, now time.Time) (*Task, error) {
	return s.cancel(ctx, id, by, "", now)
}

// cancel is Cancel on behalf of request (when not ""), which its history entry names.
func (s *Tasks) cancel(ctx context.Context, id, by, request string, now time.Time) (*Task, error) {
	for range 10 {
		t, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		switch t.State {
		case StatePending:
			t.State = StateCancelled
			t.record(now, "cancelled by "+by)
			t.History[len(t.History)-1].Request = request
		case StateRunning:
			if t.CancelRequested {
				return t, nil
			}
			t.CancelRequested = true
			t.record(now, "cancel requested by "+by)
			t.History[len(t.History)-1].Request = request
		default:
			return t, nil
		}
		if err := s.replace(ctx, t); err == nil {
			return t, nil
		} else if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("cancel task %s: kept conflicting with other writers", id)
}
