package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/docstore/storeconfig"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestParseFlags(t *testing.T) {
	dsn := "postgres://maintenance@127.0.0.1/resourceprovider"
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "defaults_with_a_store_are_valid", args: []string{"--db-dsn", dsn}},
		{name: "store_from_the_environment", env: map[string]string{"MAINTENANCE_DB_DSN": dsn}},
		{name: "no_store_names_the_flag", wantErr: "--db-dsn"},
		{name: "bad_cluster_service_address", args: []string{"--db-dsn", dsn, "--cluster-service", "nohost"}, wantErr: "--cluster-service"},
		{name: "zero_in_flight", args: []string{"--db-dsn", dsn, "--max-in-flight", "0"}, wantErr: "--max-in-flight"},
		{name: "short_task_lease", args: []string{"--db-dsn", dsn, "--task-lease", "1s"}, wantErr: "--task-lease"},
		{name: "bad_duration_from_the_environment", args: []string{"--db-dsn", dsn}, env: map[string]string{"MAINTENANCE_POLL": "soon"}, wantErr: "MAINTENANCE_POLL"},
		{name: "bad_log_level", args: []string{"--db-dsn", dsn, "--log-level", "loud"}, wantErr: "--log-level"},
		{name: "region_pki_without_the_maintenance_identity_names_the_flag", args: []string{"--db-dsn", dsn, "--region-pki", "127.0.0.1:9443"}, wantErr: "--region-pki"},
		{name: "region_pki_that_is_no_address_names_the_flag", args: []string{"--db-dsn", dsn, "--region-pki", "pki", "--cluster-service-ca", "ca", "--cluster-service-cert", "c", "--cluster-service-key", "k"}, wantErr: "--region-pki"},
		{name: "no_statement_public_key_names_the_flag", args: []string{"--db-dsn", dsn, "--sre-statement-public-key", ""}, wantErr: "--sre-statement-public-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--sre-statement-public-key", "/keys/admin-sre-statement.pub"}, tc.args...)
			o, err := parseFlags(args, func(k string) string { return tc.env[k] })
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseFlags: %v", err)
				}
				if o.store.DSN != dsn || o.maxInFlight != 4 || o.taskLease != 30*time.Second {
					t.Errorf("options %+v, want the DSN and the defaults", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("parseFlags: %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

// TestParseFlagsBlackouts: the region's blackouts come from --blackouts (MAINTENANCE_BLACKOUTS,
// a JSON list the chart's ConfigMap carries from config/), and a bad list stops start-up naming
// the flag.
func TestParseFlagsBlackouts(t *testing.T) {
	base := []string{"--db-dsn", "postgres://maintenance@127.0.0.1/resourceprovider", "--sre-statement-public-key", "/keys/admin-sre-statement.pub"}
	from, to := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    []maintenance.Blackout
		wantErr string
	}{
		{name: "none_by_default"},
		{name: "from_the_environment", env: map[string]string{"MAINTENANCE_BLACKOUTS": `[{"from":"2026-12-24T00:00:00Z","to":"2026-12-27T00:00:00Z","reason":"holidays"}]`},
			want: []maintenance.Blackout{{From: from, To: to, Reason: "holidays"}}},
		{name: "from_the_flag", args: []string{"--blackouts", `[{"from":"2026-12-24T00:00:00Z","to":"2026-12-27T00:00:00Z"}]`},
			want: []maintenance.Blackout{{From: from, To: to}}},
		{name: "not_json_names_the_flag", args: []string{"--blackouts", "christmas"}, wantErr: "--blackouts"},
		{name: "null_names_the_flag", args: []string{"--blackouts", "null"}, wantErr: "--blackouts"},
		{name: "an_empty_list_is_none", args: []string{"--blackouts", "[]"}},
		{name: "unknown_field_names_the_flag", args: []string{"--blackouts", `[{"start":"2026-12-24T00:00:00Z","to":"2026-12-27T00:00:00Z"}]`}, wantErr: "--blackouts"},
		{name: "end_before_start_names_the_flag", args: []string{"--blackouts", `[{"from":"2026-12-27T00:00:00Z","to":"2026-12-24T00:00:00Z"}]`}, wantErr: "--blackouts"},
		{name: "missing_end_names_the_flag", args: []string{"--blackouts", `[{"from":"2026-12-27T00:00:00Z"}]`}, wantErr: "--blackouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(append(append([]string{}, base...), tc.args...), func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseFlags: %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if len(o.blackouts) != len(tc.want) {
				t.Fatalf("blackouts %+v, want %+v", o.blackouts, tc.want)
			}
			for i := range tc.want {
				if !o.blackouts[i].From.Equal(tc.want[i].From) || !o.blackouts[i].To.Equal(tc.want[i].To) || o.blackouts[i].Reason != tc.want[i].Reason {
					t.Errorf("blackout %d = %+v, want %+v", i, o.blackouts[i], tc.want[i])
				}
			}
		})
	}
}

// TestRunUpgradesThroughClusterService runs the command's wiring against a real Cluster Service
// and document store: an SRE's request to create a campaign is carried out by the lease holder,
// the campaign gets its task created by the campaign runner
// (the lease holder), the actuator asks Cluster Service for the z-stream upgrade, and /metrics
// reports the campaign. Management clusters do not run here, so the upgrade is followed up to
// the request only; test/e2e follows it to the end.
func TestRunUpgradesThroughClusterService(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pg := pgservertest.Start(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cs := servertest.Start(t, pg)
	conn := cs.Conn
	if _, err := csv1.NewProvisionShardsClient(conn).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
		Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 5}}); err != nil {
		t.Fatal(err)
	}
	id := createReadyCluster(ctx, t, conn, cs.Store, "4.19.16")

	storeDSN := pgservertest.NewDatabase(t, pg)
	st, err := postgres.Open(ctx, storeDSN, postgres.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	// The campaign is asked for as the admin API asks: a request the leader carries out.
	keyDir := t.TempDir()
	keyFile, pubFile := filepath.Join(keyDir, "statement.key"), filepath.Join(keyDir, "statement.pub")
	if err := srestatement.WriteKeyPair(keyFile, pubFile); err != nil {
		t.Fatal(err)
	}
	key, err := srestatement.ReadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	requests := maintenance.NewRequests(st, nil, nil, nil).SignWith(key)
	req, err := requests.Submit(ctx, &maintenance.Request{Action: maintenance.ActionCreateCampaign, RequestedBy: "alice",
		Spec: &maintenance.CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable"}})
	if err != nil {
		t.Fatal(err)
	}

	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ml.Addr().String()
	ml.Close()
	o := &options{
		store:          storeconfig.Flags{Backend: storeconfig.Postgres, DSN: storeDSN},
		clusterService: cs.Addr,
		metricsListen:  metricsAddr,
		replicaID:      "m1",
		maxInFlight:    2,
		taskLease:      5 * time.Second,
		poll:           100 * time.Millisecond,
		campaignPoll:   100 * time.Millisecond,
		requestPoll:    100 * time.Millisecond,
		upgradePoll:    100 * time.Millisecond,
		statementPub:   pubFile,
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, log) }()

	waitFor(t, func() (*maintenance.Request, bool) {
		r, err := requests.Get(ctx, req.ID)
		return r, err == nil && r.State == maintenance.RequestDone && r.CampaignState == maintenance.CampaignRunning
	})
	tasks := maintenance.NewTasks(st)
	c := waitFor(t, func() (*csstore.Cluster, bool) {
		task, err := tasks.Get(ctx, "z1-"+id)
		if err != nil || task.Data[maintenance.DataPolicy] == "" {
			return nil, false
		}
		c, err := cs.Store.GetCluster(ctx, id)
		return c, err == nil
	})
	if c.Spec.GetVersionId() == "4.19.16" && c.Status.GetUpgrade() == nil {
		t.Errorf("cluster %s: spec %s and no upgrade policy after the task asked for an upgrade", id, c.Spec.GetVersionId())
	}
	waitFor(t, func() (string, bool) {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return "", strings.Contains(string(b), `maintenance_campaign_state{campaign="z1",state="Running"} 1`)
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
}

func createReadyCluster(ctx context.Context, t *testing.T, conn *grpc.ClientConn, db *csstore.Store, version string) string {
	t.Helper()
	sub := uuid.NewString()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := csv1.NewClustersClient(conn).CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id: id, ArmResourceId: "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1",
		Spec: &csv1.ClusterSpec{VersionId: version, ChannelGroup: "stable", Azure: &csv1.AzureSpec{
			SubscriptionId: sub, ResourceGroup: "rg", Location: "westus3",
			SubnetId:               "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
			NetworkSecurityGroupId: "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
		}},
	}}); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	c, err := db.GetCluster(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateStatus(ctx, id, c.Revision, &csv1.ClusterStatus{
		State: csv1.ClusterState_CLUSTER_STATE_READY, CurrentVersion: version, Applied: true}); err != nil {
		t.Fatalf("report cluster ready: %v", err)
	}
	return id
}

// waitFor polls cond until it holds, with a deadline generous for a busy machine.
func waitFor[T any](t *testing.T, cond func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if v, ok := cond(); ok {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("condition not met within 2m")
	var zero T
	return zero
}
