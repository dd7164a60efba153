package notify

import (
	"testing"
	"time"
)

func TestNotifyBackoff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		attempts int
		lo, hi   time.Duration
	}{
		{"first_failure_waits_about_a_second", 1, time.Second, 1500 * time.Millisecond},
		{"each_failure_doubles_the_wait", 4, 8 * time.Second, 12 * time.Second},
		{"the_wait_never_passes_five_minutes", 1000, 200 * time.Second, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for range 20 {
				d := notifyBackoff(tc.attempts)
				if d < tc.lo || d > tc.hi {
					t.Fatalf("wait after %d failed attempts = %s, want within [%s, %s]", tc.attempts, d, tc.lo, tc.hi)
				}
				seen[d] = true
			}
			// Receivers that failed together (ARM down) must not all be tried again together.
			if len(seen) < 2 {
				t.Fatalf("wait after %d failed attempts is always %v: not jittered", tc.attempts, seen)
			}
		})
	}
}
