package chartcheck

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The management-cluster charts manage another cluster's apiserver when targetCluster names a
// kubeconfig Secret (make deploy's second stamp): the workload gets --kubeconfig at the Secret's
// mounted key, no ServiceAccount token of the cluster it runs in, and no RBAC there; without the
// value they stay in-cluster with their RBAC rendered.
func TestManagementChartsTargetAnotherCluster(t *testing.T) {
	root := repoRoot(t)
	helmBin := helm(t, root)
	const kubeconfigArg = "--kubeconfig=/etc/openhcp/target/kubeconfig"
	for _, chart := range []string{"maestro/deploy/agent", "dev-infrastructure/mgmtcluster/deploy/hypershift-sim"} {
		t.Run(chart, func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				set    []string
				target bool
			}{
				{name: "in-cluster"},
				{name: "target", set: []string{"--set", "targetCluster.kubeconfigSecret=mgmt-2-kubeconfig"}, target: true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					rendered := renderWith(t, helmBin, root, chart, valuesFile(t, root, chart), tc.set...)
					var deployment *appsv1.Deployment
					rbac := 0
					for _, obj := range objects(t, rendered) {
						switch o := obj.(type) {
						case *appsv1.Deployment:
							if deployment != nil {
								t.Fatalf("two Deployments rendered: %s and %s", deployment.Name, o.Name)
							}
							deployment = o
						case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
							rbac++
						}
					}
					if deployment == nil {
						t.Fatal("no workload Deployment rendered")
					}
					spec := deployment.Spec.Template.Spec
					hasArg := slices.Contains(spec.Containers[0].Args, kubeconfigArg)
					var secret string
					for _, v := range spec.Volumes {
						if v.Name == "target-kubeconfig" && v.Secret != nil {
							secret = v.Secret.SecretName
							if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "kubeconfig" || v.Secret.Items[0].Path != "kubeconfig" {
								t.Errorf("target-kubeconfig volume projects %v, want the key kubeconfig", v.Secret.Items)
							}
						}
					}
					mounted := slices.ContainsFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool {
						return m.Name == "target-kubeconfig" && m.MountPath == "/etc/openhcp/target" && m.ReadOnly
					})
					noToken := spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken
					if tc.target {
						if !hasArg || secret != "mgmt-2-kubeconfig" || !mounted || !noToken || rbac != 0 {
							t.Errorf("targeted: --kubeconfig %v, Secret %q, mounted %v, no token %v, %d RBAC objects; want the argument, Secret mgmt-2-kubeconfig mounted read-only, no token, no RBAC",
								hasArg, secret, mounted, noToken, rbac)
						}
						return
					}
					if hasArg || secret != "" || mounted || spec.AutomountServiceAccountToken != nil || rbac == 0 {
						t.Errorf("in-cluster: --kubeconfig %v, Secret %q, mounted %v, automount %v, %d RBAC objects; want in-cluster config with the chart's RBAC",
							hasArg, secret, mounted, spec.AutomountServiceAccountToken, rbac)
					}
				})
			}
		})
	}
}
