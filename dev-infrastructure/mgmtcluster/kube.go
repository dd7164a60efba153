package mgmtcluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"github.com/openhcp/openhcp/internal/atomicfile"
	"github.com/openhcp/openhcp/internal/encryptionconfig"
	"github.com/openhcp/openhcp/internal/pki"
)

// The management clusters run a real kube-apiserver and etcd, built from the pinned tool module
// (DESIGN.md §3.5). These ldflags must stay byte-identical to the Makefile's KUBE_LDFLAGS: they
// are part of hack/tool.sh's cache key, and a difference means a second multi-minute build.
const (
	kubeToolsModule     = "dev-infrastructure/kube-tools"
	kubeAPIServerPkg    = "k8s.io/kubernetes/cmd/kube-apiserver"
	kubeCMPkg           = "k8s.io/kubernetes/cmd/kube-controller-manager"
	etcdPkg             = "./cmd/etcd"
	kubeAPIServerLDFlag = "-X k8s.io/component-base/version.gitVersion=v1.32.13 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=32"
)

// KubeBinaries returns the paths of the pinned kube-apiserver and etcd, building them into the
// tool cache on first use (minutes on 2 cores; progress goes to stderr) and returning at once
// afterwards. The repository root is $OPENHCP_ROOT or the nearest directory above the working
// directory that holds go.work.
func KubeBinaries(ctx context.Context) (apiserver, etcd string, err error) {
	apiserver, err = toolBinary(ctx, "kube-apiserver", kubeToolsModule, kubeAPIServerPkg, kubeAPIServerLDFlag)
	if err != nil {
		return "", "", err
	}
	etcd, err = toolBinary(ctx, "etcd", kubeToolsModule, etcdPkg, "")
	if err != nil {
		return "", "", err
	}
	return apiserver, etcd, nil
}

// KubeControllerManagerBinary returns the pinned kube-controller-manager, built like the
// apiserver (same module, same ldflags).
func KubeControllerManagerBinary(ctx context.Context) (string, error) {
	return toolBinary(ctx, "kube-controller-manager", kubeToolsModule, kubeCMPkg, kubeAPIServerLDFlag)
}

// managementControllers are the kube-controller-manager controllers a management cluster runs:
// the namespace controller (a deleted namespace is emptied and removed, so a ManifestWork that
// owns a namespace can finish deleting) and the garbage collector (ownerReferences cascade).
// Nothing that needs nodes, pods or cloud runs.
const managementControllers = "namespace,garbagecollector"

// ManagementClusterOptions configures StartManagementCluster.
type ManagementClusterOptions struct {
	// Name identifies the cluster; process logs are <LogDir>/<Name>-etcd.log and
	// <Name>-kube-apiserver.log.
	Name string
	// Dir holds the cluster's state: pki/, etcd/ and the kubeconfig. The PKI and etcd data are
	// reused when Dir already has them, so a restart keeps the cluster's objects and credentials.
	Dir           string
	LogDir        string
	APIServerPath string
	EtcdPath      string
	// ControllerManagerPath, when set, also runs kube-controller-manager with the namespace and
	// garbage-collector controllers (see managementControllers). Without it a deleted namespace
	// stays Terminating for ever.
	ControllerManagerPath string
	// ReadyTimeout bounds the wait for etcd health and apiserver /readyz; zero means 90s.
	ReadyTimeout time.Duration
	// ExtraClientCAFile, when set, is a CA whose client certificates the apiserver accepts too
	// (user = CN, groups = O), beside its own: the region's services can then authenticate
	// with their region certificates. RBAC still decides what they may do.
	ExtraClientCAFile string
	// SkipCRDs leaves out the management CRDs, for a cluster that hosts no HyperShift.
	SkipCRDs bool
	// ServerNames are more DNS names for the apiserver's serving certificate, besides localhost
	// and the kubernetes Service's (make deploy's second stamp: the Service the node's pods reach
	// it by). They are issued with a new PKI only: a PKI kept in Dir keeps its names.
	ServerNames []string
}

// ManagementCluster is a running etcd + kube-apiserver pair with the management CRDs installed,
// and, when ControllerManagerPath is set, a kube-controller-manager running only the namespace
// and garbage-collector controllers.
//
// Nothing else runs: no scheduler, no kubelet, no service-account controllers. Without the
// controller manager a deleted namespace stays Terminating for ever (its "kubernetes" finalizer
// is never removed) and ownerReferences never cascade; that is genuine apiserver behaviour, not
// an emulation. The ServiceAccount admission plugin is disabled so pods can still be created.
type ManagementCluster struct {
	Name string
	// Kubeconfig is the path of a kubeconfig file with the admin client certificate
	// (group system:masters).
	Kubeconfig string
	// Host is the apiserver URL, https://127.0.0.1:<port>.
	Host string
	// StartupDuration is how long it took from starting etcd to the CRDs being Established.
	StartupDuration time.Duration

	APIServer         *Process
	Etcd              *Process
	ControllerManager *Process

	// etcdSockets is etcd's socket directory, removed by Stop.
	etcdSockets etcdSockets
	restConfig  *rest.Config
	// clientCA is the client CA bundle the apiserver reads (its own CA, then the extra CA file's
	// contents); RefreshClientCA writes it again.
	clientCA       struct{ path, extra string }
	ownClientCAPEM []byte
	pkiDir         string
	// mu guards APIServer against RestartAPIServer replacing it while Stop reads it.
	mu sync.Mutex
}

// RefreshClientCA writes the apiserver's client CA bundle again from its own CA and the
// current contents of ManagementClusterOptions.ExtraClientCAFile (a CA rollover changes that
// file). The kube-apiserver re-reads its --client-ca-file by itself; the caller waits for it.
func (m *ManagementCluster) RefreshClientCA() error {
	if m.clientCA.extra == "" {
		return nil
	}
	extra, err := os.ReadFile(m.clientCA.extra)
	if err != nil {
		return fmt.Errorf("management cluster %s: extra client CA: %w", m.Name, err)
	}
	return atomicfile.Write(m.clientCA.path, append(append([]byte{}, m.ownClientCAPEM...), extra...), 0o600)
}

// WriteClientKubeconfig issues a client certificate of the cluster's CA for user and groups and
// writes a kubeconfig (mode 0600) that presents it: an identity the apiserver authenticates
// itself, so RBAC bindings to user (or a group) are all it may do. Nothing in the file can be
// edited to gain more. groups must not include system:masters.
func (m *ManagementCluster) WriteClientKubeconfig(path, user string, groups []string) error {
	certPEM, keyData, err := m.issueClient(user, groups)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[m.Name] = &clientcmdapi.Cluster{Server: m.Host, CertificateAuthorityData: m.restConfig.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyData}
	cfg.Contexts[m.Name] = &clientcmdapi.Context{Cluster: m.Name, AuthInfo: user}
	cfg.CurrentContext = m.Name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("client certificate for %s: %w", user, err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// issueClient issues a client certificate of the cluster's CA for user and groups.
func (m *ManagementCluster) issueClient(user string, groups []string) (certPEM, keyPEMData []byte, err error) {
	for _, g := range groups {
		if g == "system:masters" {
			return nil, nil, fmt.Errorf("client certificate for %s: group system:masters is the cluster admin's", user)
		}
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(m.pkiDir, "ca.key"))
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate for %s: %w", user, err)
	}
	ca, err := pki.LoadAuthority(m.restConfig.CAData, caKeyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate for %s: the cluster CA: %w", user, err)
	}
	// A Kubernetes client certificate's organisations are its groups: it carries no others.
	iss, err := ca.Issue(pki.Spec{CommonName: user, Usage: pki.Client, Organization: groups, NoOrganization: true, Lifetime: devCertValidity})
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate for %s: %w", user, err)
	}
	return iss.CertPEM, iss.KeyPEM, nil
}

// WriteClientCertificate issues a client certificate of the cluster's CA for user and groups, as
// WriteClientKubeconfig does, for a client that takes PEM files rather than a kubeconfig (a
// Prometheus scraping the apiserver): the certificate, its key (0600) and the CA that verifies
// the apiserver, in dir as <base>.crt, <base>.key and <base>-ca.crt.
func (m *ManagementCluster) WriteClientCertificate(dir, base, user string, groups []string) (cert, key, ca string, err error) {
	certPEM, keyData, err := m.issueClient(user, groups)
	if err != nil {
		return "", "", "", err
	}
	return pki.WriteClientFiles(dir, base, certPEM, keyData, m.restConfig.CAData)
}

// StopAPIServer stops the kube-apiserver alone (SIGTERM, then SIGKILL), as an outage of the
// management cluster's control plane would: etcd and the clients stay. RestartAPIServer brings
// it back.
func (m *ManagementCluster) StopAPIServer() {
	m.mu.Lock()
	p := m.APIServer
	m.mu.Unlock()
	if p != nil {
		p.Stop(10 * time.Second)
	}
}

// RestartAPIServer starts the kube-apiserver again with the command line it had (the same port,
// certificates and etcd), if it is not running, and waits for /readyz. APIServer is the new
// process afterwards.
func (m *ManagementCluster) RestartAPIServer(ctx context.Context) (*Process, error) {
	m.mu.Lock()
	old := m.APIServer
	m.mu.Unlock()
	if old == nil {
		return nil, fmt.Errorf("restart kube-apiserver of %s: it was never started", m.Name)
	}
	if exited, _ := old.Exited(); !exited {
		old.Stop(10 * time.Second)
	}
	p, err := StartProcess(ctx, old.Spec)
	if err != nil {
		return nil, fmt.Errorf("restart kube-apiserver of %s: %w", m.Name, err)
	}
	client, err := rest.HTTPClientFor(m.RESTConfig())
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, fmt.Errorf("restart kube-apiserver of %s: %w", m.Name, err)
	}
	if err := p.WaitFor(ctx, 90*time.Second, "kube-apiserver /readyz", HTTPReady(client, m.Host+"/readyz")); err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	m.mu.Lock()
	m.APIServer = p
	m.mu.Unlock()
	return p, nil
}

// RESTConfig returns a fresh client configuration authenticated as the cluster admin.
func (m *ManagementCluster) RESTConfig() *rest.Config { return rest.CopyConfig(m.restConfig) }

// Stop ends the apiserver and then etcd, so the apiserver never sees its storage vanish.
func (m *ManagementCluster) Stop() {
	if m.ControllerManager != nil {
		m.ControllerManager.Stop(10 * time.Second)
	}
	m.StopAPIServer()
	if m.Etcd != nil {
		m.Etcd.Stop(10 * time.Second)
	}
	m.etcdSockets.remove()
}

// StartManagementCluster starts etcd on unix sockets of its own (etcdsocket.go) and
// kube-apiserver on a free loopback port with a dev PKI,
// waits for /readyz, writes the admin kubeconfig and installs the CRDs from package crds.
// On error everything it started is stopped again. A free port is free when it is asked for,
// not when the process binds it (another process, or an outgoing connection, can take it in
// between; seen on a busy CI machine): a start that fails so is made again on new ports, up to
// portAttempts times.
func StartManagementCluster(ctx context.Context, o ManagementClusterOptions) (*ManagementCluster, error) {
	return startOnFreePorts(ctx, o, FreePorts)
}

// startOnFreePorts is StartManagementCluster with its port (the apiserver's) asked of
// freePorts at each attempt.
func startOnFreePorts(ctx context.Context, o ManagementClusterOptions, freePorts func(n int) ([]int, error)) (*ManagementCluster, error) {
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		mc, err := startManagementCluster(ctx, o, ports)
		if err == nil || attempt == portAttempts || !portTaken(err) || ctx.Err() != nil {
			return mc, err
		}
	}
}

// portAttempts is how many times StartManagementCluster starts a cluster whose port was taken.
const portAttempts = 3

// portTaken reports whether err says a process could not bind its port (the processes'
// errors carry their log's last lines).
func portTaken(err error) bool {
	return strings.Contains(err.Error(), "address already in use")
}

func startManagementCluster(ctx context.Context, o ManagementClusterOptions, ports []int) (_ *ManagementCluster, err error) {
	if o.Name == "" || o.Dir == "" || o.LogDir == "" || o.APIServerPath == "" || o.EtcdPath == "" {
		return nil, errors.New("management cluster: Name, Dir, LogDir, APIServerPath and EtcdPath are required")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 90 * time.Second
	}
	start := time.Now()
	pkiDir := filepath.Join(o.Dir, "pki")
	kp, err := loadOrCreateKubePKI(pkiDir, o.ServerNames...)
	if err != nil {
		return nil, fmt.Errorf("management cluster %s: %w", o.Name, err)
	}
	apiPort := ports[0]
	mc := &ManagementCluster{Name: o.Name, Host: "https://127.0.0.1:" + strconv.Itoa(apiPort), pkiDir: pkiDir}
	defer func() {
		if err != nil {
			mc.Stop()
		}
	}()

	clientCA := kp.caCertPath
	if o.ExtraClientCAFile != "" {
		clientCA = filepath.Join(pkiDir, "client-ca-bundle.crt")
		extra, err := os.ReadFile(o.ExtraClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("management cluster %s: extra client CA: %w", o.Name, err)
		}
		if err := os.WriteFile(clientCA, append(append([]byte{}, kp.caCertPEM...), extra...), 0o600); err != nil {
			return nil, fmt.Errorf("management cluster %s: write client CA bundle: %w", o.Name, err)
		}
		mc.clientCA.path, mc.clientCA.extra, mc.ownClientCAPEM = clientCA, o.ExtraClientCAFile, kp.caCertPEM
	}
	etcdPKI, err := loadOrCreateEtcdPKI(pkiDir)
	if err != nil {
		return nil, fmt.Errorf("management cluster %s: %w", o.Name, err)
	}
	encryptionConfig, err := encryptionconfig.LoadOrCreate(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("management cluster %s: %w", o.Name, err)
	}
	// etcd speaks TLS only, on unix sockets only, and admits only client certificates of its
	// own CA (etcdPKI.args). Its data directory is absolute: etcd runs in its socket directory.
	etcdData, err := filepath.Abs(filepath.Join(o.Dir, "etcd"))
	if err != nil {
		return nil, fmt.Errorf("management cluster %s: %w", o.Name, err)
	}
	mc.Etcd, mc.etcdSockets, err = startEtcd(ctx, etcdPKI, etcdStart{Name: o.Name + "-etcd", Path: o.EtcdPath, LogDir: o.LogDir,
		Member: o.Name, DataDir: etcdData, Record: filepath.Join(o.Dir, etcdSocketRecord), ReadyTimeout: o.ReadyTimeout})
	if err != nil {
		return nil, err
	}
	etcdURL := mc.etcdSockets.clientURL()

	mc.APIServer, err = StartProcess(ctx, ProcSpec{
		Name: o.Name + "-kube-apiserver", Path: o.APIServerPath, LogDir: o.LogDir,
		Args: []string{
			"--etcd-servers=" + etcdURL,
			"--etcd-cafile=" + etcdPKI.caCert,
			"--etcd-certfile=" + etcdPKI.clientCert, "--etcd-keyfile=" + etcdPKI.clientKey,
			// Secrets are sealed before they reach etcd (secretbox, a key of this cluster's own).
			"--encryption-provider-config=" + encryptionConfig,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(apiPort),
			"--cert-dir=" + pkiDir,
			"--tls-cert-file=" + kp.servingCertPath,
			"--tls-private-key-file=" + kp.servingKeyPath,
			"--client-ca-file=" + clientCA,
			"--service-account-key-file=" + kp.saKeyPath,
			"--service-account-signing-key-file=" + kp.saKeyPath,
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-cluster-ip-range=10.0.0.0/24",
			"--authorization-mode=RBAC",
			"--allow-privileged=true",
			// No controller-manager creates ServiceAccounts, so the plugin would refuse every pod.
			"--disable-admission-plugins=ServiceAccount",
			// One apiserver per cluster and nothing reads the kubernetes Endpoints: skip the
			// lease churn. API priority and fairness is off to keep a small box responsive;
			// --max-requests-inflight still bounds load.
			"--endpoint-reconciler-type=none",
			"--enable-priority-and-fairness=false",
			"--profiling=false",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host: mc.Host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: kp.caCertPEM, CertData: kp.adminCertPEM, KeyData: kp.adminKeyPEM,
		},
		QPS: 100, Burst: 200,
	}
	mc.restConfig = cfg
	httpClient, err := adminHTTPClient(kp)
	if err != nil {
		return nil, err
	}
	if err := mc.APIServer.WaitFor(ctx, o.ReadyTimeout, "kube-apiserver /readyz", HTTPReady(httpClient, mc.Host+"/readyz")); err != nil {
		return nil, err
	}

	mc.Kubeconfig = filepath.Join(o.Dir, "kubeconfig")
	if err := writeKubeconfig(mc.Kubeconfig, o.Name, mc.Host, kp); err != nil {
		return nil, err
	}
	if !o.SkipCRDs {
		if err := crds.Install(ctx, mc.RESTConfig()); err != nil {
			return nil, fmt.Errorf("management cluster %s: %w", o.Name, err)
		}
	}
	if o.ControllerManagerPath != "" {
		if err := mc.startControllerManager(ctx, o); err != nil {
			return nil, err
		}
	}
	mc.StartupDuration = time.Since(start)
	return mc, nil
}

func adminHTTPClient(p *kubePKI) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.caCertPEM) {
		return nil, errors.New("dev CA certificate does not parse")
	}
	cert, err := tls.X509KeyPair(p.adminCertPEM, p.adminKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("admin client certificate: %w", err)
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		}},
	}, nil
}

func writeKubeconfig(path, name, host string, p *kubePKI) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: p.caCertPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.adminCertPEM, ClientKeyData: p.adminKeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// kubePKI is the dev PKI of one management cluster: a CA, the apiserver serving certificate, an
// admin client certificate and the service-account signing key. The files live in Dir/pki.
type kubePKI struct {
	caCertPath, servingCertPath, servingKeyPath, saKeyPath string
	caCertPEM, adminCertPEM, adminKeyPEM                   []byte
}

// clusterAdminUser is the user of the cluster's admin certificate (group system:masters). It
// differs from every user RBAC binds, so nothing restricted is mistaken for it in audit logs.
const clusterAdminUser = "openhcp-cluster-admin"

// Certificates last a year: long enough that a kept state dir does not expire under a
// developer, short enough to be plainly not production material.
const devCertValidity = 365 * 24 * time.Hour

func loadOrCreateKubePKI(dir string, serverNames ...string) (*kubePKI, error) {
	p := &kubePKI{
		caCertPath:      filepath.Join(dir, "ca.crt"),
		servingCertPath: filepath.Join(dir, "apiserver.crt"),
		servingKeyPath:  filepath.Join(dir, "apiserver.key"),
		saKeyPath:       filepath.Join(dir, "sa.key"),
	}
	adminCert, adminKey := filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	if keptPKI(p.caCertPath, filepath.Join(dir, "ca.key"), p.servingCertPath, p.servingKeyPath, p.saKeyPath, adminCert, adminKey) {
		var err error
		if p.caCertPEM, err = os.ReadFile(p.caCertPath); err != nil {
			return nil, err
		}
		if p.adminCertPEM, err = os.ReadFile(adminCert); err != nil {
			return nil, err
		}
		if p.adminKeyPEM, err = os.ReadFile(adminKey); err != nil {
			return nil, err
		}
		return p, nil
	}
	ca, err := pki.NewAuthority("openhcp-dev-kube-ca", devCertValidity)
	if err != nil {
		return nil, err
	}
	p.caCertPEM = ca.PEM
	caKeyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	serving, err := ca.Issue(pki.Spec{
		CommonName: "kube-apiserver", Usage: pki.Server, NoOrganization: true, Lifetime: devCertValidity,
		DNSNames: append([]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}, serverNames...),
		// 10.0.0.1 is the kubernetes Service IP in --service-cluster-ip-range.
		IPs: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.0.0.1")},
	})
	if err != nil {
		return nil, fmt.Errorf("issue serving certificate: %w", err)
	}
	admin, err := ca.Issue(pki.Spec{
		CommonName: clusterAdminUser, Organization: []string{"system:masters"}, Usage: pki.Client, Lifetime: devCertValidity,
	})
	if err != nil {
		return nil, fmt.Errorf("issue admin certificate: %w", err)
	}
	p.adminCertPEM, p.adminKeyPEM = admin.CertPEM, admin.KeyPEM

	// Service-account tokens are signed with RS256 by default; an RSA key needs no extra flags.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service-account signing key: %w", err)
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("service-account signing key: %w", err)
	}
	files := map[string][]byte{
		p.caCertPath: ca.PEM, filepath.Join(dir, "ca.key"): caKeyPEM,
		p.servingCertPath: serving.CertPEM, p.servingKeyPath: serving.KeyPEM,
		adminCert: admin.CertPEM, adminKey: admin.KeyPEM,
		p.saKeyPath: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER}),
	}
	if err := writePKI(dir, files); err != nil {
		return nil, err
	}
	return p, nil
}

// keptPKI reports whether every file of a PKI a previous start wrote is there and its CA is
// good for more than a day; if not, the caller issues a new PKI.
func keptPKI(caCert string, files ...string) bool {
	for _, f := range append(files, caCert) {
		if _, err := os.Stat(f); err != nil {
			return false
		}
	}
	cert, err := pki.ReadCertificate(caCert)
	return err == nil && time.Until(cert.NotAfter) > 24*time.Hour
}

// writePKI writes the files of a newly issued PKI into dir, each readable by its owner only.
func writePKI(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	for path, data := range files {
		if err := atomicfile.Write(path, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// startControllerManager runs kube-controller-manager against the cluster with only
// managementControllers, and waits for its /healthz.
func (mc *ManagementCluster) startControllerManager(ctx context.Context, o ManagementClusterOptions) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	mc.ControllerManager, err = StartProcess(ctx, ProcSpec{
		Name: o.Name + "-kube-controller-manager", Path: o.ControllerManagerPath, LogDir: o.LogDir,
		Args: []string{
			"--kubeconfig=" + mc.Kubeconfig,
			"--authentication-kubeconfig=" + mc.Kubeconfig,
			"--authorization-kubeconfig=" + mc.Kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(o.Dir, "kube-controller-manager"),
			// Not the default under /usr/libexec, which it would create on the host.
			"--flex-volume-plugin-dir=" + filepath.Join(o.Dir, "kube-controller-manager", "flexvolume"),
			"--controllers=" + managementControllers,
			"--leader-elect=false",
			"--use-service-account-credentials=false",
			"--profiling=false",
		},
	})
	if err != nil {
		return err
	}
	// Its serving certificate is self-signed in --cert-dir; the probe only checks liveness on
	// loopback, so it does not verify it.
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe
	return mc.ControllerManager.WaitFor(ctx, o.ReadyTimeout, "kube-controller-manager /healthz",
		HTTPReady(probe, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz"))
}
