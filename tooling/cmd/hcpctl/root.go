package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/internal/pki"
)

// newRootCmd builds the command tree. Global flags default to their environment variables
// (getenv), so a test runs with its own environment.
func newRootCmd(getenv func(string) string, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{out: stdout}
	root := &cobra.Command{
		Use:   "hcpctl",
		Short: "The SRE CLI over a region's admin API",
		Long: `hcpctl is the SRE CLI over a region's admin API (docs/sre.md#hcpctl): clusters, operations,
provision shards, day-2 changes, break-glass sessions and the audit log.

A local region is found through its region.json (--region-file, as --as <group or person>);
any other through --admin-url with --ca, --cert and --key (your SRE certificate).

Exit status: 0 done; 1 the admin API refused the call or it failed; 2 the command line is
wrong and nothing was called.`,
		Example: `  hcpctl shard list
  hcpctl cluster list --state ready -o wide
  hcpctl --as sre-admin shard cordon mgmt-1 --reason "INC-42: disk pressure"
  source <(hcpctl completion bash)`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Each command takes its own arguments; -o is checked once, here.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(outputFormats, c.g.output) {
				return usagef("invalid value %q for -o/--output: use %s", c.g.output, strings.Join(outputFormats, ", "))
			}
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.CompletionOptions.DisableDefaultCmd = true // completion is ours: it names the shells it supports

	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	pf := root.PersistentFlags()
	pf.StringVar(&c.g.regionFile, "region-file", env("OPENHCP_REGION_FILE", ".run/region.json"), "region.json of a local region (env OPENHCP_REGION_FILE); ignored with --admin-url")
	pf.StringVar(&c.g.adminURL, "admin-url", env("HCPCTL_ADMIN_URL", ""), "admin API base URL, https://host:port (env HCPCTL_ADMIN_URL); needs --ca, --cert and --key")
	pf.StringVar(&c.g.adminServerName, "admin-server-name", env("HCPCTL_ADMIN_SERVER_NAME", ""), "with --admin-url: the name the admin API's certificate carries (env HCPCTL_ADMIN_SERVER_NAME); default: the URL's host, or "+pki.ServerName("admin")+" when the URL names an address")
	pf.StringVar(&c.g.ca, "ca", env("HCPCTL_CA", ""), "CA file that verifies the admin API (env HCPCTL_CA)")
	pf.StringVar(&c.g.cert, "cert", env("HCPCTL_CERT", ""), "your SRE client certificate (env HCPCTL_CERT)")
	pf.StringVar(&c.g.key, "key", env("HCPCTL_KEY", ""), "its key (env HCPCTL_KEY)")
	pf.StringVar(&c.g.as, "as", "sre-readonly", "with --region-file: act as the region's SRE of this group (sre-readonly or sre-admin), or this person (locally alice, bob, carol)")
	pf.StringVarP(&c.g.output, "output", "o", outputTable, "output format: "+strings.Join(outputFormats, ", ")+" (wide: the table with more columns)")
	pf.DurationVar(&c.g.timeout, "timeout", 60*time.Second, "timeout of the call (not of portal, which runs until interrupted)")
	_ = root.RegisterFlagCompletionFunc("output", fixed(outputFormats...))
	_ = root.RegisterFlagCompletionFunc("as", fixed("sre-readonly", "sre-admin", "alice", "bob", "carol"))

	root.AddCommand(
		newClusterCmd(c), newNodePoolCmd(c), newUpgradeCmd(c), newOperationCmd(c), newShardCmd(c),
		newBreakGlassCmd(c), newSRECmd(c), newAuditCmd(c), newMaintenanceCmd(c), newPortalCmd(c),
		newVersionCmd(c), newCompletionCmd(root),
	)
	root.InitDefaultHelpCmd()
	if help, _, err := root.Find([]string{"help"}); err == nil && help != root {
		help.Example = "  hcpctl help shard cordon"
	}
	return root
}

// verbsAnnotation holds a noun's verbs, space-separated, in the order they were given.
const verbsAnnotation = "hcpctl.verbs"

// noun groups a noun's verbs. Run alone or with an unknown verb it is a usage error that
// lists the verbs, in the order given.
func noun(name, short, example string, verbs ...*cobra.Command) *cobra.Command {
	var names []string
	for _, v := range verbs {
		names = append(names, v.Name())
	}
	cmd := &cobra.Command{
		Use:     name + " <verb>",
		Short:   short,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%q needs a verb: %s", name, strings.Join(names, ", "))
			}
			return usagef("unknown command %q %q: %s takes %s", name, args[0], name, strings.Join(names, ", "))
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		// The verbs in their order here (cobra sorts them by name), for the completion script.
		Annotations: map[string]string{verbsAnnotation: strings.Join(names, " ")},
	}
	cmd.AddCommand(verbs...)
	return cmd
}

// exactArgs takes n positional arguments, described by what (for the error).
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			takes := what
			if takes == "" {
				takes = "no arguments"
			}
			return usagef("%s takes %s, got %d argument(s)", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), takes, len(args))
		}
		return nil
	}
}

// fixed completes one of values.
func fixed(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// completionTimeout bounds a dynamic completion's call: a shell waits for it.
const completionTimeout = 5 * time.Second

// clusterIDs completes the first argument with the clusters' IDs (described by name, state
// and shard) when the admin API answers; otherwise with nothing.
func (c *cli) clusterIDs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.complete(cmd.Context(), func(ctx context.Context, a *app) ([]cobra.Completion, error) {
		l, err := a.c.ListClusters(ctx, adminapi.ClusterFilter{PageSize: 1000})
		var out []cobra.Completion
		for _, cl := range l.Clusters {
			if strings.HasPrefix(cl.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(cl.ID, lastSegment(cl.ARMResourceID)+" "+cl.State+" on "+cl.Shard))
			}
		}
		return out, err
	})
}

// shardNames completes the first argument with the shards' names (described by status).
func (c *cli) shardNames(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.shardFlag(cmd, args, toComplete)
}

// shardFlag completes a --shard value.
func (c *cli) shardFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return c.complete(cmd.Context(), func(ctx context.Context, a *app) ([]cobra.Completion, error) {
		l, err := a.c.ListShards(ctx)
		var out []cobra.Completion
		for _, s := range l.Shards {
			if strings.HasPrefix(s.Name, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.Name, s.Status))
			}
		}
		return out, err
	})
}

// complete runs a completion's call with a short deadline. An admin API that cannot be
// reached or refuses completes nothing: completion never prints an error into the shell.
func (c *cli) complete(ctx context.Context, list func(ctx context.Context, a *app) ([]cobra.Completion, error)) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	err := c.call(ctx, false, func(ctx context.Context, a *app) error {
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		var err error
		out, err = list(ctx, a)
		return err
	})
	if err != nil {
		cobra.CompDebugln(fmt.Sprintf("hcpctl: no completions from the admin API: %v", err), false)
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
