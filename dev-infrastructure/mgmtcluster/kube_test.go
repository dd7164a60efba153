package mgmtcluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

func TestManagementCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver (and may build them first)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: "mc-test", Dir: filepath.Join(dir, "state"), LogDir: filepath.Join(dir, "logs"),
		APIServerPath: apiserver, EtcdPath: etcd,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Stop()
	t.Logf("etcd + kube-apiserver ready with CRDs Established in %s", mc.StartupDuration)

	for _, log := range []string{"mc-test-etcd.log", "mc-test-kube-apiserver.log"} {
		if _, err := os.Stat(filepath.Join(dir, "logs", log)); err != nil {
			t.Errorf("process log %s: %v", log, err)
		}
	}

	t.Run("crds_are_established", func(t *testing.T) {
		cs, err := apiextensionsclient.NewForConfig(mc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{crds.HostedClusters, crds.NodePools, crds.ManifestWorks, crds.AppliedManifestWorks} {
			crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get CRD %s: %v", name, err)
			}
			if !crds.IsEstablished(crd) {
				t.Errorf("CRD %s not Established: %+v", name, crd.Status.Conditions)
			}
		}
	})

	t.Run("crd_install_is_idempotent", func(t *testing.T) {
		if err := crds.Install(ctx, mc.RESTConfig()); err != nil {
			t.Fatalf("second Install: %v", err)
		}
	})

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := hyperv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}

	t.Run("hostedcluster_round_trips_through_kubeconfig_file", func(t *testing.T) {
		// Go through the written kubeconfig, as the maestro agent and hypershift-sim do.
		cfg, err := clientcmd.BuildConfigFromFlags("", mc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != mc.Host {
			t.Errorf("kubeconfig server %q, want %q", cfg.Host, mc.Host)
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		hc := hypershiftsim.ExampleHostedCluster("clusters", "example", "quay.io/openshift-release-dev/ocp-release:4.19.7-multi")
		if err := c.Create(ctx, hc); err != nil {
			t.Fatalf("create HostedCluster: %v", err)
		}
		got := &hyperv1.HostedCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(hc), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Release.Image != hc.Spec.Release.Image || got.UID == "" || got.Generation != 1 {
			t.Errorf("read back %q uid=%q generation=%d", got.Spec.Release.Image, got.UID, got.Generation)
		}
		// The structural schema applies defaults: proof the real CRD, not a permissive one, is served.
		if got.Spec.ControllerAvailabilityPolicy == "" {
			t.Errorf("spec.controllerAvailabilityPolicy not defaulted by the CRD schema")
		}
	})

	t.Run("crd_validation_rejects_invalid_hostedcluster", func(t *testing.T) {
		c, err := client.New(mc.RESTConfig(), client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		bad := &hyperv1.HostedCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "bad"},
			Spec:       hyperv1.HostedClusterSpec{Platform: hyperv1.PlatformSpec{Type: "NotAPlatform"}},
		}
		err = c.Create(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "Unsupported value") {
			t.Fatalf("create with invalid platform: got %v, want an Unsupported value error", err)
		}
	})

	t.Run("deleted_namespace_stays_terminating_without_controller_manager", func(t *testing.T) {
		c, err := client.New(mc.RESTConfig(), client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, ns); err != nil {
			t.Fatal(err)
		}
		got := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ns), got); err != nil {
			t.Fatalf("namespace gone: %v (documented behaviour is that it stays Terminating)", err)
		}
		if got.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("namespace phase %q, want Terminating", got.Status.Phase)
		}
	})

	t.Run("a_client_certificate_of_the_cluster_CA_gets_what_RBAC_grants", func(t *testing.T) {
		kube, err := kubernetes.NewForConfig(mc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-only"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-only"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-only"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "metrics-reader"}}}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cert, key, ca, err := mc.WriteClientCertificate(filepath.Join(dir, "reader"), "reader", "metrics-reader", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := mc.WriteClientCertificate(filepath.Join(dir, "reader"), "admin", "x", []string{"system:masters"}); err == nil {
			t.Error("a client certificate in group system:masters was issued")
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		caPEM, err := os.ReadFile(ca)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			t.Fatal("the CA file written holds no certificate")
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
		// RBAC takes a moment to see a new binding.
		var codes map[string]int
		deadline := time.Now().Add(30 * time.Second)
		for {
			codes = map[string]int{}
			for _, path := range []string{"/metrics", "/api/v1/namespaces"} {
				resp, err := c.Get(mc.Host + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				codes[path] = resp.StatusCode
			}
			if codes["/metrics"] == http.StatusOK || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if codes["/metrics"] != http.StatusOK || codes["/api/v1/namespaces"] != http.StatusForbidden {
			t.Errorf("metrics-reader got %v, want /metrics 200 and /api/v1/namespaces 403", codes)
		}
	})

	t.Run("the_apiserver_alone_stops_and_restarts_on_its_port_with_its_objects", func(t *testing.T) {
		old := mc.APIServer
		mc.StopAPIServer()
		if exited, _ := old.Exited(); !exited {
			t.Fatal("StopAPIServer returned with the apiserver running")
		}
		if exited, _ := mc.Etcd.Exited(); exited {
			t.Fatal("StopAPIServer stopped etcd too")
		}
		admin, err := rest.HTTPClientFor(mc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := admin.Get(mc.Host + "/readyz"); err == nil {
			resp.Body.Close()
			t.Fatalf("/readyz answered %d with the apiserver stopped", resp.StatusCode)
		}
		p, err := mc.RestartAPIServer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p == old || mc.APIServer != p {
			t.Fatal("APIServer is not the restarted process")
		}
		kube, err := kubernetes.NewForConfig(mc.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Namespaces().Get(ctx, "clusters", metav1.GetOptions{}); err != nil {
			t.Fatalf("namespace made before the restart: %v", err)
		}
	})

	t.Run("restart_keeps_objects_and_credentials", func(t *testing.T) {
		mc.Stop()
		mc2, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
			Name: "mc-test", Dir: filepath.Join(dir, "state"), LogDir: filepath.Join(dir, "logs"),
			APIServerPath: apiserver, EtcdPath: etcd,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer mc2.Stop()
		t.Logf("restart on existing state ready in %s", mc2.StartupDuration)
		c, err := client.New(mc2.RESTConfig(), client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		got := &hyperv1.HostedCluster{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: "example"}, got); err != nil {
			t.Fatalf("HostedCluster lost across restart: %v", err)
		}
	})
}

// BenchmarkManagementClusterStart measures a cold start (fresh state dir: PKI generation, etcd,
// kube-apiserver to /readyz, CRDs Established) and reports the apiserver's and etcd's resident
// memory right after.
func BenchmarkManagementClusterStart(b *testing.B) {
	ctx := context.Background()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	var apiRSS, etcdRSS float64
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		mc, err := mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
			Name: "bench", Dir: filepath.Join(dir, "state"), LogDir: dir, APIServerPath: apiserver, EtcdPath: etcd,
		})
		if err != nil {
			b.Fatal(err)
		}
		total += mc.StartupDuration
		apiRSS += rssMB(b, mc.APIServer.PID())
		etcdRSS += rssMB(b, mc.Etcd.PID())
		mc.Stop()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
	b.ReportMetric(apiRSS/float64(b.N), "apiserver-MB")
	b.ReportMetric(etcdRSS/float64(b.N), "etcd-MB")
}

func rssMB(b *testing.B, pid int) float64 {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}
