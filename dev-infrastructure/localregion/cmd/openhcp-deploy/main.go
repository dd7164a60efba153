// Command openhcp-deploy is make deploy (docs/deploy.md#make-deploy): it builds the images and
// the pinned Kubernetes binaries, starts the real node in its own network namespace, starts
// PostgreSQL and the broker on the host, installs the service cluster's and one management
// cluster's charts onto the node with Helm, writes region.json like make run (its endpoints are
// host forwards to the pods' Services), and removes everything on Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion/deploy"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

func main() {
	var cfg deploy.Config
	flag.StringVar(&cfg.StateDir, "state-dir", os.Getenv("OPENHCP_STATE_DIR"), "directory for throwaway state and logs (default <repo>/.run; env OPENHCP_STATE_DIR)")
	flag.StringVar(&cfg.RegionFile, "region-file", os.Getenv("OPENHCP_REGION_FILE"), "where to write the endpoints as JSON (default <state-dir>/region.json; env OPENHCP_REGION_FILE)")
	flag.StringVar(&cfg.Region, "region", "dev-local", "rendered region of config/ whose Helm values are installed")
	stamps := flag.String("stamps", "mgmt-1,mgmt-2", "the management clusters (stamps) installed: the first is the node, each other one runs its control plane beside it")
	flag.DurationVar(&cfg.Sim.AvailableDelay, "sim-available-delay", 5*time.Second, "how long hypershift-sim takes to make a HostedCluster Available")
	flag.DurationVar(&cfg.Sim.DeleteDelay, "sim-delete-delay", 2*time.Second, "how long hypershift-sim takes to tear a HostedCluster down")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "openhcp-deploy: the node needs root (network namespace, containerd, kubelet)")
		os.Exit(1)
	}
	root, err := mgmtcluster.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "openhcp-deploy: %v\n", err)
		os.Exit(1)
	}
	cfg.Root = root
	cfg.Progress = os.Stdout
	cfg.Stamps = strings.Split(*stamps, ",")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	d, err := deploy.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "openhcp-deploy: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.MarshalIndent(d.Info, "", "  ")
	fmt.Printf("\nregion deployed in %s; endpoints (also in %s):\n%s\n\nnode: namespace %s, kubeconfig %s\n"+
		"hosted clusters' api.url is a pod address, reached only from the node's namespace (the host routes it to its default gateway):\n"+
		"  nsenter --net=%s kubectl --kubeconfig <the cluster's admin kubeconfig> get namespaces\n"+
		"logs: %s (the node's under %s/logs until Ctrl-C)\nCtrl-C removes everything.\n",
		time.Since(start).Round(time.Second), d.RegionFile(), b, d.Node.Netns.Name, d.Node.HostKubeconfig, d.Node.Netns.Path(), d.Info.LogDir, d.Node.Dir)
	localregion.ServeUntilDone(ctx, d.Crashes(), "the region and the node", d.Stop, d.Info.LogDir)
}
