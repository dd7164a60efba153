package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

func newShardCmd(c *cli) *cobra.Command {
	return noun("shard", "Provision shards (management clusters): capacity, load, status and draining",
		"  hcpctl shard list\n  hcpctl --as sre-admin shard cordon mgmt-1 --reason \"INC-42\"",
		newShardListCmd(c),
		newShardChangeCmd(c, "cordon", "Take no new clusters on the shard", adminapi.ShardCordon, ""),
		newShardChangeCmd(c, "uncordon", "The shard takes new clusters again", adminapi.ShardUncordon, ""),
		newShardChangeCmd(c, "set-status", "Set the shard active, maintenance or offline (--status)", adminapi.ShardSetStatus, ""),
		newShardDrainStatusCmd(c),
		newShardChangeCmd(c, "maintenance", "Set the shard to maintenance (keeps its clusters, takes no new ones)", adminapi.ShardSetStatus, "maintenance"),
		newShardChangeCmd(c, "offline", "Set the shard offline", adminapi.ShardSetStatus, "offline"),
	)
}

func newShardListCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "list",
		Short:             "List provision shards with capacity, load and health (-o wide adds labels)",
		Example:           "  hcpctl shard list\n  hcpctl shard list -o json",
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd.Context(), false, shardList)
		},
	}
}

func shardList(ctx context.Context, a *app) error {
	l, err := a.c.ListShards(ctx)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, ifWide(a.wide(), []string{"NAME", "STATUS", "HEALTH", "CLUSTERS", "CAPACITY", "LOAD", "ETAG"}, "LABELS")...)
		var sick []string
		for _, s := range l.Shards {
			t.row(ifWide(a.wide(), []string{s.Name, s.Status, s.Health, fmt.Sprint(s.ClusterCount), fmt.Sprint(s.MaxClusters), fmt.Sprintf("%3.0f%% %s", 100*s.Load, bar(s.Load)), s.ETag},
				labels(s.Labels))...)
			if s.Health != "healthy" {
				sick = append(sick, s.Name+": "+s.HealthMessage)
			}
		}
		t.flush()
		// What was seen on a shard that is not healthy, under the table (the JSON has it too).
		for _, line := range sick {
			fmt.Fprintln(w, printable(line))
		}
	})
}

// labels is k=v,k=v in key order, as kubectl's --show-labels.
func labels(m map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+"="+m[k])
	}
	return orDash(strings.Join(kv, ","))
}

// newShardChangeCmd is a shard status change: action with --status, or (status set) a
// shortcut for set-status to that status.
func newShardChangeCmd(c *cli, verb, short, action, status string) *cobra.Command {
	var (
		reason, ifMatch string
		setStatus       = status
	)
	example := fmt.Sprintf("  hcpctl --as sre-admin shard %s mgmt-1 --reason \"INC-42: disk pressure\" --if-match active", verb)
	if action == adminapi.ShardSetStatus && status == "" {
		example = "  hcpctl --as sre-admin shard set-status mgmt-1 --status maintenance --reason \"INC-42\" --if-match active"
	}
	cmd := &cobra.Command{
		Use:               verb + " <shard>",
		Short:             short,
		Example:           example,
		Args:              exactArgs(1, "<shard>"),
		ValidArgsFunction: c.shardNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("--reason is required: say why you change shard %s (it is kept in the audit log)", args[0])
			}
			if action == adminapi.ShardSetStatus && setStatus == "" {
				return usagef("--status is required: active, maintenance or offline")
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				s, err := a.c.ChangeShard(ctx, args[0], action, adminapi.ShardChange{Status: setStatus, Reason: reason}, ifMatch)
				if err != nil {
					return err
				}
				return a.print(s, func(w io.Writer) {
					fmt.Fprintf(w, "shard %s is %s (etag %s)\n", s.Name, s.Status, s.ETag)
				})
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; kept in the audit log)")
	cmd.Flags().StringVar(&ifMatch, "if-match", "", "change only if the shard's etag is still this (from 'hcpctl shard list')")
	if action == adminapi.ShardSetStatus && status == "" {
		cmd.Flags().StringVar(&setStatus, "status", "", "active, maintenance or offline (required)")
		_ = cmd.RegisterFlagCompletionFunc("status", fixed("active", "maintenance", "offline"))
	}
	return cmd
}

func newShardDrainStatusCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "drain-status <shard>",
		Short:             "Show the clusters left on a shard and the operations running on them (-o wide adds ARM resource IDs)",
		Example:           "  hcpctl shard drain-status mgmt-1",
		Args:              exactArgs(1, "<shard>"),
		ValidArgsFunction: c.shardNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return shardDrainStatus(ctx, a, args[0]) })
		},
	}
}

func shardDrainStatus(ctx context.Context, a *app, shard string) error {
	ds, err := a.c.DrainStatus(ctx, shard)
	if err != nil {
		return err
	}
	return a.print(ds, func(w io.Writer) {
		fmt.Fprintf(w, "shard %s is %s; %d cluster(s) remain\n", ds.Shard.Name, ds.Shard.Status, len(ds.Clusters))
		if len(ds.Clusters) == 0 {
			return
		}
		t := table(w, ifWide(a.wide(), []string{"CLUSTER", "NAME", "STATE", "VERSION", "HEALTH", "ACTIVE OPERATIONS"}, "ARM RESOURCE ID")...)
		for _, c := range ds.Clusters {
			var ops []string
			for _, op := range c.ActiveOperations {
				ops = append(ops, fmt.Sprintf("%s %s %s (%s)", op.ID, op.Request, op.Status, age(time.Duration(op.AgeSeconds)*time.Second)))
			}
			t.row(ifWide(a.wide(), []string{c.ID, orDash(lastSegment(c.ARMResourceID)), c.State, orDash(c.Version), c.Health, orDash(strings.Join(ops, ", "))},
				orDash(c.ARMResourceID))...)
		}
		t.flush()
	})
}
