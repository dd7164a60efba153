package maintenance

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestNextStart(t *testing.T) {
	// Thursday 2026-11-26 10:00 UTC.
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := func(day, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }
	nightly := &Window{Start: 2 * time.Hour, Length: 4 * time.Hour} // 02:00–06:00 every day
	morning := &Window{Start: 9 * time.Hour, Length: 2 * time.Hour} // 09:00–11:00
	saturdays := &Window{Days: []time.Weekday{time.Saturday}, Start: 0, Length: 24 * time.Hour}
	xmas := []Blackout{{From: at(26, 0), To: at(27, 0), Reason: "thanksgiving"}}
	for _, tc := range []struct {
		name      string
		win       *Window
		blackouts []Blackout
		estimate  time.Duration
		want      time.Time
		wantWhy   string
	}{
		{"no_window_no_blackout_starts_now", nil, nil, time.Hour, now, ""},
		{"outside_the_window_waits_for_the_next_opening", nightly, nil, time.Hour, at(27, 2), "window opening"},
		{"inside_the_window_with_time_left_starts_now", morning, nil, time.Hour, now, ""},
		{"inside_the_window_without_time_for_the_estimate_waits_for_the_next", morning, nil, 90 * time.Minute, at(27, 9), "window opening"},
		{"only_saturdays_waits_for_saturday", saturdays, nil, time.Hour, at(28, 0), "window opening"},
		{"a_blackout_without_window_waits_for_its_end", nil, xmas, time.Hour, at(27, 0), "thanksgiving"},
		{"a_blackout_moves_the_start_to_the_next_window_after_it", morning, xmas, time.Hour, at(27, 9), "thanksgiving), then the maintenance window"},
		{"a_window_shorter_than_the_estimate_never_opens", morning, nil, 3 * time.Hour, now.Add(28 * 24 * time.Hour), "shorter than the task's estimate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := NextStart(tc.win, tc.blackouts, tc.estimate, now)
			if !got.Equal(tc.want) || !strings.Contains(why, tc.wantWhy) || (tc.wantWhy == "") != (why == "") {
				t.Fatalf("NextStart = %s %q; want %s containing %q", got, why, tc.want, tc.wantWhy)
			}
		})
	}
}

// clock is a settable clock for the actuator.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func TestActuatorWindows(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	dsn := pgservertest.NewDatabase(t, pg)
	st := openStore(t, dsn)
	tasks := NewTasks(st)
	windows := NewWindows(st, nil)
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	clk := &clock{now: day.Add(10 * time.Hour)}
	if err := windows.Set(ctx, "c1", &Window{Start: 12 * time.Hour, Length: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	e := newEffects()
	tt := TaskType{Name: "w", Estimate: time.Hour, Steps: []Step{e.step(0, nil)}}
	if _, err := tasks.Create(ctx, &Task{ID: "w1", Cluster: "c1", Type: "w", RequestedBy: "test"}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second, Gate: windows, Now: clk.Now})

	t.Run("a_task_outside_its_clusters_window_waits_for_the_opening_and_says_so", func(t *testing.T) {
		waitUntil(t, time.Minute, "run after the window opening", func() error {
			got, err := tasks.Get(ctx, "w1")
			if err != nil {
				return err
			}
			if !got.RunAfter.Equal(day.Add(12*time.Hour)) || got.State != StatePending || !strings.Contains(got.Message, "maintenance window") {
				return errorf("task %s runAfter %s: %q", got.State, got.RunAfter, got.Message)
			}
			return nil
		})
		if n := e.get(e.calls, "w1/0"); n != 0 {
			t.Fatalf("step ran %d times outside the window", n)
		}
	})
	t.Run("a_task_that_would_run_past_the_window_close_waits_and_one_inside_runs", func(t *testing.T) {
		clk.Set(day.Add(13*time.Hour + 30*time.Minute)) // 30m left, estimate 1h: tomorrow 12:00
		waitUntil(t, time.Minute, "run after tomorrow's opening", func() error {
			got, err := tasks.Get(ctx, "w1")
			if err != nil {
				return err
			}
			if !got.RunAfter.Equal(day.Add(36 * time.Hour)) {
				return errorf("runAfter %s", got.RunAfter)
			}
			return nil
		})
		clk.Set(day.Add(36*time.Hour + time.Minute))
		waitState(t, tasks, "w1", StateSucceeded, time.Minute)
	})
}

// TestParseBlackouts: the region's blackouts as configured. An empty setting and an empty list
// are none; JSON null is refused (it is no list: a value that did not render, not "none").
func TestParseBlackouts(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int
		wantErr  string
	}{
		{name: "an_empty_setting_is_none", in: ""},
		{name: "an_empty_list_is_none", in: "[]"},
		{name: "a_list_of_one_span", in: `[{"from":"2026-12-24T00:00:00Z","to":"2026-12-27T00:00:00Z"}]`, want: 1},
		{name: "null_is_refused_naming_the_list", in: "null", wantErr: "null"},
		{name: "null_with_spaces_is_refused", in: " null\n", wantErr: "null"},
		{name: "an_object_is_refused", in: `{"from":"2026-12-24T00:00:00Z"}`, wantErr: "blackouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBlackouts(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseBlackouts(%q) = %v, %v; want an error naming %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != tc.want {
				t.Fatalf("ParseBlackouts(%q) = %v, %v; want %d spans", tc.in, got, err, tc.want)
			}
		})
	}
}
