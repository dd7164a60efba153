package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/test/internal/reqcount"
)

// mgmtRequests reads apiserver_request_total from every management kube-apiserver and sums it
// over the clusters by reqcount's key. The management kube-apiservers run with --profiling=false, so what they serve is what says where
// their CPU goes. A cluster whose metrics cannot be read is logged and left out.
func mgmtRequests(ctx context.Context, b *testing.B) map[string]float64 {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out := map[string]float64{}
	for _, mc := range region.Info.ManagementClusters {
		raw, err := apiserverMetrics(ctx, mc.Kubeconfig)
		if err != nil {
			b.Logf("management cluster %s: %v", mc.Name, err)
			continue
		}
		for key, n := range reqcount.Parse(raw) {
			out[key] += n
		}
	}
	return out
}

func apiserverMetrics(ctx context.Context, kubeconfig string) ([]byte, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s/metrics: %w", cfg.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s/metrics: %s", cfg.Host, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
