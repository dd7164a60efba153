package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func waitCampaign(t *testing.T, m *Campaigns, id string, want CampaignState, timeout time.Duration) *Campaign {
	t.Helper()
	var got *Campaign
	waitUntil(t, timeout, "campaign "+string(want), func() error {
		var err error
		if got, err = m.Get(context.Background(), id); err != nil {
			return err
		}
		if got.State != want {
			return fmt.Errorf("state %s: %s", got.State, got.Message)
		}
		return nil
	})
	return got
}

func TestCampaign(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", 20)
	f.registerShard("mgmt-2", 20)
	var ids []string
	shardOf := map[string]string{}
	for i := range 20 {
		id := f.createCluster(fmt.Sprintf("c%02d", i), "4.19.16")
		c, err := f.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		ids, shardOf[id] = append(ids, id), c.GetShard()
	}
	other := f.createCluster("other", "4.18.26") // not selected: another version
	var broken string
	count := map[string]int{}
	for _, id := range ids {
		count[shardOf[id]]++
		if shardOf[id] == "mgmt-2" && broken == "" {
			broken = id
		}
	}
	if count["mgmt-1"] == 0 || count["mgmt-2"] == 0 {
		t.Fatalf("placement put %v on the shards; want both used", count)
	}
	hosted := f.runFakeHostedClusters(t, append(ids, other), map[string]bool{broken: true})

	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	runActuator(t, dsn, []TaskType{ZStreamUpgrade(f.cs, ZStreamConfig{Poll: 50 * time.Millisecond})},
		ActuatorConfig{Holder: "a", MaxInFlight: 4, LeaseDuration: 10 * time.Second})
	m := NewCampaigns(tasks, f.cs, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(runCtx, 30*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	threshold := 0.05
	const bake = 300 * time.Millisecond
	c, err := m.Create(ctx, CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable", CanaryShard: "mgmt-2",
		MaxInFlight: 3, Bake: bake, FailureThreshold: &threshold, RequestedBy: "sre"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Waves) != 2 || c.Waves[0].Shard != "mgmt-2" || c.Clusters() != 20 {
		t.Fatalf("waves %+v; want the canary shard mgmt-2 first, then mgmt-1, 20 clusters", c.Waves)
	}

	halted := waitCampaign(t, m, "z1", CampaignHalted, 3*time.Minute)
	t.Run("the_canary_wave_runs_first_and_a_failure_over_the_threshold_halts_before_the_next_wave", func(t *testing.T) {
		if halted.Current != 0 || halted.Waves[0].Failed != 1 {
			t.Fatalf("halted at wave %d with %d failed; want wave 0 with 1 failed: %s", halted.Current, halted.Waves[0].Failed, halted.Message)
		}
		all, err := tasks.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range all {
			if shardOf[task.Cluster] != "mgmt-2" {
				t.Fatalf("task %s on shard %s exists while the canary wave halted", task.ID, shardOf[task.Cluster])
			}
		}
		// Halted means halted: nothing new starts while it waits.
		time.Sleep(200 * time.Millisecond)
		again, err := tasks.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range again {
			if shardOf[task.Cluster] != "mgmt-2" {
				t.Fatalf("task %s on shard %s started while halted", task.ID, shardOf[task.Cluster])
			}
		}
	})

	if _, err := m.Resume(ctx, "z1", "sre"); err != nil {
		t.Fatal(err)
	}
	end := waitCampaign(t, m, "z1", CampaignSucceeded, 5*time.Minute)
	t.Run("resume_finishes_the_rest_after_the_bake_and_no_cluster_is_upgraded_twice", func(t *testing.T) {
		if w0, w1 := end.Waves[0], end.Waves[1]; w1.Started.Before(w0.Finished.Add(bake)) {
			t.Fatalf("wave 2 started %s, before wave 1 finished %s plus bake %s", w1.Started, w0.Finished, bake)
		}
		for _, id := range ids {
			want := "4.19.17"
			if id == broken {
				want = "4.19.16"
			}
			cl, err := f.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
			if err != nil {
				t.Fatal(err)
			}
			if v := cl.GetStatus().GetCurrentVersion(); v != want {
				t.Errorf("cluster %s on %s reports %s, want %s", id, shardOf[id], v, want)
			}
			if n := hosted.started(id); n != 1 {
				t.Errorf("cluster %s upgrade started %d times, want once", id, n)
			}
		}
		if n := hosted.started(other); n != 0 {
			t.Errorf("cluster on another version upgraded %d times, want 0", n)
		}
		if _, err := m.Resume(ctx, "z1", "sre"); err == nil {
			t.Error("resume of a finished campaign succeeded")
		}
	})

	t.Run("metrics_show_tasks_by_type_and_state_and_the_campaigns_progress", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(tasks, m, nil))
		for _, tc := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"maintenance_tasks", []string{"type=" + TypeZStreamUpgrade, "state=Succeeded"}, 19},
			{"maintenance_tasks", []string{"type=" + TypeZStreamUpgrade, "state=Failed"}, 1},
			{"maintenance_campaign_clusters", []string{"campaign=z1", "outcome=succeeded"}, 19},
			{"maintenance_campaign_clusters", []string{"campaign=z1", "outcome=failed"}, 1},
			{"maintenance_campaign_clusters", []string{"campaign=z1", "outcome=remaining"}, 0},
			{"maintenance_campaign_state", []string{"campaign=z1", "state=Succeeded"}, 1},
			{"maintenance_campaign_wave", []string{"campaign=z1", "of=total"}, 2},
		} {
			if got := gauge(t, reg, tc.name, tc.labels...); got != tc.want {
				t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
			}
		}
	})
	t.Run("cancel_ends_a_campaign_and_its_unfinished_tasks_and_it_cannot_be_resumed", func(t *testing.T) {
		if _, err := m.Create(ctx, CampaignSpec{ID: "z2", FromVersion: "4.18.26", ChannelGroup: "stable", Bake: time.Hour, RequestedBy: "sre"}); err != nil {
			t.Fatal(err)
		}
		got, err := m.Cancel(ctx, "z2", "sre")
		if err != nil || got.State != CampaignCancelled {
			t.Fatalf("cancel: %v %v; want Cancelled", got, err)
		}
		if _, err := m.Resume(ctx, "z2", "sre"); !errors.Is(err, ErrCampaignState) {
			t.Fatalf("resume of a cancelled campaign: %v; want ErrCampaignState", err)
		}
		waitUntil(t, time.Minute, "no unfinished task of z2", func() error {
			all, err := tasks.List(ctx)
			if err != nil {
				return err
			}
			for _, task := range all {
				if task.Campaign == "z2" && !task.State.Terminal() {
					return fmt.Errorf("task %s is %s", task.ID, task.State)
				}
			}
			return nil
		})
		if n := hosted.started(other); n > 1 {
			t.Fatalf("cluster upgraded %d times", n)
		}
	})
}

// gauge reads one series of a gathered metric, with labels as "k=v" pairs; -1 when absent.
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for _, kv := range labels {
				k, v, _ := strings.Cut(kv, "=")
				if have[k] != v {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestCampaignTaskIDsOfAnotherCampaign: a campaign's task IDs (<campaign>-<cluster>[-<pool>])
// can meet another campaign's when campaign IDs hold '-' (campaign "x" over node pools and
// campaign "x-<cluster>" over clusters). A task found at one of the campaign's IDs that names
// another campaign is not the campaign's: it is neither counted as the campaign's outcome nor
// cancelled with it.
func TestCampaignTaskIDsOfAnotherCampaign(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", 10)
	tasks := NewTasks(openStore(t, pgservertest.NewDatabase(t, pg)))
	m := NewCampaigns(tasks, f.cs, nil)
	now := time.Now()

	for _, tc := range []struct {
		name       string
		otherState State
		act        func(t *testing.T, campaign string)
		check      func(t *testing.T, campaign string, other *Task)
	}{
		{
			name: "another_campaigns_succeeded_task_is_not_counted_as_the_campaigns_success", otherState: StateSucceeded,
			act: func(t *testing.T, campaign string) {
				if _, err := m.Reconcile(ctx, campaign); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, campaign string, _ *Task) {
				c, err := m.Get(ctx, campaign)
				if err != nil {
					t.Fatal(err)
				}
				if c.State == CampaignSucceeded || c.Waves[0].Succeeded != 0 {
					t.Fatalf("campaign %s, wave %+v: another campaign's task was counted as its own", c.State, c.Waves[0])
				}
				if !strings.Contains(c.Message+fmt.Sprint(c.History), "campaign other") {
					t.Fatalf("campaign's message and history do not name the other campaign: %q %+v", c.Message, c.History)
				}
			},
		},
		{
			name: "cancelling_the_campaign_leaves_another_campaigns_pending_task", otherState: StatePending,
			act: func(t *testing.T, campaign string) {
				if _, err := m.Cancel(ctx, campaign, "sre"); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, _ string, other *Task) {
				got, err := tasks.Get(ctx, other.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.State != StatePending {
					t.Fatalf("the other campaign's task is %s after this campaign's cancel; want Pending", got.State)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := f.createCluster("c-"+strings.ToLower(string(tc.otherState)), "4.19.16")
			campaign := "x-" + strings.ToLower(string(tc.otherState))
			c, err := m.Create(ctx, CampaignSpec{ID: campaign, FromVersion: "4.19.16", ChannelGroup: "stable", RequestedBy: "sre"})
			if err != nil {
				t.Fatal(err)
			}
			// The task another campaign made at this campaign's task ID for cluster.
			other, err := tasks.Create(ctx, &Task{ID: c.TaskID(cluster), Cluster: cluster, Type: TypeZStreamUpgrade,
				Campaign: "other", RequestedBy: "campaign other"}, now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.otherState != StatePending {
				other.State = tc.otherState
				if err := tasks.replace(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			tc.act(t, campaign)
			tc.check(t, campaign, other)
		})
	}
}
