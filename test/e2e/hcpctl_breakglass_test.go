package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/internal/hostedrbac"
)

// TestHcpctlBreakGlass opens SRE break-glass sessions through hcpctl against the running region
// and uses them with client-go through the break-glass gateway, against the hosted cluster's
// real kube-apiserver: the kubeconfig holds the SRE's own certificate only, the hosted
// apiserver sees the person (impersonated by the gateway) in the session's group, an admin
// session is refused until a second sre-admin approves it, and a closed or revoked session is
// refused. Every request through the gateway is in the admin audit log.
func TestHcpctlBreakGlass(t *testing.T) {
	bin := hcpctlBinary(t)
	sub, rg := uuid.NewString(), "rg-hcpctl-breakglass"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "sre-breakglass")
	cl, _ := createCluster(t, path, clusterBody(sub, rg))
	reason := "e2e break-glass " + uuid.NewString()
	dir := t.TempDir()
	kcFile, kcAdmin, kcRevoked := filepath.Join(dir, "sre.kubeconfig"), filepath.Join(dir, "admin.kubeconfig"), filepath.Join(dir, "revoked.kubeconfig")

	// Refusals first: they name the flag, and a read-only SRE cannot ask for admin.
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"ttl_out_of_bounds_names_ttl", []string{"--as", "sre-admin", "breakglass", "open", cl.GetId(), "--ttl", "9h", "--kubeconfig", kcFile, "--reason", reason}, 1, "--ttl"},
		{"readonly_may_not_ask_for_admin", []string{"--as", "sre-readonly", "breakglass", "open", cl.GetId(), "--access", "admin", "--kubeconfig", kcFile, "--reason", reason}, 1, "Forbidden"},
		{"unknown_cluster_is_named", []string{"--as", "sre-admin", "breakglass", "open", "0000000000000000000000000000000v", "--kubeconfig", kcFile, "--reason", reason}, 1, "0000000000000000000000000000000v"},
		{"kubeconfig_is_required", []string{"breakglass", "open", cl.GetId(), "--reason", reason}, 2, "--kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := hcpctl(t, bin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d naming %q:\n%s%s", code, tc.code, tc.want, out, stderr)
			}
		})
	}
	if _, err := os.Stat(kcFile); !os.IsNotExist(err) {
		t.Fatalf("a refused request left %s: %v", kcFile, err)
	}

	// Admin access waits for a second sre-admin, and the requester cannot be the second; the
	// gateway refuses the session meanwhile.
	out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "breakglass", "open", path, "--access", "admin", "--ttl", "30m", "--kubeconfig", kcAdmin, "--reason", reason, "-o", "json")
	var pending adminapi.BreakGlassSession
	if code != 0 || json.Unmarshal([]byte(out), &pending) != nil || pending.State != adminapi.StateAwaitingApproval {
		t.Fatalf("admin open: exit %d, want awaiting-approval:\n%s%s", code, out, stderr)
	}
	if _, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "breakglass", "approve", pending.ID, "--reason", reason); code == 0 || !strings.Contains(stderr, "Forbidden") {
		t.Fatalf("self-approval: exit %d:\n%s", code, stderr)
	}
	if _, err := whoAmI(t, kcAdmin); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "awaiting-approval") {
		t.Fatalf("an unapproved admin session through the gateway: %v, want 403 awaiting-approval", err)
	}

	out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "breakglass", "open", path, "--access", "read-only", "--ttl", "30m", "--kubeconfig", kcFile, "--reason", reason, "-o", "json")
	if code != 0 {
		t.Fatalf("open: exit %d:\n%s%s", code, out, stderr)
	}
	var sess adminapi.BreakGlassSession
	if err := json.Unmarshal([]byte(out), &sess); err != nil || sess.ID == "" || sess.State != adminapi.StateActive || sess.Person == "" ||
		strings.Contains(out, "CERTIFICATE") || strings.Contains(out, "client-key") {
		t.Fatalf("open output (active, no credential): %v\n%s", err, out)
	}
	fi, err := os.Stat(kcFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v mode %v, want 0600", err, fi.Mode())
	}
	cfg, err := clientcmd.LoadFromFile(kcFile)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if server, auth := cfg.Clusters[cur.Cluster].Server, cfg.AuthInfos[cur.AuthInfo]; !strings.HasSuffix(server, "/sessions/"+sess.ID) ||
		len(auth.ClientCertificateData) != 0 || auth.ClientCertificate == "" {
		t.Fatalf("kubeconfig server %s, user %+v: want the gateway's session URL and the SRE's own certificate file", server, auth)
	}
	// The hosted apiserver answers as the person, in the read-only group, through the gateway.
	user, err := whoAmI(t, kcFile)
	if err != nil || user.Username != hostedrbac.SREImpersonatedUser(sess.Person) || !slices.Contains(user.Groups, breakglass.SREImpersonatedGroupReadOnly) {
		t.Fatalf("who the hosted apiserver sees: %+v %v, want %s in %s", user, err, sess.Person, breakglass.SREImpersonatedGroupReadOnly)
	}
	kube := gatewayClient(t, kcFile)
	if _, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("read-only session lists namespaces: %v", err)
	}
	_, err = kube.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sre-write"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("read-only session writes: %v, want 403", err)
	}

	out, stderr, code = hcpctl(t, bin, "breakglass", "list", "--cluster", cl.GetId())
	if code != 0 || !strings.HasPrefix(out, "SESSION") || !strings.Contains(out, sess.ID) || !strings.Contains(out, "active") {
		t.Fatalf("list: exit %d:\n%s%s", code, out, stderr)
	}
	t.Logf("$ hcpctl breakglass list --cluster %s\n%s", cl.GetId(), out)
	// -o wide adds the request's path (the default table has no room for it).
	out, _, _ = hcpctl(t, bin, "audit", "--route", "gateway", "--limit", "50", "-o", "wide")
	if !strings.Contains(out, sess.ID) || !strings.Contains(out, "selfsubjectreviews") {
		t.Fatalf("the gateway's requests are not in the audit log:\n%s", out)
	}

	// Closed: the gateway refuses it.
	if out, stderr, code := hcpctl(t, bin, "--as", "sre-admin", "breakglass", "close", sess.ID, "--reason", reason); code != 0 || !strings.Contains(out, "closed") {
		t.Fatalf("close: exit %d:\n%s%s", code, out, stderr)
	}
	if _, err := whoAmI(t, kcFile); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("a closed session through the gateway: %v, want 403 closed", err)
	}

	// Revoked: the session is refused and the cluster's SRE signer rotates.
	out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "breakglass", "open", path, "--ttl", "30m", "--kubeconfig", kcRevoked, "--reason", reason, "-o", "json")
	var rev adminapi.BreakGlassSession
	if code != 0 || json.Unmarshal([]byte(out), &rev) != nil {
		t.Fatalf("open: exit %d:\n%s%s", code, out, stderr)
	}
	out, stderr, code = hcpctl(t, bin, "--as", "sre-admin", "breakglass", "revoke", "--session", rev.ID, "--reason", reason)
	if code != 0 || !strings.Contains(out, cl.GetId()) {
		t.Fatalf("revoke: exit %d:\n%s%s", code, out, stderr)
	}
	if _, err := whoAmI(t, kcRevoked); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("a revoked session through the gateway: %v, want 403 revoked", err)
	}
	eventually(t, 2*time.Minute, "sessions listed closed and revoked", func() error {
		out, stderr, code := hcpctl(t, bin, "breakglass", "list", "--cluster", cl.GetId(), "--all", "-o", "json")
		var l adminapi.BreakGlassSessions
		if code != 0 || json.Unmarshal([]byte(out), &l) != nil {
			return fmt.Errorf("list --all: exit %d %s%s", code, out, stderr)
		}
		states := map[string]string{}
		for _, s := range l.Sessions {
			states[s.ID] = s.State
		}
		if states[sess.ID] != adminapi.StateClosed || states[rev.ID] != adminapi.StateRevoked || states[pending.ID] != adminapi.StateAwaitingApproval {
			return fmt.Errorf("states %v", states)
		}
		return nil
	})
	out, _, _ = hcpctl(t, bin, "audit", "--route", "POST /admin/v1/breakglass", "--limit", "20")
	if !strings.Contains(out, "hcpOpenShiftClusters/sre-breakglass") {
		t.Fatalf("the open (by ARM ID) is not in the audit log:\n%s", out)
	}
}

// gatewayClient is a client of the kubeconfig hcpctl wrote: it talks to the gateway.
func gatewayClient(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// whoAmI asks the hosted apiserver, through the gateway, who it sees (kubectl auth whoami).
func whoAmI(t *testing.T, kubeconfig string) (authnv1.UserInfo, error) {
	t.Helper()
	r, err := gatewayClient(t, kubeconfig).AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}
