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
		fixed          bool // Config.FixedRepublishWait
		want           episodeDecision[int64]
		wantReported   time.Duration
	}{
		{name: "caught_up_forgets_the_episode", prev: lagState{key: 7, since: t0, attempts: 2}, known: true,
			gen: 8, statusGen: 8, now: t0.Add(time.Hour), want: episodeDecision[int64]{}},
		{name: "caught_up_by_itself_tells_how_long_the_agent_took", prev: lagState{key: 8, since: t0}, known: true,
			gen: 8, statusGen: 8, now: t0.Add(3 * time.Second), wantReported: 3 * time.Second},
		{name: "caught_up_on_an_older_generation_tells_nothing", prev: lagState{key: 9, since: t0}, known: true,
			gen: 8, statusGen: 8, now: t0.Add(3 * time.Second), want: episodeDecision[int64]{}},
		{name: "status_ahead_of_a_stale_read_is_caught_up", gen: 8, statusGen: 9, now: t0, want: episodeDecision[int64]{}},
		{name: "first_seen_behind_starts_the_clock", gen: 8, statusGen: 7, now: t0,
			want: episodeDecision[int64]{recheck: base, next: lagState{key: 8, since: t0}, keep: true}},
		{name: "never_reported_waits_four_times_longer", gen: 1, statusGen: 0, now: t0,
			want: episodeDecision[int64]{recheck: 4 * base, next: lagState{key: 1, since: t0}, keep: true}},
		{name: "never_reported_is_not_republished_after_the_plain_wait", prev: lagState{key: 1, since: t0}, known: true,
			gen: 1, statusGen: 0, now: t0.Add(base),
			want: episodeDecision[int64]{recheck: 3 * base, next: lagState{key: 1, since: t0}, keep: true}},
		{name: "never_reported_is_republished_after_the_longer_wait", prev: lagState{key: 1, since: t0}, known: true,
			gen: 1, statusGen: 0, now: t0.Add(4 * base),
			want: episodeDecision[int64]{republish: true, recheck: 8 * base, next: lagState{key: 1, since: t0.Add(4 * base), attempts: 1}, keep: true}},
		{name: "fixed_wait_counts_no_status_as_behind", gen: 1, statusGen: 0, now: t0, fixed: true,
			want: episodeDecision[int64]{recheck: base, next: lagState{key: 1, since: t0}, keep: true}},
		{name: "behind_for_less_than_the_wait_looks_again_when_due", prev: lagState{key: 8, since: t0}, known: true,
			gen: 8, statusGen: 7, now: t0.Add(10 * time.Second),
			want: episodeDecision[int64]{recheck: 5 * time.Second, next: lagState{key: 8, since: t0}, keep: true}},
		{name: "behind_for_the_wait_republishes", prev: lagState{key: 8, since: t0}, known: true,
			gen: 8, statusGen: 7, now: t0.Add(base),
			want: episodeDecision[int64]{republish: true, recheck: 2 * base, next: lagState{key: 8, since: t0.Add(base), attempts: 1}, keep: true}},
		{name: "the_republished_generation_gets_a_doubled_wait", prev: lagState{key: 8, since: t0, attempts: 1}, known: true,
			gen: 9, statusGen: 7, now: t0.Add(time.Second),
			want: episodeDecision[int64]{recheck: 2 * base, next: lagState{key: 9, since: t0.Add(time.Second), attempts: 1}, keep: true}},
		{name: "a_second_republish_waits_twice_as_long", prev: lagState{key: 9, since: t0, attempts: 1}, known: true,
			gen: 9, statusGen: 7, now: t0.Add(2*base - time.Millisecond),
			want: episodeDecision[int64]{recheck: time.Millisecond, next: lagState{key: 9, since: t0, attempts: 1}, keep: true}},
		{name: "an_agent_away_for_long_is_republished_at_most_every_10m", prev: lagState{key: 40, since: t0, attempts: 30}, known: true,
			gen: 40, statusGen: 7, now: t0.Add(maxRepublishDelay),
			want: episodeDecision[int64]{republish: true, recheck: maxRepublishDelay, next: lagState{key: 40, since: t0.Add(maxRepublishDelay), attempts: 31}, keep: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reported := decideLag(tc.prev, tc.known, tc.gen, tc.statusGen, tc.now, base, !tc.fixed)
			if got != tc.want || reported != tc.wantReported {
				t.Errorf("decideLag = %+v, reported %s\nwant        %+v, reported %s", got, reported, tc.want, tc.wantReported)
			}
		})
	}
}

func TestAdaptedWait(t *testing.T) {
	base := 15 * time.Second
	reports := func(ds ...time.Duration) *reportTimes {
		r := &reportTimes{}
		for _, d := range ds {
			r.add(d)
		}
		return r
	}
	var oneToThirtyTwo []time.Duration // 1 s … 32 s: a full window
	for i := range reportWindow {
		oneToThirtyTwo = append(oneToThirtyTwo, time.Duration(i+1)*time.Second)
	}
	tenSeconds := make([]time.Duration, reportWindow)
	for i := range tenSeconds {
		tenSeconds[i] = 10 * time.Second
	}
	for _, tc := range []struct {
		name  string
		times *reportTimes
		want  time.Duration
	}{
		{"no_reports_yet_keeps_the_base", nil, base},
		{"a_quick_agent_keeps_the_base", reports(time.Second, 7*time.Second), base},
		{"a_slow_agent_gets_twice_its_slowest", reports(time.Second, 20*time.Second), 40 * time.Second},
		{"capped", reports(5 * time.Minute), maxAdaptedWait},
		{"the_window_is_full", reports(oneToThirtyTwo...), 64 * time.Second},
		// 31 newer reports push out all but the oldest's last one (32 s).
		{"the_window_slides", reports(append(oneToThirtyTwo, tenSeconds[:reportWindow-1]...)...), 64 * time.Second},
		{"the_oldest_report_is_forgotten", reports(append(oneToThirtyTwo, tenSeconds...)...), 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adaptedWait(base, tc.times); got != tc.want {
				t.Errorf("adaptedWait = %s, want %s", got, tc.want)
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
