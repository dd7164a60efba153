package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// Day-2 commands: node pool scale, upgrades, shard drain status and the maintenance/offline
// shortcuts of shard set-status.
func init() {
	commands = append(commands,
		command{noun: "nodepool", verb: "scale", args: "<node pool: cluster service ID | ARM resource ID>", nargs: 1,
			summary: "set a node pool's replicas (--replicas) or autoscaling range (--min, --max)", flags: scaleFlags, run: nodePoolScale},
		command{noun: "upgrade", verb: "start", args: "<cluster or node pool: cluster service ID | ARM resource ID>", nargs: 1,
			summary: "upgrade a control plane (a cluster's ID) or a node pool (a node pool's ID) to --version", flags: upgradeFlags, run: upgradeStart},
		command{noun: "upgrade", verb: "cancel", args: "<cluster: cluster service ID | ARM resource ID>", nargs: 1,
			summary: "cancel a control-plane upgrade that has not started", flags: cancelFlags, run: upgradeCancel},
		command{noun: "cluster", verb: "pause", args: "<cluster service ID | ARM resource ID>", nargs: 1,
			summary: "HyperShift stops reconciling the cluster and its node pools (until resumed, or --until T / --for D)", flags: pauseFlags, run: clusterPause},
		command{noun: "cluster", verb: "resume", args: "<cluster service ID | ARM resource ID>", nargs: 1,
			summary: "HyperShift reconciles the cluster again", flags: resumeFlags, run: clusterResume},
		command{noun: "shard", verb: "drain-status", args: "<shard>", nargs: 1, summary: "the clusters left on a shard and the operations running on them", run: shardDrainStatus},
		command{noun: "shard", verb: "maintenance", args: "<shard>", nargs: 1, summary: "set the shard to maintenance (keeps its clusters, takes no new ones)", flags: shardChangeFlags(false), run: shardSetTo("maintenance")},
		command{noun: "shard", verb: "offline", args: "<shard>", nargs: 1, summary: "set the shard offline", flags: shardChangeFlags(false), run: shardSetTo("offline")},
	)
}

var (
	scaleReplicas, scaleMin, scaleMax int
	changeReason, changeIfMatch       string
	upgradeVersion                    string
	pauseUntil                        string
	pauseFor                          time.Duration
)

// changeFlags are the flags every day-2 change takes.
func changeFlags(fs *flag.FlagSet) {
	fs.StringVar(&changeReason, "reason", "", "why (required; kept in the audit log)")
	fs.StringVar(&changeIfMatch, "if-match", "", "change only if the resource's etag (its spec revision, printed by the last change) is still this")
}

func needReason(what string) error {
	if strings.TrimSpace(changeReason) == "" {
		return usagef("--reason is required: say why you %s (it is kept in the audit log)", what)
	}
	return nil
}

func scaleFlags(fs *flag.FlagSet) func([]string) error {
	changeFlags(fs)
	fs.IntVar(&scaleReplicas, "replicas", -1, "a fixed node count")
	fs.IntVar(&scaleMin, "min", -1, "autoscaling: the fewest nodes (with --max)")
	fs.IntVar(&scaleMax, "max", -1, "autoscaling: the most nodes (with --min)")
	return func(args []string) error {
		auto := scaleMin >= 0 || scaleMax >= 0
		switch {
		case scaleReplicas >= 0 && auto:
			return usagef("give either --replicas or --min and --max, not both")
		case auto && (scaleMin < 0 || scaleMax < 0):
			return usagef("autoscaling needs both --min and --max")
		case scaleReplicas < 0 && !auto:
			return usagef("give --replicas N, or --min N --max M for autoscaling")
		}
		return needReason("scale node pool " + args[0])
	}
}

func nodePoolScale(ctx context.Context, a *app, args []string) error {
	body := adminapi.NodePoolScale{Reason: changeReason}
	if scaleReplicas >= 0 {
		n := int32(scaleReplicas)
		body.Replicas = &n
	} else {
		body.Autoscaling = &adminapi.NodePoolAutoscaling{Min: int32(scaleMin), Max: int32(scaleMax)}
	}
	ch, err := a.c.ScaleNodePool(ctx, args[0], body, changeIfMatch)
	if err != nil {
		return err
	}
	return a.printChange(ch)
}

func upgradeFlags(fs *flag.FlagSet) func([]string) error {
	changeFlags(fs)
	fs.StringVar(&upgradeVersion, "version", "", "the OpenShift version to upgrade to, 4.20 or 4.20.3 (required)")
	return func(args []string) error {
		if strings.TrimSpace(upgradeVersion) == "" {
			return usagef("--version is required: the version to upgrade %s to ('hcpctl cluster describe' shows the current one)", args[0])
		}
		return needReason("upgrade " + args[0])
	}
}

func upgradeStart(ctx context.Context, a *app, args []string) error {
	ch, err := a.c.StartUpgrade(ctx, args[0], adminapi.Upgrade{Version: upgradeVersion, Reason: changeReason}, changeIfMatch)
	if err != nil {
		return err
	}
	return a.printChange(ch)
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

func shardDrainStatus(ctx context.Context, a *app, args []string) error {
	ds, err := a.c.DrainStatus(ctx, args[0])
	if err != nil {
		return err
	}
	return a.print(ds, func(w io.Writer) {
		fmt.Fprintf(w, "shard %s is %s; %d cluster(s) remain\n", ds.Shard.Name, ds.Shard.Status, len(ds.Clusters))
		if len(ds.Clusters) == 0 {
			return
		}
		t := table(w, "CLUSTER", "NAME", "STATE", "VERSION", "HEALTH", "ACTIVE OPERATIONS")
		for _, c := range ds.Clusters {
			var ops []string
			for _, op := range c.ActiveOperations {
				ops = append(ops, fmt.Sprintf("%s %s %s (%s)", op.ID, op.Request, op.Status, age(time.Duration(op.AgeSeconds)*time.Second)))
			}
			t.row(c.ID, orDash(lastSegment(c.ARMResourceID)), c.State, orDash(c.Version), c.Health, orDash(strings.Join(ops, ", ")))
		}
		t.flush()
	})
}

// shardSetTo is shard set-status with the status named by the command.
func shardSetTo(status string) func(context.Context, *app, []string) error {
	return func(ctx context.Context, a *app, args []string) error {
		shardStatus = status
		return shardChange(adminapi.ShardSetStatus)(ctx, a, args)
	}
}

func pauseFlags(fs *flag.FlagSet) func([]string) error {
	changeFlags(fs)
	fs.StringVar(&pauseUntil, "until", "", "pause until this RFC 3339 time (default: until resumed)")
	fs.DurationVar(&pauseFor, "for", 0, "pause for this long, e.g. 2h (instead of --until)")
	return func(args []string) error {
		if pauseUntil != "" && pauseFor != 0 {
			return usagef("give --until or --for, not both")
		}
		if pauseFor < 0 {
			return usagef("--for must be positive, got %s", pauseFor)
		}
		return needReason("pause cluster " + args[0])
	}
}

// resumeFlags are the flags of cluster resume.
func resumeFlags(fs *flag.FlagSet) func([]string) error {
	changeFlags(fs)
	return func(args []string) error { return needReason("change cluster " + args[0]) }
}

// cancelFlags: a cancel is conditional on the upgrade not having started, not on an etag.
func cancelFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&changeReason, "reason", "", "why (required; kept in the audit log and the upgrade's message)")
	return func(args []string) error { return needReason("cancel the upgrade of " + args[0]) }
}

func upgradeCancel(ctx context.Context, a *app, args []string) error {
	ch, err := a.c.CancelUpgrade(ctx, args[0], changeReason)
	if err != nil {
		return err
	}
	return a.printChange(ch)
}

func clusterPause(ctx context.Context, a *app, args []string) error {
	until := pauseUntil
	if pauseFor > 0 {
		until = time.Now().Add(pauseFor).UTC().Format(time.RFC3339)
	}
	ch, err := a.c.PauseCluster(ctx, args[0], adminapi.Pause{Until: until, Reason: changeReason}, changeIfMatch)
	if err != nil {
		return err
	}
	return a.printPause(ch)
}

func clusterResume(ctx context.Context, a *app, args []string) error {
	ch, err := a.c.ResumeCluster(ctx, args[0], changeReason, changeIfMatch)
	if err != nil {
		return err
	}
	return a.printPause(ch)
}

func (a *app) printPause(ch adminapi.Change) error {
	return a.print(ch, func(w io.Writer) {
		t := table(w, "CLUSTER", "STATE", "PAUSED UNTIL", "VERSION", "ETAG")
		t.row(ch.ID, ch.State, orDash(ch.PausedUntil), orDash(ch.Version), ch.ETag)
		t.flush()
	})
}
