package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

const clusterArg = "<cluster service ID | ARM resource ID>"

func newClusterCmd(c *cli) *cobra.Command {
	return noun("cluster", "Clusters fleet-wide: list, describe, must-gather, pause, resume",
		"  hcpctl cluster list\n  hcpctl cluster describe <cluster ID>",
		newClusterListCmd(c), newClusterDescribeCmd(c), newClusterMustGatherCmd(c), newClusterPauseCmd(c), newClusterResumeCmd(c))
}

func newClusterListCmd(c *cli) *cobra.Command {
	var (
		f        adminapi.ClusterFilter
		allPages bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List clusters fleet-wide (-o wide adds current version, etag and ARM resource ID)",
		Example: `  hcpctl cluster list
  hcpctl cluster list --shard mgmt-1 --state ready -o wide
  hcpctl cluster list --subscription <subscription ID> -o json`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return clusterList(ctx, a, f, allPages) })
		},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Subscription, "subscription", "", "only this subscription's clusters")
	fs.StringVar(&f.Shard, "shard", "", "only clusters on this shard")
	fs.StringVar(&f.State, "state", "", "only clusters in this state (pending, installing, ready, error, uninstalling, updating)")
	fs.StringVar(&f.Version, "version", "", "only clusters at this version (desired or current)")
	fs.StringVar(&f.Health, "health", "", "only clusters of this health (healthy, degraded, unknown)")
	fs.IntVar(&f.PageSize, "page-size", 0, "clusters per call (1-1000; default 100)")
	fs.StringVar(&f.PageToken, "page-token", "", "continue from a previous page")
	fs.BoolVar(&allPages, "all-pages", true, "follow every page (false: one page, and print the next page token)")
	_ = cmd.RegisterFlagCompletionFunc("shard", c.shardFlag)
	_ = cmd.RegisterFlagCompletionFunc("state", fixed("pending", "installing", "ready", "error", "uninstalling", "updating"))
	_ = cmd.RegisterFlagCompletionFunc("health", fixed("healthy", "degraded", "unknown"))
	return cmd
}

func clusterList(ctx context.Context, a *app, f adminapi.ClusterFilter, allPages bool) error {
	var all []adminapi.ClusterSummary
	next := ""
	for {
		page, err := a.c.ListClusters(ctx, f)
		if err != nil {
			return err
		}
		all = append(all, page.Clusters...)
		next = page.NextPageToken
		if next == "" || !allPages {
			break
		}
		f.PageToken = next
	}
	if all == nil {
		all = []adminapi.ClusterSummary{}
	}
	return a.print(adminapi.ClusterList{Clusters: all, NextPageToken: next}, func(w io.Writer) {
		t := table(w, ifWide(a.wide(), []string{"ID", "NAME", "SUBSCRIPTION", "SHARD", "STATE", "HEALTH", "VERSION", "APPLIED", "AGE"},
			"CURRENT", "ETAG", "ARM RESOURCE ID")...)
		for _, c := range all {
			t.row(ifWide(a.wide(), []string{c.ID, lastSegment(c.ARMResourceID), c.Subscription, c.Shard, c.State, c.Health, c.Version, fmt.Sprint(c.Applied), age(time.Since(c.CreateTime))},
				orDash(c.CurrentVersion), c.ETag, c.ARMResourceID)...)
		}
		t.flush()
		if next != "" {
			fmt.Fprintf(w, "more: --page-token %s\n", next)
		}
	})
}

func newClusterDescribeCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "describe " + clusterArg,
		Short: "Show one cluster along its whole path: ARM, Cluster Service, Maestro, HyperShift",
		Example: `  hcpctl cluster describe <cluster ID>
  hcpctl cluster describe /subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/<name> -o yaml`,
		Args:              exactArgs(1, clusterArg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return clusterDescribe(ctx, a, args[0]) })
		},
	}
}

func clusterDescribe(ctx context.Context, a *app, id string) error {
	d, err := a.c.DescribeCluster(ctx, id)
	if err != nil {
		return err
	}
	return a.print(d, func(w io.Writer) {
		s := d.Summary
		t := table(w)
		t.row("ID:", s.ID)
		t.row("ARM resource:", s.ARMResourceID)
		t.row("Shard:", s.Shard)
		t.row("State:", s.State)
		t.row("Version:", s.Version+" (current "+orDash(s.CurrentVersion)+")")
		t.row("Applied:", fmt.Sprint(s.Applied))
		t.row("ETag:", s.ETag+" (--if-match of a conditional change)")
		if m := d.Monitor; m != nil {
			t.row("Monitor:", fmt.Sprintf("%s since %s: %s (checked %s ago by %s)", m.Health, m.Since.Format(time.RFC3339), m.Reason,
				age(time.Since(m.CheckedAt)), m.Replica))
			for _, np := range m.NodePools {
				t.row("  node pool "+np.ID+":", np.Health+": "+np.Reason)
			}
		} else {
			t.row("Monitor:", "no verdict yet (no Monitor replica has checked this cluster)")
		}
		t.flush()
		fmt.Fprintln(w, "\nWhere it is, stage by stage:")
		for _, l := range d.Diagnosis {
			fmt.Fprintln(w, "  "+printable(l))
		}
		if d.ARM != nil && len(d.ARM.Operations) > 0 {
			fmt.Fprintln(w, "\nRecent operations:")
			t := table(w, "  ID", "REQUEST", "STATUS", "AGE", "RESOURCE")
			for _, op := range d.ARM.Operations {
				t.row("  "+op.ID, op.Request, op.Status, age(time.Duration(op.AgeSeconds)*time.Second), op.ResourceID)
			}
			t.flush()
		}
		if len(d.Maestro) > 0 {
			fmt.Fprintln(w, "\nMaestro resource bundles:")
			t := table(w, "  NAME", "CONSUMER", "VERSION", "DELETING")
			for _, b := range d.Maestro {
				t.row("  "+b.Name, b.Consumer, fmt.Sprint(b.Version), fmt.Sprint(b.DeletedAt != nil))
			}
			t.flush()
		}
		for _, u := range d.Unavailable {
			fmt.Fprintln(w, "unavailable: "+printable(u))
		}
		fmt.Fprintln(w, "\n(-o yaml shows the documents, Cluster Service's model and the bundles' status in full)")
	})
}

func newClusterMustGatherCmd(c *cli) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "must-gather " + clusterArg,
		Short: "Write a tarball of everything about one cluster (it holds customer data)",
		Example: `  hcpctl cluster must-gather <cluster ID>
  hcpctl cluster must-gather <cluster ID> -f incident-42.tar.gz
  hcpctl cluster must-gather <cluster ID> -f - | tar tz`,
		Args:              exactArgs(1, clusterArg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return clusterMustGather(ctx, a, args[0], file) })
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "file to write (default must-gather-<cluster ID>.tar.gz; - for stdout)")
	return cmd
}

func clusterMustGather(ctx context.Context, a *app, id, file string) error {
	b, err := a.c.MustGather(ctx, id)
	if err != nil {
		return err
	}
	if file == "-" {
		_, err := a.out.Write(b)
		return err
	}
	if file == "" {
		file = "must-gather-" + strings.ReplaceAll(strings.Trim(id, "/"), "/", "_") + ".tar.gz"
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return fmt.Errorf("write the must-gather: %w", err)
	}
	fmt.Fprintf(a.out, "wrote %s (%d bytes); it holds customer data: keep it where incident data belongs\n", file, len(b))
	return nil
}

// change holds the flags every day-2 change takes.
type change struct{ reason, ifMatch string }

func (ch *change) flags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&ch.reason, "reason", "", "why (required; kept in the audit log)")
	cmd.Flags().StringVar(&ch.ifMatch, "if-match", "", "change only if the resource's etag (its spec revision, printed by the last change) is still this")
}

func (ch *change) needReason(what string) error {
	if strings.TrimSpace(ch.reason) == "" {
		return usagef("--reason is required: say why you %s (it is kept in the audit log)", what)
	}
	return nil
}

func newClusterPauseCmd(c *cli) *cobra.Command {
	var (
		ch    change
		until string
		dur   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pause " + clusterArg,
		Short: "HyperShift stops reconciling the cluster and its node pools (until resumed, or --until T / --for D)",
		Example: `  hcpctl --as sre-admin cluster pause <cluster ID> --reason "INC-42: stop the rollout"
  hcpctl --as sre-admin cluster pause <cluster ID> --for 2h --reason "INC-42"`,
		Args:              exactArgs(1, clusterArg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case until != "" && dur != 0:
				return usagef("give --until or --for, not both")
			case dur < 0:
				return usagef("--for must be positive, got %s", dur)
			}
			if err := ch.needReason("pause cluster " + args[0]); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				u := until
				if dur > 0 {
					u = time.Now().Add(dur).UTC().Format(time.RFC3339)
				}
				res, err := a.c.PauseCluster(ctx, args[0], adminapi.Pause{Until: u, Reason: ch.reason}, ch.ifMatch)
				if err != nil {
					return err
				}
				return a.printPause(res)
			})
		},
	}
	ch.flags(cmd)
	cmd.Flags().StringVar(&until, "until", "", "pause until this RFC 3339 time (default: until resumed)")
	cmd.Flags().DurationVar(&dur, "for", 0, "pause for this long, e.g. 2h (instead of --until)")
	return cmd
}

func newClusterResumeCmd(c *cli) *cobra.Command {
	var ch change
	cmd := &cobra.Command{
		Use:               "resume " + clusterArg,
		Short:             "HyperShift reconciles the cluster again",
		Example:           `  hcpctl --as sre-admin cluster resume <cluster ID> --reason "INC-42: resolved"`,
		Args:              exactArgs(1, clusterArg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ch.needReason("change cluster " + args[0]); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				res, err := a.c.ResumeCluster(ctx, args[0], ch.reason, ch.ifMatch)
				if err != nil {
					return err
				}
				return a.printPause(res)
			})
		},
	}
	ch.flags(cmd)
	return cmd
}

func (a *app) printPause(ch adminapi.Change) error {
	return a.print(ch, func(w io.Writer) {
		t := table(w, "CLUSTER", "STATE", "PAUSED UNTIL", "VERSION", "ETAG")
		t.row(ch.ID, ch.State, orDash(ch.PausedUntil), orDash(ch.Version), ch.ETag)
		t.flush()
	})
}
