package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// TestCrashedServiceIsRestarted kills Cluster Service from outside the launcher (SIGKILL by
// PID, as the OOM killer or an operator would) while a create is in flight: the launcher starts it
// again, as a kubelet would, counts the restart in region.json, and the create still ends
// Succeeded.
func TestCrashedServiceIsRestarted(t *testing.T) {
	needsOwnRegion(t, "kills its Cluster Service")
	sub, rg := uuid.NewString(), "rg-supervision"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "supervised")
	p, err := region.Process("cluster-service")
	if err != nil {
		t.Fatal(err)
	}
	before, pid := p.Restarts(), p.PID()

	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	t.Cleanup(func() { arm(t, http.MethodDelete, path, nil) })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill cluster-service (pid %d): %v", pid, err)
	}
	eventually(t, 2*time.Minute, "cluster-service restarted by the launcher", func() error {
		if p.Restarts() != before+1 || p.PID() == pid {
			return fmt.Errorf("restarts %d (was %d), pid %d (was %d)", p.Restarts(), before, p.PID(), pid)
		}
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("cluster-service is down for good: %v", err)
		}
		return nil
	})
	if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("the create in flight during the crash ended %v: %v", final["status"], final["error"])
	}
	b, err := os.ReadFile(region.RegionFile())
	if err != nil {
		t.Fatal(err)
	}
	var info localregion.Info
	if err := json.Unmarshal(b, &info); err != nil || info.Restarts["cluster-service"] < 1 {
		t.Fatalf("region.json restarts = %v (%v), want cluster-service counted", info.Restarts, err)
	}
}
