package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestZStreamUpgrade(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", 10)
	again := f.createCluster("again", "4.19.16")
	behind := f.createCluster("behind", "4.19.16") // stable: 4.19.16 → 4.19.17 and 4.20.3
	broken := f.createCluster("broken", "4.18.26") // stable: 4.18.26 → 4.18.27, made to fail
	latest := f.createCluster("latest", "4.19.17") // no z-stream edge
	f.runFakeHostedClusters(t, []string{behind, broken, latest}, map[string]bool{broken: true})

	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	tt := ZStreamUpgrade(f.cs, ZStreamConfig{Poll: 50 * time.Millisecond})
	runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second})

	for _, tc := range []struct {
		name, cluster string
		want          State
		wantTarget    string
		wantVersion   string
		wantMessage   string
	}{
		{"a_cluster_behind_its_z_stream_is_upgraded_to_the_newest_patch_not_the_next_minor", behind, StateSucceeded, "4.19.17", "4.19.17", "all steps done"},
		{"an_upgrade_cluster_service_reports_failed_fails_the_task", broken, StateFailed, "4.18.27", "4.18.26", "Cluster operator etcd is degraded"},
		{"a_cluster_on_the_newest_patch_has_nothing_to_do", latest, StateSucceeded, "", "4.19.17", "all steps done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "zs-" + tc.cluster
			if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: tc.cluster, Type: TypeZStreamUpgrade, RequestedBy: "test"}, time.Now()); err != nil {
				t.Fatal(err)
			}
			got := waitState(t, tasks, id, tc.want, 2*time.Minute)
			if got.Data[DataTarget] != tc.wantTarget || !strings.Contains(got.Message, tc.wantMessage) {
				t.Fatalf("target %q message %q; want %q containing %q", got.Data[DataTarget], got.Message, tc.wantTarget, tc.wantMessage)
			}
			c, err := f.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: tc.cluster})
			if err != nil {
				t.Fatal(err)
			}
			if v := c.GetStatus().GetCurrentVersion(); v != tc.wantVersion {
				t.Fatalf("cluster reports %s, want %s", v, tc.wantVersion)
			}
			if tc.wantTarget != "" && c.GetStatus().GetUpgrade().GetOperationId() != "maintenance-"+id {
				t.Fatalf("upgrade policy %v; want one made by the task", c.GetStatus().GetUpgrade())
			}
		})
	}

	t.Run("request_upgrade_run_again_after_a_crash_finds_its_policy_and_makes_no_second", func(t *testing.T) {
		task := &Task{ID: "crash", Cluster: again, Data: map[string]string{DataTarget: "4.19.17"}}
		if _, err := tt.Steps[1].Run(ctx, task); err != nil {
			t.Fatal(err)
		}
		first := task.Data[DataPolicy]
		delete(task.Data, DataPolicy) // the crash came before the step reached was written
		if _, err := tt.Steps[1].Run(ctx, task); err != nil {
			t.Fatal(err)
		}
		ps, err := f.cs.(clients).ListUpgradePolicies(ctx, &csv1.ListUpgradePoliciesRequest{ClusterId: again})
		if err != nil {
			t.Fatal(err)
		}
		if first == "" || task.Data[DataPolicy] != first || len(ps.GetUpgradePolicies()) != 1 {
			t.Fatalf("policy %q then %q, %d policies; want the same one, once", first, task.Data[DataPolicy], len(ps.GetUpgradePolicies()))
		}
	})
}
