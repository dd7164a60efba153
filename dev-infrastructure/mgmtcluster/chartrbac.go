package mgmtcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
)

// The management cluster's Maestro agent and hypershift-sim run with exactly the permissions
// their Helm charts grant (maestro/deploy/agent, dev-infrastructure/mgmtcluster/deploy/hypershift-sim): the launcher
// renders each chart's ServiceAccount and RBAC objects with the pinned helm, applies them, and
// gives the process a kubeconfig that impersonates that ServiceAccount. So every test against a
// local region also proves the charts' least-privilege RBAC; a missing rule fails as a 403 there.

// ChartIdentity is one chart's workload identity on a management cluster.
type ChartIdentity struct {
	// Chart is the chart folder relative to the repository root.
	Chart string
	// Namespace is the release namespace; ServiceAccount the chart's account in it.
	Namespace, ServiceAccount string
	// Set are helm --set values the chart requires to render.
	Set []string
}

// Identities of the management-cluster charts, as make deploy installs them. Only their RBAC is
// rendered, without config/, so the NetworkPolicy (whose callers' namespaces come from config/)
// is turned off.
var (
	AgentIdentity = func(consumer string) ChartIdentity {
		return ChartIdentity{Chart: "maestro/deploy/agent", Namespace: "maestro", ServiceAccount: "maestro-agent",
			Set: []string{"consumerName=" + consumer, "broker.host=127.0.0.1", "networkPolicy.enabled=false"}}
	}
	SimIdentity = ChartIdentity{Chart: "dev-infrastructure/mgmtcluster/deploy/hypershift-sim", Namespace: "hypershift", ServiceAccount: "hypershift-sim",
		Set: []string{"networkPolicy.enabled=false"}}
)

// rbacTemplates are the chart templates holding the identity and its permissions.
var rbacTemplates = []string{"templates/serviceaccount.yaml", "templates/rbac.yaml"}

// ApplyChartIdentity renders id's chart's ServiceAccount and RBAC, creates them on mc (kept if
// they exist) and writes a kubeconfig that acts as the ServiceAccount: mc's admin credentials
// impersonating it, with the groups a ServiceAccount token carries. It returns the kubeconfig's path.
func ApplyChartIdentity(ctx context.Context, mc *ManagementCluster, id ChartIdentity, dir string) (string, error) {
	manifests, err := renderChartIdentity(ctx, id)
	if err != nil {
		return "", err
	}
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		return "", fmt.Errorf("chart identity %s: %w", id.Chart, err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: id.Namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create namespace %s: %w", id.Namespace, err)
	}
	objs, err := decodeObjects(manifests)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", id.Chart, err)
	}
	for _, o := range objs {
		if err := createObject(ctx, kube, id.Namespace, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("chart %s: %w", id.Chart, err)
		}
	}

	cfg, err := clientcmd.LoadFromFile(mc.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("read kubeconfig of %s: %w", mc.Name, err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = "system:serviceaccount:" + id.Namespace + ":" + id.ServiceAccount
		ai.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + id.Namespace, "system:authenticated"}
	}
	path := filepath.Join(dir, id.ServiceAccount+".kubeconfig")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig for %s: %w", id.ServiceAccount, err)
	}
	return path, nil
}

// helmBinary is the pinned helm, built once by hack/helm.sh (which owns its version and flags).
// renderChartIdentity renders id's chart's ServiceAccount and RBAC templates with the pinned helm
// and the chart's defaults plus id.Set.
func renderChartIdentity(ctx context.Context, id ChartIdentity) ([]byte, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	helm, err := helmBinary(ctx, root)
	if err != nil {
		return nil, err
	}
	args := []string{"template", "openhcp", filepath.Join(root, id.Chart), "--namespace", id.Namespace}
	for _, t := range rbacTemplates {
		args = append(args, "--show-only", t)
	}
	for _, s := range id.Set {
		args = append(args, "--set", s)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", id.Chart, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func helmBinary(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "helm.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build helm with hack/helm.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func decodeObjects(manifests []byte) ([]runtime.Object, error) {
	var out []runtime.Object
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decode rendered manifests: %w", err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(bytes.TrimSpace(raw.Raw)) == "null" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decode rendered object: %w", err)
		}
		out = append(out, obj)
	}
}

func createObject(ctx context.Context, kube kubernetes.Interface, ns string, obj runtime.Object) error {
	opts := metav1.CreateOptions{}
	var err error
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = kube.CoreV1().ServiceAccounts(ns).Create(ctx, o, opts)
	case *rbacv1.ClusterRole:
		_, err = kube.RbacV1().ClusterRoles().Create(ctx, o, opts)
	case *rbacv1.ClusterRoleBinding:
		_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
	case *rbacv1.Role:
		_, err = kube.RbacV1().Roles(namespaceOr(o.Namespace, ns)).Create(ctx, o, opts)
	case *rbacv1.RoleBinding:
		_, err = kube.RbacV1().RoleBindings(namespaceOr(o.Namespace, ns)).Create(ctx, o, opts)
	default:
		return fmt.Errorf("unexpected %T among the identity and RBAC templates", obj)
	}
	if err != nil {
		return fmt.Errorf("create %T: %w", obj, err)
	}
	return nil
}

func namespaceOr(ns, def string) string {
	if ns != "" {
		return ns
	}
	return def
}
