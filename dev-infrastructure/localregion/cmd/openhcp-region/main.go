// Command openhcp-region brings up a whole local OpenHCP region (see docs/local-region.md),
// prints its endpoints, and stops everything on Ctrl-C.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

func main() {
	var cfg localregion.Config
	flag.StringVar(&cfg.StateDir, "state-dir", os.Getenv("OPENHCP_STATE_DIR"), "directory for throwaway state and logs (default <repo>/.run; env OPENHCP_STATE_DIR)")
	flag.StringVar(&cfg.RegionFile, "region-file", os.Getenv("OPENHCP_REGION_FILE"), "where to write the endpoints as JSON (default <state-dir>/region.json; env OPENHCP_REGION_FILE)")
	flag.StringVar(&cfg.Location, "location", "westus3", "ARM location the region serves")
	flag.IntVar(&cfg.ManagementClusters, "management-clusters", 2, "number of management clusters (provision shards)")
	flag.IntVar(&cfg.ShardCapacity, "shard-capacity", 100, "max hosted clusters per shard")
	flag.IntVar(&cfg.MaestroServers, "maestro-servers", 2, "Maestro server instances sharing the agents' status events, as config/ deploys them (1 reads them one at a time)")
	flag.DurationVar(&cfg.Sim.AvailableDelay, "sim-available-delay", 5*time.Second, "how long hypershift-sim takes to make a HostedCluster Available")
	flag.DurationVar(&cfg.Sim.DeleteDelay, "sim-delete-delay", 2*time.Second, "how long hypershift-sim takes to tear a HostedCluster down")
	flag.DurationVar(&cfg.PrometheusInterval, "prometheus-eval-interval", localregion.DefaultPrometheusInterval, "the region Prometheus' scrape and rule evaluation interval (short, so an alert fires about its for: duration after its cause)")
	flag.IntVar(&cfg.Sim.HostedAPIServers, "sim-hosted-apiservers", 0, "HostedClusters per management cluster that get a real kube-apiserver (0: hypershift-sim's default, 4; negative: none)")
	flag.Parse()
	if cfg.ManagementClusters < 1 {
		fmt.Fprintln(os.Stderr, "openhcp-region: --management-clusters must be at least 1")
		os.Exit(2)
	}
	if cfg.MaestroServers < 1 {
		fmt.Fprintln(os.Stderr, "openhcp-region: --maestro-servers must be at least 1")
		os.Exit(2)
	}
	if cfg.PrometheusInterval < time.Second {
		fmt.Fprintln(os.Stderr, "openhcp-region: --prometheus-eval-interval must be at least 1s")
		os.Exit(2)
	}
	cfg.Progress = os.Stdout

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	r, err := localregion.Up(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "openhcp-region: %v\n", err)
		os.Exit(1)
	}
	b, _ := json.MarshalIndent(r.Info, "", "  ")
	fmt.Printf("\nregion up in %s; endpoints (also in %s):\n%s\n\nlogs: %s\nCtrl-C stops everything.\n",
		time.Since(start).Round(time.Second), r.RegionFile(), b, r.Info.LogDir)
	localregion.ServeUntilDone(ctx, r.Crashes(), "the region", r.Stop, r.Info.LogDir)
}
