package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/pkirotation"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// TestRegionCertificateRotationTask: an SRE asks for a region-certificate-rotation task through
// hcpctl (the admin API signs the request, the maintenance service creates the task), the
// maintenance service asks the launcher's rotation API for it and verifies it by handshakes,
// the task Succeeds, every listener of the region serves a new serial that verifies against
// the CA file, and ARM requests over new connections are answered throughout.
func TestRegionCertificateRotationTask(t *testing.T) {
	needsOwnRegion(t, "its launcher's rotation API and PKI")
	if region.Info.RegionPKI == nil {
		t.Fatal("region.json lists no rotation API")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// The listeners, read as the maintenance service reads them, and what they serve now.
	p := region.PKI()
	mf := p.MustFiles(pki.Maintenance)
	api, err := pkirotation.NewClient(region.Info.RegionPKI.Addr, tlsconfig.Files{CA: p.CAFile, Cert: mf.Cert, Key: mf.Key})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := api.Region(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Name != region.Info.Location || len(reg.Listeners) < 10 {
		t.Fatalf("the rotation API lists region %q with %d listeners: %+v", reg.Name, len(reg.Listeners), reg.Listeners)
	}
	served := func() map[string]string {
		t.Helper()
		roots, err := pkirotation.ReadCAFile(p.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range pkirotation.Probe(ctx, reg.Listeners, roots) {
			if s.Err != nil {
				t.Fatalf("listener %s: %v", s.Listener.Name, s.Err)
			}
			out[s.Listener.Name] = s.Cert.SerialNumber.String()
		}
		return out
	}
	before := served()
	// The launcher's own listener is not one of its children's, which the door probe looks at:
	// asked here the way the door probe asks, without a certificate, it must not answer.
	_, port, err := net.SplitHostPort(region.Info.RegionPKI.Addr)
	if err != nil {
		t.Fatal(err)
	}
	portNum, _ := strconv.Atoi(port)
	for _, probe := range []doorProbe{{"GET", "/v1/region", ""}, {"POST", "/v1/rotations", `{"key":"door-probe","scope":"certificates"}`}} {
		if code, body, err := probeDoor("https", portNum, probe); err == nil {
			t.Fatalf("%s %s on the rotation API without a certificate: %d %.160q; want the handshake refused", probe.method, probe.path, code, body)
		}
	}

	// ARM traffic on new connections throughout.
	sub := uuid.NewString()
	registerSubscription(t, sub)
	traffic := startARMTraffic(ctx, t, sub)
	defer traffic.Stop()

	// The SRE's request: the task's target is the region's name.
	out, stderr, code := hcpctl(t, hcpctlBinary(t), "--as", "sre-admin", "maintenance", "task", "create", region.Info.Location,
		"--type", maintenance.TypeRegionCertificateRotation, "--reason", "e2e: rotate the region's certificates", "--wait", "-o", "json", "--timeout", "2m")
	var req maintenance.Request
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.State != maintenance.RequestDone || req.TaskID == "" {
		t.Fatalf("hcpctl maintenance task create: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}

	db, err := region.Info.Postgres.Role("maintenance")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", db.PassFile)
	st, err := postgres.Open(ctx, db.DSN, postgres.Options{})
	if err != nil {
		t.Fatalf("open the document store as the maintenance login: %v", err)
	}
	defer st.Close()
	tasks := maintenance.NewTasks(st)
	var task *maintenance.Task
	eventually(t, 12*time.Minute, "task "+req.TaskID+" Succeeded", func() error {
		got, err := tasks.Get(ctx, req.TaskID)
		if err != nil {
			return err
		}
		switch got.State {
		case maintenance.StateSucceeded:
			task = got
			return nil
		case maintenance.StateFailed, maintenance.StateCancelled:
			t.Fatalf("task %s: %s", got.State, got.Message)
		}
		return fmt.Errorf("task %s at step %d: %s", got.State, got.Step, got.Message)
	})
	traffic.Stop()
	sent, failed, failures := traffic.Tally()
	if task.Region != region.Info.Location || task.Data[maintenance.DataOutcome] != "rotated" {
		t.Fatalf("task %+v; want a region task on %s, rotated", task, region.Info.Location)
	}
	rot, err := api.Get(ctx, task.ID)
	if err != nil || rot.State != pkirotation.StateDone || rot.Scope != pkirotation.ScopeCertificates {
		t.Fatalf("the holder's rotation of the task: %+v, %v", rot, err)
	}
	after := served()
	for name, serial := range before {
		if after[name] == serial {
			t.Errorf("%s still serves serial %s", name, serial)
		}
	}
	t.Logf("ARM list requests during the task: %d, failed %d; listeners rotated: %d", sent, failed, len(after))
	if sent < 10 || failed > 0 {
		t.Fatalf("ARM traffic during the rotation: %d sent, %d failed: %v", sent, failed, failures)
	}
}
