package deploy

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/dev-infrastructure/node"
)

// A management cluster with a control plane of its own (NodeCluster.OwnControlPlane): make
// deploy's second stamp. One node per machine, and two stamps' agents and sims in one cluster
// would manage each other's objects, so its etcd, kube-apiserver and kube-controller-manager run
// as processes beside the node, as make run's management clusters do, and its agent and sim run
// as pods on the node acting on that apiserver (docs/deploy.md#the-second-management-stamp).

const (
	// ownAPIServerPort is the port of the Service the pods reach the apiserver by.
	ownAPIServerPort = 6443
	// targetKubeconfigSecret is the Secret (key kubeconfig) the agent's and sim's charts read
	// the apiserver's address and their identity there from (targetCluster.kubeconfigSecret).
	targetKubeconfigSecret = "target-kubeconfig"
)

// ownAPIServerService is the Service of OutsideNamespace the pods reach the apiserver by.
func (c *NodeCluster) ownAPIServerService() string { return c.Stamp + "-apiserver" }

// startOwnControlPlane starts the cluster's etcd, kube-apiserver (its certificate naming the
// Service) and kube-controller-manager, exposes the apiserver to the pods, and lets the region's
// Prometheus read its /metrics.
func (c *NodeCluster) startOwnControlPlane(ctx context.Context, env localregion.ExternalEnv) error {
	apiserver, etcd, err := mgmtcluster.KubeBinaries(ctx)
	if err != nil {
		return err
	}
	kcm, err := mgmtcluster.KubeControllerManagerBinary(ctx)
	if err != nil {
		return err
	}
	svc := svcName(c.ownAPIServerService(), OutsideNamespace)
	env.Step("starting management cluster %s's control plane (etcd, kube-apiserver, kube-controller-manager) beside the node", c.Stamp)
	c.own, err = mgmtcluster.StartManagementCluster(ctx, mgmtcluster.ManagementClusterOptions{
		Name: c.Stamp, Dir: c.Dir, LogDir: env.LogDir, APIServerPath: apiserver, EtcdPath: etcd, ControllerManagerPath: kcm,
		ServerNames: []string{svc, svc + "." + node.ClusterDomain},
	})
	if err != nil {
		return err
	}
	u, err := url.Parse(c.own.Host)
	if err != nil {
		return fmt.Errorf("apiserver address %s: %w", c.own.Host, err)
	}
	if c.ownService, err = c.Node.ExposeHost(ctx, OutsideNamespace, c.ownAPIServerService(), ownAPIServerPort, u.Host); err != nil {
		return err
	}
	p := &c.prometheus
	p.cert, p.key, p.ca, err = localregion.GrantPrometheusMetrics(ctx, c.own, filepath.Join(c.Dir, "prometheus"))
	return err
}

// podServer is the apiserver's URL from the node's pods: the node's own in-cluster address, or
// the Service of a control plane of its own.
func (c *NodeCluster) podServer() string {
	if !c.OwnControlPlane {
		return "https://kubernetes.default.svc"
	}
	return fmt.Sprintf("https://%s:%d", svcName(c.ownAPIServerService(), OutsideNamespace), ownAPIServerPort)
}

// targetKubeconfigs applies the agent's and sim's chart RBAC to the cluster's own apiserver for
// their ServiceAccounts in the namespaces they run in on the node, as make run does
// (mgmtcluster.ApplyChartIdentity), and gives each pod the kubeconfig that acts as that
// ServiceAccount there: a Secret targetKubeconfigSecret in its namespace, credentials inline,
// the server the pods reach.
func (c *NodeCluster) targetKubeconfigs(ctx context.Context) error {
	agent := mgmtcluster.AgentIdentity(c.Stamp)
	agent.Namespace = c.AgentNamespace()
	sim := mgmtcluster.SimIdentity
	sim.Namespace = c.SimNamespace()
	for _, id := range []mgmtcluster.ChartIdentity{agent, sim} {
		dir := filepath.Join(c.Dir, "identities", id.Namespace)
		path, err := mgmtcluster.ApplyChartIdentity(ctx, c.own, id, dir)
		if err != nil {
			return err
		}
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			return err
		}
		if err := clientcmdapi.FlattenConfig(cfg); err != nil {
			return fmt.Errorf("kubeconfig of %s: %w", id.ServiceAccount, err)
		}
		for _, cl := range cfg.Clusters {
			cl.Server = c.podServer()
		}
		inPod := filepath.Join(dir, id.ServiceAccount+".in-pod.kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, inPod); err != nil {
			return err
		}
		if _, err := c.Node.Kubectl(ctx, "create", "secret", "generic", targetKubeconfigSecret, "-n", id.Namespace,
			"--from-file=kubeconfig="+inPod); err != nil {
			return err
		}
	}
	return nil
}

// monitorProbeSecret is the Secret (ca.crt, tls.crt, tls.key) of the Monitor's /readyz probe of
// the cluster's kube-apiserver, in the Monitor's namespace.
func (c *NodeCluster) monitorProbeSecret() string { return "monitor-shard-probe-" + c.Stamp }

// monitorProbeURL is the cluster's kube-apiserver /readyz as the Monitor's pods reach it.
func (c *NodeCluster) monitorProbeURL() string { return c.podServer() + "/readyz" }

// writeMonitorProbeCertificate writes into dir the Monitor's probe identity on the cluster's
// kube-apiserver, as make run's (localregion.MonitorKubeUser, no binding: /readyz and nothing
// else of note): a client certificate of the apiserver's CA, its key, and that CA.
func (c *NodeCluster) writeMonitorProbeCertificate(dir string) (cert, key, ca string, err error) {
	if c.own != nil {
		return localregion.WriteMonitorProbeCertificate(c.own, dir)
	}
	return c.Node.WriteClientCertificate(dir, c.Stamp+"-monitor-client", localregion.MonitorKubeUser)
}
