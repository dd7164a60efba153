package backoff

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// within reports whether every wait lies in the policy's bounds for its place in the sequence:
// [Initial·2^i, Initial·2^i·(1+Jitter)], and never above Max.
func checkWaits(t *testing.T, p Policy, waits []time.Duration) {
	t.Helper()
	base := p.Initial
	for i, w := range waits {
		lo := min(base, time.Duration(float64(p.Max)/(1+Jitter)))
		hi := min(time.Duration(float64(base)*(1+Jitter)), p.Max)
		if w < lo || w > hi {
			t.Fatalf("wait %d is %s, want within [%s, %s] (all: %v)", i, w, lo, hi, waits)
		}
		base *= 2
	}
}

func TestDelays(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second}

	t.Run("waits_double_from_Initial_and_never_pass_Max", func(t *testing.T) {
		d := p.Delays()
		var waits []time.Duration
		for range 20 {
			waits = append(waits, d.Next())
		}
		checkWaits(t, p, waits)
		if waits[19] < time.Duration(float64(p.Max)/(1+Jitter)) {
			t.Fatalf("after 20 failures the wait is %s, want at least %s", waits[19], time.Duration(float64(p.Max)/(1+Jitter)))
		}
	})
	t.Run("waits_are_jittered", func(t *testing.T) {
		// Clients that fail together must not come back together, at the start or at the cap.
		firsts, capped := map[time.Duration]bool{}, map[time.Duration]bool{}
		for range 50 {
			d := p.Delays()
			firsts[d.Next()] = true
			for range 20 {
				d.Next()
			}
			capped[d.Next()] = true
		}
		if len(firsts) < 10 || len(capped) < 10 {
			t.Fatalf("50 clients drew %d distinct first waits and %d distinct capped waits, want many", len(firsts), len(capped))
		}
	})
	t.Run("Reset_starts_over_from_Initial", func(t *testing.T) {
		d := p.Delays()
		for range 10 {
			d.Next()
		}
		d.Reset()
		checkWaits(t, p, []time.Duration{d.Next(), d.Next()})
	})
	t.Run("After_n_is_the_n-th_wait", func(t *testing.T) {
		var waits []time.Duration
		for n := 1; n <= 20; n++ {
			waits = append(waits, p.After(n))
		}
		checkWaits(t, p, waits)
		if w := p.After(1 << 30); w > p.Max {
			t.Fatalf("After a billion failures: %s, want at most %s", w, p.Max)
		}
	})
}

func TestRetry(t *testing.T) {
	p := Policy{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	errTransient, errFinal := errors.New("transient"), errors.New("final")
	retriable := func(err error) bool { return err != errFinal }

	for _, tc := range []struct {
		name      string
		results   []error // what f returns on each call; the last one repeats
		wantCalls int
		wantErr   error
	}{
		{"success_at_once_is_one_call", []error{nil}, 1, nil},
		{"success_after_transient_failures", []error{errTransient, errTransient, nil}, 3, nil},
		{"a_refused_error_ends_at_once", []error{errTransient, errFinal}, 2, errFinal},
		{"after_all_tries_the_last_error_is_returned", []error{errTransient}, 5, errTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Retry(context.Background(), p, 5, retriable, func(context.Context) error {
				r := tc.results[min(calls, len(tc.results)-1)]
				calls++
				return r
			})
			if calls != tc.wantCalls || err != tc.wantErr {
				t.Fatalf("%d calls, error %v; want %d calls, error %v", calls, err, tc.wantCalls, tc.wantErr)
			}
		})
	}
	t.Run("a_cancelled_context_ends_the_waits_and_names_the_last_error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := Retry(ctx, Policy{Initial: time.Hour, Max: time.Hour}, 5, retriable, func(context.Context) error {
			calls++
			cancel()
			return errTransient
		})
		if calls != 1 || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "transient") {
			t.Fatalf("%d calls, error %v; want 1 call and context.Canceled naming the last error", calls, err)
		}
	})
}

func TestReconnect(t *testing.T) {
	p := Policy{Initial: time.Millisecond, Max: 8 * time.Millisecond}

	t.Run("waits_grow_until_a_session_makes_progress", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Sessions 1-4 fail at once, session 5 progresses, 6-7 fail, then the context ends.
		sessions := 0
		var waits []time.Duration
		Reconnect(ctx, p, func(context.Context) (bool, error) {
			sessions++
			if sessions == 8 {
				cancel()
			}
			return sessions == 5, errors.New("broken")
		}, func(err error, wait time.Duration) {
			if err == nil || err.Error() != "broken" {
				t.Errorf("onRetry got error %v", err)
			}
			waits = append(waits, wait)
		})
		if sessions != 8 || len(waits) != 7 {
			t.Fatalf("%d sessions, %d waits; want 8 sessions and 7 waits (none after the context ended)", sessions, len(waits))
		}
		checkWaits(t, p, waits[:4])
		checkWaits(t, p, waits[4:]) // back to Initial after the session that progressed
	})
	t.Run("an_ended_context_ends_a_wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Reconnect(ctx, Policy{Initial: time.Hour, Max: time.Hour}, func(context.Context) (bool, error) {
				return false, errors.New("broken")
			}, func(error, time.Duration) { cancel() })
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("Reconnect still waiting a minute after its context ended")
		}
	})
}

func TestNominal(t *testing.T) {
	p := Policy{Initial: time.Minute, Max: 10 * time.Minute}
	for _, tc := range []struct {
		name string
		n    int
		want time.Duration
	}{
		{"the first failure waits Initial", 1, time.Minute},
		{"each further failure doubles it", 3, 4 * time.Minute},
		{"the double past Max is Max", 5, 10 * time.Minute},
		{"a long run stays at Max without overflowing", 200, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 {
				if got := p.Nominal(tc.n); got != tc.want {
					t.Fatalf("Nominal(%d) = %v, want %v (and the same every time)", tc.n, got, tc.want)
				}
			}
		})
	}
}
