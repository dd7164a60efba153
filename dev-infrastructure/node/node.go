package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/internal/encryptionconfig"
)

// The node's fixed addresses. They exist only inside its network namespace, so they cannot
// collide with the host or with another namespace.
var (
	DefaultNodeIP     = netip.MustParseAddr("10.250.0.1")
	podBridgeIP       = "10.244.0.1"
	PodCIDR           = "10.244.0.0/24"
	ServiceCIDR       = "10.96.0.0/24"
	kubernetesService = netip.MustParseAddr("10.96.0.1")
)

const (
	maxDirLen       = 40
	apiserverPort   = 6443
	etcdPort        = 2379
	etcdPeerPort    = 2380
	etcdMetricsPort = 2381
	podBridge       = "cni0"
	kubeLDFlags     = "-X k8s.io/component-base/version.gitVersion=v1.32.13 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=32"
	kubeModule      = "dev-infrastructure/kube-tools"
)

// hostPaths are paths outside the state directory that the kubelet, libcni and containerd 1.6
// hard-code; Stop removes each one the node created.
var hostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/lib/cni", "/run/containerd"}

// globalSysctls are the host-wide (not per-network-namespace) settings the kubelet rewrites at
// start; the node records them before and puts them back once Ready and at Stop.
var globalSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// Options configures Start.
type Options struct {
	// Dir is the node's state directory; it must be empty or absent, and short (at most
	// maxDirLen bytes): the kubelet puts unix sockets under it, whose paths are limited to 104 bytes.
	Dir string
	// Log receives progress, and each crash of a component (at level Error, with its log's
	// tail); nil discards it.
	Log *slog.Logger
	// Restart is how the node restarts a component that crashed once it was up; the zero value
	// means DefaultRestartPolicy.
	Restart RestartPolicy
	// OnCrash, when set, is told of each crash too (from the component's own goroutine), before
	// the component is started again.
	OnCrash func(Crash)
}

// Node is a running single-node Kubernetes inside its own network namespace.
type Node struct {
	Netns      *Netns
	Dir        string
	Kubeconfig string // admin kubeconfig against the apiserver's node address (use inside the namespace)
	// HostKubeconfig is an admin kubeconfig for host processes (helm, tests): it points at a
	// loopback port of the host that Forward relays to the apiserver inside the namespace.
	HostKubeconfig string
	// SandboxImage is the reference of the pod sandbox (pause) image containerd runs every pod
	// with: dev-infrastructure/images' pause, built from the repository at Start.
	SandboxImage string
	stopForward  context.CancelFunc
	relays       []context.CancelFunc // ExposeHost's relays
	relayAddrs   []string             // and their listening addresses in the namespace
	kubectl      string
	procs        []*proc
	containerd   *Containerd
	created      []string
	sysctls      map[string]string
	lock         *os.File
	log          *slog.Logger
	restart      RestartPolicy
	onCrash      func(Crash)              // logs each crash, and tells Options.OnCrash
	Started      map[string]time.Duration // component → time from Start's beginning to ready
}

// Binaries are the pinned Kubernetes binaries the node runs, from the tool cache.
type Binaries struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kubelet, Kubectl, KubeProxy string
	// CoreDNS is the cluster DNS server (a static binary: it runs in an image without libc).
	CoreDNS string
}

// BuildBinaries returns the pinned binaries, building missing ones with hack/tool.sh and
// hack/coredns.sh (progress on stderr; a few minutes the first time, instant afterwards).
func BuildBinaries(ctx context.Context) (Binaries, error) {
	var b Binaries
	for _, t := range []struct {
		dst           *string
		name, pkg, ld string
	}{
		{&b.Etcd, "etcd", "./cmd/etcd", ""},
		{&b.APIServer, "kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", kubeLDFlags},
		{&b.ControllerManager, "kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager", kubeLDFlags},
		{&b.Scheduler, "kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", kubeLDFlags},
		{&b.Kubelet, "kubelet", "k8s.io/kubernetes/cmd/kubelet", kubeLDFlags},
		{&b.Kubectl, "kubectl", "k8s.io/kubernetes/cmd/kubectl", kubeLDFlags},
		{&b.KubeProxy, "kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", kubeLDFlags},
	} {
		p, err := toolBinary(ctx, t.name, kubeModule, t.pkg, t.ld)
		if err != nil {
			return b, err
		}
		*t.dst = p
	}
	var err error
	b.CoreDNS, err = hackTool(ctx, "coredns.sh")
	return b, err
}

// Start brings up etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, a
// kubelet (runc, CNI bridge/host-local), kube-proxy (iptables mode) and CoreDNS inside a new
// network namespace and returns once the node is Ready and a cluster DNS lookup of the kubernetes
// Service answers through its ClusterIP. On failure it stops what it started.
func Start(ctx context.Context, bins Binaries, o Options) (_ *Node, err error) {
	begin := time.Now()
	if len(o.Dir) > maxDirLen || !filepath.IsAbs(o.Dir) {
		return nil, fmt.Errorf("node state directory %q: want an absolute path of at most %d bytes (unix socket paths under it are limited)", o.Dir, maxDirLen)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{Dir: o.Dir, log: log, restart: o.Restart, sysctls: map[string]string{}, Started: map[string]time.Duration{}}
	if n.restart.Backoff == 0 {
		n.restart = DefaultRestartPolicy
	}
	n.onCrash = func(c Crash) {
		log.Error("node: a component crashed; restarting it", "component", c.Name, "err", c.Err,
			"restarts", c.Restarts, "after", c.After.Round(time.Millisecond), "logTail", c.LogTail)
		if o.OnCrash != nil {
			o.OnCrash(c)
		}
	}
	lock, err := os.OpenFile("/run/openhcp-node.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node lock: %w", err)
	}
	// One node per machine: the kubelet's hard-coded host paths and cgroups cannot be shared.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another node runs on this machine (/run/openhcp-node.lock is held): %w", err)
	}
	n.lock = lock
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop(context.WithoutCancel(ctx)))
		}
	}()
	for _, p := range hostPaths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			n.created = append(n.created, p)
		}
	}
	for _, k := range globalSysctls {
		v, err := readSysctl(k)
		if err != nil {
			return nil, err
		}
		n.sysctls[k] = v
	}
	pkiDir := filepath.Join(o.Dir, "pki")
	for _, d := range []string{"logs", "etcd", "manifests", "pod-logs", "kubelet", "images"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("node state directory: %w", err)
		}
	}
	if n.Netns, err = CreateNetns(ctx, "openhcp-node-", DefaultNodeIP); err != nil {
		return nil, err
	}
	if err := n.setUpPodNetwork(ctx); err != nil {
		return nil, err
	}
	if err := writePKI(pkiDir, DefaultNodeIP, kubernetesService); err != nil {
		return nil, err
	}
	nodeServer := fmt.Sprintf("https://%s:%d", DefaultNodeIP, apiserverPort)
	localServer := fmt.Sprintf("https://127.0.0.1:%d", apiserverPort)
	n.Kubeconfig = filepath.Join(o.Dir, "admin.kubeconfig")
	for _, kc := range []struct{ file, server, id string }{
		{"admin.kubeconfig", nodeServer, "admin"},
		{"kubelet.kubeconfig", nodeServer, "kubelet"},
		{"kube-scheduler.kubeconfig", localServer, "kube-scheduler"},
		{"kube-controller-manager.kubeconfig", localServer, "kube-controller-manager"},
	} {
		if err := writeKubeconfig(filepath.Join(o.Dir, kc.file), kc.server, pkiDir, kc.id); err != nil {
			return nil, err
		}
	}
	n.kubectl = bins.Kubectl

	imageDir := filepath.Join(o.Dir, "images")
	pause, err := buildSandboxImage(ctx, imageDir)
	if err != nil {
		return nil, err
	}
	n.SandboxImage = pause.Ref()
	n.mark("pause image built", begin)
	if n.containerd, err = StartContainerd(ctx, n.Netns, filepath.Join(o.Dir, "containerd"), n.SandboxImage); err != nil {
		return nil, err
	}
	n.mark("containerd", begin)
	if err := n.writeCNIConfig(); err != nil {
		return nil, err
	}
	if err := n.LoadImages(ctx, filepath.Join(imageDir, pause.Archive)); err != nil {
		return nil, fmt.Errorf("the sandbox image: %w", err)
	}
	n.mark("pause image", begin)

	etcdArgs, err := n.startEtcd(ctx, bins.Etcd, pkiDir)
	if err != nil {
		return nil, err
	}
	// Secrets are sealed before they reach etcd, as on every other apiserver of the project.
	encryption, err := encryptionconfig.LoadOrCreate(o.Dir)
	if err != nil {
		return nil, err
	}
	p := func(f string) string { return filepath.Join(pkiDir, f) }
	if _, err := n.start(ctx, "kube-apiserver", bins.APIServer, append(etcdArgs, "--encryption-provider-config="+encryption,
		"--bind-address=0.0.0.0", "--advertise-address="+DefaultNodeIP.String(), fmt.Sprintf("--secure-port=%d", apiserverPort),
		"--cert-dir="+p(""), "--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key"),
		"--client-ca-file="+p("ca.crt"), "--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"), "--kubelet-certificate-authority=",
		"--kubelet-preferred-address-types=InternalIP", "--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"), "--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+ServiceCIDR, "--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction", "--allow-privileged=true",
		"--enable-priority-and-fairness=false", "--profiling=false",
		// No anonymous requests: /version and the health paths need a certificate too (the
		// node's own checks use the admin's).
		"--anonymous-auth=false")...); err != nil {
		return nil, err
	}
	if err := n.waitFor(ctx, "kube-apiserver", 90*time.Second, func() error {
		out, err := n.Kubectl(ctx, "get", "--raw=/readyz")
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			return fmt.Errorf("readyz: %v %s", err, out)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	n.mark("kube-apiserver", begin)
	fwdCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.stopForward = cancel
	hostAddr, err := n.Netns.Forward(fwdCtx, fmt.Sprintf("%s:%d", DefaultNodeIP, apiserverPort))
	if err != nil {
		return nil, err
	}
	n.HostKubeconfig = filepath.Join(o.Dir, "admin-host.kubeconfig")
	if err := writeKubeconfig(n.HostKubeconfig, "https://"+hostAddr, pkiDir, "admin"); err != nil {
		return nil, err
	}
	kcm := filepath.Join(o.Dir, "kube-controller-manager.kubeconfig")
	if _, err := n.start(ctx, "kube-controller-manager", bins.ControllerManager, "--kubeconfig="+kcm,
		"--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm, "--bind-address=127.0.0.1",
		"--secure-port=10257", "--leader-elect=false", "--use-service-account-credentials=true",
		"--service-account-private-key-file="+p("sa.key"), "--root-ca-file="+p("ca.crt"),
		"--cluster-signing-cert-file="+p("ca.crt"), "--cluster-signing-key-file="+p("ca.key"),
		"--service-cluster-ip-range="+ServiceCIDR, "--profiling=false",
		// Its default, /usr/libexec/kubernetes/kubelet-plugins/volume/exec, would be created on
		// the host and left there (the kubelet's volumePluginDir is under the node's folder too).
		"--flex-volume-plugin-dir="+filepath.Join(o.Dir, "flexvolume")); err != nil {
		return nil, err
	}
	sched := filepath.Join(o.Dir, "kube-scheduler.kubeconfig")
	if _, err := n.start(ctx, "kube-scheduler", bins.Scheduler, "--kubeconfig="+sched,
		"--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched, "--bind-address=127.0.0.1",
		"--secure-port=10259", "--leader-elect=false", "--profiling=false"); err != nil {
		return nil, err
	}
	kubeletCfg, err := n.writeKubeletConfig(pkiDir)
	if err != nil {
		return nil, err
	}
	if _, err := n.start(ctx, "kubelet", bins.Kubelet, "--config="+kubeletCfg,
		"--kubeconfig="+filepath.Join(o.Dir, "kubelet.kubeconfig"), "--root-dir="+filepath.Join(o.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(o.Dir, "kubelet", "pki"), "--node-ip="+DefaultNodeIP.String(),
		"--hostname-override="+NodeName, "--v=1"); err != nil {
		return nil, err
	}
	if err := n.waitFor(ctx, "node Ready", 120*time.Second, func() error {
		out, err := n.Kubectl(ctx, "get", "node", NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(string(out)) != "True" {
			return fmt.Errorf("node not Ready: %v %s", err, out)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	n.mark("node Ready", begin)
	// Pods need their namespace's ServiceAccount, which kube-controller-manager creates.
	if err := n.waitFor(ctx, "default ServiceAccount", 60*time.Second, func() error {
		_, err := n.Kubectl(ctx, "get", "serviceaccount", "default", "-n", "default")
		return err
	}); err != nil {
		return nil, err
	}
	n.mark("default ServiceAccount", begin)
	// The kubelet rewrote host-wide sysctls at start; put the host's values back.
	if err := n.restoreSysctls(); err != nil {
		return nil, err
	}
	if err := n.startKubeProxy(ctx, bins.KubeProxy, pkiDir, nodeServer); err != nil {
		return nil, err
	}
	n.mark("kube-proxy", begin)
	if err := n.startClusterDNS(ctx, bins.CoreDNS, imageDir); err != nil {
		return nil, err
	}
	n.mark("cluster DNS", begin)
	// Up: from now on a component that exits is restarted (until then an exit fails Start).
	for _, p := range n.procs {
		p.supervise(n.restart, n.onCrash)
	}
	// containerd too: after its crash the pods run on, but no container could be started again.
	n.containerd.supervise(n.restart, n.onCrash)
	return n, nil
}

// startEtcd starts the node's etcd inside the namespace and returns the kube-apiserver flags
// that reach it. etcd speaks TLS only, on its client, peer and metrics ports, and admits only
// client certificates of its own CA (addEtcdPKI): the kube-apiserver's.
func (n *Node) startEtcd(ctx context.Context, bin, pkiDir string) ([]string, error) {
	p := func(f string) string { return filepath.Join(pkiDir, f) }
	etcdURL := fmt.Sprintf("https://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", etcdPeerPort)
	if _, err := n.start(ctx, "etcd", bin, "--name=node", "--data-dir="+filepath.Join(n.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=node="+peerURL,
		// An https metrics URL is served with the client TLS settings, client certificate required.
		fmt.Sprintf("--listen-metrics-urls=https://127.0.0.1:%d", etcdMetricsPort),
		"--cert-file="+p("etcd-server.crt"), "--key-file="+p("etcd-server.key"),
		"--client-cert-auth", "--trusted-ca-file="+p("etcd-ca.crt"),
		"--peer-cert-file="+p("etcd-server.crt"), "--peer-key-file="+p("etcd-server.key"),
		"--peer-client-cert-auth", "--peer-trusted-ca-file="+p("etcd-ca.crt"),
		"--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	return []string{"--etcd-servers=" + etcdURL, "--etcd-cafile=" + p("etcd-ca.crt"),
		"--etcd-certfile=" + p("apiserver-etcd-client.crt"), "--etcd-keyfile=" + p("apiserver-etcd-client.key")}, nil
}

func (n *Node) mark(what string, begin time.Time) {
	d := time.Since(begin).Round(10 * time.Millisecond)
	n.Started[what] = d
	n.log.Info("node: ready", "component", what, "after", d)
}

// Kubectl runs the pinned kubectl with the admin kubeconfig inside the node's namespace.
func (n *Node) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := n.Netns.Command(ctx, append([]string{n.kubectl, "--kubeconfig=" + n.Kubeconfig}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// start starts a component of the node (bin with args, under nice) in the namespace, in a process
// group of its own, its output appended to logs/<name>.log. It is not supervised yet: the caller
// waits for it to be ready (waitFor fails when it exits), then supervises it.
func (n *Node) start(ctx context.Context, name, bin string, args ...string) (*proc, error) {
	// Not tied to ctx: Stop ends it by PID.
	ctx = context.WithoutCancel(ctx)
	p, err := startProc(name, filepath.Join(n.Dir, "logs", name+".log"), func() *exec.Cmd {
		return n.Netns.Command(ctx, append([]string{"nice", "-n", "19", bin}, args...)...)
	})
	if err != nil {
		return nil, err
	}
	n.procs = append(n.procs, p)
	return p, nil
}

// Restarts is how many times the node started component (a process's name: "kubelet",
// "kube-network-policies", ...) again after it crashed.
func (n *Node) Restarts(component string) int {
	for _, p := range n.procs {
		if p.name == component {
			return p.restartCount()
		}
	}
	return 0
}

// waitFor polls check until it succeeds, a component exits or timeout passes.
func (n *Node) waitFor(ctx context.Context, what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		for _, p := range n.procs {
			select {
			case <-p.done:
				return fmt.Errorf("waiting for %s: %s exited: %s", what, p.name, n.logTail(p.name))
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (n *Node) logTail(name string) string {
	return fileTail(filepath.Join(n.Dir, "logs", name+".log"), 3000)
}

// setUpPodNetwork creates the pod bridge inside the namespace. The CNI bridge plugin then runs with
// isGateway false, and forwarding is enabled on that bridge only (pod → ClusterIP → pod needs it).
func (n *Node) setUpPodNetwork(ctx context.Context) error {
	for _, args := range [][]string{
		{"ip", "link", "add", podBridge, "type", "bridge"},
		{"ip", "addr", "add", podBridgeIP + "/24", "dev", podBridge},
		{"ip", "link", "set", podBridge, "up"},
		{"sysctl", "-q", "-w", "net.ipv4.conf." + podBridge + ".forwarding=1"},
		// The namespace has no default route: without this one, its own processes (the relays,
		// the host's DNS lookups through Resolver) get "network is unreachable" for a ClusterIP
		// before kube-proxy's OUTPUT rules can rewrite it. Pods route through the bridge anyway.
		{"ip", "route", "add", ServiceCIDR, "dev", podBridge, "src", DefaultNodeIP.String()},
	} {
		if err := n.Netns.Run(ctx, args...); err != nil {
			return fmt.Errorf("pod network: %w", err)
		}
	}
	return nil
}

func (n *Node) writeCNIConfig() error {
	conf := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "openhcp-node",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": false, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}]}
`, podBridge, PodCIDR, podBridgeIP, filepath.Join(n.Dir, "cni-ipam"))
	path := filepath.Join(n.containerd.Dir, "cni", "net.d", "10-openhcp-node.conflist")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("writing the CNI config: %w", err)
	}
	return nil
}

func (n *Node) writeKubeletConfig(pkiDir string) (string, error) {
	resolv := filepath.Join(n.Dir, "resolv.conf")
	// Pods never see the host's resolver.
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing resolv.conf: %w", err)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: %s}}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://%s
clusterDomain: %s
clusterDNS: [%s]
resolvConf: %s
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
staticPodPath: %s
podLogsDir: %s
evictionHard: {"memory.available": "100Mi", "nodefs.available": "2%%", "imagefs.available": "2%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
maxPods: 60
volumePluginDir: %s
`, DefaultNodeIP, filepath.Join(pkiDir, "ca.crt"), n.containerd.Socket, ClusterDomain, ClusterDNS, resolv,
		filepath.Join(n.Dir, "manifests"), filepath.Join(n.Dir, "pod-logs"), filepath.Join(n.Dir, "volume-plugins"))
	path := filepath.Join(n.Dir, "kubelet-config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("writing the kubelet config: %w", err)
	}
	return path, nil
}

// Stop deletes every pod (so the kubelet tears sandboxes and CNI down), stops the processes it
// started by PID in reverse order, stops containerd, unmounts what is left under the state
// directory, removes the kubelet's cgroups and the host paths the node created, restores the
// host-wide sysctls and deletes the namespace.
func (n *Node) Stop(ctx context.Context) error {
	var errs []error
	if n.kubectl != "" && n.running("kubelet") {
		// Workload controllers first, or they recreate the pods deleted here.
		_, _ = n.Kubectl(ctx, "delete", "deployments,replicasets,statefulsets,daemonsets,jobs,pods", "--all", "-A", "--grace-period=2", "--wait=false")
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			out, err := n.Kubectl(ctx, "get", "pods", "-A", "-o", "name")
			if err == nil && strings.TrimSpace(string(out)) == "" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if n.stopForward != nil {
		n.stopForward()
	}
	for _, cancel := range n.relays {
		cancel()
	}
	n.relays, n.relayAddrs = nil, nil
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].stop()
	}
	n.procs = nil
	if n.containerd != nil {
		if out, err := n.containerd.Ctr(ctx, "-n", "k8s.io", "tasks", "ls", "-q"); err == nil {
			for _, t := range strings.Fields(string(out)) {
				_, _ = n.containerd.Ctr(ctx, "-n", "k8s.io", "tasks", "kill", "-s", "KILL", t)
				_, _ = n.containerd.Ctr(ctx, "-n", "k8s.io", "tasks", "delete", "-f", t)
			}
		}
		errs = append(errs, n.containerd.Stop())
	}
	if n.Dir != "" {
		errs = append(errs, unmountUnder(n.Dir))
	}
	// What containerd could not end (it was down: a crash in its backoff) would outlive the
	// node: every process left in the pods' cgroups is killed before they are removed.
	errs = append(errs, killCgroupProcs("kubepods", 30*time.Second))
	errs = append(errs, removeCgroups("kubepods"))
	for _, p := range n.created {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
		}
	}
	n.created = nil
	errs = append(errs, n.restoreSysctls())
	if n.Netns != nil {
		errs = append(errs, n.Netns.Delete(ctx))
	}
	if n.lock != nil {
		n.lock.Close()
		n.lock = nil
	}
	return errors.Join(errs...)
}

// RestartContainerd crashes the node's containerd and starts it again (Containerd.Restart): the
// pods keep running and the kubelet reconnects. It returns the PID it killed.
func (n *Node) RestartContainerd(ctx context.Context) (int, error) {
	if n.containerd == nil {
		return 0, errors.New("the node runs no containerd")
	}
	return n.containerd.Restart(ctx)
}

// ContainerPID is the PID of a container's main process on this node, by the container ID a
// pod's status gives ("containerd://<id>" or the bare ID): only our containerd is asked, so the
// PID is always one of this node's.
func (n *Node) ContainerPID(ctx context.Context, containerID string) (int, error) {
	if n.containerd == nil {
		return 0, errors.New("the node runs no containerd")
	}
	return n.containerd.TaskPID(ctx, strings.TrimPrefix(containerID, "containerd://"))
}

func (n *Node) running(name string) bool {
	for _, p := range n.procs {
		if p.name == name {
			return p.running()
		}
	}
	return false
}

// removeCgroups removes the named cgroup subtree the kubelet made (cgroupfs driver) in every
// cgroup v1 hierarchy and in the unified one, deepest first.
// killCgroupProcs sends SIGKILL to every process in the cgroups named name (and below) of every
// hierarchy, and waits up to wait for them to be gone.
func killCgroupProcs(name string, wait time.Duration) error {
	roots := cgroupRoots(name)
	procs := func() []int {
		var pids []int
		for _, root := range roots {
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				if err != nil {
					return nil
				}
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		return pids
	}
	deadline := time.Now().Add(wait)
	for {
		left := procs()
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left in the %s cgroups after SIGKILL: %v", name, left)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupRoots are the cgroups named name at the top of every hierarchy: each controller's under
// cgroup v1, the unified one's under v2. The kubelet makes its pods' there (its default cgroup
// root): the node lock lets no other node of ours run, and a host with a kubelet of its own
// would share them, which the node does not support.
func cgroupRoots(name string) []string {
	v1, _ := filepath.Glob("/sys/fs/cgroup/*/" + name)
	v2, _ := filepath.Glob("/sys/fs/cgroup/" + name)
	return append(v1, v2...)
}

func removeCgroups(name string) error {
	roots := cgroupRoots(name)
	var errs []error
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/")))
	if err != nil {
		return "", fmt.Errorf("reading sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (n *Node) restoreSysctls() error {
	var errs []error
	for k, want := range n.sysctls {
		if got, err := readSysctl(k); err == nil && got == want {
			continue
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", strings.ReplaceAll(k, ".", "/")), []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", k, want, err))
		}
	}
	return errors.Join(errs...)
}

// moduleDir is this package's source directory.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the node package's source")
	}
	return filepath.Dir(file), nil
}

// toolBinary builds (or finds cached) a pinned tool with hack/tool.sh at the repository root.
func toolBinary(ctx context.Context, name, moduleDir, pkg, ldflags string) (string, error) {
	return hackTool(ctx, "tool.sh", name, moduleDir, pkg, ldflags)
}

// hackTool runs a tool-building script of hack/ (progress on stderr) and returns the path it prints.
func hackTool(ctx context.Context, script string, args ...string) (string, error) {
	src, err := moduleDirOrRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(src, "hack", script), args...)
	cmd.Dir = src
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building with hack/%s %s: %w", script, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// moduleDirOrRoot is the repository root: $OPENHCP_ROOT, or two levels above this package.
func moduleDirOrRoot() (string, error) {
	if r := os.Getenv("OPENHCP_ROOT"); r != "" {
		return r, nil
	}
	d, err := moduleDir()
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(d)), nil
}
