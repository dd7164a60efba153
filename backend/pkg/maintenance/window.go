package maintenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
)

// TypeWindow is the document kind of a cluster's maintenance window.
const TypeWindow = "maintenance-window"

// Window is a cluster's weekly maintenance window, in UTC: on each of Days (empty: every day) it
// opens Start after midnight and stays open for Length. A task starts only inside a window that
// is still open for the task type's estimate.
type Window struct {
	Days   []time.Weekday `json:"days,omitempty"`
	Start  time.Duration  `json:"start"`
	Length time.Duration  `json:"length"`
}

// Blackout is a span of the region in which no task starts: [From, To).
type Blackout struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Reason string    `json:"reason,omitempty"`
}

// ParseBlackouts reads the region's blackouts from their configuration form: a JSON list of
// {"from", "to", "reason"} with RFC 3339 times; empty (or an empty list) is none. Each must end
// after it starts. JSON null is refused: it is no list (a setting that did not render, say), and
// a blackout list is the kind of setting whose loss should stop start-up, not mean "none".
func ParseBlackouts(s string) ([]Blackout, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var list *[]Blackout // nil after a null
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("blackouts: %w", err)
	}
	if list == nil {
		return nil, errors.New("blackouts: null is no list; write [] for none")
	}
	if dec.More() {
		return nil, errors.New("blackouts: more than one JSON value")
	}
	for i, b := range *list {
		if b.From.IsZero() || b.To.IsZero() || !b.To.After(b.From) {
			return nil, fmt.Errorf("blackout %d: needs from and to, to after from", i)
		}
	}
	return *list, nil
}

// Windows is the Gate of maintenance windows (per cluster, stored beside the tasks; an admin
// setting) and the region's blackout dates (configuration). A cluster without a window may be
// maintained at any time outside blackouts.
type Windows struct {
	st        docstore.Store
	blackouts []Blackout
}

// NewWindows returns the window gate on st with the region's blackouts.
func NewWindows(st docstore.Store, blackouts []Blackout) *Windows {
	return &Windows{st: st, blackouts: blackouts}
}

// ErrInvalidWindow is returned by Set for a window that never opens.
var ErrInvalidWindow = errors.New("invalid maintenance window")

// Validate checks that win opens: its start is within a day, its length positive and at most a
// week, its days weekdays named once. It is the one check of a window: Set refuses with it, the
// admin API answers 400 with it before a request to set one is stored.
func (win *Window) Validate() error {
	switch {
	case win.Start < 0 || win.Start >= 24*time.Hour:
		return fmt.Errorf("%w: start %s must be from 00:00 to before 24:00 UTC", ErrInvalidWindow, win.Start)
	case win.Length <= 0 || win.Length > 7*24*time.Hour:
		return fmt.Errorf("%w: length %s must be positive and at most a week (168h)", ErrInvalidWindow, win.Length)
	case len(win.Days) > 7:
		return fmt.Errorf("%w: %d days named; a week has 7", ErrInvalidWindow, len(win.Days))
	}
	seen := map[time.Weekday]bool{}
	for _, d := range win.Days {
		if d < time.Sunday || d > time.Saturday || seen[d] {
			return fmt.Errorf("%w: days must be weekdays (0 Sunday to 6 Saturday), each once; got %v", ErrInvalidWindow, win.Days)
		}
		seen[d] = true
	}
	return nil
}

// Set stores cluster's window, replacing any it had (nil removes it).
func (w *Windows) Set(ctx context.Context, cluster string, win *Window) error {
	id := "window/" + cluster
	cur, err := w.st.Get(ctx, Partition, id)
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return fmt.Errorf("read maintenance window of %s: %w", cluster, err)
	}
	if win == nil {
		if cur == nil {
			return nil
		}
		if err := w.st.Delete(ctx, Partition, id, cur.ETag); err != nil {
			return fmt.Errorf("remove maintenance window of %s: %w", cluster, err)
		}
		return nil
	}
	if err := win.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(win)
	if err != nil {
		return err
	}
	d := &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeWindow, ResourceID: id, Body: b}
	if cur == nil {
		_, err = w.st.Create(ctx, d)
	} else {
		_, err = w.st.Replace(ctx, d, cur.ETag)
	}
	if err != nil {
		return fmt.Errorf("write maintenance window of %s: %w", cluster, err)
	}
	return nil
}

// windowDoc is what a window document holds: the window and, when an SRE's maintenance request
// changed it last, that request (its ID and when the admin API made it). A request that
// cleared the window leaves a document with no window (Cleared) for a while, so that a request
// made before it and carried out after it is refused rather than bringing the window back.
//
// Superseded names the requests whose change was replaced by a newer request's before the
// maintenance service recorded them (it stopped in between): carried out again, such a request
// learns that it took effect and was then superseded, rather than "nothing changed".
type windowDoc struct {
	Window
	Cleared        bool            `json:"cleared,omitempty"`
	Request        string          `json:"request,omitempty"`
	RequestCreated time.Time       `json:"requestCreated,omitzero"`
	Superseded     []windowRequest `json:"superseded,omitempty"`
}

// windowRequest is a request that changed a window: its ID and when the admin API made it.
type windowRequest struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// maxSuperseded bounds windowDoc.Superseded: the service stopping between a window change and
// its record that many times for one cluster within RequestRetention is not expected.
const maxSuperseded = 16

// unrecorded returns the requests of last (its own and those it carries) that the maintenance
// service has not recorded yet and can still carry out, newest last.
func (w *Windows) unrecorded(ctx context.Context, last *windowDoc, now time.Time) ([]windowRequest, error) {
	cands := append([]windowRequest(nil), last.Superseded...)
	if last.Request != "" {
		cands = append(cands, windowRequest{ID: last.Request, Created: last.RequestCreated})
	}
	var out []windowRequest
	for _, c := range cands {
		if now.Sub(c.Created) > RequestRetention {
			continue // never carried out again (Request.verify)
		}
		_, err := w.st.Get(ctx, Partition, "request/"+c.ID)
		if err == nil {
			continue // recorded: its outcome is written or will be, from the record
		}
		if !errors.Is(err, docstore.ErrNotFound) {
			return nil, fmt.Errorf("read the record of maintenance request %s: %w", c.ID, err)
		}
		out = append(out, c)
	}
	if len(out) > maxSuperseded {
		out = out[len(out)-maxSuperseded:]
	}
	return out, nil
}

// errSuperseded fails a window request made before the one that changed the window last.
var errSuperseded = errors.New("superseded by a newer request")

// setByRequest sets cluster's window to win (nil: clears it) on behalf of the maintenance
// request id, made at made, unless a newer request (made later; made at the same time, a
// greater ID: the order Requests.Process goes in) changed it last: then it changes nothing and
// fails with errSuperseded naming that request. So window requests for a cluster take effect in
// the order they were made, whatever order they are carried out in. A clear leaves a record
// with no window that expires after keep. A request that changed the window last finds its own
// change (carried out again after a crash) and writes nothing; one whose change a newer request
// replaced before it was recorded writes nothing either and returns that newer request
// (supersededBy): it took effect, then was superseded.
func (w *Windows) setByRequest(ctx context.Context, cluster string, win *Window, id string, made time.Time, keep time.Duration, now time.Time) (supersededBy string, err error) {
	if win != nil {
		if err := win.Validate(); err != nil {
			return "", err
		}
	}
	docID := "window/" + cluster
	for range 10 {
		cur, err := w.st.Get(ctx, Partition, docID)
		if err != nil && !errors.Is(err, docstore.ErrNotFound) {
			return "", fmt.Errorf("read maintenance window of %s: %w", cluster, err)
		}
		var carried []windowRequest
		if cur != nil {
			var last windowDoc
			if err := json.Unmarshal(cur.Body, &last); err != nil {
				return "", fmt.Errorf("decode maintenance window of %s: %w", cluster, err)
			}
			if last.Request == id {
				return "", nil
			}
			newer := fmt.Sprintf("request %s, made %s", last.Request, last.RequestCreated.UTC().Format(time.RFC3339Nano))
			for _, s := range last.Superseded {
				if s.ID == id {
					return newer, nil
				}
			}
			if last.Request != "" && madeAfter(last.RequestCreated, last.Request, made, id) {
				return "", fmt.Errorf("%w: %s, changed the maintenance window of cluster %s after this one was made (%s); nothing changed",
					errSuperseded, newer, cluster, made.UTC().Format(time.RFC3339Nano))
			}
			if carried, err = w.unrecorded(ctx, &last, now); err != nil {
				return "", err
			}
		}
		next := windowDoc{Request: id, RequestCreated: made.UTC(), Cleared: win == nil, Superseded: carried}
		if win != nil {
			next.Window = *win
		}
		b, err := json.Marshal(next)
		if err != nil {
			return "", fmt.Errorf("encode maintenance window of %s: %w", cluster, err)
		}
		d := &docstore.Document{PartitionKey: Partition, ID: docID, Type: TypeWindow, ResourceID: docID, Body: b}
		if win == nil {
			d.TTL = keep
		}
		if cur == nil {
			_, err = w.st.Create(ctx, d)
		} else {
			_, err = w.st.Replace(ctx, d, cur.ETag)
		}
		if errors.Is(err, docstore.ErrAlreadyExists) || errors.Is(err, docstore.ErrPreconditionFailed) {
			continue // another writer came first: look again
		}
		if err != nil {
			return "", fmt.Errorf("write maintenance window of %s: %w", cluster, err)
		}
		return "", nil
	}
	return "", fmt.Errorf("write maintenance window of %s: kept conflicting with other writers", cluster)
}

// madeAfter says whether the request (a, aID) was made after (b, bID), in the order
// Requests.Process carries requests out: by creation time, then by ID.
func madeAfter(a time.Time, aID string, b time.Time, bID string) bool {
	if !a.Equal(b) {
		return a.After(b)
	}
	return aID > bID
}

// Get returns cluster's window; nil when it has none.
func (w *Windows) Get(ctx context.Context, cluster string) (*Window, error) {
	d, err := w.st.Get(ctx, Partition, "window/"+cluster)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read maintenance window of %s: %w", cluster, err)
	}
	var win windowDoc
	if err := json.Unmarshal(d.Body, &win); err != nil {
		return nil, fmt.Errorf("decode maintenance window of %s: %w", cluster, err)
	}
	if win.Cleared {
		return nil, nil
	}
	return &win.Window, nil
}

// Allow implements Gate.
func (w *Windows) Allow(ctx context.Context, t *Task, estimate time.Duration, now time.Time) (bool, time.Time, string, error) {
	var win *Window
	if t.Cluster != "" {
		var err error
		if win, err = w.Get(ctx, t.Cluster); err != nil {
			return false, time.Time{}, "", err
		}
	}
	next, why := NextStart(win, w.blackouts, estimate, now)
	return !next.After(now), next, why, nil
}

// NextStart is the earliest time from now at which a task expected to run for estimate may
// start: inside an occurrence of win (nil: always open) with estimate left before it closes, and
// with no blackout overlapping the run. why says what it waits for; it is empty when the answer
// is now. Within four weeks there is always an answer unless the window is shorter than the
// estimate; then it returns now plus four weeks, and why says so.
func NextStart(win *Window, blackouts []Blackout, estimate time.Duration, now time.Time) (time.Time, string) {
	now = now.UTC()
	const horizon = 28 * 24 * time.Hour
	clear := func(b time.Time) (time.Time, *Blackout) {
		for i := range blackouts {
			bo := &blackouts[i]
			if b.Before(bo.To) && b.Add(estimate).After(bo.From) {
				return bo.To.UTC(), bo
			}
		}
		return b, nil
	}
	var lastBlackout *Blackout
	if win == nil {
		b := now
		for range len(blackouts) + 1 {
			nb, bo := clear(b)
			if bo == nil {
				break
			}
			b, lastBlackout = nb, bo
		}
		if b.Equal(now) {
			return now, ""
		}
		return b, fmt.Sprintf("region blackout until %s (%s)", lastBlackout.To.UTC().Format(time.RFC3339), lastBlackout.Reason)
	}
	if win.Length < estimate {
		return now.Add(horizon), fmt.Sprintf("the maintenance window (%s) is shorter than the task's estimate (%s)", win.Length, estimate)
	}
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for day := -7; day <= 28; day++ {
		d := midnight.AddDate(0, 0, day)
		if len(win.Days) > 0 && !containsDay(win.Days, d.Weekday()) {
			continue
		}
		open := d.Add(win.Start)
		closes := open.Add(win.Length)
		b := open
		if b.Before(now) {
			b = now
		}
		for b.Add(estimate).Compare(closes) <= 0 {
			nb, bo := clear(b)
			if bo == nil {
				if b.Equal(now) {
					return now, ""
				}
				why := fmt.Sprintf("waits for the maintenance window opening %s", b.Format(time.RFC3339))
				if lastBlackout != nil {
					why = fmt.Sprintf("region blackout until %s (%s), then the maintenance window", lastBlackout.To.UTC().Format(time.RFC3339), lastBlackout.Reason)
				}
				return b, why
			}
			b, lastBlackout = nb, bo
		}
	}
	return now.Add(horizon), "no maintenance window opens within four weeks"
}

func containsDay(days []time.Weekday, d time.Weekday) bool {
	for _, x := range days {
		if x == d {
			return true
		}
	}
	return false
}

// String says when win opens: "Sat,Sun 02:00 UTC for 4h0m0s".
func (win *Window) String() string {
	days := "every day"
	if len(win.Days) > 0 {
		names := make([]string, len(win.Days))
		for i, d := range win.Days {
			names[i] = d.String()[:3]
		}
		days = strings.Join(names, ",")
	}
	return fmt.Sprintf("%s %02d:%02d UTC for %s", days, int(win.Start.Hours()), int(win.Start.Minutes())%60, win.Length)
}

// ParseWindow reads a window as SREs write it (the admin API's body, hcpctl's flags): days by
// English name or its first three letters ("Sat", "sunday"; none: every day), start "HH:MM" UTC,
// length a Go duration ("4h"). A refusal names the field (days, start, length or window); the
// result is checked with Validate.
func ParseWindow(days []string, start, length string) (*Window, error) {
	win := &Window{}
	for _, d := range days {
		wd, ok := weekday(d)
		if !ok {
			return nil, invalidRequest("days", "%.32q is no day of the week (Mon, Tue, Wed, Thu, Fri, Sat, Sun)", d)
		}
		win.Days = append(win.Days, wd)
	}
	hm, err := time.Parse("15:04", start)
	if err != nil {
		return nil, invalidRequest("start", "start %.32q must be a time of day HH:MM in UTC, such as 02:00", start)
	}
	win.Start = time.Duration(hm.Hour())*time.Hour + time.Duration(hm.Minute())*time.Minute
	if win.Length, err = time.ParseDuration(length); err != nil {
		return nil, invalidRequest("length", "length %.32q must be a duration such as 4h or 90m", length)
	}
	if err := win.Validate(); err != nil {
		return nil, invalidRequest("window", "%v", err)
	}
	return win, nil
}

func weekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(s)
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		if s == name || s == name[:3] {
			return d, true
		}
	}
	return 0, false
}
