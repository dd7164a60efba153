package localregion

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/openhcp/openhcp/internal/pki"
)

// ExternalManagementCluster is a management cluster whose Maestro agent and hypershift-sim Up
// does not start as processes: someone else installs them (make deploy: the charts with Helm on
// the real node, dev-infrastructure/localregion/deploy). Up issues its agent's identity, puts
// BrokerNames on the broker's certificate, registers its Maestro consumer and provision shard,
// and stops it with the region.
type ExternalManagementCluster interface {
	// Name is the cluster's name: its provision shard and Maestro consumer.
	Name() string
	// BrokerNames are DNS names the cluster's agent reaches the broker by (the broker's
	// certificate must carry them).
	BrokerNames() []string
	// Start installs the agent and hypershift-sim and returns once they are ready.
	Start(ctx context.Context, env ExternalEnv) (ManagementClusterInfo, error)
	// Stop removes what Start made.
	Stop()
}

// ExternalEnv is what an external management cluster needs from the region.
type ExternalEnv struct {
	PKI *pki.Region
	// BrokerAddr is the broker's host:port on the host's loopback.
	BrokerAddr string
	// StateDir is throwaway state the cluster may use; LogDir keeps logs.
	StateDir, LogDir string
	// EnvName is Cluster Service's environment (namespaces are "ocm-<EnvName>-…").
	EnvName string
	Sim     SimConfig
	// UnsealKeyFile is this management cluster's private sealing key (0600; kept across
	// restarts of the region), whose public half is in ServiceEnv.SealingKeysDir.
	UnsealKeyFile string
	// Step reports progress.
	Step func(format string, args ...any)
}

// addBrokerNames reissues the broker's certificate with the DNS names external management
// clusters reach it by, besides localhost and the loopback addresses.
func (r *Region) addBrokerNames() error {
	names := []string{"localhost"}
	for _, ext := range r.cfg.External {
		names = append(names, ext.BrokerNames()...)
	}
	if len(names) == 1 {
		return nil
	}
	err := r.pki.Add(pki.Broker, pki.Spec{CommonName: pki.Broker, Usage: pki.Server, DNSNames: names,
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.ServiceCA)
	if err != nil {
		return fmt.Errorf("broker certificate for %v: %w", names, err)
	}
	return nil
}

// startExternal registers each external management cluster's consumer and starts it.
func (r *Region) startExternal(ctx context.Context, registerConsumer func(context.Context, string) error, brokerAddr string) error {
	for _, ext := range r.cfg.External {
		name := ext.Name()
		r.step("installing management cluster %s", name)
		if err := registerConsumer(ctx, name); err != nil {
			return err
		}
		// Its sim opens the Secrets Cluster Service seals to this key, as a launched one does.
		unsealKey, err := r.writeSealingKey(name)
		if err != nil {
			return err
		}
		info, err := ext.Start(ctx, ExternalEnv{PKI: r.pki, BrokerAddr: brokerAddr, StateDir: r.stateDir, LogDir: r.logDir,
			EnvName: r.cfg.EnvName, Sim: r.cfg.Sim, UnsealKeyFile: unsealKey, Step: r.step})
		r.onStop(ext.Stop)
		if err != nil {
			return fmt.Errorf("management cluster %s: %w", name, err)
		}
		if info.AdminKubeconfig, err = applyAdminReaderTo(ctx, name, info.Kubeconfig, filepath.Join(r.stateDir, name, "identities")); err != nil {
			return err
		}
		r.Info.ManagementClusters = append(r.Info.ManagementClusters, info)
	}
	return nil
}
