package hypershiftsim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// testEtcdQuota is the hosted etcd space quota of the storage test: small, so that one
// customer fills it in seconds.
const testEtcdQuota = 48 << 20

// TestOneHostedClusterFillingItsStorageLeavesTheOthersWriting fills one hosted cluster's
// storage through its own admin credential, as a customer may, until the apiserver refuses a
// write for lack of space, and checks that another customer's cluster on the same management
// cluster still writes: the hosted control planes share no space quota.
func TestOneHostedClusterFillingItsStorageLeavesTheOthersWriting(t *testing.T) {
	e := startHostedEnv(t, 2, func(o *hypershiftsim.HostedAPIOptions) { o.EtcdQuotaBytes = testEtcdQuota })
	ctx := context.Background()
	ns := "hosted-storage"
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	type tenant struct {
		key   types.NamespacedName
		hcpNS string
		ep    hyperv1.APIEndpoint
	}
	tenants := []*tenant{{key: types.NamespacedName{Namespace: ns, Name: "noisy"}}, {key: types.NamespacedName{Namespace: ns, Name: "quiet"}}}
	for _, tn := range tenants {
		if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(ns, tn.key.Name, image4197)); err != nil {
			t.Fatal(err)
		}
		tn.hcpNS = hypershiftsim.ControlPlaneNamespace(tn.key)
	}
	for _, tn := range tenants {
		hc := e.hostedCluster(t, tn.key, func(hc *hyperv1.HostedCluster) error {
			return condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionTrue, hypershiftsim.ReasonHostedAPIServerRunning)
		})
		tn.ep = hc.Status.ControlPlaneEndpoint
	}
	admin := func(tn *tenant) corev1client.CoreV1Interface {
		s := e.secret(t, tn.hcpNS, hypershiftsim.CustomerSignerSecret)
		cert := signedBy(t, s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:"+tn.key.Name, "system:masters")
		return e.hostedClient(t, tn.hcpNS, tn.ep, cert, "").CoreV1()
	}
	noisy, quiet := admin(tenants[0]), admin(tenants[1])

	// About 1 MB a ConfigMap (under the apiserver's and etcd's request limits): the quota is
	// reached after about quota/1 MB of them; the bound leaves room for etcd's own overhead.
	blob := strings.Repeat("x", 1<<20-4096)
	var full error
	for i := 0; i < 4*testEtcdQuota>>20 && full == nil; i++ {
		_, err := noisy.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i)},
			Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
		if err != nil {
			full = err
		}
	}
	if full == nil || !strings.Contains(full.Error(), "database space exceeded") {
		t.Fatalf("filling the noisy cluster: %v, want etcd's \"database space exceeded\" within %d writes of 1 MB", full, 4*testEtcdQuota>>20)
	}
	t.Logf("the noisy cluster is full: %v", full)

	// The other customer's cluster writes on, objects of a namespace's size and of a megabyte.
	if _, err := quiet.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "still-writing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the quiet cluster, once the noisy one is full: create a namespace: %v", err)
	}
	if _, err := quiet.ConfigMaps("still-writing").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Data: map[string]string{"blob": blob}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the quiet cluster, once the noisy one is full: create a ConfigMap of 1 MB: %v", err)
	}
}
