package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

func newUpgradeCmd(c *cli) *cobra.Command {
	return noun("upgrade", "Control-plane and node-pool upgrades: start, cancel",
		"  hcpctl --as sre-admin upgrade start <cluster ID> --version 4.20.3 --reason \"CVE-2026-1\"",
		newUpgradeStartCmd(c), newUpgradeCancelCmd(c))
}

func newUpgradeStartCmd(c *cli) *cobra.Command {
	const arg = "<cluster or node pool: cluster service ID | ARM resource ID>"
	var (
		ch      change
		version string
	)
	cmd := &cobra.Command{
		Use:   "start " + arg,
		Short: "Upgrade a control plane (a cluster's ID) or a node pool (a node pool's ID) to --version",
		Example: `  hcpctl --as sre-admin upgrade start <cluster ID> --version 4.20.3 --reason "CVE-2026-1"
  hcpctl --as sre-admin upgrade start <node pool ID> --version 4.20 --reason "CVE-2026-1" --if-match 7 -o json`,
		Args:              exactArgs(1, arg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(version) == "" {
				return usagef("--version is required: the version to upgrade %s to ('hcpctl cluster describe' shows the current one)", args[0])
			}
			if err := ch.needReason("upgrade " + args[0]); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				res, err := a.c.StartUpgrade(ctx, args[0], adminapi.Upgrade{Version: version, Reason: ch.reason}, ch.ifMatch)
				if err != nil {
					return err
				}
				return a.printChange(res)
			})
		},
	}
	ch.flags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "the OpenShift version to upgrade to, 4.20 or 4.20.3 (required)")
	return cmd
}

func newUpgradeCancelCmd(c *cli) *cobra.Command {
	var ch change
	cmd := &cobra.Command{
		Use:               "cancel " + clusterArg,
		Short:             "Cancel a control-plane upgrade that has not started",
		Example:           `  hcpctl --as sre-admin upgrade cancel <cluster ID> --reason "wrong version"`,
		Args:              exactArgs(1, clusterArg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ch.needReason("cancel the upgrade of " + args[0]); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				res, err := a.c.CancelUpgrade(ctx, args[0], ch.reason)
				if err != nil {
					return err
				}
				return a.printChange(res)
			})
		},
	}
	// A cancel is conditional on the upgrade not having started, not on an etag.
	cmd.Flags().StringVar(&ch.reason, "reason", "", "why (required; kept in the audit log and the upgrade's message)")
	return cmd
}
