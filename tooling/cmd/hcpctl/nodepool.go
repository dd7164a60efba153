package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

const nodePoolArg = "<node pool: cluster service ID | ARM resource ID>"

func newNodePoolCmd(c *cli) *cobra.Command {
	return noun("nodepool", "Node pools: scale",
		"  hcpctl --as sre-admin nodepool scale <node pool ID> --replicas 3 --reason \"INC-42\"",
		newNodePoolScaleCmd(c))
}

func newNodePoolScaleCmd(c *cli) *cobra.Command {
	var (
		ch                   change
		replicas, minN, maxN int
	)
	cmd := &cobra.Command{
		Use:   "scale " + nodePoolArg,
		Short: "Set a node pool's replicas (--replicas) or autoscaling range (--min, --max)",
		Example: `  hcpctl --as sre-admin nodepool scale <node pool ID> --replicas 3 --reason "INC-42: capacity"
  hcpctl --as sre-admin nodepool scale <node pool ID> --min 2 --max 6 --reason "INC-42" --if-match 7`,
		Args:              exactArgs(1, nodePoolArg),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			auto := minN >= 0 || maxN >= 0
			switch {
			case replicas >= 0 && auto:
				return usagef("give either --replicas or --min and --max, not both")
			case auto && (minN < 0 || maxN < 0):
				return usagef("autoscaling needs both --min and --max")
			case replicas < 0 && !auto:
				return usagef("give --replicas N, or --min N --max M for autoscaling")
			}
			if err := ch.needReason("scale node pool " + args[0]); err != nil {
				return err
			}
			body := adminapi.NodePoolScale{Reason: ch.reason}
			if replicas >= 0 {
				n := int32(replicas)
				body.Replicas = &n
			} else {
				body.Autoscaling = &adminapi.NodePoolAutoscaling{Min: int32(minN), Max: int32(maxN)}
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				res, err := a.c.ScaleNodePool(ctx, args[0], body, ch.ifMatch)
				if err != nil {
					return err
				}
				return a.printChange(res)
			})
		},
	}
	ch.flags(cmd)
	cmd.Flags().IntVar(&replicas, "replicas", -1, "a fixed node count")
	cmd.Flags().IntVar(&minN, "min", -1, "autoscaling: the fewest nodes (with --max)")
	cmd.Flags().IntVar(&maxN, "max", -1, "autoscaling: the most nodes (with --min)")
	return cmd
}

// printChange shows a scale's or upgrade's result as one aligned table.
func (a *app) printChange(ch adminapi.Change) error {
	return a.print(ch, func(w io.Writer) {
		t := table(w, "KIND", "ID", "STATE", "REPLICAS", "AUTOSCALING", "VERSION", "UPGRADE", "ARM", "ETAG")
		replicas, scaling, upgrade := fmt.Sprint(ch.Replicas), "-", "-"
		if ch.Kind == adminapi.KindCluster {
			replicas = "-" // a cluster has no node count of its own
		}
		if ch.Autoscaling != nil {
			scaling = fmt.Sprintf("%d-%d", ch.Autoscaling.Min, ch.Autoscaling.Max)
		}
		if ch.Upgrade != nil {
			upgrade = ch.Upgrade.State + " → " + ch.Upgrade.ToVersion
		}
		t.row(ch.Kind, ch.ID, ch.State, replicas, scaling, orDash(ch.Version), upgrade, ch.ARMDocument, ch.ETag)
		t.flush()
	})
}
