package mgmtcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Maestro's gRPC source API authenticates a client by its certificate (--grpc-authn-type=mtls:
// user = CN, groups = O) and then asks a kube-apiserver, with a SubjectAccessReview, whether that
// user may "pub" or "sub" the non-resource URL /sources/<source> of each event or subscription.
// Upstream runs it in a Kubernetes cluster and asks that cluster; the local region gives it an
// apiserver of its own, the "service cluster" (the AKS cluster that hosts the region's services
// in ARO HCP), that holds nothing but these RBAC rules.

// MaestroAuthorizerOptions configures StartMaestroAuthorizer.
type MaestroAuthorizerOptions struct {
	// Cluster starts the apiserver; Name, Dir, LogDir, APIServerPath and EtcdPath are required.
	// ExtraClientCAFile must be the CA of the Maestro server's certificate, SkipCRDs is set.
	Cluster ManagementClusterOptions
	// ServerUser is the Maestro server's identity (its certificate's CN): the only one allowed
	// to create SubjectAccessReviews.
	ServerUser string
	// ServerCertFile and ServerKeyFile are the Maestro server's certificate, which its
	// authorizer presents to the apiserver (read from the files, so a renewal is picked up).
	ServerCertFile, ServerKeyFile string
	// Sources maps each Maestro source ID to the one identity (certificate CN) that may publish
	// and subscribe as it.
	Sources map[string]string
}

// MaestroAuthorizer is the running apiserver and the kubeconfig the Maestro server uses
// (--grpc-authorizer-config).
type MaestroAuthorizer struct {
	Cluster    *ManagementCluster
	Kubeconfig string
}

// Stop ends the apiserver and its etcd.
func (a *MaestroAuthorizer) Stop() { a.Cluster.Stop() }

// StartMaestroAuthorizer starts the apiserver, writes the RBAC rules (one ClusterRole and
// binding per source, and the server's right to create SubjectAccessReviews) and the Maestro
// server's kubeconfig.
func StartMaestroAuthorizer(ctx context.Context, o MaestroAuthorizerOptions) (_ *MaestroAuthorizer, err error) {
	if o.ServerUser == "" || o.ServerCertFile == "" || o.ServerKeyFile == "" || len(o.Sources) == 0 {
		return nil, errors.New("maestro authorizer: ServerUser, ServerCertFile, ServerKeyFile and Sources are required")
	}
	if o.Cluster.ExtraClientCAFile == "" {
		return nil, errors.New("maestro authorizer: Cluster.ExtraClientCAFile (the Maestro server's CA) is required")
	}
	o.Cluster.SkipCRDs = true
	mc, err := StartManagementCluster(ctx, o.Cluster)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			mc.Stop()
		}
	}()
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("maestro authorizer client: %w", err)
	}
	roles := []rbacv1.ClusterRole{{
		ObjectMeta: metav1.ObjectMeta{Name: "maestro-grpc-authorizer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"authorization.k8s.io"},
			Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}},
	}}
	users := map[string]string{"maestro-grpc-authorizer": o.ServerUser}
	sources := make([]string, 0, len(o.Sources))
	for s := range o.Sources {
		sources = append(sources, s)
	}
	sort.Strings(sources)
	for _, source := range sources {
		name := "maestro-source-" + source
		roles = append(roles, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/sources/" + source},
				Verbs: []string{"pub", "sub"}}},
		})
		users[name] = o.Sources[source]
	}
	for _, role := range roles {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("maestro authorizer: create ClusterRole %s: %w", role.Name, err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: users[role.Name]}},
		}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("maestro authorizer: create ClusterRoleBinding %s: %w", role.Name, err)
		}
	}

	// The server's kubeconfig: the admin kubeconfig's cluster, with the server's own
	// certificate files instead of the admin credentials.
	cfg, err := clientcmd.LoadFromFile(mc.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("maestro authorizer: read kubeconfig: %w", err)
	}
	for name, ai := range cfg.AuthInfos {
		ai.ClientCertificateData, ai.ClientKeyData = nil, nil
		ai.ClientCertificate, ai.ClientKey = o.ServerCertFile, o.ServerKeyFile
		cfg.AuthInfos[name] = ai
	}
	path := filepath.Join(o.Cluster.Dir, "maestro-server.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, fmt.Errorf("maestro authorizer: write kubeconfig: %w", err)
	}
	return &MaestroAuthorizer{Cluster: mc, Kubeconfig: path}, nil
}
