package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// requestPoll is how often --wait reads a maintenance request.
const requestPoll = time.Second

func newMaintenanceCmd(c *cli) *cobra.Command {
	return noun("maintenance", "Maintenance campaigns, single tasks and windows (sre-admin), and the requests that change them",
		"  hcpctl --as sre-admin maintenance campaign create z-4-19-16 --from-version 4.19.16 --channel-group stable --reason \"CHG-12\" --wait\n  hcpctl maintenance request get <request id>",
		noun("campaign", "Ask the maintenance service to create, resume or cancel a campaign",
			"  hcpctl --as sre-admin maintenance campaign resume z-4-19-16 --reason \"CHG-12: failures understood\" --wait",
			newCampaignCreateCmd(c),
			newCampaignChangeCmd(c, "resume", "Resume a Halted campaign (its current wave's failures so far are accepted)"),
			newCampaignChangeCmd(c, "cancel", "Cancel a Running or Halted campaign and its unfinished tasks"),
		),
		noun("task", "Ask the maintenance service to create or cancel a single task",
			"  hcpctl --as sre-admin maintenance task create <cluster id> --type nodepool-zstream-upgrade --param nodePool=<pool id> --reason \"CHG-7\" --wait",
			newTaskCreateCmd(c),
			newTaskCancelCmd(c),
		),
		noun("window", "Ask the maintenance service to set or clear a cluster's weekly maintenance window (UTC)",
			"  hcpctl --as sre-admin maintenance window set <cluster id> --days Sat,Sun --start 02:00 --length 4h --reason \"customer asked\" --wait",
			newWindowSetCmd(c),
			newWindowClearCmd(c),
			newWindowGetCmd(c),
		),
		noun("request", "SREs' maintenance requests and what became of them",
			"  hcpctl maintenance request get <request id>",
			newRequestGetCmd(c),
		),
	)
}

// waitFlag is --wait: follow the request until the maintenance service carried it out.
func waitFlag(cmd *cobra.Command, wait *bool) {
	cmd.Flags().BoolVar(wait, "wait", false, "wait (up to --timeout) until the maintenance service carried the request out; exit 1 if it failed")
}

func newCampaignCreateCmd(c *cli) *cobra.Command {
	var (
		body      adminapi.CampaignCreate
		threshold float64
		wait      bool
	)
	cmd := &cobra.Command{
		Use:   "create <campaign id>",
		Short: "Upgrade every cluster on --from-version in --channel-group to its recommended z-stream, shard by shard",
		Example: "  hcpctl --as sre-admin maintenance campaign create z-4-19-16 --from-version 4.19.16 --channel-group stable \\\n" +
			"      --canary-shard mgmt-2 --bake 1h --max-in-flight 3 --failure-threshold 0.1 --reason \"CHG-12: 4.19.17\" --wait",
		Args:              exactArgs(1, "<campaign id>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(body.Reason) == "" {
				return usagef("--reason is required: say why you start campaign %s (it is kept in the audit log)", args[0])
			}
			if body.FromVersion == "" || body.ChannelGroup == "" {
				return usagef("--from-version and --channel-group are required: the campaign upgrades the clusters on that version in that channel group")
			}
			if cmd.Flags().Changed("bake") {
				if _, err := time.ParseDuration(body.Bake); err != nil {
					return usagef("invalid value %q for --bake: a duration such as 30m or 2h", body.Bake)
				}
			}
			if t := body.Target; t != "" && t != maintenance.TargetClusters && t != maintenance.TargetNodePools {
				return usagef("invalid value %q for --target: %s or %s", t, maintenance.TargetClusters, maintenance.TargetNodePools)
			}
			if cmd.Flags().Changed("failure-threshold") {
				body.FailureThreshold = &threshold
			}
			body.ID = args[0]
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				r, err := a.c.CreateCampaign(ctx, body)
				if err != nil {
					return err
				}
				return followRequest(ctx, a, r, wait)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&body.Reason, "reason", "", "why (required; kept in the audit log)")
	f.StringVar(&body.FromVersion, "from-version", "", "the version the clusters to upgrade run (required), e.g. 4.19.16")
	f.StringVar(&body.ChannelGroup, "channel-group", "", "their channel group (required), e.g. stable")
	f.StringVar(&body.CanaryShard, "canary-shard", "", "the shard whose clusters go first (default: shards by name)")
	f.StringVar(&body.Target, "target", "", "what to upgrade: clusters (control planes, the default) or nodepools (every node pool on --from-version)")
	f.IntVar(&body.MaxInFlight, "max-in-flight", 0, "the campaign's unfinished upgrades at once (default 2)")
	f.StringVar(&body.Bake, "bake", "", "wait between waves, a duration (default 30m)")
	f.Float64Var(&threshold, "failure-threshold", 0.1, "halt when a wave's failed share exceeds this (0 to 1)")
	waitFlag(cmd, &wait)
	return cmd
}

func newCampaignChangeCmd(c *cli, action, short string) *cobra.Command {
	return requestOnCmd(c, &cobra.Command{
		Use:     action + " <campaign id>",
		Short:   short,
		Example: fmt.Sprintf("  hcpctl --as sre-admin maintenance campaign %s z-4-19-16 --reason \"CHG-12\" --wait -o yaml", action),
	}, "<campaign id>", func(id string) string { return action + " campaign " + id },
		func(ctx context.Context, a *app, id, reason string) (adminapi.MaintenanceRequest, error) {
			return a.c.ChangeCampaign(ctx, id, action, reason)
		})
}

// requestOnCmd completes cmd (its Use, Short and Example set) as a command that asks for one
// maintenance request on the object its one argument names, with a required --reason and
// --wait: a campaign's resume or cancel, a task's cancel, a window's clear. what says what the
// request does, for the message that asks for a reason.
func requestOnCmd(c *cli, cmd *cobra.Command, arg string, what func(id string) string,
	send func(ctx context.Context, a *app, id, reason string) (adminapi.MaintenanceRequest, error)) *cobra.Command {
	var (
		reason string
		wait   bool
	)
	cmd.Args = exactArgs(1, arg)
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := needReason(reason, what(args[0])); err != nil {
			return err
		}
		return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
			r, err := send(ctx, a, args[0], reason)
			if err != nil {
				return err
			}
			return followRequest(ctx, a, r, wait)
		})
	}
	reasonFlag(cmd, &reason)
	waitFlag(cmd, &wait)
	return cmd
}
func newRequestGetCmd(c *cli) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:               "get <request id>",
		Short:             "Show a maintenance request: Pending, Done or Failed with the reason",
		Example:           "  hcpctl maintenance request get 0d9c…-… --wait -o json",
		Args:              exactArgs(1, "<request id>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				r, err := a.c.GetMaintenanceRequest(ctx, args[0])
				if err != nil {
					return err
				}
				return followRequest(ctx, a, r, wait)
			})
		},
	}
	waitFlag(cmd, &wait)
	return cmd
}

// followRequest prints r, after reading it until it is no longer Pending if wait. With wait, a
// request that failed is exit status 1, with the maintenance service's reason on stderr.
func followRequest(ctx context.Context, a *app, r adminapi.MaintenanceRequest, wait bool) error {
	for wait && r.State == maintenance.RequestPending {
		select {
		case <-ctx.Done():
			return fmt.Errorf("maintenance request %s is still Pending after --timeout; follow it with: hcpctl maintenance request get %s", r.ID, r.ID)
		case <-time.After(requestPoll):
		}
		var err error
		if r, err = a.c.GetMaintenanceRequest(ctx, r.ID); err != nil {
			return err
		}
	}
	if wait && r.State == maintenance.RequestFailed {
		return fmt.Errorf("maintenance request %s (%s %s) failed: %s", r.ID, r.Action, printable(subject(r)), printable(r.Message))
	}
	return a.print(r, func(w io.Writer) {
		switch r.State {
		case maintenance.RequestPending:
			fmt.Fprintf(w, "request %s (%s %s) is Pending; follow it with: hcpctl maintenance request get %s --wait\n", printable(r.ID), r.Action, printable(subject(r)), printable(r.ID))
		default:
			fmt.Fprintf(w, "request %s (%s %s) %s: %s\n", r.ID, r.Action, printable(subject(r)), r.State, printable(r.Message))
		}
	})
}

// subject is what a request acts on: its campaign, its task, or its cluster.
func subject(r adminapi.MaintenanceRequest) string {
	switch {
	case r.Campaign != "":
		return r.Campaign
	case r.Action == maintenance.ActionCancelTask:
		return r.TaskID
	case r.Action == maintenance.ActionCreateTask && r.Task != nil:
		return r.Task.Type + " on " + r.Cluster
	}
	return r.Cluster
}

// reasonFlag is --reason, required by every maintenance write.
func reasonFlag(cmd *cobra.Command, reason *string) {
	cmd.Flags().StringVar(reason, "reason", "", "why (required; kept in the audit log)")
}

func needReason(reason, what string) error {
	if strings.TrimSpace(reason) == "" {
		return usagef("--reason is required: say why you %s (it is kept in the audit log)", what)
	}
	return nil
}

func newTaskCreateCmd(c *cli) *cobra.Command {
	var (
		body   adminapi.TaskCreate
		params []string
		wait   bool
	)
	cmd := &cobra.Command{
		Use:   "create <cluster id>",
		Short: "Create a single task of any type the maintenance service runs on a cluster (its ID is the request's)",
		Example: "  hcpctl --as sre-admin maintenance task create <cluster id> --type zstream-upgrade --reason \"CHG-7\" --wait\n" +
			"  hcpctl --as sre-admin maintenance task create <cluster id> --type nodepool-zstream-upgrade --param nodePool=<pool id> --param toVersion=4.19.17 --reason \"CHG-7\"\n" +
			"  # a region task type names the region (its location) instead of a cluster:\n" +
			"  hcpctl --as sre-admin maintenance task create westus3 --type region-certificate-rotation --param scope=ca:service --reason \"CHG-9\" --wait",
		Args:              exactArgs(1, "<cluster id>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needReason(body.Reason, "create a task on cluster "+args[0]); err != nil {
				return err
			}
			if body.Type == "" {
				return usagef("--type is required: the task type (the admin API refuses a type the maintenance service does not run, naming those it runs)")
			}
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return usagef("invalid value %q for --param: name=value", p)
				}
				if body.Params == nil {
					body.Params = map[string]string{}
				}
				if _, dup := body.Params[k]; dup {
					return usagef("--param %s is given twice", k)
				}
				body.Params[k] = v
			}
			body.Cluster = args[0]
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				r, err := a.c.CreateTask(ctx, body)
				if err != nil {
					return err
				}
				return followRequest(ctx, a, r, wait)
			})
		},
	}
	f := cmd.Flags()
	reasonFlag(cmd, &body.Reason)
	f.StringVar(&body.Type, "type", "", "the task type (required), e.g. zstream-upgrade, nodepool-zstream-upgrade")
	f.StringArrayVar(&params, "param", nil, "a parameter of the task type, name=value (repeatable), e.g. nodePool=<pool id>")
	waitFlag(cmd, &wait)
	return cmd
}

func newTaskCancelCmd(c *cli) *cobra.Command {
	return requestOnCmd(c, &cobra.Command{
		Use:     "cancel <task id>",
		Short:   "Cancel a task: a Pending one at once, a Running one before its next step",
		Example: "  hcpctl --as sre-admin maintenance task cancel <task id> --reason \"CHG-7: customer freeze\" --wait",
	}, "<task id>", func(id string) string { return "cancel task " + id },
		func(ctx context.Context, a *app, id, reason string) (adminapi.MaintenanceRequest, error) {
			return a.c.CancelTask(ctx, id, reason)
		})
}
func newWindowSetCmd(c *cli) *cobra.Command {
	var (
		body adminapi.WindowSet
		wait bool
	)
	cmd := &cobra.Command{
		Use:               "set <cluster id>",
		Short:             "Set a cluster's weekly maintenance window: tasks on it start only inside it",
		Example:           "  hcpctl --as sre-admin maintenance window set <cluster id> --days Sat,Sun --start 02:00 --length 4h --reason \"customer asked\" --wait",
		Args:              exactArgs(1, "<cluster id>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needReason(body.Reason, "set the maintenance window of cluster "+args[0]); err != nil {
				return err
			}
			if _, err := maintenance.ParseWindow(body.Days, body.Start, body.Length); err != nil {
				var fe *maintenance.FieldError
				if errors.As(err, &fe) && fe.Field != "window" {
					return usagef("invalid --%s: %s", fe.Field, fe.Message)
				}
				return usagef("invalid window: %v", err)
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				r, err := a.c.SetWindow(ctx, args[0], body)
				if err != nil {
					return err
				}
				return followRequest(ctx, a, r, wait)
			})
		},
	}
	f := cmd.Flags()
	reasonFlag(cmd, &body.Reason)
	f.StringSliceVar(&body.Days, "days", nil, "the days it opens on, e.g. Sat,Sun (default: every day)")
	f.StringVar(&body.Start, "start", "", "when it opens, HH:MM in UTC (required), e.g. 02:00")
	f.StringVar(&body.Length, "length", "", "how long it stays open, a duration up to 168h (required), e.g. 4h")
	waitFlag(cmd, &wait)
	return cmd
}

func newWindowGetCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "get <cluster id>",
		Short:             "Show a cluster's maintenance window (exit 1 when it has none: its tasks may start at any time)",
		Example:           "  hcpctl maintenance window get <cluster id> -o json",
		Args:              exactArgs(1, "<cluster id>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				win, err := a.c.GetWindow(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print(win, func(w io.Writer) { fmt.Fprintf(w, "cluster %s: %s\n", win.Cluster, printable(win.Description)) })
			})
		},
	}
}

func newWindowClearCmd(c *cli) *cobra.Command {
	return requestOnCmd(c, &cobra.Command{
		Use:     "clear <cluster id>",
		Short:   "Remove a cluster's maintenance window: it may be maintained at any time outside region blackouts",
		Example: "  hcpctl --as sre-admin maintenance window clear <cluster id> --reason \"customer asked\" --wait",
	}, "<cluster id>", func(id string) string { return "clear the maintenance window of cluster " + id },
		func(ctx context.Context, a *app, id, reason string) (adminapi.MaintenanceRequest, error) {
			return a.c.ClearWindow(ctx, id, reason)
		})
}
