package controller

import (
	"testing"
	"time"
)

func TestRepublishDelay(t *testing.T) {
	base := 15 * time.Second
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{
		{0, 15 * time.Second},
		{1, 30 * time.Second},
		{3, 2 * time.Minute},
		{5, 8 * time.Minute},
		{6, maxRepublishDelay},
		{60, maxRepublishDelay}, // no overflow however long an agent stays away
	} {
		if got := republishDelay(base, tc.attempts); got != tc.want {
			t.Errorf("republishDelay(%s, %d) = %s, want %s", base, tc.attempts, got, tc.want)
		}
	}
}

func TestDecideLag(t *testing.T) {
	base := 15 * time.Second
	t0 := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name           string
		prev           lagState
		known          bool
		gen, statusGen int64
		now            time.Time
		want           lagDecision
	}{
		{name: "caught_up_forgets_the_episode", prev: lagState{generation: 7, since: t0, attempts: 2}, known: true,
			gen: 8, statusGen: 8, now: t0.Add(time.Hour), want: lagDecision{}},
		{name: "status_ahead_of_a_stale_read_is_caught_up", gen: 8, statusGen: 9, now: t0, want: lagDecision{}},
		{name: "first_seen_behind_starts_the_clock", gen: 8, statusGen: 7, now: t0,
			want: lagDecision{recheck: base, next: lagState{generation: 8, since: t0}, keep: true}},
		{name: "no_status_yet_counts_as_behind", gen: 1, statusGen: 0, now: t0,
			want: lagDecision{recheck: base, next: lagState{generation: 1, since: t0}, keep: true}},
		{name: "behind_for_less_than_the_wait_looks_again_when_due", prev: lagState{generation: 8, since: t0}, known: true,
			gen: 8, statusGen: 7, now: t0.Add(10 * time.Second),
			want: lagDecision{recheck: 5 * time.Second, next: lagState{generation: 8, since: t0}, keep: true}},
		{name: "behind_for_the_wait_republishes", prev: lagState{generation: 8, since: t0}, known: true,
			gen: 8, statusGen: 7, now: t0.Add(base),
			want: lagDecision{republish: true, recheck: 2 * base, next: lagState{generation: 8, since: t0.Add(base), attempts: 1}, keep: true}},
		{name: "the_republished_generation_gets_a_doubled_wait", prev: lagState{generation: 8, since: t0, attempts: 1}, known: true,
			gen: 9, statusGen: 7, now: t0.Add(time.Second),
			want: lagDecision{recheck: 2 * base, next: lagState{generation: 9, since: t0.Add(time.Second), attempts: 1}, keep: true}},
		{name: "a_second_republish_waits_twice_as_long", prev: lagState{generation: 9, since: t0, attempts: 1}, known: true,
			gen: 9, statusGen: 7, now: t0.Add(2*base - time.Millisecond),
			want: lagDecision{recheck: time.Millisecond, next: lagState{generation: 9, since: t0, attempts: 1}, keep: true}},
		{name: "an_agent_away_for_long_is_republished_at_most_every_10m", prev: lagState{generation: 40, since: t0, attempts: 30}, known: true,
			gen: 40, statusGen: 7, now: t0.Add(maxRepublishDelay),
			want: lagDecision{republish: true, recheck: maxRepublishDelay, next: lagState{generation: 40, since: t0.Add(maxRepublishDelay), attempts: 31}, keep: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decideLag(tc.prev, tc.known, tc.gen, tc.statusGen, tc.now, base)
			if got != tc.want {
				t.Errorf("decideLag = %+v\nwant        %+v", got, tc.want)
			}
		})
	}
}

func TestSooner(t *testing.T) {
	for _, tc := range []struct{ a, b, want time.Duration }{
		{0, 0, 0}, {0, time.Second, time.Second}, {time.Second, 0, time.Second}, {2 * time.Second, time.Second, time.Second},
	} {
		if got := sooner(tc.a, tc.b); got != tc.want {
			t.Errorf("sooner(%s, %s) = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
}
