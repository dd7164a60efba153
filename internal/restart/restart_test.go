package restart

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeChild exits when the test says so; StartAgain fails while failStarts > 0.
type fakeChild struct {
	policy     *Policy
	exits      chan error
	stopped    chan struct{}
	mu         sync.Mutex
	failStarts int
	starts     int
	restarts   int
}

func (c *fakeChild) WaitExit() (*Policy, error) {
	err := <-c.exits
	select {
	case <-c.stopped:
		return nil, err
	default:
		return c.policy, err
	}
}

func (c *fakeChild) StartAgain() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failStarts > 0 {
		c.failStarts--
		return errors.New("cannot start")
	}
	c.starts++
	return nil
}

func (c *fakeChild) Stopped() <-chan struct{} { return c.stopped }
func (c *fakeChild) CountRestart() int        { c.restarts++; return c.restarts }
func (c *fakeChild) LogTail() string          { return "last words" }

// TestKeep: each crash is reported (its error and log tail, the restart count) and the child is
// started again, a failed start is reported and tried again after the next delay, and a stop,
// during a wait or at an exit, ends the loop without a report.
func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failStarts int
		wantCrash  []string // each report's error
	}{
		{"a crash is restarted", 0, []string{"killed"}},
		{"a failed start is reported and tried again", 2, []string{"killed", "cannot start", "cannot start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crashes := make(chan Crash, 10)
			c := &fakeChild{exits: make(chan error, 1), stopped: make(chan struct{}), failStarts: tc.failStarts}
			c.policy = &Policy{Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, ResetAfter: time.Hour, OnCrash: func(cr Crash) { crashes <- cr }}
			done := make(chan struct{})
			go func() { Keep("child", c); close(done) }()
			c.exits <- errors.New("killed")
			for i, want := range tc.wantCrash {
				select {
				case cr := <-crashes:
					if cr.Name != "child" || cr.Err == nil || cr.Err.Error() != want || cr.Restarts != 1 || cr.After < time.Millisecond || cr.After > 4*time.Millisecond {
						t.Fatalf("report %d = %+v, want child's %q, restart 1, after 1-4ms", i, cr, want)
					}
					if (i == 0) != (cr.LogTail == "last words") {
						t.Fatalf("report %d log tail %q: want it on the crash only", i, cr.LogTail)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("report %d (%q) never came", i, want)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				c.mu.Lock()
				started := c.starts
				c.mu.Unlock()
				if started == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the child was not started again")
				}
				time.Sleep(time.Millisecond)
			}
			close(c.stopped)
			c.exits <- nil // the exit the stop caused
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Keep did not return after the stop")
			}
			select {
			case cr := <-crashes:
				t.Fatalf("a stop was reported: %+v", cr)
			default:
			}
		})
	}
	t.Run("a stop during the wait ends it", func(t *testing.T) {
		c := &fakeChild{exits: make(chan error, 1), stopped: make(chan struct{})}
		c.policy = &Policy{Backoff: time.Hour, MaxBackoff: time.Hour, ResetAfter: time.Hour}
		done := make(chan struct{})
		go func() { Keep("child", c); close(done) }()
		c.exits <- errors.New("killed")
		time.Sleep(10 * time.Millisecond) // into the hour's wait, most likely; either way it must end
		close(c.stopped)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Keep waited out its backoff after a stop")
		}
		if c.starts != 0 {
			t.Fatalf("started %d times after the stop", c.starts)
		}
	})
}
