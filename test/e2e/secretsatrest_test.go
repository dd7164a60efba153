package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/envelope"
)

// TestClusterServiceKEKRotation rotates Cluster Service's key-encryption key in the running
// region as docs/security.md says an operator does (retire the old file, write a new one,
// restart), and checks: the cluster's etcd key is stored sealed under the old KEK before, under
// the new one after the restart (start-up re-encryption), the cluster still reads through ARM,
// the key the management cluster holds never changes, and once the old KEK is deleted and
// Cluster Service restarted again, everything still reads.
func TestClusterServiceKEKRotation(t *testing.T) {
	needsOwnRegion(t, "rotates its Cluster Service's KEK and restarts it")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sub, rg := uuid.NewString(), "rg-kek"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "kek")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))

	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	etcdKeyOnShard := func() []byte {
		t.Helper()
		key := shardSecret(t, mc, hcs[0].GetNamespace(), manifests.EtcdEncryptionSecretName(hcs[0].GetName()), "key")
		if len(key) != 32 {
			t.Fatalf("etcd encryption secret: %d bytes", len(key))
		}
		return key
	}
	etcdKey := etcdKeyOnShard()

	login, err := region.Info.Postgres.Role("cluster-service")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(login.DSN + "&passfile=" + login.PassFile)
	if err != nil {
		t.Fatal(err)
	}
	// storedKeyID reads the row as PostgreSQL holds it and returns the KEK ID it is sealed under.
	storedKeyID := func() string {
		t.Helper()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatalf("connect as cluster-service: %v", err)
		}
		defer conn.Close(ctx)
		var raw []byte
		if err := conn.QueryRow(ctx, `SELECT etcd_encryption_key FROM clusters WHERE id = $1`, cl.GetId()).Scan(&raw); err != nil {
			t.Fatalf("read the stored etcd key: %v", err)
		}
		if bytes.Contains(raw, etcdKey) {
			t.Fatal("the etcd key is stored in plaintext")
		}
		id, err := envelope.SealedKeyID(raw)
		if err != nil {
			t.Fatalf("the stored etcd key is not sealed: %v", err)
		}
		return id
	}
	readable := func(when string) {
		t.Helper()
		// The frontend's connection to Cluster Service comes back after its gRPC backoff. A GET
		// answers from the store alone while Cluster Service is out of reach, so only the part
		// Cluster Service adds (the DNS base domain it chose) shows the frontend reached it: a
		// plain 200 did not, and the next write met the frontend still waiting to reconnect.
		eventually(t, time.Minute, when+": the cluster reads through ARM and Cluster Service", func() error {
			got := arm(t, http.MethodGet, path, nil)
			if got.Status != http.StatusOK {
				return fmt.Errorf("GET cluster %d: %s", got.Status, got.Raw)
			}
			props, _ := got.Body["properties"].(map[string]any)
			if dns, _ := props["dns"].(map[string]any); dns["baseDomain"] == nil || dns["baseDomain"] == "" {
				return fmt.Errorf("GET cluster answered without Cluster Service's status (the frontend has not reconnected): %s", got.Raw)
			}
			if _, err := clusterService(t).GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.GetId()}); err != nil {
				return fmt.Errorf("Cluster Service GetCluster: %w", err)
			}
			return nil
		})
		if !bytes.Equal(etcdKeyOnShard(), etcdKey) {
			t.Fatalf("%s: the management cluster's etcd key changed", when)
		}
	}

	active, retiredDir := region.ClusterServiceKEK()
	oldKEK, err := envelope.ReadKeyFile(active)
	if err != nil {
		t.Fatal(err)
	}
	if id := storedKeyID(); id != envelope.KeyID(oldKEK) {
		t.Fatalf("sealed under %s, want the region's KEK %s", id, envelope.KeyID(oldKEK))
	}

	// Rotate: the old key into the retired directory, a new active key, restart.
	retired := filepath.Join(retiredDir, "before-rotation")
	if err := os.Rename(active, retired); err != nil {
		t.Fatal(err)
	}
	newKEK, err := envelope.WriteKeyFile(active)
	if err != nil {
		t.Fatal(err)
	}
	if err := region.Restart(ctx, "cluster-service"); err != nil {
		t.Fatalf("restart cluster-service with the new KEK: %v", err)
	}
	if id := storedKeyID(); id != envelope.KeyID(newKEK) {
		t.Fatalf("after the restart the etcd key is sealed under %s, want the new KEK %s", id, envelope.KeyID(newKEK))
	}
	readable("after rotation")

	// The old key can go.
	if err := os.Remove(retired); err != nil {
		t.Fatal(err)
	}
	if err := region.Restart(ctx, "cluster-service"); err != nil {
		t.Fatalf("restart cluster-service without the old KEK: %v", err)
	}
	readable("without the old KEK")
}

// shardSecret reads one value of a Secret on a management cluster.
func shardSecret(t *testing.T, mc localregion.ManagementClusterInfo, ns, name, key string) []byte {
	t.Helper()
	sec, err := kube(t, mc).Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace(ns).
		Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("secret %s/%s on %s: %v", ns, name, mc.Name, err)
	}
	data, _ := sec.Object["data"].(map[string]any)
	v, err := base64.StdEncoding.DecodeString(fmt.Sprint(data[key]))
	if err != nil {
		t.Fatalf("secret %s/%s on %s: %s: %v", ns, name, mc.Name, key, err)
	}
	return v
}
