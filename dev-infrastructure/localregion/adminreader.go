package localregion

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// The admin API's identity on a management cluster: the user mgmtclusters.ReaderUser, in a group
// of its own, bound to exactly mgmtclusters.Rules (get and list of HostedClusters, NodePools
// and events). The apiserver authenticates it (a client certificate of the cluster's CA, or a
// ServiceAccount token on an external cluster), so what the kubeconfig holds can do no more
// whoever edits it.
const (
	adminReaderRole  = "openhcp-admin-reader"
	adminReaderGroup = "openhcp:admin-readers"
	// adminReaderTokenTTL bounds the token of an external cluster's reader; the region is
	// throwaway and restarts long before.
	adminReaderTokenTTL = 7 * 24 * 60 * 60
)

// applyAdminReader grants the admin API's user on mc exactly mgmtclusters.Rules and writes a
// kubeconfig with a client certificate for that user, issued by mc's CA.
func applyAdminReader(ctx context.Context, mc *mgmtcluster.ManagementCluster, dir string) (string, error) {
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", mc.Name, err)
	}
	subject := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: mgmtclusters.ReaderUser}
	if err := grantAdminReader(ctx, kube, mc.Name, subject); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "openhcp-admin.kubeconfig")
	if err := mc.WriteClientKubeconfig(path, mgmtclusters.ReaderUser, []string{adminReaderGroup}); err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", mc.Name, err)
	}
	return path, nil
}

// applyAdminReaderTo is applyAdminReader for the cluster an admin kubeconfig reaches (an external
// management cluster's), whose CA key the launcher does not hold: the identity is a
// ServiceAccount (kube-system/openhcp-admin-reader) with the same binding, and the kubeconfig
// carries a token for it from the TokenRequest API.
func applyAdminReaderTo(ctx context.Context, name, kubeconfig, dir string) (string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", name, err)
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", fmt.Errorf("admin reader on %s: %w", name, err)
	}
	const ns = "kube-system"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: adminReaderRole, Namespace: ns}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create ServiceAccount %s/%s on %s: %w", ns, sa.Name, name, err)
	}
	if err := grantAdminReader(ctx, kube, name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}); err != nil {
		return "", err
	}
	ttl := int64(adminReaderTokenTTL)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s on %s: %w", ns, sa.Name, name, err)
	}
	admin, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("read kubeconfig of %s: %w", name, err)
	}
	cfg := clientcmdapi.NewConfig()
	for cname, c := range admin.Clusters {
		cfg.Clusters[cname] = c
		cfg.Contexts[cname] = &clientcmdapi.Context{Cluster: cname, AuthInfo: adminReaderRole}
	}
	if cur := admin.Contexts[admin.CurrentContext]; cur != nil {
		cfg.CurrentContext = cur.Cluster
	}
	cfg.AuthInfos[adminReaderRole] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "openhcp-admin.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write the admin reader's kubeconfig for %s: %w", name, err)
	}
	return path, os.Chmod(path, 0o600)
}

// grantAdminReader writes the reader ClusterRole (mgmtclusters.Rules) and binds it to subject.
func grantAdminReader(ctx context.Context, kube kubernetes.Interface, name string, subject rbacv1.Subject) error {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: adminReaderRole}, Rules: mgmtclusters.Rules()}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRole %s on %s: %w", adminReaderRole, name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: adminReaderRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: adminReaderRole},
		Subjects: []rbacv1.Subject{subject}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s on %s: %w", adminReaderRole, name, err)
	}
	return nil
}
