package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// TestMustGatherStaysInItsTenant: a must-gather holds the log lines of its own cluster only.
// Correlation IDs are chosen by ARM's callers, so the ones recorded for the cluster's
// operations match only a line's correlation field, exactly, and only when they are full
// IDs (GUIDs): a tenant whose correlation ID is "e" gets no other tenant's lines. An SRE may
// narrow the logs to some of the cluster's correlation IDs, and is refused any other.
func TestMustGatherStaysInItsTenant(t *testing.T) {
	e := start(t)
	csID, armID, _ := seedCluster(t, e)
	// Another operation on the same cluster, whose caller chose a short correlation ID.
	now := time.Now()
	b, _ := json.Marshal(armdoc.OperationDocument{ID: "op-mg1-short", Request: armdoc.OperationUpdate, ExternalID: armID, InternalID: csID,
		Status: armdoc.StateSucceeded, StartTime: now.Add(-time.Minute), LastTransitionTime: now, CorrelationID: "e"})
	if _, err := e.docs.Create(context.Background(), &docstore.Document{PartitionKey: testSub, ID: "op-mg1-short", Type: docstore.TypeOperation,
		ResourceID: strings.ToLower(armID), Body: b}); err != nil {
		t.Fatal(err)
	}
	const corrB = "0b0b0b0b-1111-4222-8333-444444444444"
	otherARM := "/subscriptions/99999999-0000-0000-0000-000000000009/resourceGroups/rg-b/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/tenantb"
	otherCS := strings.Repeat("b", 32)
	lines := []struct {
		line string
		want bool
	}{
		{`{"msg":"PUT accepted","correlationRequestID":"` + corrMG1 + `","path":"` + armID + `"}`, true},
		{`{"msg":"placed","cluster":"` + csID + `"}`, true},
		{`{"msg":"manifestwork applied","name":"cluster-` + csID + `"}`, true},
		{`{"msg":"tenant b PUT","correlationRequestID":"` + corrB + `","resource":"` + otherARM + `"}`, false},
		{`{"msg":"tenant b placed","cluster":"` + otherCS + `","note":"created"}`, false},
		{`{"msg":"tenant b names our ID inside a longer one","correlationRequestID":"` + corrMG1 + `-b"}`, false},
		{`{"msg":"tenant b's correlation field happens to equal our short one","correlationRequestID":"e","cluster":"` + otherCS + `"}`, false},
		{`{"msg":"tenant b puts our correlation ID in a free-text field","reason":"` + corrMG1 + `"}`, false},
	}
	var content strings.Builder
	for _, l := range lines {
		content.WriteString(l.line + "\n")
	}
	if err := os.WriteFile(filepath.Join(e.logDir, "frontend.log"), []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	root := "must-gather-" + csID + "/"

	t.Run("only_the_clusters_own_lines", func(t *testing.T) {
		code, ae, body := e.call(t, "bob", "GET", "/admin/v1/must-gather/"+csID, "")
		if code != 200 {
			t.Fatalf("%d %+v", code, ae)
		}
		files := untar(t, body)
		got := string(files[root+"logs/frontend.log"])
		for _, l := range lines {
			if strings.Contains(got, l.line) != l.want {
				t.Errorf("line %s: included %v, want %v", l.line, !l.want, l.want)
			}
		}
		var ids struct {
			CorrelationIDs []string            `json:"correlationIds"`
			Refused        []map[string]string `json:"refusedCorrelationIds"`
		}
		if err := json.Unmarshal(files[root+"ids.json"], &ids); err != nil || len(ids.CorrelationIDs) != 1 || ids.CorrelationIDs[0] != corrMG1 ||
			len(ids.Refused) != 1 || ids.Refused[0]["id"] != "e" {
			t.Fatalf("ids.json %s (%v): want the GUID searched and \"e\" refused", files[root+"ids.json"], err)
		}
	})
	t.Run("an_sre_may_narrow_to_the_clusters_correlation_id", func(t *testing.T) {
		code, ae, body := e.call(t, "bob", "GET", "/admin/v1/must-gather/"+csID+"?correlationId="+corrMG1, "")
		if code != 200 || !strings.Contains(string(untar(t, body)[root+"logs/frontend.log"]), corrMG1) {
			t.Fatalf("%d %+v", code, ae)
		}
	})
	for name, cid := range map[string]string{"another_tenants": corrB, "a_short_one": "e", "a_prefix_of_its_own": corrMG1[:8]} {
		t.Run("refuses_"+name+"_correlation_id", func(t *testing.T) {
			code, ae, body := e.call(t, "bob", "GET", "/admin/v1/must-gather/"+csID+"?correlationId="+cid, "")
			if code != 400 || ae.Target != "correlationId" || strings.Contains(string(body), "tenant b") {
				t.Fatalf("%d %+v", code, ae)
			}
		})
	}
}
