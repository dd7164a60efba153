package localregion

import (
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pki"
)

func TestStoreServiceNames(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           storeService
		wantProcess []string
		wantReplica []string
	}{
		{"one_replica_runs_under_the_service_name", storeService{name: "maintenance", replicas: 1}, []string{"maintenance"}, []string{"maintenance-1"}},
		{"replicas_are_numbered_from_one", storeService{name: "monitor", replicas: 2}, []string{"monitor-1", "monitor-2"}, []string{"monitor-1", "monitor-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var procs, ids []string
			for i := 1; i <= tc.s.replicas; i++ {
				procs, ids = append(procs, tc.s.processName(i)), append(ids, tc.s.replicaID(i))
			}
			if !slices.Equal(procs, tc.wantProcess) || !slices.Equal(ids, tc.wantReplica) {
				t.Fatalf("processes %v, replica IDs %v; want %v, %v", procs, ids, tc.wantProcess, tc.wantReplica)
			}
		})
	}
}

// TestStoreServiceReplicasShareTheStoreOnTheirOwnLogin starts the Monitor's two replicas as Up
// does, on a real locked-down PostgreSQL: each becomes ready on its own metrics port, both log in
// as the Monitor's own role (from its pass file), and between them they hold every bucket of the
// fleet through leases in the document store.
func TestStoreServiceReplicasShareTheStoreOnTheirOwnLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL and builds the Monitor")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, pg := regionWithDatabase(ctx, t, "./backend/cmd/monitor")
	if err := pg.CreateGroupRole(ctx, documentStoreDB); err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateOwnedDatabase(ctx, documentStoreDB, documentStoreDB); err != nil {
		t.Fatal(err)
	}
	// Nothing answers here: the Monitor dials Cluster Service lazily and reports its checks'
	// failures; its leases need only the store.
	r.Info.ClusterService.GRPC = "127.0.0.1:" + strconv.Itoa(freeClosedPort(t))

	const buckets = 16 // the Monitor's default
	replicas, err := r.startStoreService(ctx, pg, storeService{name: monitorName, identity: pki.Monitor, replicas: 2,
		args: []string{"--interval", "1s", "--lease-duration", "2s"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(replicas) != 2 || replicas[0].MetricsURL == replicas[1].MetricsURL {
		t.Fatalf("replicas %+v, want two at different addresses", replicas)
	}
	for _, name := range []string{"monitor-1", "monitor-2"} {
		if _, err := r.Process(name); err != nil {
			t.Errorf("process %s: %v", name, err)
		}
	}
	db, err := r.Info.Postgres.Role(monitorName)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(db.PassFile); err != nil || fi.Mode().Perm() != 0o600 || db.Role != monitorName || db.Database != documentStoreDB {
		t.Fatalf("region.json's login %+v (pass file %v, %v), want the monitor role in %s with a 0600 pass file", db, fi, err, documentStoreDB)
	}

	held := regexp.MustCompile(`(?m)^monitor_buckets_held (\d+)$`)
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	var got []int
	for {
		got = got[:0]
		total := 0
		for _, rep := range replicas {
			n := -1
			if resp, err := client.Get(rep.MetricsURL); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if m := held.FindSubmatch(b); m != nil {
					n, _ = strconv.Atoi(string(m[1]))
				}
			}
			got = append(got, n)
			total += n
		}
		if total == buckets && !slices.Contains(got, -1) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("buckets held per replica %v, want %d in all (-1: no metric)", got, buckets)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
