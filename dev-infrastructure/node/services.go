package node

// Services on the node: kube-proxy (iptables mode) programs the Service ClusterIPs, and CoreDNS
// answers cluster.local names at the fixed address ClusterDNS. Both run inside the node's network
// namespace, so every iptables rule kube-proxy writes lives and dies with the namespace; the
// host's tables are never touched.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
)

const (
	// ClusterDNS is the kube-dns Service's fixed ClusterIP (in ServiceCIDR): the kubelet writes it
	// into every pod's resolv.conf.
	ClusterDNS = "10.96.0.10"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
	// coreDNSName is CoreDNS' image, Deployment and ConfigMap name.
	coreDNSName = "coredns"
	// coreDNSPort is where CoreDNS listens in its pod: above 1024, so it runs as the images'
	// non-root user without capabilities; the kube-dns Service maps port 53 onto it.
	coreDNSPort = 1053
	// kubeProxyHealthz is kube-proxy's health endpoint inside the namespace.
	kubeProxyHealthz = "127.0.0.1:10256"
)

// kubeProxyConfig runs kube-proxy in iptables mode inside the namespace. The conntrack values of
// 0 and localhostNodePorts false keep it from writing the host-wide conntrack sysctls and
// route_localnet; NodePorts open only on the node address.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]s}
mode: iptables
hostnameOverride: %[2]s
bindAddress: %[3]s
healthzBindAddress: %[4]s
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: %[5]s
nodePortAddresses: ["%[3]s/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, masqueradeAll: false, syncPeriod: 30s, minSyncPeriod: 1s}
`

// startKubeProxy writes kube-proxy's kubeconfig and config and starts it inside the namespace,
// returning once its health endpoint answers.
func (n *Node) startKubeProxy(ctx context.Context, bin, pkiDir, server string) error {
	kc := filepath.Join(n.Dir, "kube-proxy.kubeconfig")
	if err := writeKubeconfig(kc, server, pkiDir, "kube-proxy"); err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, kubeProxyConfig, kc, NodeName, DefaultNodeIP, kubeProxyHealthz, PodCIDR), 0o600); err != nil {
		return fmt.Errorf("writing the kube-proxy config: %w", err)
	}
	if _, err := n.start(ctx, "kube-proxy", bin, "--config="+cfg, "--v=1"); err != nil {
		return err
	}
	client := n.HTTPClient()
	return n.waitFor(ctx, "kube-proxy", 60*time.Second, func() error {
		resp, err := client.Get("http://" + kubeProxyHealthz + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube-proxy healthz: %s", resp.Status)
		}
		return nil
	})
}

// HTTPClient is an HTTP client whose connections are dialled inside the node's namespace.
func (n *Node) HTTPClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: n.Netns.DialContext}}
}

// Resolver asks the cluster's DNS (ClusterDNS, through kube-proxy's rules) from inside the
// namespace, as a pod would.
func (n *Node) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return n.Netns.DialContext(ctx, network, net.JoinHostPort(ClusterDNS, "53"))
	}}
}

// coreDNSManifest is CoreDNS as the cluster's DNS: answers for cluster.local and reverse zones
// from the apiserver, nothing else (no forward: names outside the cluster are refused, so no pod
// reaches a resolver of the host's). Non-root, read-only root file system, no capabilities.
const coreDNSManifest = `apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:%[3]d {
        errors
        health :8080
        ready :8181
        kubernetes %[4]s in-addr.arpa ip6.arpa {
            pods insecure
        }
        cache 30
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      terminationGracePeriodSeconds: 5
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: coredns
        image: %[1]s
        imagePullPolicy: Never
        args: ["-conf", "/etc/coredns/Corefile"]
        volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
        ports:
        - {name: dns, containerPort: %[3]d, protocol: UDP}
        - {name: dns-tcp, containerPort: %[3]d, protocol: TCP}
        readinessProbe:
          httpGet: {path: /ready, port: 8181}
          periodSeconds: 1
        livenessProbe:
          httpGet: {path: /health, port: 8080}
        resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 500m, memory: 128Mi}}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
      volumes:
      - name: config
        configMap: {name: coredns}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: %[2]s
  selector: {k8s-app: kube-dns}
  ports:
  - {name: dns, port: 53, protocol: UDP, targetPort: %[3]d}
  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: %[3]d}
`

// startClusterDNS imports the CoreDNS image, deploys CoreDNS behind the kube-dns Service and
// returns once a lookup through the Service's ClusterIP answers from inside the namespace.
func (n *Node) startClusterDNS(ctx context.Context, coreDNSBin, imageDir string) error {
	ref, archive, err := coreDNSImage(ctx, coreDNSBin, imageDir)
	if err != nil {
		return err
	}
	if err := n.LoadImages(ctx, archive); err != nil {
		return fmt.Errorf("the CoreDNS image: %w", err)
	}
	if err := n.Apply(ctx, "coredns", fmt.Appendf(nil, coreDNSManifest, ref, ClusterDNS, coreDNSPort, ClusterDomain)); err != nil {
		return err
	}
	res := n.Resolver()
	return n.waitFor(ctx, "cluster DNS", 120*time.Second, func() error {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := res.LookupHost(lctx, "kubernetes.default.svc."+ClusterDomain)
		if err != nil {
			return err
		}
		if len(addrs) != 1 || addrs[0] != kubernetesService.String() {
			return fmt.Errorf("kubernetes.default resolves to %v, want %s", addrs, kubernetesService)
		}
		return nil
	})
}

// coreDNSImage wraps the pinned CoreDNS binary into an image with dev-infrastructure/images'
// layout (non-root user, labels of the repository's revision) and writes its archive into dir.
func coreDNSImage(ctx context.Context, bin, dir string) (ref, archive string, err error) {
	root, err := moduleDirOrRoot()
	if err != nil {
		return "", "", err
	}
	src, err := images.GitSource(ctx, root)
	if err != nil {
		return "", "", fmt.Errorf("CoreDNS image: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", "", fmt.Errorf("CoreDNS image: %w", err)
	}
	spec := images.Spec{Name: coreDNSName, Package: "github.com/coredns/coredns", ModuleDir: "dev-infrastructure/coredns", Binary: coreDNSName}
	img, err := images.NewImage(spec, data, images.Platform{OS: "linux", Arch: runtime.GOARCH}, src)
	if err != nil {
		return "", "", err
	}
	ref = images.Ref(coreDNSName, src.Tag())
	archive = filepath.Join(dir, coreDNSName+".oci.tar")
	if err := images.WriteArchive(archive, ref, img); err != nil {
		return "", "", err
	}
	return ref, archive, nil
}

// Apply writes manifest under the state directory as <name>.yaml and applies it with kubectl.
func (n *Node) Apply(ctx context.Context, name string, manifest []byte) error {
	file := n.appliedFile(name)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("applying %s: %w", name, err)
	}
	if err := os.WriteFile(file, manifest, 0o600); err != nil {
		return fmt.Errorf("applying %s: %w", name, err)
	}
	if _, err := n.Kubectl(ctx, "apply", "-f", file); err != nil {
		return fmt.Errorf("applying %s: %w", name, err)
	}
	return nil
}

// appliedFile is where Apply keeps the manifest it applied as name.
func (n *Node) appliedFile(name string) string {
	return filepath.Join(n.Dir, "manifests-applied", name+".yaml")
}
