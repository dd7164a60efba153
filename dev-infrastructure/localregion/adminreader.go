package localregion

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// applyAdminReader grants the admin API's user on mc exactly mgmtclusters.Rules (a ClusterRole
// and its binding) and writes a kubeconfig that acts as that user (mc's admin credentials
// impersonating it), so the admin service reads the management cluster as it would in Azure:
// get and list of HostedClusters, NodePools and events, nothing else.
func applyAdminReader(ctx context.Context, mc *mgmtcluster.ManagementCluster, dir string) (string, error) {
	return applyAdminReaderTo(ctx, mc.Name, mc.Kubeconfig, dir)
}

// applyAdminReaderTo is applyAdminReader for the cluster an admin kubeconfig reaches (an external
// management cluster's).
func applyAdminReaderTo(ctx context.Context, name, kubeconfig, dir string) (string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", name, err)
	}
	roleName := "openhcp-admin-reader"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: mgmtclusters.Rules()}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRole %s on %s: %w", roleName, name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: roleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: mgmtclusters.ReaderUser}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ClusterRoleBinding %s on %s: %w", roleName, name, err)
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("read kubeconfig of %s: %w", name, err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = mgmtclusters.ReaderUser
		ai.ImpersonateGroups = []string{"system:authenticated"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "openhcp-admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write the admin reader's kubeconfig for %s: %w", name, err)
	}
	return path, nil
}
