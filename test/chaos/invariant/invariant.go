// Package invariant holds what a chaos run must prove at its end: every ARM operation terminal
// and Succeeded, and the region's truth (Cluster Service, Maestro, the management clusters)
// matching it, with no lost and no duplicated cluster or node pool; no ARM read answered 5xx
// outside a window in which the frontend itself was down. Check judges a recorded State.
package invariant

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Kind is what an ARM operation did.
type Kind string

const (
	CreateCluster  Kind = "create-cluster"
	DeleteCluster  Kind = "delete-cluster"
	CreateNodePool Kind = "create-nodepool"
	ScaleNodePool  Kind = "scale-nodepool"
	DeleteNodePool Kind = "delete-nodepool"
)

func (k Kind) creates() bool { return k == CreateCluster || k == CreateNodePool || k == ScaleNodePool }
func (k Kind) deletes() bool { return k == DeleteCluster || k == DeleteNodePool }
func (k Kind) nodePool() bool {
	return k == CreateNodePool || k == ScaleNodePool || k == DeleteNodePool
}

// Op is one ARM operation of the workload and how it ended.
type Op struct {
	Kind     Kind
	Resource string // ARM resource ID
	// Final is the operation's terminal status (Succeeded, Failed, Canceled), or empty when it
	// never became terminal; Error is the operation's error or why it could not be followed.
	Final string
	Error string
	Start time.Time
	End   time.Time
	// After is the truth observed right after a create or scale Succeeded.
	After *Observed
}

// Observed is what the region held for one ARM resource at one moment, from each source.
type Observed struct {
	// ARMExists: the frontend's GET answered 200 (its document exists).
	ARMExists bool
	// Records are Cluster Service's clusters (or node pools) for the ARM ID.
	Records int
	// Placements names the management cluster of each HostedCluster (or NodePool) for it; one
	// entry per object.
	Placements []string
	// Namespaces, Bundles and AppliedWorks count its namespaces on the management clusters,
	// Maestro resource bundles and AppliedManifestWorks (clusters only).
	Namespaces, Bundles, AppliedWorks int
}

func (o Observed) empty() bool {
	return !o.ARMExists && o.Records == 0 && len(o.Placements) == 0 && o.Namespaces == 0 && o.Bundles == 0 && o.AppliedWorks == 0
}

func (o Observed) String() string {
	return fmt.Sprintf("arm=%v records=%d placements=%v namespaces=%d bundles=%d appliedworks=%d",
		o.ARMExists, o.Records, o.Placements, o.Namespaces, o.Bundles, o.AppliedWorks)
}

// Read is an ARM GET or list that answered 5xx (or not at all).
type Read struct {
	Path   string
	Status int // 0: no answer (connection refused, reset)
	At     time.Time
}

// Window is a time a component was down, from its kill to its recovery.
type Window struct {
	Component string
	From, To  time.Time
}

// State is what a chaos run recorded.
type State struct {
	Ops []Op
	// Final is the truth for every resource the workload touched, observed at the end.
	Final map[string]Observed
	// BadReads are the ARM reads that answered 5xx or not at all.
	BadReads []Read
	// Down are the windows in which a component was down; a bad read is excused only by the
	// frontend's own, or, for a 503, by its database's ("postgres").
	Down []Window
}

// Result is Check's verdict: a row per invariant and every violation found.
type Result struct {
	Rows       []Row
	Violations []string
}

// Row is one invariant and its count of violations.
type Row struct {
	Invariant string
	Checked   int
	Violated  int
}

// OK says no invariant was violated.
func (r Result) OK() bool { return len(r.Violations) == 0 }

// Check judges a recorded state against the promise: every operation terminal and Succeeded;
// every Succeeded create or scale left exactly one record and exactly one object on exactly
// one management cluster (0: lost, more: duplicated); every resource whose last operation was a
// Succeeded delete left nothing anywhere, and every other resource exactly one of each; no ARM
// read answered 5xx outside a frontend-down window (or, for a 503, a PostgreSQL-down one).
func Check(s State) (res Result) {
	var rows []*Row // pointers: a row is counted after later ones were added
	defer func() {
		for _, r := range rows {
			res.Rows = append(res.Rows, *r)
		}
	}()
	row := func(name string) *Row {
		rows = append(rows, &Row{Invariant: name})
		return rows[len(rows)-1]
	}
	fail := func(r *Row, format string, args ...any) {
		r.Violated++
		res.Violations = append(res.Violations, r.Invariant+": "+fmt.Sprintf(format, args...))
	}
	terminal := row("operation terminal")
	succeeded := row("operation Succeeded")
	for _, op := range s.Ops {
		terminal.Checked++
		succeeded.Checked++
		switch op.Final {
		case "":
			fail(terminal, "%s %s never became terminal: %s", op.Kind, op.Resource, op.Error)
			fail(succeeded, "%s %s has no outcome", op.Kind, op.Resource)
		case "Succeeded":
		default:
			fail(succeeded, "%s %s ended %s: %s", op.Kind, op.Resource, op.Final, op.Error)
		}
	}

	lostC, dupC := row("cluster lost (create Succeeded, nothing placed)"), row("cluster duplicated")
	lostP, dupP := row("node pool lost"), row("node pool duplicated")
	for _, op := range s.Ops {
		if op.Final != "Succeeded" || !op.Kind.creates() {
			continue
		}
		lost, dup := lostC, dupC
		if op.Kind.nodePool() {
			lost, dup = lostP, dupP
		}
		lost.Checked++
		dup.Checked++
		if op.After == nil {
			fail(lost, "%s %s Succeeded but the truth after it was not observed", op.Kind, op.Resource)
			continue
		}
		a := *op.After
		switch {
		case len(a.Placements) == 0 || a.Records == 0:
			fail(lost, "%s %s Succeeded but the region holds %s", op.Kind, op.Resource, a)
		case len(a.Placements) > 1 || a.Records > 1 || !a.ARMExists:
			fail(dup, "%s %s Succeeded but the region holds %s", op.Kind, op.Resource, a)
		}
	}

	// The last operation on each resource says what must be left of it.
	last := map[string]Op{}
	for _, op := range s.Ops {
		if prev, ok := last[op.Resource]; !ok || !op.Start.Before(prev.Start) {
			last[op.Resource] = op
		}
	}
	gone := row("deleted resource left nothing (document, record, bundle, work, object, namespace)")
	kept := row("live resource held exactly once at the end")
	ids := make([]string, 0, len(last))
	for id := range last {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		op := last[id]
		fin, seen := s.Final[id]
		switch {
		case op.Kind.deletes() && op.Final == "Succeeded":
			gone.Checked++
			if !seen {
				fail(gone, "%s was not observed at the end", id)
			} else if !fin.empty() {
				fail(gone, "%s was deleted but the region still holds %s", id, fin)
			}
		case op.Kind.creates() && op.Final == "Succeeded":
			kept.Checked++
			if !seen || !fin.ARMExists || fin.Records != 1 || len(fin.Placements) != 1 {
				fail(kept, "%s should exist once but the region holds %s", id, fin)
			}
		}
	}

	reads := row("ARM read 5xx outside a frontend (or, 503, its database) outage")
	for _, rd := range s.BadReads {
		reads.Checked++
		// The frontend cannot read without its database: a 503 while PostgreSQL is down is the
		// frontend being down, said properly. Any other 5xx is not.
		if !within(rd.At, s.Down, "frontend") && !(rd.Status == 503 && within(rd.At, s.Down, "postgres")) {
			fail(reads, "GET %s answered %d at %s", rd.Path, rd.Status, rd.At.Format("15:04:05.000"))
		}
	}
	return res
}

func within(t time.Time, ws []Window, component string) bool {
	for _, w := range ws {
		if w.Component == component && !t.Before(w.From) && !t.After(w.To) {
			return true
		}
	}
	return false
}

// Table renders the result as a text table, violations after it.
func (r Result) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "invariant\tchecked\tviolated\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", row.Invariant, row.Checked, row.Violated)
	}
	tw.Flush()
	for _, v := range r.Violations {
		fmt.Fprintln(&b, "VIOLATION:", v)
	}
	return b.String()
}

// Kill is one crash the chaos loop caused and how the region came back from it.
type Kill struct {
	Component string
	PID       int
	At        time.Time
	// Recovered: the component ran again (and answered its readiness check), after the kill.
	Recovered time.Duration
	// Converged: every operation in flight at the kill was terminal, after the recovery (0 when
	// they all ended before it).
	Converged time.Duration
	Err       string
}

// KillTable renders kills per component: count, restarts seen, and the worst and median times.
func KillTable(kills []Kill, restarts map[string]int) string {
	by := map[string][]Kill{}
	for _, k := range kills {
		by[k.Component] = append(by[k.Component], k)
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "component\tkills\trestarts\trecovered median/max\tconverged after recovery median/max\terrors\t")
	for _, n := range names {
		ks := by[n]
		var rec, conv []time.Duration
		errs := 0
		for _, k := range ks {
			rec = append(rec, k.Recovered)
			conv = append(conv, k.Converged)
			if k.Err != "" {
				errs++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s / %s\t%s / %s\t%d\t\n", n, len(ks), restarts[n],
			median(rec), maxOf(rec), median(conv), maxOf(conv), errs)
	}
	tw.Flush()
	return b.String()
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(100 * time.Millisecond)
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(100 * time.Millisecond)
}
