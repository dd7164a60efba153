package maestrobundles

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/admin/pkg/server"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// recorder keeps the bodies Maestro's REST API answered, to see what crossed the wire.
type recorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func work(name string) *workv1.ManifestWork {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default"}}`
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(cm)}}}}}}
}

// TestDescribeReadsOnlyItsClustersBundles puts bundles of three clusters (one with a node
// pool) into a real Maestro server and reads one cluster's: the answer holds its bundles, and
// no other cluster's bundle crossed the wire.
func TestDescribeReadsOnlyItsClustersBundles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres, mosquitto and the maestro server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := mgmtcluster.MaestroBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pg := pgservertest.Start(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	mq, err := mgmtcluster.StartMosquitto(ctx, mgmtcluster.MosquittoOptions{Dir: filepath.Join(dir, "mosquitto"), LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mq.Stop)
	srv, err := mgmtcluster.StartMaestroServer(ctx, mgmtcluster.MaestroServerOptions{Binary: bin, DSN: pgservertest.NewDatabase(t, pg),
		MQTTAddr: mq.Addr, Dir: filepath.Join(dir, "maestro"), LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	const consumer = "mgmt-1"
	if err := srv.REST().RegisterConsumer(ctx, consumer); err != nil {
		t.Fatal(err)
	}
	client, err := maestro.New(ctx, maestro.Config{GRPCAddr: srv.GRPCAddr, RESTURL: srv.RESTURL}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	ours, pool := strings.Repeat("a", 32), strings.Repeat("p", 32)
	others := []string{strings.Repeat("b", 32), strings.Repeat("c", 32)}
	want := []string{manifests.WorkName(ours), manifests.NodePoolWorkName(pool)}
	all := append(slices.Clone(want), manifests.WorkName(others[0]), manifests.WorkName(others[1]), manifests.NodePoolWorkName(strings.Repeat("q", 32)))
	for _, name := range all {
		if err := client.Apply(ctx, consumer, work(name)); err != nil {
			t.Fatalf("apply %s: %v", name, err)
		}
	}

	base := srv.REST()
	rec := &recorder{next: base.Client.Transport}
	if rec.next == nil {
		rec.next = http.DefaultTransport
	}
	reader := server.MaestroREST{URL: base.URL, Client: &http.Client{Timeout: 30 * time.Second, Transport: rec}}
	// The works reach Maestro's database asynchronously: poll until all of ours are there.
	deadline := time.Now().Add(2 * time.Minute)
	var got []string
	for {
		rec.bodies = nil
		bundles, err := reader.BundlesNamed(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, b := range bundles {
			got = append(got, b.Name)
			if b.Consumer != consumer || b.ID == "" {
				t.Fatalf("bundle %+v", b)
			}
		}
		slices.Sort(got)
		if len(got) == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("bundles %v, want %v", got, want)
	}
	for _, b := range rec.bodies {
		for _, name := range all[len(want):] {
			if bytes.Contains(b, []byte(name)) {
				t.Errorf("Maestro sent bundle %s of another cluster to a describe of %s", name, ours)
			}
		}
	}
}
