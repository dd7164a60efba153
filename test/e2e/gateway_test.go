package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/hostedrbac"
)

// lockedBuffer is a bytes.Buffer a running command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGatewayWatchIsCutWhenTheSessionCloses is the SRE's path through the break-glass gateway
// with kubectl: `kubectl get configmaps -A -w` streams what the customer writes on the hosted
// cluster's own API server, another SRE presenting the session is refused, and closing the
// session ends the open watch within seconds; the gateway's audit names the watch.
func TestGatewayWatchIsCutWhenTheSessionCloses(t *testing.T) {
	needsOwnRegion(t, "reads hypershift-sim's audit log in its log directory")
	hcpctlBin, kubectlBin := hcpctlBinary(t), kubectlBinary(t)
	sub, rg := uuid.NewString(), "rg-gateway-watch"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, "gateway-watch")
	cl, mc := createCluster(t, path, clusterBody(sub, rg))
	hcs := hostedClusters(t, mc, cl.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s", len(hcs), cl.GetId())
	}
	hcpNS := hcs[0].GetNamespace() + "-" + hcs[0].GetName()
	server := apiURL(t, path)
	customer := customerKubeconfig(t, path, uuid.NewString(), server)
	reason := "e2e gateway watch " + uuid.NewString()
	kc := filepath.Join(t.TempDir(), "sre.kubeconfig")

	out, stderr, code := hcpctl(t, hcpctlBin, "--as", "sre-readonly", "breakglass", "open", path, "--ttl", "30m", "--kubeconfig", kc, "--reason", reason, "-o", "json")
	var sess adminapi.BreakGlassSession
	if code != 0 || json.Unmarshal([]byte(out), &sess) != nil || sess.State != adminapi.StateActive {
		t.Fatalf("open: exit %d:\n%s%s", code, out, stderr)
	}

	// Another SRE, with their own certificate, presenting this session: refused.
	other, err := region.Info.Admin.SRE(access.GroupAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if other.Person == sess.Person {
		t.Fatalf("the region's admin SRE is the session's owner %q", sess.Person)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.ClientCertificate, a.ClientKey = other.CertFile, other.KeyFile
	}
	stolen := filepath.Join(t.TempDir(), "stolen.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, stolen); err != nil {
		t.Fatal(err)
	}
	if _, err := whoAmI(t, stolen); !apierrors.IsForbidden(err) {
		t.Fatalf("%s presenting %s's session: %v, want 403", other.Person, sess.Person, err)
	}

	// The watch, through the gateway, as the SRE would run it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	watch := exec.CommandContext(ctx, kubectlBin, "--kubeconfig", kc, "--cache-dir", filepath.Join(dir, "cache"), "get", "configmaps", "-A", "-w", "-o", "name")
	watch.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	var wout, werr lockedBuffer
	watch.Stdout, watch.Stderr = &wout, &werr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- watch.Wait() }()
	name := "watched-" + strings.ToLower(uuid.NewString()[:8])
	if out, stderr, err := kubectl(t, kubectlBin, customer, "create", "configmap", name, "-n", "default", "--from-literal=k=v"); err != nil {
		t.Fatalf("the customer writes a configmap: %v\n%s%s", err, out, stderr)
	}
	eventually(t, time.Minute, "the SRE's watch streams the customer's configmap", func() error {
		select {
		case err := <-ended:
			t.Fatalf("the watch ended before the close: %v\n%s%s", err, wout.String(), werr.String())
		default:
		}
		if !strings.Contains(wout.String(), "configmap/"+name) {
			return fmt.Errorf("watch output so far: %q", wout.String())
		}
		return nil
	})

	if out, stderr, code := hcpctl(t, hcpctlBin, "--as", "sre-admin", "breakglass", "close", sess.ID, "--reason", reason); code != 0 {
		t.Fatalf("close: exit %d:\n%s%s", code, out, stderr)
	}
	select {
	case <-ended:
		t.Logf("watch ended at the close: %s", strings.TrimSpace(werr.String()))
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch is still open 30s after its session closed:\n%s", wout.String())
	}
	if _, err := whoAmI(t, kc); !apierrors.IsForbidden(err) {
		t.Fatalf("a request on the closed session: %v, want 403", err)
	}
	out, _, _ = hcpctl(t, hcpctlBin, "audit", "--route", "gateway", "--limit", "100", "-o", "json")
	var audited adminapi.AuditList
	if err := json.Unmarshal([]byte(out), &audited); err != nil {
		t.Fatalf("hcpctl audit -o json: %v\n%s", err, out)
	}
	watched := false
	for _, e := range audited.Entries {
		watched = watched || e.Target == sess.ID && e.Method == "watch" && e.Person == sess.Person && strings.Contains(e.Path, "configmaps")
	}
	if !watched {
		t.Fatalf("the gateway's audit does not show the session's watch:\n%s", out)
	}
	// And on the hosted side: the hosted kube-apiserver's audit log shows the person,
	// impersonated by the session's certificate, watching.
	eventually(t, time.Minute, "the hosted audit log records the SRE's watch", func() error {
		b, err := os.ReadFile(hypershiftsim.AuditLogPath(region.Info.LogDir, hcpNS))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			var ev struct {
				Verb             string
				User             struct{ Username string }
				ImpersonatedUser *struct{ Username string }
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Verb == "watch" && ev.User.Username == "system:sre-break-glass:"+sess.Person &&
				ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == hostedrbac.SREImpersonatedUser(sess.Person) {
				return nil
			}
		}
		return fmt.Errorf("no watch by %s in %d bytes of the hosted audit log", sess.Person, len(b))
	})
}
