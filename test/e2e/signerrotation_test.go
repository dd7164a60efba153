package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// TestBreakGlassSignerRotationTask runs a breakglass-signer-rotation task (both signers) on the
// running region: the region's maintenance service rotates the cluster's customer and SRE
// break-glass signers through real Cluster Service, Maestro and hypershift-sim. A customer
// kubeconfig and an SRE session opened before the task work at the hosted kube-apiserver before
// it and are refused after it; a customer credential and an SRE session asked for after it work.
func TestBreakGlassSignerRotationTask(t *testing.T) {
	bin := kubectlBinary(t)
	sub, rg := uuid.NewString(), "rg-signer-rotation"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "signer-rotation")
	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	t.Cleanup(func() {
		if del := arm(t, http.MethodDelete, path, nil); del.Status == http.StatusAccepted {
			waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute)
		}
	})
	if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 8*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("create operation ended %v: %v", final["status"], final["error"])
	}
	cs := csClusters(t, path)
	if len(cs) != 1 {
		t.Fatalf("cluster service holds %d clusters for %s", len(cs), path)
	}
	clusterID := cs[0].GetId()
	server := apiURL(t, path)
	caller := uuid.NewString()
	hcpctlBin := hcpctlBinary(t)
	openSRESession := func(t *testing.T, file string) {
		t.Helper()
		if out, stderr, code := hcpctl(t, hcpctlBin, "--as", "sre-readonly", "breakglass", "open", path, "--ttl", "30m",
			"--kubeconfig", file, "--reason", "e2e: SRE session across a signer rotation"); code != 0 {
			t.Fatalf("open an SRE session: exit %d:\n%s%s", code, out, stderr)
		}
	}

	// Before: a customer kubeconfig and an SRE session, both working.
	customerBefore := customerKubeconfig(t, path, caller, server)
	if out, stderr, err := kubectl(t, bin, customerBefore, "get", "namespaces", "-o", "name"); err != nil || !strings.Contains(out, "namespace/default") {
		t.Fatalf("the customer's credential before the rotation: %v\n%s%s", err, out, stderr)
	}
	sreBefore := filepath.Join(t.TempDir(), "sre-before.kubeconfig")
	openSRESession(t, sreBefore)
	if _, err := whoAmI(t, sreBefore); err != nil {
		t.Fatalf("the SRE session before the rotation: %v", err)
	}

	// The task, created in the maintenance service's store as its own login (as a campaign or
	// an SRE request would create it).
	db, err := region.Info.Postgres.Role("maintenance")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", db.PassFile)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, db.DSN, postgres.Options{})
	if err != nil {
		t.Fatalf("open the document store as the maintenance login: %v", err)
	}
	defer st.Close()
	tasks := maintenance.NewTasks(st)
	id := "e2e-rotate-" + sub[:8]
	if _, err := tasks.Create(ctx, &maintenance.Task{ID: id, Cluster: clusterID, Type: maintenance.TypeBreakGlassSignerRotation,
		RequestedBy: "e2e", Params: map[string]string{maintenance.ParamSigners: maintenance.SignersBoth}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	var task *maintenance.Task
	eventually(t, 5*time.Minute, "task "+id+" Succeeded", func() error {
		got, err := tasks.Get(ctx, id)
		if err != nil {
			return err
		}
		switch got.State {
		case maintenance.StateSucceeded:
			task = got
			return nil
		case maintenance.StateFailed, maintenance.StateCancelled:
			t.Fatalf("task ended %s: %s", got.State, got.Message)
		}
		return fmt.Errorf("task %s at step %d: %s", got.State, got.Step, got.Message)
	})
	t.Logf("task data: %v", task.Data)
	if task.Data[maintenance.DataOutcome] != "rotated" || task.Data[maintenance.DataCustomerRevoked] == "0" || task.Data[maintenance.DataSRERevoked] == "0" {
		t.Fatalf("task data %v: want outcome rotated with the customer's and the SRE's credentials counted", task.Data)
	}

	// After: both refused at once (the task ends only when Cluster Service reports the
	// rotations done), and new ones work.
	out, stderr, err := kubectl(t, bin, customerBefore, "get", "namespaces", "-o", "name")
	if err == nil {
		t.Fatalf("the customer credential issued before the rotation still lists namespaces:\n%s", out)
	}
	if !strings.Contains(stderr, "Unauthorized") && !strings.Contains(stderr, "provide credentials") && !strings.Contains(stderr, "certificate") && !strings.Contains(stderr, "tls") {
		t.Fatalf("the customer credential issued before the rotation failed for another reason than a refusal: %s", stderr)
	}
	t.Logf("customer credential issued before the rotation refused: %s", strings.TrimSpace(stderr))
	if user, err := whoAmI(t, sreBefore); err == nil {
		t.Fatalf("the SRE session opened before the rotation still works at the hosted apiserver as %+v", user)
	} else {
		t.Logf("SRE session opened before the rotation refused: %v", err)
	}

	if out, stderr, err := kubectl(t, bin, customerKubeconfig(t, path, caller, server), "get", "namespaces", "-o", "name"); err != nil {
		t.Fatalf("a customer credential issued after the rotation: %v\n%s%s", err, out, stderr)
	}
	sreAfter := filepath.Join(t.TempDir(), "sre-after.kubeconfig")
	openSRESession(t, sreAfter)
	if user, err := whoAmI(t, sreAfter); err != nil || user.Username == "" {
		t.Fatalf("an SRE session opened after the rotation: %+v %v", user, err)
	}
}
