package hypershiftsim_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// countingListener accepts connections on loopback and closes each, counting them: a port of
// the host's loopback that a customer's objects must never make their apiserver reach.
func countingListener(t *testing.T) (port int, accepted *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port, accepted
}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// apiService is an APIService for group/v1 served by Service ns/svc at port, whose certificate
// is not verified (the probe's form).
func apiService(group, ns, svc string, port int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1." + group},
		"spec": map[string]any{
			"group": group, "version": "v1", "insecureSkipTLSVerify": true,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": ns, "name": svc, "port": int64(port)},
		},
	}}
}

// apiServiceAvailable returns the APIService's Available condition (status, reason, message).
func apiServiceAvailable(ctx context.Context, dc dynamic.Interface, name string) (status, reason, message string, err error) {
	o, err := dc.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", "", err
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return status, reason, message, nil
		}
	}
	return "", "", "", fmt.Errorf("APIService %s has no Available condition yet", name)
}

// TestHostedAPIServerEgressNeverReachesTheHostsLoopback plays the customer of a served cluster
// (system:masters in it) pointing their apiserver's outgoing connections at a port of the
// sim's loopback: an APIService on an ExternalName Service "localhost" (the aggregator), and
// validating webhooks by URL and by Service. None may reach that port; the apiserver's
// connections to the cluster's network go through the sim's egress proxy, which refuses the
// host's loopback. A target the proxy admits (here 127.0.0.2, admitted by the test's allow-list
// as a stand-in for the hosted cluster's own network) is still reached through it.
func TestHostedAPIServerEgressNeverReachesTheHostsLoopback(t *testing.T) {
	legit := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	legit.Listener = l
	legit.StartTLS()
	t.Cleanup(legit.Close)
	legitPort := l.Addr().(*net.TCPAddr).Port

	e := startHostedEnv(t, 1, allowEgressTo127002)
	ctx := context.Background()
	hcpNS, hc, cert := e.customersRunningCluster(t, types.NamespacedName{Namespace: "hosted-egress", Name: "egress"})
	cfg := e.hostedConfig(t, hcpNS, hc.Status.ControlPlaneEndpoint, cert, "")
	cs := e.hostedClient(t, hcpNS, hc.Status.ControlPlaneEndpoint, cert, "")
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	sinkPort, accepted := countingListener(t)
	const ns = "egress"
	for _, o := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		{ObjectMeta: metav1.ObjectMeta{Name: "webhook-by-url", Labels: map[string]string{"egress-test": "url"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "webhook-by-service", Labels: map[string]string{"egress-test": "service"}}},
	} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]struct {
		host string
		port int
	}{"loopback": {"localhost", sinkPort}, "legit": {"127.0.0.2", legitPort}} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target.host,
				Ports: []corev1.ServicePort{{Name: "https", Port: int32(target.port)}}}}
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Service %s: %v", name, err)
		}
	}

	t.Run("apiservice_on_localhost_never_reaches_the_port", func(t *testing.T) {
		if _, err := dc.Resource(apiServiceGVR).Create(ctx, apiService("loopback.example.com", ns, "loopback", sinkPort), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var message string
		poll(t, 2*time.Minute, "the aggregator's discovery check of v1.loopback.example.com", func() error {
			status, reason, msg, err := apiServiceAvailable(ctx, dc, "v1.loopback.example.com")
			if err != nil {
				return err
			}
			if status != "False" || reason != "FailedDiscoveryCheck" {
				return fmt.Errorf("Available=%s %s: %s", status, reason, msg)
			}
			message = msg
			return nil
		})
		t.Logf("APIService status: %s", message)
		if n := accepted.Load(); n != 0 {
			t.Errorf("the customer's APIService made their apiserver connect to 127.0.0.1:%d %d times", sinkPort, n)
		}
	})

	webhook := func(name string, cc admissionv1.WebhookClientConfig, label string) *admissionv1.ValidatingWebhookConfiguration {
		return &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks: []admissionv1.ValidatingWebhook{{
				Name: name + ".example.com", ClientConfig: cc,
				Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
				NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"egress-test": label}},
				FailurePolicy:           ptr.To(admissionv1.Fail),
				SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To(int32(5)),
			}}}
	}
	for _, tc := range []struct {
		name, label string
		cc          admissionv1.WebhookClientConfig
	}{
		{"webhook_by_url_to_localhost_never_reaches_the_port", "url",
			admissionv1.WebhookClientConfig{URL: ptr.To("https://localhost:" + strconv.Itoa(sinkPort) + "/validate")}},
		{"webhook_by_service_on_localhost_never_reaches_the_port", "service",
			admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: ns, Name: "loopback", Path: ptr.To("/validate"), Port: ptr.To(int32(sinkPort))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, webhook("to-"+tc.label, tc.cc, tc.label), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			before := accepted.Load()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
			var lastErr error
			// The webhook configuration takes effect a moment after it is created: until the
			// create is refused by the failing webhook, it is not yet called.
			poll(t, time.Minute, "the webhook to be called", func() error {
				_, lastErr = cs.CoreV1().ConfigMaps("webhook-by-"+tc.label).Create(ctx, cm, metav1.CreateOptions{})
				if lastErr == nil {
					_ = cs.CoreV1().ConfigMaps("webhook-by-"+tc.label).Delete(ctx, cm.Name, metav1.DeleteOptions{})
					return fmt.Errorf("ConfigMap created: the webhook was not called yet")
				}
				return nil
			})
			t.Logf("ConfigMap create: %v", lastErr)
			if n := accepted.Load() - before; n != 0 {
				t.Errorf("the customer's webhook made their apiserver connect to 127.0.0.1:%d %d times", sinkPort, n)
			}
		})
	}

	// The kubelet path: a Node the customer makes, with the host's loopback as its address and a
	// port of it as its kubelet's, and a Pod bound to it; the apiserver reads the Pod's log
	// from "the kubelet" and streams the answer back: what a loopback service answers would
	// reach the customer (the apiserver's proxy subresources refuse loopback by themselves;
	// logs, exec and port-forward do not).
	t.Run("pod_log_from_a_node_on_localhost_never_reaches_the_port", func(t *testing.T) {
		const secret = "loopback-secret-7f3a"
		var served atomic.Int64
		kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			served.Add(1)
			_, _ = w.Write([]byte(secret))
		}))
		t.Cleanup(kubelet.Close)
		kubeletPort := kubelet.Listener.Addr().(*net.TCPAddr).Port
		node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "loopback"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(kubeletPort)
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-loopback"},
			Spec: corev1.PodSpec{NodeName: "loopback", Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		body, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "c"}).DoRaw(ctx)
		t.Logf("pod log: %q, %v", body, err)
		if strings.Contains(string(body), secret) || (err != nil && strings.Contains(err.Error(), secret)) {
			t.Errorf("the customer read what a service on the host's loopback answers through their pod's log")
		}
		if n := served.Load(); n != 0 {
			t.Errorf("the customer's pod log made their apiserver request 127.0.0.1:%d %d times", kubeletPort, n)
		}
	})

	// A CustomResourceDefinition's conversion webhook is the customer's too: reading an object
	// in a version other than the stored one calls it.
	t.Run("crd_conversion_webhook_on_localhost_never_reaches_the_port", func(t *testing.T) {
		crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		version := func(name string, storage bool) map[string]any {
			return map[string]any{"name": name, "served": true, "storage": storage,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.conversion.example.com"},
			"spec": map[string]any{
				"group": "conversion.example.com", "scope": "Namespaced",
				"names":    map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
				"versions": []any{version("v1", true), version("v2", false)},
				"conversion": map[string]any{"strategy": "Webhook", "webhook": map[string]any{
					"conversionReviewVersions": []any{"v1"},
					"clientConfig":             map[string]any{"url": "https://localhost:" + strconv.Itoa(sinkPort) + "/convert"},
				}},
			},
		}}
		if _, err := dc.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1 := schema.GroupVersionResource{Group: "conversion.example.com", Version: "v1", Resource: "widgets"}
		v2 := schema.GroupVersionResource{Group: "conversion.example.com", Version: "v2", Resource: "widgets"}
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conversion.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"}}}
		poll(t, time.Minute, "a Widget created in its stored version", func() error {
			_, err := dc.Resource(v1).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			return err
		})
		before := accepted.Load()
		var lastErr error
		poll(t, time.Minute, "the conversion webhook to be called", func() error {
			_, lastErr = dc.Resource(v2).Namespace(ns).Get(ctx, "w", metav1.GetOptions{})
			if lastErr == nil {
				return fmt.Errorf("Widget read as v2 without a conversion")
			}
			if !strings.Contains(lastErr.Error(), "conversion webhook") {
				return lastErr
			}
			return nil
		})
		t.Logf("Widget read as v2: %v", lastErr)
		if n := accepted.Load() - before; n != 0 {
			t.Errorf("the customer's conversion webhook made their apiserver connect to 127.0.0.1:%d %d times", sinkPort, n)
		}
	})

	t.Run("a_target_the_proxy_admits_is_reached_through_it", func(t *testing.T) {
		if _, err := dc.Resource(apiServiceGVR).Create(ctx, apiService("legit.example.com", ns, "legit", legitPort), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, 2*time.Minute, "v1.legit.example.com Available", func() error {
			status, reason, msg, err := apiServiceAvailable(ctx, dc, "v1.legit.example.com")
			if err != nil {
				return err
			}
			if status != "True" {
				return fmt.Errorf("Available=%s %s: %s", status, reason, msg)
			}
			return nil
		})
	})
}

func allowEgressTo127002(o *hypershiftsim.HostedAPIOptions) {
	o.EgressAllowedCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
}
