package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// commands is every hcpctl command; help, completion and docs/sre.md follow it.
var commands []command

func init() {
	// append: other files' init functions (dayops.go, breakglass.go) add theirs, in any order.
	commands = append(commands, []command{
		{noun: "cluster", verb: "list", summary: "clusters fleet-wide", flags: clusterListFlags, run: clusterList},
		{noun: "cluster", verb: "describe", args: "<cluster service ID | ARM resource ID>", nargs: 1, summary: "one cluster along its whole path", run: clusterDescribe},
		{noun: "cluster", verb: "must-gather", args: "<cluster service ID | ARM resource ID>", nargs: 1, summary: "a tarball of everything about one cluster", flags: mustGatherFlags, run: clusterMustGather},
		{noun: "operation", verb: "list", summary: "active ARM operations region-wide, with age and what they wait on", flags: operationListFlags, run: operationList},
		{noun: "shard", verb: "list", summary: "provision shards with capacity and load", run: shardList},
		{noun: "shard", verb: "cordon", args: "<shard>", nargs: 1, summary: "no new clusters on the shard", flags: shardChangeFlags(false), run: shardChange(adminapi.ShardCordon)},
		{noun: "shard", verb: "uncordon", args: "<shard>", nargs: 1, summary: "the shard takes new clusters again", flags: shardChangeFlags(false), run: shardChange(adminapi.ShardUncordon)},
		{noun: "shard", verb: "set-status", args: "<shard>", nargs: 1, summary: "set active, maintenance or offline", flags: shardChangeFlags(true), run: shardChange(adminapi.ShardSetStatus)},
		{noun: "sre", verb: "revoke", args: "<person>", nargs: 1, summary: "refuse every certificate of an SRE issued before now (a leaked credential)", flags: revokeFlags, run: sreRevoke},
		{noun: "sre", verb: "revocations", summary: "the SRE revocation list", run: sreRevocations},
		{noun: "portal", summary: "serve the SRE portal on a loopback address, as your SRE identity", flags: portalFlags, run: portal, long: true},
		{noun: "audit", summary: "the audit log, newest first", flags: auditFlags, run: auditList},
	}...)
}

// The commands' own flags, bound by their flags functions.
var (
	clusterFilter adminapi.ClusterFilter
	allPages      bool
	allOperations bool
	shardReason   string
	shardStatus   string
	shardIfMatch  string
	auditFilter   adminapi.AuditFilter
	mustGatherOut string
)

var revokeReason string

func revokeFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&revokeReason, "reason", "", "why (required; kept in the audit log and the revocation list)")
	return func(args []string) error {
		if strings.TrimSpace(revokeReason) == "" {
			return usagef("--reason is required: say why you revoke %s's certificates", args[0])
		}
		return nil
	}
}

func sreRevoke(ctx context.Context, a *app, args []string) error {
	r, err := a.c.Revoke(ctx, args[0], revokeReason)
	if err != nil {
		return err
	}
	return a.print(r, func(w io.Writer) {
		fmt.Fprintf(w, "%s's certificates issued before %v are refused from now on; they need a new one\n", args[0], r["revokedAt"])
	})
}

func sreRevocations(ctx context.Context, a *app, _ []string) error {
	r, err := a.c.Revocations(ctx)
	if err != nil {
		return err
	}
	return a.print(r, func(w io.Writer) {
		t := table(w, "PERSON", "REVOKED AT", "BY", "REASON")
		list, _ := r["revocations"].([]any)
		for _, x := range list {
			m, _ := x.(map[string]any)
			t.row(fmt.Sprint(m["person"]), fmt.Sprint(m["revokedAt"]), fmt.Sprint(m["revokedBy"]), fmt.Sprint(m["reason"]))
		}
		t.flush()
	})
}

func mustGatherFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&mustGatherOut, "f", "", "file to write (default must-gather-<cluster ID>.tar.gz; - for stdout)")
	return func([]string) error { return nil }
}

func clusterMustGather(ctx context.Context, a *app, args []string) error {
	b, err := a.c.MustGather(ctx, args[0])
	if err != nil {
		return err
	}
	if mustGatherOut == "-" {
		_, err := a.out.Write(b)
		return err
	}
	name := mustGatherOut
	if name == "" {
		name = "must-gather-" + strings.ReplaceAll(strings.Trim(args[0], "/"), "/", "_") + ".tar.gz"
	}
	if err := os.WriteFile(name, b, 0o600); err != nil {
		return fmt.Errorf("write the must-gather: %w", err)
	}
	fmt.Fprintf(a.out, "wrote %s (%d bytes); it holds customer data: keep it where incident data belongs\n", name, len(b))
	return nil
}

func clusterListFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&clusterFilter.Subscription, "subscription", "", "only this subscription's clusters")
	fs.StringVar(&clusterFilter.Shard, "shard", "", "only clusters on this shard")
	fs.StringVar(&clusterFilter.State, "state", "", "only clusters in this state (pending, installing, ready, error, uninstalling, updating)")
	fs.StringVar(&clusterFilter.Version, "version", "", "only clusters at this version (desired or current)")
	fs.StringVar(&clusterFilter.Health, "health", "", "only clusters of this health (healthy, degraded, unknown)")
	fs.IntVar(&clusterFilter.PageSize, "page-size", 0, "clusters per call (1-1000; default 100)")
	fs.StringVar(&clusterFilter.PageToken, "page-token", "", "continue from a previous page")
	fs.BoolVar(&allPages, "all-pages", true, "follow every page (false: one page, and print the next page token)")
	return func([]string) error { return nil }
}

func clusterList(ctx context.Context, a *app, _ []string) error {
	var all []adminapi.ClusterSummary
	f := clusterFilter
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
		t := table(w, "ID", "NAME", "SUBSCRIPTION", "SHARD", "STATE", "HEALTH", "VERSION", "APPLIED", "AGE")
		for _, c := range all {
			t.row(c.ID, lastSegment(c.ARMResourceID), c.Subscription, c.Shard, c.State, c.Health, c.Version, fmt.Sprint(c.Applied), age(time.Since(c.CreateTime)))
		}
		t.flush()
		if next != "" {
			fmt.Fprintf(w, "more: --page-token %s\n", next)
		}
	})
}

func clusterDescribe(ctx context.Context, a *app, args []string) error {
	d, err := a.c.DescribeCluster(ctx, args[0])
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
		t.flush()
		fmt.Fprintln(w, "\nWhere it is, stage by stage:")
		for _, l := range d.Diagnosis {
			fmt.Fprintln(w, "  "+l)
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
			fmt.Fprintln(w, "unavailable: "+u)
		}
		fmt.Fprintln(w, "\n(-o yaml shows the documents, Cluster Service's model and the bundles' status in full)")
	})
}

func operationListFlags(fs *flag.FlagSet) func([]string) error {
	fs.BoolVar(&allOperations, "all", false, "finished operations too")
	return func([]string) error { return nil }
}

func operationList(ctx context.Context, a *app, _ []string) error {
	var all []adminapi.Operation
	token := ""
	for {
		page, err := a.c.ListOperations(ctx, allOperations, 1000, token)
		if err != nil {
			return err
		}
		all = append(all, page.Operations...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if all == nil {
		all = []adminapi.Operation{}
	}
	return a.print(adminapi.OperationList{Operations: all}, func(w io.Writer) {
		t := table(w, "ID", "REQUEST", "STATUS", "AGE", "RESOURCE", "WAITING ON")
		for _, op := range all {
			t.row(op.ID, op.Request, op.Status, age(time.Duration(op.AgeSeconds)*time.Second), op.ResourceID, orDash(op.WaitingOn))
		}
		t.flush()
	})
}

func shardList(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.ListShards(ctx)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "NAME", "STATUS", "HEALTH", "CLUSTERS", "CAPACITY", "LOAD", "ETAG")
		var sick []string
		for _, s := range l.Shards {
			t.row(s.Name, s.Status, s.Health, fmt.Sprint(s.ClusterCount), fmt.Sprint(s.MaxClusters), fmt.Sprintf("%3.0f%% %s", 100*s.Load, bar(s.Load)), s.ETag)
			if s.Health != "healthy" {
				sick = append(sick, s.Name+": "+s.HealthMessage)
			}
		}
		t.flush()
		// What was seen on a shard that is not healthy, under the table (the JSON has it too).
		for _, line := range sick {
			fmt.Fprintln(w, line)
		}
	})
}

func shardChangeFlags(withStatus bool) func(fs *flag.FlagSet) func([]string) error {
	return func(fs *flag.FlagSet) func([]string) error {
		fs.StringVar(&shardReason, "reason", "", "why (required; kept in the audit log)")
		fs.StringVar(&shardIfMatch, "if-match", "", "change only if the shard's etag is still this (from 'hcpctl shard list')")
		if withStatus {
			fs.StringVar(&shardStatus, "status", "", "active, maintenance or offline (required)")
		}
		return func(args []string) error {
			if strings.TrimSpace(shardReason) == "" {
				return usagef("--reason is required: say why you change shard %s (it is kept in the audit log)", args[0])
			}
			if withStatus && shardStatus == "" {
				return usagef("--status is required: active, maintenance or offline")
			}
			return nil
		}
	}
}

func shardChange(action string) func(context.Context, *app, []string) error {
	return func(ctx context.Context, a *app, args []string) error {
		s, err := a.c.ChangeShard(ctx, args[0], action, adminapi.ShardChange{Status: shardStatus, Reason: shardReason}, shardIfMatch)
		if err != nil {
			return err
		}
		return a.print(s, func(w io.Writer) {
			fmt.Fprintf(w, "shard %s is %s (etag %s)\n", s.Name, s.Status, s.ETag)
		})
	}
}

func auditFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&auditFilter.Person, "person", "", "only this SRE's calls")
	fs.StringVar(&auditFilter.Group, "group", "", "only this group's calls")
	fs.StringVar(&auditFilter.Outcome, "outcome", "", "unauthenticated, forbidden, allowed or completed")
	fs.StringVar(&auditFilter.Target, "target", "", "only calls about this shard, cluster ID or path")
	fs.StringVar(&auditFilter.CorrelationID, "correlation-id", "", "only calls with this correlation ID")
	fs.StringVar(&auditFilter.Route, "route", "", "only routes starting with this (e.g. 'POST /admin/v1/shards')")
	fs.StringVar(&auditFilter.Since, "since", "", "from this time (RFC 3339) or this long ago (e.g. 1h)")
	fs.StringVar(&auditFilter.Until, "until", "", "before this time (RFC 3339)")
	fs.IntVar(&auditFilter.PageSize, "limit", 50, "at most this many records")
	return func([]string) error {
		if d, err := time.ParseDuration(auditFilter.Since); err == nil {
			auditFilter.Since = time.Now().Add(-d).UTC().Format(time.RFC3339)
		}
		return nil
	}
}

func auditList(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.Audit(ctx, auditFilter)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "TIME", "PERSON", "GROUP", "OUTCOME", "STATUS", "ROUTE", "TARGET", "REASON", "CORRELATION")
		for _, e := range l.Entries {
			t.row(e.Time.UTC().Format(time.RFC3339), orDash(e.Person), orDash(e.Group), e.Outcome, statusText(e.Status), e.Route, orDash(e.Target), orDash(e.Reason), e.CorrelationID)
		}
		t.flush()
	})
}

// print writes v as JSON or YAML, or calls human for the table.
func (a *app) print(v any, human func(io.Writer)) error {
	switch a.g.output {
	case "json":
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = a.out.Write(b)
		return err
	}
	human(a.out)
	return nil
}

type tw struct{ w *tabwriter.Writer }

// table starts aligned columns with an optional header row.
func table(w io.Writer, header ...string) tw {
	t := tw{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t tw) row(cells ...string) { fmt.Fprintln(t.w, strings.Join(cells, "\t")) }
func (t tw) flush()              { t.w.Flush() }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func statusText(s int) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprint(s)
}

func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// age is a duration as kubectl shows it: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// bar is a ten-character capacity bar.
func bar(load float64) string {
	n := int(load*10 + 0.5)
	n = max(0, min(n, 10))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 10-n) + "]"
}
