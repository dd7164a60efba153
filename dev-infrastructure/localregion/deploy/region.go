package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/images"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/node"
)

// Config configures Up.
type Config struct {
	// Root is the repository root.
	Root string
	// StateDir holds logs, images and region.json (default <Root>/.run).
	StateDir string
	// RegionFile is where the endpoints are written (default <StateDir>/region.json).
	RegionFile string
	// Region is the rendered region whose values are installed (default "dev-local").
	Region string
	// Stamps are the management clusters installed (default mgmt-1 and mgmt-2, dev-local's two):
	// the first is the node itself; each other one runs a control plane of its own beside the
	// node, its agent and sim as pods on the node (NodeCluster.OwnControlPlane).
	Stamps []string
	// ImagesDir is where the images are built (default <StateDir>/deploy-images); images.Build
	// reuses an archive there whose inputs did not change, so a directory kept across runs
	// saves the builds.
	ImagesDir string
	// Sim tunes hypershift-sim.
	Sim localregion.SimConfig
	// Progress receives one line per step.
	Progress io.Writer
}

// Region is a deployed region: the launcher's region with the service cluster's charts and the
// management clusters' charts on the node.
type Region struct {
	*localregion.Region
	Node *node.Node
	// Cluster is the node's own management cluster (the first stamp); Clusters are all of them,
	// Cluster first.
	Cluster  *NodeCluster
	Clusters []*NodeCluster
	Services *ServiceCluster
	nodeDir  string
}

// chartImages are the images the management cluster's charts run.
var chartImages = []string{"maestro", "hypershift-sim"}

// Up builds the images, starts the node, and brings the region up with the service cluster's
// and the management clusters' charts installed on the node (the second stamp's control plane
// beside it); PostgreSQL and the broker stay on the host. On error everything it started is
// stopped.
func Up(ctx context.Context, cfg Config) (_ *Region, err error) {
	if cfg.Root == "" {
		return nil, errors.New("deploy: no repository root")
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(cfg.Root, ".run")
	}
	if cfg.Region == "" {
		cfg.Region = "dev-local"
	}
	if len(cfg.Stamps) == 0 {
		cfg.Stamps = []string{"mgmt-1", "mgmt-2"}
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	step := func(format string, args ...any) {
		fmt.Fprintf(cfg.Progress, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	rendered := filepath.Join(cfg.Root, "config", "rendered", cfg.Region)
	for _, stamp := range cfg.Stamps {
		if _, err := os.Stat(filepath.Join(rendered, stamp)); err != nil {
			return nil, fmt.Errorf("rendered values of %s/%s: %w (make render-config)", cfg.Region, stamp, err)
		}
	}

	step("building the pinned Kubernetes binaries, CoreDNS and helm (first run: minutes, with progress below; cached afterwards)")
	bins, err := node.BuildBinaries(ctx)
	if err != nil {
		return nil, err
	}
	helm, err := hackTool(ctx, cfg.Root, "helm.sh")
	if err != nil {
		return nil, err
	}
	specs, err := imagesFor()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sp := range specs {
		names = append(names, sp.Name)
	}
	step("building images %s", strings.Join(names, ", "))
	imagesDir := cfg.ImagesDir
	if imagesDir == "" {
		imagesDir = filepath.Join(cfg.StateDir, "deploy-images")
	}
	src, err := images.GitSource(ctx, cfg.Root)
	if err != nil {
		return nil, err
	}
	if _, err := images.Build(ctx, images.Options{Root: cfg.Root, Out: imagesDir, Source: src, Specs: specs}); err != nil {
		return nil, err
	}

	// The node's directory must be short (unix socket paths under it).
	nodeDir, err := os.MkdirTemp("", "ohcp-deploy-")
	if err != nil {
		return nil, err
	}
	step("starting the node (network namespace, etcd, kube-apiserver, containerd, kubelet, kube-proxy, CoreDNS) in %s", nodeDir)
	// The node restarts a component that crashes (its NetworkPolicy agent among them); each
	// crash is reported here as the region's own are (localregion.ServeUntilDone).
	n, err := node.Start(ctx, bins, node.Options{Dir: nodeDir, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnCrash: func(c node.Crash) {
			fmt.Fprintf(cfg.Progress, "\n!! the node's %s exited unexpectedly (%v); restart %d in %s; last log lines:\n%s\n",
				c.Name, c.Err, c.Restarts, c.After.Round(100*time.Millisecond), c.LogTail)
		}})
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(nodeDir))
	}
	d := &Region{Node: n, nodeDir: nodeDir}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	// The charts' NetworkPolicies are enforced, as on a management or service cluster whose
	// network plugin enforces them (docs/deploy.md, "Enforcement on the node").
	step("node %s Ready (namespace %s); starting its NetworkPolicy agent", node.NodeName, n.Netns.Name)
	agent, err := node.NetworkPolicyAgentBinary(ctx)
	if err != nil {
		return nil, err
	}
	if err := n.EnforceNetworkPolicies(ctx, agent); err != nil {
		return nil, err
	}
	step("NetworkPolicies enforced; loading images")
	m, err := n.LoadManifest(ctx, imagesDir)
	if err != nil {
		return nil, err
	}
	var external []localregion.ExternalManagementCluster
	for i, stamp := range cfg.Stamps {
		c := &NodeCluster{Stamp: stamp, Node: n, Root: cfg.Root, Rendered: rendered,
			Helm: helm, HelmHome: filepath.Join(nodeDir, "helm"), Images: m, ImagesDir: imagesDir,
			OwnControlPlane: i > 0, Dir: filepath.Join(nodeDir, stamp)}
		d.Clusters = append(d.Clusters, c)
		external = append(external, c)
	}
	d.Cluster = d.Clusters[0]
	d.Services = &ServiceCluster{Node: n, Root: cfg.Root, Rendered: rendered, Helm: helm,
		HelmHome: filepath.Join(nodeDir, "helm"), ImagesDir: imagesDir, Dir: filepath.Join(nodeDir, "secrets"),
		Clusters: d.Clusters}
	r, err := localregion.Up(ctx, localregion.Config{Root: cfg.Root, StateDir: cfg.StateDir, RegionFile: cfg.RegionFile,
		External: external, ServiceCluster: d.Services,
		Sim: cfg.Sim, Progress: cfg.Progress})
	if err != nil {
		return nil, err
	}
	d.Region = r
	return d, nil
}

// Stop stops the region's processes, then the node (every pod, the namespace and what the node
// changed on the host), and removes the node's directory.
func (d *Region) Stop() {
	if d.Region != nil {
		d.Region.Stop()
	}
	if d.Node != nil {
		if err := d.Node.Stop(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the node:", err)
		}
	}
	_ = os.RemoveAll(d.nodeDir)
}

// hackTool runs a tool-building script of hack/ and returns the binary's path it prints.
func hackTool(ctx context.Context, root, script string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", script))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/%s: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}
