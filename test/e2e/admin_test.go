package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/pki"
)

// adminInfo reads the admin API's entry from region.json, as a tool would.
func adminInfo(t *testing.T) localregion.AdminInfo {
	t.Helper()
	b, err := os.ReadFile(region.RegionFile())
	if err != nil {
		t.Fatal(err)
	}
	var info localregion.Info
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info.Admin.URL == "" || len(info.Admin.SREs) != 3 {
		t.Fatalf("region.json has no admin API or not two SREs: %+v", info.Admin)
	}
	return info.Admin
}

// adminClient presents the certificate of the SRE of group ("" for none; "arm" for ARM's).
func adminClient(t *testing.T, a localregion.AdminInfo, group string) *http.Client {
	t.Helper()
	c := localregion.ClientTLS{CAFile: a.CAFile}
	switch group {
	case "":
	case pki.ARM:
		// ARM's certificate, asking for the admin API's server like every other case here, so
		// that the admin API refuses it (rather than the client refusing the admin API's certificate).
		c = region.Info.Frontend.ClientTLS
		c.CAFile = a.CAFile
	case "sre-root":
		needsOwnRegion(t, "issues a person certificate from its PKI")
		// A person of the SRE persons' CA whose group is none of the SRE groups.
		if err := region.PKI().AddPerson("mallory", "mallory", "sre-root"); err != nil {
			t.Fatal(err)
		}
		f := region.PKI().MustFiles("mallory")
		c = localregion.ClientTLS{CAFile: a.CAFile, ClientCertFile: f.Cert, ClientKeyFile: f.Key}
	default:
		sre, err := a.SRE(group)
		if err != nil {
			t.Fatal(err)
		}
		c = sre.ClientTLS(a.CAFile)
	}
	// The admin API's certificate names its service, not the address dialed.
	c.ServerName = a.ServerName
	cfg, err := c.Files().Client(strings.TrimPrefix(a.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func adminCall(t *testing.T, a localregion.AdminInfo, group, method, path, body, correlationID string, into any) (int, adminapi.Error) {
	t.Helper()
	req, err := http.NewRequest(method, a.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.HeaderCorrelationID, correlationID)
	if method != http.MethodGet {
		// As hcpctl sends a change: the admin API refuses any other as a possible forgery.
		req.Header.Set(adminapi.HeaderClient, "e2e")
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient(t, a, group).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var ae adminapi.Error
	if resp.StatusCode >= 400 {
		if err := json.Unmarshal(raw, &ae); err != nil || ae.Code == "" {
			t.Fatalf("%s %s: %d without an error body: %s", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, ae
	}
	if into != nil {
		if err := json.Unmarshal(raw, into); err != nil {
			t.Fatalf("%s %s: decode: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, ae
}

// TestAdminAPI drives the admin API of the running region as its SREs: who gets in, what each
// group may do, a shard cordon seen by Cluster Service, a cluster described along its whole
// path, and every call in the audit log.
func TestAdminAPI(t *testing.T) {
	needsOwnRegion(t, "issues a person certificate from its PKI")
	a := adminInfo(t)
	cid := uuid.NewString()

	t.Run("arm_certificate_fails_the_handshake", func(t *testing.T) {
		// The admin API trusts only the SRE persons' CA.
		req, _ := http.NewRequest(http.MethodGet, a.URL+"/admin/v1/shards", nil)
		if resp, err := adminClient(t, a, pki.ARM).Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("ARM's certificate got %d; want a handshake failure", resp.StatusCode)
		}
	})
	t.Run("refusals_get_no_data", func(t *testing.T) {
		for _, tc := range []struct {
			group string
			path  string
			want  int
		}{
			{"", "/admin/v1/shards", 401},
			{"sre-root", "/admin/v1/shards", 401},
			{access.GroupReadOnly, "/admin/v1/shards/mgmt-2/cordon", 403},
		} {
			method, body := http.MethodGet, ""
			if strings.HasSuffix(tc.path, "cordon") {
				method, body = http.MethodPost, `{"reason":"e2e"}`
			}
			if code, ae := adminCall(t, a, tc.group, method, tc.path, body, cid, nil); code != tc.want {
				t.Errorf("%q %s: %d %+v, want %d", tc.group, tc.path, code, ae, tc.want)
			}
		}
	})
	t.Run("refusals_are_counted_on_the_metrics_endpoint", func(t *testing.T) {
		// The launcher's --metrics-listen, listed in region.json as admin.metrics.
		for code, least := range map[string]float64{"401": 2, "403": 1} {
			if got := metric(t, region.Info.Admin.MetricsURL, `admin_refusals_total{code="`+code+`"}`); got < least {
				t.Errorf("admin_refusals_total{code=%q} = %v at %s, want at least %v", code, got, region.Info.Admin.MetricsURL, least)
			}
		}
	})

	t.Run("cordon_and_uncordon_reach_cluster_service", func(t *testing.T) {
		var sh adminapi.Shard
		if code, ae := adminCall(t, a, access.GroupAdmin, "POST", "/admin/v1/shards/mgmt-2/cordon", `{"reason":"e2e: cordon"}`, cid, &sh); code != 200 {
			t.Fatalf("cordon: %d %+v", code, ae)
		}
		t.Cleanup(func() {
			adminCall(t, a, access.GroupAdmin, "POST", "/admin/v1/shards/mgmt-2/uncordon", `{"reason":"e2e: cleanup"}`, cid, nil)
		})
		if csShardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatal("Cluster Service does not see mgmt-2 cordoned")
		}
		var list adminapi.ShardList
		if code, _ := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/shards", "", cid, &list); code != 200 || len(list.Shards) != 2 || list.Shards[1].Status != "maintenance" {
			t.Fatalf("shards as read-only: %d %+v", code, list)
		}
		if code, ae := adminCall(t, a, access.GroupAdmin, "POST", "/admin/v1/shards/mgmt-2/uncordon", `{"reason":"e2e"}`, cid, nil); code != 200 {
			t.Fatalf("uncordon: %d %+v", code, ae)
		}
		if csShardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatal("Cluster Service does not see mgmt-2 active again")
		}
	})

	t.Run("describe_joins_every_stage", func(t *testing.T) {
		sub := uuid.NewString()
		registerSubscription(t, sub)
		path := clusterPath(sub, "rg-admin", "c1")
		c, _ := createCluster(t, path, clusterBody(sub, "rg-admin"))
		for _, id := range []string{path, strings.TrimPrefix(path, "/"), c.GetId()} {
			var d adminapi.ClusterDescription
			if code, ae := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/clusters/"+strings.TrimPrefix(id, "/"), "", cid, &d); code != 200 {
				t.Fatalf("describe %s: %d %+v", id, code, ae)
			}
			if d.Summary.ID != c.GetId() || d.ARM == nil || len(d.ARM.Operations) == 0 || len(d.Maestro) == 0 || len(d.ClusterService) == 0 || len(d.Unavailable) != 0 {
				t.Fatalf("describe %s is missing a stage: %+v", id, d)
			}
			if !strings.Contains(strings.Join(d.Diagnosis, "\n"), "Available=True") {
				t.Fatalf("diagnosis of a ready cluster: %q", d.Diagnosis)
			}
		}
		var list adminapi.ClusterList
		if code, _ := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/clusters?subscription="+sub+"&state=ready&health=healthy", "", cid, &list); code != 200 || len(list.Clusters) != 1 || list.Clusters[0].ID != c.GetId() {
			t.Fatalf("list by subscription: %d %+v", code, list)
		}
		if code, ae := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/clusters/"+strings.Repeat("0", 32), "", cid, nil); code != 404 || !strings.Contains(ae.Message, strings.Repeat("0", 32)) {
			t.Fatalf("unknown ID: %d %+v", code, ae)
		}
	})

	t.Run("a_revoked_sre_is_refused", func(t *testing.T) {
		// A fresh SRE of the region's client CA, so no other test loses its identity.
		person := "eve-" + uuid.NewString()[:8]
		if err := region.PKI().AddPerson(person, person, access.GroupReadOnly); err != nil {
			t.Fatal(err)
		}
		f := region.PKI().MustFiles(person)
		eve := localregion.AdminInfo{URL: a.URL, ServerName: a.ServerName, CAFile: a.CAFile, SREs: []localregion.SREIdentity{{Person: person, Group: "eve", CertFile: f.Cert, KeyFile: f.Key}}}
		if code, ae := adminCall(t, eve, "eve", "GET", "/admin/v1/shards", "", cid, nil); code != 200 {
			t.Fatalf("before the revocation: %d %+v", code, ae)
		}
		if code, ae := adminCall(t, a, access.GroupAdmin, "POST", "/admin/v1/revocations/"+person, `{"reason":"e2e: leaked"}`, cid, nil); code != 200 {
			t.Fatalf("revoke: %d %+v", code, ae)
		}
		if code, ae := adminCall(t, eve, "eve", "GET", "/admin/v1/shards", "", cid, nil); code != 401 || !strings.Contains(ae.Message, "revoked") {
			t.Fatalf("after the revocation: %d %+v", code, ae)
		}
	})

	t.Run("every_call_is_in_the_audit_log", func(t *testing.T) {
		var l adminapi.AuditList
		if code, ae := adminCall(t, a, access.GroupReadOnly, "GET", "/admin/v1/audit?correlationId="+cid+"&pageSize=1000", "", "audit-read", &l); code != 200 {
			t.Fatalf("audit: %d %+v", code, ae)
		}
		counts := map[string]int{}
		for _, e := range l.Entries {
			counts[e.Outcome]++
			if e.Outcome == "allowed" && e.Method == "POST" && e.Reason == "" {
				t.Errorf("a change without its reason: %+v", e)
			}
		}
		if counts["unauthenticated"] != 3 || counts["forbidden"] != 1 || counts["allowed"] == 0 || counts["allowed"] != counts["completed"] {
			t.Fatalf("audit outcomes %v", counts)
		}
	})
}

func csShardStatus(t *testing.T, name string) csv1.ShardStatus {
	t.Helper()
	conn, err := region.Info.ClusterService.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := csv1.NewProvisionShardsClient(conn).ListShards(t.Context(), &csv1.ListShardsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range resp.GetShards() {
		if s.GetName() == name {
			return s.GetStatus()
		}
	}
	t.Fatalf("no shard %s", name)
	return 0
}

// TestAdminLoginIsConfined checks the admin API's database login in the running region: it may
// append to and read the audit log but never change or remove a record, read the document
// store and update its existing documents (SRE day-2 changes), insert no document but a
// maintenance request (row-level security), never delete or truncate, and not open the other
// services' databases.
func TestAdminLoginIsConfined(t *testing.T) {
	l, err := region.Info.Postgres.Role("admin")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.PassFile)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Split(strings.TrimSpace(string(b)), ":")
	password := f[len(f)-1]
	connect := func(t *testing.T, db string) (*pgx.Conn, error) {
		cfg, err := pgx.ParseConfig(strings.Replace(l.DSN, "/"+l.Database+"?", "/"+db+"?", 1))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Password = password
		return pgx.ConnectConfig(t.Context(), cfg)
	}
	exec := func(t *testing.T, c *pgx.Conn, q string) error {
		_, err := c.Exec(t.Context(), q)
		return err
	}
	audit, err := connect(t, "admin")
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close(t.Context())
	var n int
	if err := audit.QueryRow(t.Context(), "SELECT count(*) FROM admin_audit").Scan(&n); err != nil {
		t.Fatalf("read the audit log: %v", err)
	}
	for _, q := range []string{"UPDATE admin_audit SET reason = 'x'", "DELETE FROM admin_audit", "TRUNCATE admin_audit", "DROP TABLE admin_audit"} {
		if err := exec(t, audit, q); err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("%s: %v, want permission denied (42501)", q, err)
		}
	}
	docs, err := connect(t, "resourceprovider")
	if err != nil {
		t.Fatal(err)
	}
	defer docs.Close(t.Context())
	if err := docs.QueryRow(t.Context(), "SELECT count(*) FROM documents").Scan(&n); err != nil {
		t.Fatalf("read the document store: %v", err)
	}
	// PostgreSQL checks privileges before it looks at rows, so "WHERE false" probes a privilege
	// without changing the region's documents when it is (wrongly) granted. INSERT is granted,
	// for maintenance requests only: row-level security refuses any other row (also 42501).
	for _, q := range []string{"DELETE FROM documents WHERE false", "TRUNCATE documents",
		"INSERT INTO documents (partition_key, id, type, body, etag, seq) VALUES ('p','i','t','{}','e',-1)",
		"INSERT INTO documents (partition_key, id, type, body, etag, seq) VALUES ('openhcp-maintenance','task/x','maintenance-task','{\"state\":\"Pending\"}','e',-1)"} {
		if err := exec(t, docs, q); err == nil || !strings.Contains(err.Error(), "42501") {
			t.Errorf("%s: %v, want permission denied (42501)", q, err)
		}
	}
	// Day-2 changes (node pool scale, upgrades) write the customer's existing document after
	// Cluster Service accepted them (docs/sre.md): UPDATE is granted, nothing else.
	if err := exec(t, docs, "UPDATE documents SET etag = etag WHERE false"); err != nil {
		t.Errorf("the admin login may not UPDATE documents, which SRE day-2 changes need: %v", err)
	}
	for _, db := range []string{"clusterservice", "maestro"} {
		if c, err := connect(t, db); err == nil {
			c.Close(t.Context())
			t.Errorf("the admin login opened %s", db)
		} else if !strings.Contains(err.Error(), "permission denied for database") {
			t.Errorf("%s: %v", db, err)
		}
	}
}
