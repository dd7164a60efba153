package hypershiftsim_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestACustomerCannotFillTheHostedLogDisk: a hosted kube-apiserver logs about 700 bytes for
// each failed call of its customer's webhook, as many calls as the customer makes (dry-run
// creates store nothing, so the etcd quota does not stop them): measured at 445 kB/s from one
// client here. Its log is in the sim pod's emptyDir under make deploy, whose sizeLimit evicts the
// pod, and every hosted cluster's etcd data goes with it; under make run it is the host's disk.
// The log and its one predecessor stay within twice the bound.
func TestACustomerCannotFillTheHostedLogDisk(t *testing.T) {
	const bound = 256 << 10
	e := startHostedEnv(t, 1, func(o *hypershiftsim.HostedAPIOptions) { o.LogMaxBytes = bound })
	ctx := context.Background()
	hcpNS, hc, cert := e.customersRunningCluster(t, types.NamespacedName{Namespace: "hosted-log", Name: "log"})
	cfg := e.hostedConfig(t, hcpNS, hc.Status.ControlPlaneEndpoint, cert, "")
	cfg.QPS, cfg.Burst = 5000, 5000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wh := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "noisy"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "noisy.example.com", ClientConfig: admissionv1.WebhookClientConfig{URL: ptr.To("https://localhost:1/validate")},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			FailurePolicy: ptr.To(admissionv1.Ignore), SideEffects: ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(int32(5)),
		}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(e.opts.HostedAPI.LogDir, hcpNS+"-kube-apiserver.log")
	sizes := func() (cur, prev int64) {
		if fi, err := os.Stat(logPath); err == nil {
			cur = fi.Size()
		}
		if fi, err := os.Stat(logPath + ".1"); err == nil {
			prev = fi.Size()
		}
		return cur, prev
	}
	// About 4 × bound of log lines, in dry-run creates from 20 clients.
	const creates = 6 * bound / 700
	var wg sync.WaitGroup
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range creates / 20 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(w) + "-" + strconv.Itoa(i)}}
				_, _ = cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			}
		}()
	}
	wg.Wait()
	cur, prev := sizes()
	t.Logf("after %d dry-run creates through a failing webhook: log %d bytes, predecessor %d", creates, cur, prev)
	if prev == 0 {
		t.Errorf("the log never rolled over: %d bytes of the customer's making in %s", cur, logPath)
	}
	if cur > bound || prev > bound {
		t.Errorf("the hosted kube-apiserver's log is %d bytes and its predecessor %d, over the bound %d each", cur, prev, bound)
	}
}

// customersRunningCluster creates the HostedCluster key (and its namespace), waits for its
// hosted kube-apiserver to run, and returns its control-plane namespace, the cluster, and a
// customer break-glass certificate (mallory, system:masters) signed by its customer signer.
func (e *hostedEnv) customersRunningCluster(t *testing.T, key types.NamespacedName) (string, *hyperv1.HostedCluster, tls.Certificate) {
	t.Helper()
	ctx := context.Background()
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(key.Namespace, key.Name, image4197)); err != nil {
		t.Fatal(err)
	}
	hcpNS := hypershiftsim.ControlPlaneNamespace(key)
	hc := e.hostedCluster(t, key, func(hc *hyperv1.HostedCluster) error {
		return condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionTrue, hypershiftsim.ReasonHostedAPIServerRunning)
	})
	customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
	return hcpNS, hc, signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:mallory", "system:masters")
}
