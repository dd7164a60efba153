package hypershiftsim_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
	"github.com/openhcp/openhcp/internal/hostedrbac"
)

// hostedEnv is a management cluster of its own (envtest: kube-apiserver + etcd) and a sim with
// hosted kube-apiservers (each with its own etcd) enabled. It is separate from TestMain's, whose sim runs
// none: two sims on one management cluster would both reconcile every HostedCluster.
type hostedEnv struct {
	cfg  *rest.Config
	c    client.Client
	opts hypershiftsim.Options
	stop func() // stops the sim (its manager), waiting for it
}

func startHostedEnv(t *testing.T, max int, tweak ...func(*hypershiftsim.HostedAPIOptions)) *hostedEnv {
	t.Helper()
	if k8s == nil {
		t.Skip("needs a kube-apiserver and etcd; skipped in -short mode")
	}
	ctx := context.Background()
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	assets := filepath.Join(dir, "assets")
	if err := os.MkdirAll(assets, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"kube-apiserver": apiserver, "etcd": etcd} {
		if err := os.Symlink(target, filepath.Join(assets, name)); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := crds.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: defs}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	e := &hostedEnv{cfg: cfg, c: c, opts: hypershiftsim.Options{
		AvailableDelay: time.Second, DeleteDelay: time.Second,
		BreakGlass: hypershiftsim.BreakGlassOptions{RevokeDelay: time.Second},
		HostedAPI: hypershiftsim.HostedAPIOptions{
			Max: max, APIServerPath: apiserver, EtcdPath: etcd, Dir: filepath.Join(dir, "hosted"), LogDir: filepath.Join(dir, "logs"),
			HealthInterval: 2 * time.Second,
		},
	}}
	for _, f := range tweak {
		f(&e.opts.HostedAPI)
	}
	e.startSim(t)
	t.Cleanup(func() { e.stop() })
	return e
}

// startSim starts a sim (a new manager) against the environment's management cluster.
func (e *hostedEnv) startSim(t *testing.T) {
	t.Helper()
	scheme, err := hypershiftsim.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	skip := true
	mgr, err := ctrl.NewManager(e.cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		// TestMain's sim registered the same controller names in this process.
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hypershiftsim.Setup(mgr, e.opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim: %v", err)
		}
		e.stop = func() {}
	}
}

// poll calls check until it returns nil, failing the test after timeout.
func poll(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *hostedEnv) hostedCluster(t *testing.T, key types.NamespacedName, check func(*hyperv1.HostedCluster) error) *hyperv1.HostedCluster {
	t.Helper()
	hc := &hyperv1.HostedCluster{}
	poll(t, 3*time.Minute, "HostedCluster "+key.String(), func() error {
		if err := e.c.Get(context.Background(), key, hc); err != nil {
			return err
		}
		return check(hc)
	})
	return hc
}

func condIs(hc *hyperv1.HostedCluster, t string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(hc.Status.Conditions, t)
	if c == nil || c.Status != status || (reason != "" && c.Reason != reason) {
		return fmt.Errorf("condition %s = %+v, want %s %s", t, c, status, reason)
	}
	return nil
}

// signedBy issues a client certificate for cn/groups with the CA in a signer Secret (what the
// break-glass signer would issue for an approved CSR).
func signedBy(t *testing.T, certPEM, keyPEM []byte, cn string, groups ...string) tls.Certificate {
	t.Helper()
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		t.Fatal("signer secret does not hold PEM")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: groups},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (e *hostedEnv) secret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	poll(t, time.Minute, "secret "+ns+"/"+name, func() error {
		return e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s)
	})
	return s
}

// hostedClient is a clientset for the hosted kube-apiserver at ep, trusting only the hosted
// cluster's root-ca ConfigMap, presenting cert (and impersonating user/groups when set).
func (e *hostedEnv) hostedClient(t *testing.T, hcpNS string, ep hyperv1.APIEndpoint, cert tls.Certificate, user string, groups ...string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.hostedConfig(t, hcpNS, ep, cert, user, groups...))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// hostedConfig is the rest.Config of hostedClient.
func (e *hostedEnv) hostedConfig(t *testing.T, hcpNS string, ep hyperv1.APIEndpoint, cert tls.Certificate, user string, groups ...string) *rest.Config {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.RootCAConfigMap}, cm); err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{
		Host: "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))),
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte(cm.Data[hypershiftsim.CABundleKey]), CertData: certPEM,
			KeyData: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})},
		Timeout: 10 * time.Second,
	}
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	}
	return cfg
}

func listNamespaces(cs *kubernetes.Clientset) error {
	_, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	return err
}

// TestHostedAPIServer runs one served and one capped HostedCluster (cap 1) through their life:
// the served one's api endpoint answers with its own PKI, revocation makes the old customer
// certificate fail there, a restarted sim serves it on the same port with the same objects, and
// deleting it stops the apiserver and its etcd and removes their data.
func TestHostedAPIServer(t *testing.T) {
	e := startHostedEnv(t, 1)
	ctx := context.Background()
	ns := "hosted-api"
	if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	served := types.NamespacedName{Namespace: ns, Name: "served"}
	if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(ns, served.Name, image4197)); err != nil {
		t.Fatal(err)
	}
	hcpNS := hypershiftsim.ControlPlaneNamespace(served)
	var ep hyperv1.APIEndpoint

	if !t.Run("served_cluster_is_available_once_its_apiserver_answers_at_the_endpoint", func(t *testing.T) {
		hc := e.hostedCluster(t, served, func(hc *hyperv1.HostedCluster) error {
			if err := condIs(hc, string(hyperv1.HostedClusterAvailable), metav1.ConditionTrue, ""); err != nil {
				return err
			}
			return condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionTrue, hypershiftsim.ReasonHostedAPIServerRunning)
		})
		ep = hc.Status.ControlPlaneEndpoint
		if ep.Host != "127.0.0.1" || ep.Port <= 0 {
			t.Fatalf("controlPlaneEndpoint %+v, want 127.0.0.1 and a port", ep)
		}
		customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		cert := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, cert, "")); err != nil {
			t.Fatalf("customer certificate: list namespaces on the hosted apiserver: %v", err)
		}
	}) {
		return
	}

	if !t.Run("cluster_over_the_cap_is_status_only_and_says_so", func(t *testing.T) {
		capped := types.NamespacedName{Namespace: ns, Name: "capped"}
		if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(ns, capped.Name, image4197)); err != nil {
			t.Fatal(err)
		}
		hc := e.hostedCluster(t, capped, func(hc *hyperv1.HostedCluster) error {
			if err := condIs(hc, string(hyperv1.HostedClusterAvailable), metav1.ConditionTrue, ""); err != nil {
				return err
			}
			return condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionFalse, hypershiftsim.ReasonHostedAPIServerCapReached)
		})
		if c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftsim.HostedAPIServerCondition); !strings.Contains(c.Message, "1") {
			t.Errorf("CapReached message %q does not name the cap", c.Message)
		}
		if hc.Status.ControlPlaneEndpoint.Host == "127.0.0.1" {
			t.Errorf("capped cluster has a loopback endpoint %+v", hc.Status.ControlPlaneEndpoint)
		}
		for name, want := range map[string]float64{
			"hypershift_sim_hosted_apiservers_running": 1,
			"hypershift_sim_hosted_apiservers_capped":  1,
		} {
			if got := metricValue(t, name, nil); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		if got := metricValue(t, "hypershift_sim_hosted_apiserver_starts_total", map[string]string{"result": "ok"}); got < 1 {
			t.Errorf("hypershift_sim_hosted_apiserver_starts_total{result=ok} = %v, want at least 1", got)
		}
	}) {
		return
	}

	if !t.Run("sre_groups_may_only_impersonate_and_read_only_cannot_read_secrets", func(t *testing.T) {
		sre := e.secret(t, hcpNS, hypershiftsim.SRESignerSecret)
		ro := signedBy(t, sre.Data[corev1.TLSCertKey], sre.Data[corev1.TLSPrivateKeyKey], "system:sre-break-glass:bob", hostedrbac.SREBreakGlassReadOnlyGroup)
		poll(t, time.Minute, "RBAC in the hosted cluster", func() error {
			return listNamespaces(e.hostedClient(t, hcpNS, ep, ro, "bob", hostedrbac.SREReadOnlyGroup))
		})
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, ro, "")); !apierrors.IsForbidden(err) {
			t.Errorf("read-only break-glass certificate without impersonation: %v, want forbidden", err)
		}
		_, err := e.hostedClient(t, hcpNS, ep, ro, "bob", hostedrbac.SREReadOnlyGroup).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("openhcp:sre:read-only listing secrets: %v, want forbidden", err)
		}
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, ro, "bob", hostedrbac.SREAdminGroup)); !apierrors.IsForbidden(err) {
			t.Errorf("read-only break-glass certificate impersonating the admin group: %v, want forbidden", err)
		}
		admin := signedBy(t, sre.Data[corev1.TLSCertKey], sre.Data[corev1.TLSPrivateKeyKey], "system:sre-break-glass:carol", hostedrbac.SREBreakGlassAdminGroup)
		if _, err := e.hostedClient(t, hcpNS, ep, admin, "carol", hostedrbac.SREAdminGroup).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("admin break-glass certificate impersonating openhcp:sre:admin listing secrets: %v", err)
		}
		// The hosted cluster's audit log names the person and the certificate that impersonated
		// them.
		poll(t, time.Minute, "the audit event of carol's secrets list", func() error {
			b, err := os.ReadFile(hypershiftsim.AuditLogPath(e.opts.HostedAPI.LogDir, hcpNS))
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				var ev struct {
					Verb, RequestURI string
					User             struct{ Username string }
					ImpersonatedUser *struct{ Username string }
					ResponseStatus   struct{ Code int }
				}
				if json.Unmarshal([]byte(line), &ev) == nil && ev.Verb == "list" && strings.HasPrefix(ev.RequestURI, "/api/v1/namespaces/default/secrets") &&
					ev.User.Username == "system:sre-break-glass:carol" && ev.ImpersonatedUser != nil && ev.ImpersonatedUser.Username == "carol" && ev.ResponseStatus.Code == 200 {
					return nil
				}
			}
			return fmt.Errorf("no such event in %d bytes of audit log", len(b))
		})
	}) {
		return
	}

	if !t.Run("customer_revocation_refuses_the_old_certificate_and_keeps_sre", func(t *testing.T) {
		customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		old := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		sre := e.secret(t, hcpNS, hypershiftsim.SRESignerSecret)
		sreCert := signedBy(t, sre.Data[corev1.TLSCertKey], sre.Data[corev1.TLSPrivateKeyKey], "system:sre-break-glass:bob", hostedrbac.SREBreakGlassReadOnlyGroup)
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, old, "")); err != nil {
			t.Fatalf("before revocation: %v", err)
		}
		crr := &certificatesv1alpha1.CertificateRevocationRequest{ObjectMeta: metav1.ObjectMeta{Namespace: hcpNS, Name: "revoke-1"},
			Spec: certificatesv1alpha1.CertificateRevocationRequestSpec{SignerClass: hypershiftsim.CustomerBreakGlassSignerClass}}
		if err := e.c.Create(ctx, crr); err != nil {
			t.Fatal(err)
		}
		poll(t, 2*time.Minute, "PreviousCertificatesRevoked", func() error {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(crr), crr); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(crr.Status.Conditions, certificatesv1alpha1.PreviousCertificatesRevokedType) {
				return fmt.Errorf("conditions %+v", crr.Status.Conditions)
			}
			return nil
		})
		// Revoked means the apiserver already refuses it: no waiting here.
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, old, "")); !apierrors.IsUnauthorized(err) {
			t.Errorf("revoked customer certificate: %v, want 401 Unauthorized", err)
		}
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, sreCert, "bob", hostedrbac.SREReadOnlyGroup)); err != nil {
			t.Errorf("SRE certificate after a customer revocation: %v", err)
		}
		customer = e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		fresh := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		if err := listNamespaces(e.hostedClient(t, hcpNS, ep, fresh, "")); err != nil {
			t.Errorf("certificate of the new customer signer: %v", err)
		}
	}) {
		return
	}

	if !t.Run("restarted_sim_serves_on_the_same_port_and_keeps_available", func(t *testing.T) {
		before := e.hostedCluster(t, served, func(hc *hyperv1.HostedCluster) error {
			return condIs(hc, string(hyperv1.HostedClusterAvailable), metav1.ConditionTrue, "")
		})
		availableSince := meta.FindStatusCondition(before.Status.Conditions, string(hyperv1.HostedClusterAvailable)).LastTransitionTime
		customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		cert := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept-across-restarts"}, Data: map[string]string{"k": "v"}}
		if _, err := e.hostedClient(t, hcpNS, ep, cert, "").CoreV1().ConfigMaps("default").Create(ctx, kept, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now().Truncate(time.Second)
		e.stop()
		poll(t, time.Minute, "apiserver stopped with the sim", func() error {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), time.Second)
			if err == nil {
				c.Close()
				return errors.New("still listening")
			}
			return nil
		})
		e.startSim(t)
		poll(t, time.Minute, "hosted apiserver after restart", func() error {
			return listNamespaces(e.hostedClient(t, hcpNS, ep, cert, ""))
		})
		// Its etcd kept the cluster's objects.
		got, err := e.hostedClient(t, hcpNS, ep, cert, "").CoreV1().ConfigMaps("default").Get(ctx, kept.Name, metav1.GetOptions{})
		if err != nil || got.Data["k"] != "v" {
			t.Fatalf("a ConfigMap made before the restart: %+v, %v", got, err)
		}
		// The new sim reported the new process (NotReady while it started, then Running)...
		hc := e.hostedCluster(t, served, func(hc *hyperv1.HostedCluster) error {
			if err := condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionTrue, hypershiftsim.ReasonHostedAPIServerRunning); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftsim.HostedAPIServerCondition); c.LastTransitionTime.Time.Before(stopped) {
				return fmt.Errorf("HostedAPIServer Running since %s, before the restart", c.LastTransitionTime)
			}
			return nil
		})
		if hc.Status.ControlPlaneEndpoint != ep {
			t.Fatalf("endpoint after restart %+v, want %+v", hc.Status.ControlPlaneEndpoint, ep)
		}
		// ...and the cluster did not stop being Available meanwhile.
		if c := meta.FindStatusCondition(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable)); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(&availableSince) {
			t.Errorf("Available after restart %s since %s, want True since %s", c.Status, c.LastTransitionTime, availableSince)
		}
	}) {
		return
	}

	if !t.Run("a_killed_etcd_is_started_again_with_its_apiserver_and_keeps_the_objects", func(t *testing.T) {
		before := hostedEtcdPID(t, e.opts.HostedAPI.Dir, hcpNS)
		oldSockets := hostedEtcdSocketDir(t, before)
		if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		customer := e.secret(t, hcpNS, hypershiftsim.CustomerSignerSecret)
		cert := signedBy(t, customer.Data[corev1.TLSCertKey], customer.Data[corev1.TLSPrivateKeyKey], "system:customer-break-glass:alice", "system:masters")
		poll(t, 2*time.Minute, "the ConfigMap read through a new etcd", func() error {
			b, err := os.ReadFile(filepath.Join(e.opts.HostedAPI.Dir, hcpNS, "etcd.pid"))
			if err != nil {
				return err
			}
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid == before {
				return fmt.Errorf("etcd pid still %d", pid)
			}
			got, err := e.hostedClient(t, hcpNS, ep, cert, "").CoreV1().ConfigMaps("default").Get(ctx, "kept-across-restarts", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Data["k"] != "v" {
				return fmt.Errorf("data %v", got.Data)
			}
			return nil
		})
		if _, err := os.Stat(oldSockets); !os.IsNotExist(err) {
			t.Errorf("the killed etcd's socket directory %s: %v, want removed", oldSockets, err)
		}
	}) {
		return
	}

	if !t.Run("delete_stops_the_apiserver_and_its_etcd_and_removes_their_data", func(t *testing.T) {
		etcdPID := hostedEtcdPID(t, e.opts.HostedAPI.Dir, hcpNS)
		sockets := hostedEtcdSocketDir(t, etcdPID)
		hc := &hyperv1.HostedCluster{}
		if err := e.c.Get(ctx, served, hc); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(ctx, hc); err != nil {
			t.Fatal(err)
		}
		poll(t, 2*time.Minute, "HostedCluster gone", func() error {
			err := e.c.Get(ctx, served, hc)
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), time.Second); err == nil {
			c.Close()
			t.Errorf("the hosted apiserver still listens after its HostedCluster is gone")
		}
		if _, err := os.Stat(filepath.Join(e.opts.HostedAPI.Dir, hcpNS)); !os.IsNotExist(err) {
			t.Errorf("on-disk files of %s: %v, want removed", hcpNS, err)
		}
		if hypershiftsim.ProcessRunning(etcdPID) {
			t.Errorf("the hosted etcd %d of %s still runs after its HostedCluster is gone", etcdPID, hcpNS)
		}
		if _, err := os.Stat(sockets); !os.IsNotExist(err) {
			t.Errorf("the hosted etcd's socket directory %s: %v, want removed", sockets, err)
		}
	}) {
		return
	}
}

// hostedEtcdPID is the pid of a control plane's running etcd, from the pid file the sim keeps
// in its directory.
func hostedEtcdPID(t *testing.T, dir, hcpNS string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, hcpNS, "etcd.pid"))
	if err != nil {
		t.Fatalf("the etcd pid file of %s: %v", hcpNS, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !hypershiftsim.ProcessRunning(pid) {
		t.Fatalf("the etcd of %s: pid %q (%v) is not running", hcpNS, b, err)
	}
	return pid
}

// hostedEtcdSocketDir is the socket directory of the running etcd pid, from its command line
// (--listen-client-urls=unixs://<dir>/localhost).
func hostedEtcdSocketDir(t *testing.T, pid int) string {
	t.Helper()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range strings.Split(string(cmdline), "\x00") {
		if url, ok := strings.CutPrefix(arg, "--listen-client-urls="); ok {
			socket, err := mgmtcluster.EtcdSocketPath(url)
			if err != nil {
				t.Fatal(err)
			}
			return filepath.Dir(socket)
		}
	}
	t.Fatalf("etcd %d has no --listen-client-urls: %q", pid, cmdline)
	return ""
}

// metricValue reads a gauge or counter (with these labels) from the sim's metrics registry.
func metricValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s%v not registered", name, labels)
	return 0
}
