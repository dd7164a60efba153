package mgmtclustertest

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// TestStartServesTheKubernetesAPI: the cluster Start returns answers /readyz with its admin
// configuration.
func TestStartServesTheKubernetesAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mc := Start(ctx, t, "mctest")
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	body, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz = %q, %v; want ok", body, err)
	}
}
