package localregion

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/mgmtclustertest"
)

// TestAdminReaderKubeconfigIsReadOnly: the kubeconfig the admin API reads a management cluster
// with reads what the admin API needs and nothing more, even when its holder edits it (a
// client-side restriction, such as impersonation, is no restriction).
func TestAdminReaderKubeconfigIsReadOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	mc := mgmtclustertest.Start(ctx, t, "reader")
	// kube-system and the like may never be deleted (NamespaceLifecycle says Forbidden to
	// anyone), so the delete probe needs a namespace the cluster admin could delete.
	if _, err := kubernetes.NewForConfigOrDie(mc.RESTConfig()).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deletable"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path, err := applyAdminReader(ctx, mc, filepath.Join(dir, "identities"))
	if err != nil {
		t.Fatal(err)
	}

	// as is the kubeconfig as written, and with every client-side restriction removed.
	load := func(t *testing.T, stripped bool) *rest.Config {
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if stripped {
			for _, ai := range cfg.AuthInfos {
				ai.Impersonate, ai.ImpersonateUID, ai.ImpersonateGroups, ai.ImpersonateUserExtra = "", "", nil, nil
			}
		}
		rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	for _, stripped := range []bool{false, true} {
		name := "as_written"
		if stripped {
			name = "impersonation_removed"
		}
		t.Run(name, func(t *testing.T) {
			rc := load(t, stripped)
			kube := kubernetes.NewForConfigOrDie(rc)
			dyn := dynamic.NewForConfigOrDie(rc)

			review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("who am I: %v", err)
			}
			if u := review.Status.UserInfo; u.Username != mgmtclusters.ReaderUser {
				t.Errorf("acts as %q (groups %v), want %q", u.Username, u.Groups, mgmtclusters.ReaderUser)
			}
			hc := schema.GroupVersionResource{Group: "hypershift.openshift.io", Version: "v1beta1", Resource: "hostedclusters"}
			if _, err := dyn.Resource(hc).List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("list HostedClusters (a read the admin API needs): %v", err)
			}
			if _, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("list events (a read the admin API needs): %v", err)
			}
			_, err = kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "reader-"}}, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) {
				t.Errorf("create ConfigMap: %v, want Forbidden", err)
			}
			if err := kube.CoreV1().Namespaces().Delete(ctx, "deletable", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("delete namespace: %v, want Forbidden", err)
			}
			if _, err := kube.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("list Secrets: %v, want Forbidden", err)
			}
		})
	}
}
