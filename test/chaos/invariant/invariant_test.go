package invariant

import (
	"strings"
	"testing"
	"time"
)

const (
	c1 = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
	p1 = c1 + "/nodePools/p1"
)

// healthy is a run in which everything went right: a cluster created and deleted, a node pool
// created, scaled and deleted on it, and one 503 read while the frontend was down.
func healthy() State {
	t0 := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	one := &Observed{ARMExists: true, Records: 1, Placements: []string{"mgmt-1"}, Namespaces: 1, Bundles: 1, AppliedWorks: 1}
	return State{
		Ops: []Op{
			{Kind: CreateCluster, Resource: c1, Final: "Succeeded", Start: at(0), End: at(10), After: one},
			{Kind: CreateNodePool, Resource: p1, Final: "Succeeded", Start: at(11), End: at(15), After: &Observed{ARMExists: true, Records: 1, Placements: []string{"mgmt-1"}}},
			{Kind: ScaleNodePool, Resource: p1, Final: "Succeeded", Start: at(16), End: at(20), After: &Observed{ARMExists: true, Records: 1, Placements: []string{"mgmt-1"}}},
			{Kind: DeleteNodePool, Resource: p1, Final: "Succeeded", Start: at(21), End: at(25)},
			{Kind: DeleteCluster, Resource: c1, Final: "Succeeded", Start: at(26), End: at(30)},
		},
		Final:    map[string]Observed{c1: {}, p1: {}},
		BadReads: []Read{{Path: c1, Status: 0, At: at(5)}},
		Down:     []Window{{Component: "frontend", From: at(4), To: at(6)}},
	}
}

func TestCheckExcusesA503WhileTheDatabaseWasDown(t *testing.T) {
	s := healthy()
	s.Down[0].Component = "postgres"
	s.BadReads[0].Status = 503
	if res := Check(s); !res.OK() {
		t.Fatalf("a 503 while PostgreSQL was down was rejected:\n%s", res.Table())
	}
}

func TestCheckAcceptsAHealthyRunAndCountsWhatItChecked(t *testing.T) {
	res := Check(healthy())
	if !res.OK() {
		t.Fatalf("a healthy run was rejected:\n%s", res.Table())
	}
	want := map[string]int{"operation terminal": 5, "operation Succeeded": 5, "cluster lost (create Succeeded, nothing placed)": 1, "node pool lost": 2, "ARM read 5xx outside a frontend (or, 503, its database) outage": 1}
	for _, r := range res.Rows {
		if n, ok := want[r.Invariant]; ok && r.Checked != n {
			t.Errorf("row %q checked %d, want %d", r.Invariant, r.Checked, n)
		}
	}
}

// TestCheckRejectsDoctoredStates breaks one fact of a healthy run at a time: the checker must
// reject each, naming the invariant it broke.
func TestCheckRejectsDoctoredStates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doctor func(*State)
		want   string
	}{
		{"operation_never_terminal", func(s *State) { s.Ops[0].Final = ""; s.Ops[0].Error = "timed out" }, "operation terminal"},
		{"operation_failed", func(s *State) { s.Ops[4].Final = "Failed" }, "operation Succeeded"},
		{"succeeded_create_with_no_hosted_cluster_is_lost", func(s *State) { s.Ops[0].After = &Observed{ARMExists: true, Records: 1} }, "cluster lost"},
		{"succeeded_create_not_observed_is_lost", func(s *State) { s.Ops[0].After = nil }, "cluster lost"},
		{"hosted_cluster_on_two_management_clusters_is_duplicated", func(s *State) {
			s.Ops[0].After = &Observed{ARMExists: true, Records: 1, Placements: []string{"mgmt-1", "mgmt-2"}}
		}, "cluster duplicated"},
		{"two_cluster_service_records_is_duplicated", func(s *State) {
			s.Ops[0].After = &Observed{ARMExists: true, Records: 2, Placements: []string{"mgmt-1"}}
		}, "cluster duplicated"},
		{"node_pool_lost", func(s *State) { s.Ops[2].After = &Observed{ARMExists: true, Records: 1} }, "node pool lost"},
		{"deleted_cluster_left_a_namespace", func(s *State) { s.Final[c1] = Observed{Namespaces: 1} }, "deleted resource left nothing"},
		{"deleted_cluster_left_a_bundle", func(s *State) { s.Final[c1] = Observed{Bundles: 1} }, "deleted resource left nothing"},
		{"deleted_cluster_left_its_document", func(s *State) { s.Final[c1] = Observed{ARMExists: true} }, "deleted resource left nothing"},
		{"deleted_node_pool_left_its_object", func(s *State) { s.Final[p1] = Observed{Placements: []string{"mgmt-2"}} }, "deleted resource left nothing"},
		{"deleted_resource_not_observed", func(s *State) { delete(s.Final, c1) }, "deleted resource left nothing"},
		{"live_cluster_missing_at_the_end", func(s *State) { s.Ops = s.Ops[:1] }, "live resource held exactly once"},
		{"read_5xx_while_the_frontend_was_up", func(s *State) { s.BadReads[0].At = s.BadReads[0].At.Add(time.Minute) }, "ARM read 5xx"},
		{"read_5xx_excused_only_by_the_frontend", func(s *State) { s.Down[0].Component = "cluster-service" }, "ARM read 5xx"},
		{"read_500_while_the_database_was_down", func(s *State) { s.Down[0].Component = "postgres"; s.BadReads[0].Status = 500 }, "ARM read 5xx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			tc.doctor(&s)
			res := Check(s)
			if res.OK() {
				t.Fatalf("the doctored state was accepted:\n%s", res.Table())
			}
			found := false
			for _, v := range res.Violations {
				found = found || strings.HasPrefix(v, tc.want)
			}
			if !found {
				t.Fatalf("no violation of %q; got:\n%s", tc.want, res.Table())
			}
		})
	}
}

func TestKillTableCountsPerComponent(t *testing.T) {
	out := KillTable([]Kill{
		{Component: "frontend", Recovered: time.Second, Converged: 2 * time.Second},
		{Component: "frontend", Recovered: 3 * time.Second, Converged: 4 * time.Second},
		{Component: "postgres", Recovered: 5 * time.Second, Err: "boom"},
	}, map[string]int{"frontend": 2})
	for _, want := range []string{"frontend   2      2", "3s / 3s", "postgres   1      0"} {
		if !strings.Contains(out, want) {
			t.Errorf("kill table lacks %q:\n%s", want, out)
		}
	}
}
