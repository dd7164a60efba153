// Package deploy installs OpenHCP's charts with Helm onto the real single-node Kubernetes of
// dev-infrastructure/node (make deploy, docs/deploy.md#make-deploy): the service cluster's
// charts (Maestro server, Cluster Service, backend, frontend, admin API; servicecluster.go) and
// one management cluster's (management-crds, maestro-agent, hypershift-sim; this file) run as
// pods on the node, while PostgreSQL and the broker stay on the host's loopback, reached by the
// pods through the node's outside-service relays, as managed services are in Azure.
package deploy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/node"
	"github.com/openhcp/openhcp/internal/pki"
)

// Namespaces on the node.
const (
	// OutsideNamespace holds the Services of what stays outside the cluster (PostgreSQL, the
	// broker), as managed services do.
	OutsideNamespace = "openhcp-outside"
	agentNamespace   = "maestro"
	simNamespace     = "hypershift"
	brokerService    = "broker"
	brokerPort       = 8883
	helmTimeout      = "180s"
	// unsealKeySecret is config/'s managementCluster.hypershiftSim.secrets.unsealKey.
	unsealKeySecret = "hypershift-sim-unseal-key"
)

// Release is one chart install: where the chart is, the namespace, and its values files in order.
type Release struct {
	Name, Chart, Namespace string
	Values                 []string
	Set                    []string
}

// NodeCluster is a management cluster whose charts run on the node (a
// localregion.ExternalManagementCluster).
type NodeCluster struct {
	// Stamp is the cluster's name in config/ (its values are config/rendered/<region>/<Stamp>/).
	Stamp string
	Node  *node.Node
	// Root is the repository root; Rendered the region's rendered config directory
	// (config/rendered/dev-local).
	Root, Rendered string
	// Helm is the pinned helm binary (hack/helm.sh); HelmHome holds its cache and config.
	Helm, HelmHome string
	// Images are the built images (images.json) and the directory of their values files.
	Images    images.Manifest
	ImagesDir string
	// OwnControlPlane runs the cluster's etcd, kube-apiserver and kube-controller-manager as
	// processes beside the node (mgmtcluster.StartManagementCluster, state in Dir), exposed to the
	// pods as the Service <Stamp>-apiserver of OutsideNamespace; its agent and sim pods run on the
	// node in namespaces of their own and act on it through a kubeconfig Secret
	// (targetCluster.kubeconfigSecret). False: the node is the cluster (the first stamp).
	OwnControlPlane bool
	Dir             string

	stopForwards context.CancelFunc
	// own is the control plane beside the node, when OwnControlPlane; ownService its Service.
	own        *mgmtcluster.ManagementCluster
	ownService node.OutsideService
	// prometheus is the region Prometheus' client certificate, key and CA on own.
	prometheus struct{ cert, key, ca string }
	env        localregion.ExternalEnv
	broker     node.OutsideService
}

// AgentNamespace and SimNamespace are the namespaces of the node where the cluster's agent and
// sim run: the charts' own for the node's cluster, <stamp>-maestro and <stamp>-hypershift for
// one with its own control plane (two agents or sims in one namespace would share Secrets).
func (c *NodeCluster) AgentNamespace() string {
	if c.OwnControlPlane {
		return c.Stamp + "-" + agentNamespace
	}
	return agentNamespace
}

func (c *NodeCluster) SimNamespace() string {
	if c.OwnControlPlane {
		return c.Stamp + "-" + simNamespace
	}
	return simNamespace
}

// Name is the stamp: provision shard and Maestro consumer.
func (c *NodeCluster) Name() string { return c.Stamp }

// BrokerNames is the broker Service's name, which the agent dials.
func (c *NodeCluster) BrokerNames() []string {
	return []string{fmt.Sprintf("%s.%s.svc.%s", brokerService, OutsideNamespace, node.ClusterDomain)}
}

// Releases are the charts of a management cluster in install order (CRDs first).
func (c *NodeCluster) Releases(env localregion.ExternalEnv, broker node.OutsideService, imagesDir string) []Release {
	stamp := filepath.Join(c.Rendered, c.Stamp)
	// No Prometheus operator on the node: its CRDs (ServiceMonitor, PrometheusRule) are absent.
	noMonitoring := []string{"serviceMonitor.enabled=false", "prometheusRule.enabled=false"}
	sim := append([]string{}, noMonitoring...)
	if d := env.Sim.AvailableDelay; d > 0 {
		sim = append(sim, "availableDelay="+d.String())
	}
	if d := env.Sim.DeleteDelay; d > 0 {
		sim = append(sim, "deleteDelay="+d.String())
	}
	agent := append([]string{"consumerName=" + c.Stamp, "broker.host=" + broker.Host, "broker.port=" + strconv.Itoa(broker.Port)}, noMonitoring...)
	var out []Release
	if c.OwnControlPlane {
		// The CRDs are its apiserver's (StartManagementCluster installs them), the charts' RBAC
		// too (ApplyChartIdentity); the pods reach it by the kubeconfig Secret.
		agent = append(agent, "targetCluster.kubeconfigSecret="+targetKubeconfigSecret)
		sim = append(sim, "targetCluster.kubeconfigSecret="+targetKubeconfigSecret)
	} else {
		out = append(out, Release{Name: "management-crds", Chart: "dev-infrastructure/mgmtcluster/deploy/management-crds", Namespace: "default"})
	}
	return append(out,
		Release{Name: "maestro-agent", Chart: "maestro/deploy/agent", Namespace: c.AgentNamespace(),
			Values: []string{filepath.Join(stamp, "maestro-agent.yaml"), filepath.Join(imagesDir, "values", "maestro.yaml")},
			Set:    agent},
		Release{Name: "hypershift-sim", Chart: "dev-infrastructure/mgmtcluster/deploy/hypershift-sim", Namespace: c.SimNamespace(),
			Values: []string{filepath.Join(stamp, "hypershift-sim.yaml"), filepath.Join(imagesDir, "values", "hypershift-sim.yaml")},
			Set:    sim})
}

// Start exposes the broker to the node, creates the agent's MQTT client certificate Secret and
// installs the charts with helm --wait.
func (c *NodeCluster) Start(ctx context.Context, env localregion.ExternalEnv) (localregion.ManagementClusterInfo, error) {
	var info localregion.ManagementClusterInfo
	broker, err := c.Node.ExposeHost(ctx, OutsideNamespace, brokerService, brokerPort, env.BrokerAddr)
	if err != nil {
		return info, err
	}
	c.env, c.broker = env, broker
	agentNamespace, simNamespace := c.AgentNamespace(), c.SimNamespace()
	if c.OwnControlPlane {
		if err := c.startOwnControlPlane(ctx, env); err != nil {
			return info, fmt.Errorf("management cluster %s: %w", c.Stamp, err)
		}
	}
	agent := env.PKI.MustFiles(pki.MaestroAgent(c.Stamp))
	if _, err := c.Node.Kubectl(ctx, "create", "namespace", agentNamespace); err != nil {
		return info, err
	}
	if _, err := c.Node.Kubectl(ctx, "create", "secret", "generic", "maestro-agent-mqtt", "-n", agentNamespace,
		"--from-file=ca.crt="+env.PKI.CAFile, "--from-file=tls.crt="+agent.Cert, "--from-file=tls.key="+agent.Key); err != nil {
		return info, err
	}
	// The agent's HTTPS serving certificate (health, /metrics), so a scrape can verify it by the
	// region CA and the Service name (the chart's servingCert.secret).
	serving, err := c.servingCert(env.PKI, "maestro-agent", agentNamespace)
	if err != nil {
		return info, err
	}
	if _, err := c.Node.Kubectl(ctx, "create", "secret", "generic", "maestro-agent-serving", "-n", agentNamespace,
		"--from-file=ca.crt="+env.PKI.CAFile, "--from-file=tls.crt="+serving.Cert, "--from-file=tls.key="+serving.Key); err != nil {
		return info, err
	}
	// The sim's serving certificate: /metrics on its pod address is TLS (the chart's
	// servingCert.secret).
	simServing, err := c.servingCert(env.PKI, "hypershift-sim", simNamespace)
	if err != nil {
		return info, err
	}
	// The sim's private sealing key (the chart's unsealKey.secret, from config/).
	if env.UnsealKeyFile == "" {
		return info, fmt.Errorf("management cluster %s: no sealing key", c.Stamp)
	}
	if _, err := c.Node.Kubectl(ctx, "create", "namespace", simNamespace); err != nil {
		return info, err
	}
	if _, err := c.Node.Kubectl(ctx, "create", "secret", "generic", unsealKeySecret, "-n", simNamespace,
		"--from-file=unseal.key="+env.UnsealKeyFile); err != nil {
		return info, err
	}
	if _, err := c.Node.Kubectl(ctx, "create", "secret", "generic", "hypershift-sim-serving", "-n", simNamespace,
		"--from-file=ca.crt="+env.PKI.CAFile, "--from-file=tls.crt="+simServing.Cert, "--from-file=tls.key="+simServing.Key); err != nil {
		return info, err
	}
	if c.OwnControlPlane {
		if err := c.targetKubeconfigs(ctx); err != nil {
			return info, fmt.Errorf("management cluster %s: %w", c.Stamp, err)
		}
	}
	for _, rel := range c.Releases(env, broker, c.ImagesDir) {
		env.Step("helm install %s (%s) into namespace %s", rel.Name, rel.Chart, rel.Namespace)
		if err := c.HelmInstall(ctx, "install", rel); err != nil {
			return info, err
		}
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.stopForwards = cancel
	simMetrics, err := c.forwardService(fctx, simNamespace, "hypershift-sim")
	if err != nil {
		return info, err
	}
	agentHealth, err := c.forwardService(fctx, agentNamespace, "maestro-agent")
	if err != nil {
		return info, err
	}
	kubeconfig := c.Node.HostKubeconfig
	if c.OwnControlPlane {
		kubeconfig = c.own.Kubeconfig
	}
	server, err := kubeconfigServer(kubeconfig)
	if err != nil {
		return info, err
	}
	return localregion.ManagementClusterInfo{
		Name: c.Stamp, Kubeconfig: kubeconfig, Server: server,
		SimMetricsURL: "https://" + simMetrics + "/metrics", AgentHealthURL: "https://" + agentHealth + "/readyz",
		// A broker that requires client certificates names a client by its certificate's CN.
		AgentMQTTClientID: c.Stamp, ConsumerName: c.Stamp, ProvisionShard: c.Stamp,
		NamespacePrefix: "ocm-" + env.EnvName + "-",
	}, nil
}

// servingCert issues the serving certificate of a management cluster's workload: the names of
// its Service (which the ServiceMonitor verifies) and loopback (the host forward).
func (c *NodeCluster) servingCert(p *pki.Region, workload, namespace string) (pki.Files, error) {
	name := c.Stamp + "-" + workload + "-serving"
	if workload == "maestro-agent" {
		name = pki.MaestroAgent(c.Stamp) + "-serving"
	}
	svc := workload + "." + namespace + ".svc"
	err := p.Add(name, pki.Spec{CommonName: workload, Usage: pki.Server,
		DNSNames: []string{svc, svc + "." + node.ClusterDomain, "localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA)
	if err != nil {
		return pki.Files{}, fmt.Errorf("%s serving certificate: %w", workload, err)
	}
	return p.Files(name)
}

// Stop ends the host forwards and stops a control plane of its own; the node itself (and every
// release on it) goes with Node.Stop.
func (c *NodeCluster) Stop() {
	if c.stopForwards != nil {
		c.stopForwards()
	}
	if c.own != nil {
		c.own.Stop()
	}
}

// Upgrade runs helm upgrade --wait of the agent and sim charts with the images of imagesDir (an
// images.Build output whose images are loaded into the node), as a new release does.
func (c *NodeCluster) Upgrade(ctx context.Context, imagesDir string) error {
	for _, rel := range c.Releases(c.env, c.broker, imagesDir) {
		if rel.Name == "management-crds" {
			continue
		}
		if err := c.HelmInstall(ctx, "upgrade", rel); err != nil {
			return err
		}
	}
	return nil
}

// HelmInstall runs `helm <verb>` (install or upgrade) of rel against the node with --wait.
func (c *NodeCluster) HelmInstall(ctx context.Context, verb string, rel Release, extra ...string) error {
	return helmInstall(ctx, c.Node, c.Root, c.Helm, c.HelmHome, verb, rel, extra...)
}

// helmInstall runs `helm <verb>` (install or upgrade) of rel against the node with --wait.
func helmInstall(ctx context.Context, n *node.Node, root, helm, helmHome, verb string, rel Release, extra ...string) error {
	args := []string{verb, rel.Name, filepath.Join(root, rel.Chart), "--namespace", rel.Namespace, "--create-namespace",
		"--kubeconfig", n.HostKubeconfig, "--wait", "--timeout", helmTimeout}
	for _, v := range rel.Values {
		args = append(args, "-f", v)
	}
	for _, s := range rel.Set {
		args = append(args, "--set", s)
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"), "HELM_DATA_HOME="+filepath.Join(helmHome, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		pods, _ := n.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
		return fmt.Errorf("helm %s %s: %w\n%s\npods:\n%s", verb, rel.Name, err, out, pods)
	}
	return nil
}

// forwardService relays a free loopback port of the host to the first port of a Service's
// ClusterIP inside the node's namespace (kube-proxy balances it over the ready pods, so the
// address survives rollouts).
func (c *NodeCluster) forwardService(ctx context.Context, namespace, name string) (string, error) {
	return forwardServicePort(ctx, c.Node, namespace, name, "")
}

// forwardServicePort relays a free loopback port of the host to one port of a Service's
// ClusterIP (the port named port; the first one when port is empty).
func forwardServicePort(ctx context.Context, n *node.Node, namespace, name, port string) (string, error) {
	sel := "{.spec.ports[0].port}"
	if port != "" {
		sel = fmt.Sprintf("{.spec.ports[?(@.name==%q)].port}", port)
	}
	out, err := n.Kubectl(ctx, "get", "service", name, "-n", namespace, "-o", "jsonpath={.spec.clusterIP} "+sel)
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", fmt.Errorf("service %s/%s: clusterIP and port %s: %q", namespace, name, port, out)
	}
	return n.Netns.Forward(ctx, net.JoinHostPort(f[0], f[1]))
}

// kubeconfigServer reads the server URL of a kubeconfig the node wrote.
func kubeconfigServer(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			if _, err := url.Parse(v); err != nil {
				return "", err
			}
			return v, nil
		}
	}
	return "", errors.New("no server in " + path)
}

// WaitRolledOut waits until every Deployment of namespace runs only its current ReplicaSet's pods.
func (c *NodeCluster) WaitRolledOut(ctx context.Context, namespace string, timeout time.Duration) error {
	_, err := c.Node.Kubectl(ctx, "rollout", "status", "deployment", "-n", namespace, "--timeout", timeout.String())
	return err
}
