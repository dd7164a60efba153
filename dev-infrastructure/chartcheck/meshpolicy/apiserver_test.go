package meshpolicy

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// TestRenderedPolicyIsAcceptedByTheAPIServer applies every mesh object and NetworkPolicy the charts
// render for the dev region to a real kube-apiserver with Istio's CRDs (from the pinned istio.io/api) installed,
// with strict field validation, reads them back into client-go types and compares; then checks
// the apiserver refuses a misspelled field and an invalid action or mode, so a schema mistake in
// a chart fails here. Istio itself does not run (docs/deploy.md#mesh-policy).
func TestRenderedPolicyIsAcceptedByTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := repoRoot(t)
	helm := helmBinary(t, root)
	cfg := readRegion(t, root, "dev-local")
	rendered := renderRegion(t, helm, root, "dev-local", meshCharts(t, root), cfg)

	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: "mesh", Dir: filepath.Join(dir, "mesh"), LogDir: dir,
		APIServerPath: apiserver, EtcdPath: etcd, SkipCRDs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mc.Stop)
	if err := InstallCRDs(ctx, mc.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(mc.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(mc.RESTConfig())
	resource := map[string]schema.GroupVersionResource{
		"AuthorizationPolicy": {Group: Group, Version: "v1", Resource: "authorizationpolicies"},
		"PeerAuthentication":  {Group: Group, Version: "v1", Resource: "peerauthentications"},
	}
	create := func(doc []byte) error {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatal(err)
		}
		_, err := dyn.Resource(resource[u.GetKind()]).Namespace(u.GetNamespace()).Create(ctx, u,
			metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
		return err
	}

	applied, appliedNetworkPolicies := 0, 0
	for c, manifests := range rendered {
		ns := cfg.Identities[c.self].Namespace
		// Two workloads may share a namespace (the admin API and the gateway).
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		want, err := Decode(manifests)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitDocuments(manifests) {
			var head struct{ APIVersion string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(head.APIVersion, Group+"/") {
				continue
			}
			if err := create(doc); err != nil {
				t.Fatalf("%s: the apiserver refused a rendered object: %v\n%s", c.name, err, doc)
			}
			applied++
		}
		// The NetworkPolicies of the same caller list, through the built-in type's validation.
		nps, err := DecodeNetworkPolicies(manifests)
		if err != nil {
			t.Fatal(err)
		}
		for _, np := range nps {
			if _, err := kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				t.Fatalf("%s: the apiserver refused NetworkPolicy %s: %v", c.name, np.Name, err)
			}
			appliedNetworkPolicies++
		}
		// What the apiserver stored decodes strictly and equals what the chart rendered: no
		// field was pruned by the CRD's schema.
		for _, w := range want.AuthorizationPolicies {
			u, err := dyn.Resource(resource["AuthorizationPolicy"]).Namespace(ns).Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := roundTrip(t, u)
			if len(got.AuthorizationPolicies) != 1 || !proto.Equal(&got.AuthorizationPolicies[0].Spec, &w.Spec) {
				t.Errorf("AuthorizationPolicy %s/%s stored differs from rendered", ns, w.Name)
			}
		}
		for _, w := range want.PeerAuthentications {
			u, err := dyn.Resource(resource["PeerAuthentication"]).Namespace(ns).Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := roundTrip(t, u)
			if len(got.PeerAuthentications) != 1 || !proto.Equal(&got.PeerAuthentications[0].Spec, &w.Spec) {
				t.Errorf("PeerAuthentication %s/%s stored differs from rendered", ns, w.Name)
			}
		}
	}
	if applied == 0 || appliedNetworkPolicies == 0 {
		t.Fatalf("%d mesh objects and %d NetworkPolicies rendered: nothing was checked", applied, appliedNetworkPolicies)
	}

	// The hypershift-sim chart's NetworkPolicies too: the hosted kube-apiservers' policy has a
	// port range (endPort) and ipBlocks, which no service chart renders.
	t.Run("hypershift-sim", func(t *testing.T) {
		const ns = "hypershift"
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(helm, "template", "openhcp", filepath.Join(root, "dev-infrastructure", "mgmtcluster", "deploy", "hypershift-sim"),
			"--namespace", ns, "--values", filepath.Join(root, "config", "rendered", "dev-local", "mgmt-1", "hypershift-sim.yaml"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm template hypershift-sim: %v: %s", err, stderr.String())
		}
		nps, err := DecodeNetworkPolicies(stdout.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ranges := 0
		for _, np := range nps {
			if _, err := kube.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}); err != nil {
				t.Fatalf("the apiserver refused NetworkPolicy %s: %v", np.Name, err)
			}
			stored, err := kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, np.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, rule := range stored.Spec.Ingress {
				for _, p := range rule.Ports {
					if p.EndPort != nil {
						ranges++
					}
				}
			}
		}
		if ranges == 0 {
			t.Fatal("no port range stored: the hosted kube-apiservers' policy was not checked (or its endPort was dropped)")
		}
	})

	// The apiserver, not only our decoder, refuses schema mistakes.
	bad := strings.ReplaceAll(allowCaller, "namespace: ns", "namespace: "+cfg.Identities["maestro"].Namespace)
	for _, tc := range []struct{ name, doc, want string }{
		{"misspelled field", strings.Replace(bad, "principals:", "principal:", 1), "unknown field"},
		{"invalid action", strings.Replace(bad, "action: ALLOW", "action: PERMIT", 1), "PERMIT"},
		{"invalid mTLS mode", strings.Replace(strings.ReplaceAll(peerDefault, "namespace: ns", "namespace: "+cfg.Identities["maestro"].Namespace), "STRICT", "STRICTEST", 1), "STRICTEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := create([]byte(strings.Replace(tc.doc, "name: ", "name: bad-", 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apiserver answered %v, want a refusal mentioning %q", err, tc.want)
			}
		})
	}
}

func roundTrip(t *testing.T, u *unstructured.Unstructured) Objects {
	t.Helper()
	// Server-set metadata (uid, resourceVersion, managedFields...) is all ObjectMeta's own.
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Decode(b)
	if err != nil {
		t.Fatalf("stored %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return objs
}
