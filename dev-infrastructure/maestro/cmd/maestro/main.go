// Command maestro is the pinned upstream Maestro (server, agent, migrations), started as
// upstream's cmd/maestro starts it, with four changes: the reconnect backoff of its CloudEvents
// clients (reconnect.go), how often the server queues its unpublished spec events again
// (eventsync.go), a guard ahead of its gRPC interceptors that refuses a Publish without an
// event and recovers a handler's panic (grpcguard.go), and its three per-bundle metrics kept and
// served without the bundle ID (bundlemetrics.go). Everything else is upstream's code at the
// pin.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/openshift-online/maestro/cmd/maestro/agent"
	"github.com/openshift-online/maestro/cmd/maestro/consumer"
	"github.com/openshift-online/maestro/cmd/maestro/migrate"
	"github.com/openshift-online/maestro/cmd/maestro/resourcebundle"
	"github.com/openshift-online/maestro/cmd/maestro/servecmd"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// main is upstream's cmd/maestro main (at the pin) after installReconnectBackoff,
// installEventsSync, installGRPCGuard and installBundleMetrics (before the server builds its
// /metrics handler, which reads prometheus.DefaultGatherer then).
func main() {
	installReconnectBackoff()
	installEventsSync()
	if err := installGRPCGuard(); err != nil {
		log.Fatalf("install the gRPC guard: %v", err)
	}
	if err := installBundleMetrics(); err != nil {
		log.Fatalf("install the per-bundle metrics without their bundle ID: %v", err)
	}

	// check if the glog flag is already registered to avoid duplicate flag define error
	if flag.CommandLine.Lookup("alsologtostderr") != nil {
		flag.CommandLine = flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	}
	klog.InitFlags(nil)

	rootCmd := &cobra.Command{
		Use:  "maestro",
		Long: "maestro is a multi-cluster resources orchestrator for Kubernetes",
	}
	rootCmd.PersistentFlags().AddGoFlagSet(flag.CommandLine)
	rootCmd.AddCommand(migrate.NewMigrationCommand(), servecmd.NewServerCommand(), agent.NewAgentCommand(),
		consumer.NewConsumerCommand(), resourcebundle.NewResourceBundleCommand())

	if err := rootCmd.Execute(); err != nil {
		log.Fatalf("error running command: %v", err)
	}
}
