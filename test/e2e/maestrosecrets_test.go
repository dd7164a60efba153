package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// TestMaestroHoldsNoSecretInClear creates a cluster and checks that its pull secret and etcd
// encryption key reach the management cluster (the Secrets the HostedCluster names hold them,
// and the HostedCluster is Available), while neither appears, raw or base64, in any row of any
// table of Maestro's database (read as Maestro's own login) nor in the resource bundles its REST
// API lists to Cluster Service. Cluster Service seals each Secret to the management cluster's
// key (docs/security.md, "Secrets in Maestro's database").
func TestMaestroHoldsNoSecretInClear(t *testing.T) {
	needsOwnRegion(t, "knows the secrets it generated")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sub, rg := uuid.NewString(), "rg-maestro-secrets"
	registerSubscription(t, sub)
	cl, mc := createCluster(t, clusterPath(sub, rg, "sealed"), clusterBody(sub, rg))
	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	hc := hcs[0]
	if got := condition(hc, "Available"); got != "True" {
		t.Fatalf("HostedCluster %s/%s Available=%q, want True", hc.GetNamespace(), hc.GetName(), got)
	}

	// What really arrived on the management cluster.
	etcdKey := shardSecret(t, mc, hc.GetNamespace(), manifests.EtcdEncryptionSecretName(hc.GetName()), "key")
	if len(etcdKey) != 32 {
		t.Fatalf("etcd encryption secret on the management cluster: %d bytes, want 32", len(etcdKey))
	}
	pullSecret := shardSecret(t, mc, hc.GetNamespace(), manifests.PullSecretName(hc.GetName()), ".dockerconfigjson")
	found := false
	for _, s := range region.Secrets() {
		found = found || bytes.Contains(pullSecret, []byte(s))
	}
	if !found {
		t.Fatalf("the management cluster's pull secret carries none of the region's pull secret credentials: %s", pullSecret)
	}
	needles := map[string][]byte{
		"etcd key":                 etcdKey,
		"etcd key (base64)":        []byte(base64.StdEncoding.EncodeToString(etcdKey)),
		"pull secret (base64)":     []byte(base64.StdEncoding.EncodeToString(pullSecret)),
		"pull secret (JSON)":       pullSecret,
		"etcd key (hex, bytea)":    []byte(fmt.Sprintf("%x", etcdKey)),
		"pull secret (hex, bytea)": []byte(fmt.Sprintf("%x", pullSecret)),
	}
	for _, s := range region.Secrets() {
		if bytes.Contains(pullSecret, []byte(s)) {
			needles["pull secret credential"] = []byte(s)
		}
	}
	find := func(t *testing.T, where string, hay []byte) {
		t.Helper()
		for what, n := range needles {
			if bytes.Contains(hay, n) {
				t.Errorf("%s holds the cluster's %s in clear", where, what)
			}
		}
	}

	t.Run("maestro_database", func(t *testing.T) {
		login, err := region.Info.Postgres.Role("maestro")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := pgx.ParseConfig(login.DSN + "&passfile=" + login.PassFile)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect as maestro: %v", err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		sawWork := false
		for _, table := range tables {
			rows, err := conn.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t`)
			if err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			for _, row := range texts {
				sawWork = sawWork || strings.Contains(row, hc.GetNamespace())
				find(t, "Maestro's table "+table, []byte(row))
			}
		}
		if !sawWork {
			t.Fatalf("no row of Maestro's database (%v) names the cluster's namespace %s: the scan read nothing of it", tables, hc.GetNamespace())
		}
	})

	t.Run("maestro_rest_bundle_list", func(t *testing.T) {
		cfg, err := region.Info.Maestro.Files().Client(strings.TrimPrefix(region.Info.Maestro.REST, "https://"))
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		sawWork := false
		for page := 1; page < 100; page++ {
			q := url.Values{"page": {strconv.Itoa(page)}, "size": {"100"}}
			resp, err := client.Get(region.Info.Maestro.REST + "/api/maestro/v1/resource-bundles?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("list bundles as cluster-service: %d %s", resp.StatusCode, body)
			}
			sawWork = sawWork || bytes.Contains(body, []byte(hc.GetNamespace()))
			find(t, "Maestro's REST bundle list", body)
			if !bytes.Contains(body, []byte(`"kind":"ResourceBundle"`)) {
				break
			}
		}
		if !sawWork {
			t.Fatalf("no bundle names the cluster's namespace %s: the scan read nothing of it", hc.GetNamespace())
		}
	})
}
