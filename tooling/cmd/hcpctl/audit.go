package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// newAuditCmd is a noun without verbs, as kubectl's "logs": it lists the audit log.
func newAuditCmd(c *cli) *cobra.Command {
	var f adminapi.AuditFilter
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log, newest first (-o wide adds request ID, subject and path)",
		Example: `  hcpctl audit --person alice --since 1h
  hcpctl audit --outcome forbidden --limit 100
  hcpctl audit --route "POST /admin/v1/shards" -o json`,
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if d, err := time.ParseDuration(f.Since); err == nil {
				f.Since = time.Now().Add(-d).UTC().Format(time.RFC3339)
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return auditList(ctx, a, f) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Person, "person", "", "only this SRE's calls")
	fs.StringVar(&f.Group, "group", "", "only this group's calls")
	fs.StringVar(&f.Outcome, "outcome", "", "unauthenticated, forbidden, allowed or completed")
	fs.StringVar(&f.Target, "target", "", "only calls about this shard, cluster ID or path")
	fs.StringVar(&f.CorrelationID, "correlation-id", "", "only calls with this correlation ID")
	fs.StringVar(&f.Route, "route", "", "only routes starting with this (e.g. 'POST /admin/v1/shards')")
	fs.StringVar(&f.Since, "since", "", "from this time (RFC 3339) or this long ago (e.g. 1h)")
	fs.StringVar(&f.Until, "until", "", "before this time (RFC 3339)")
	fs.IntVar(&f.PageSize, "limit", 50, "at most this many records")
	_ = cmd.RegisterFlagCompletionFunc("outcome", fixed("unauthenticated", "forbidden", "allowed", "completed"))
	return cmd
}

func auditList(ctx context.Context, a *app, f adminapi.AuditFilter) error {
	l, err := a.c.Audit(ctx, f)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, ifWide(a.wide(), []string{"TIME", "PERSON", "GROUP", "OUTCOME", "STATUS", "ROUTE", "TARGET", "REASON", "CORRELATION"}, "REQUEST", "SUBJECT", "PATH")...)
		for _, e := range l.Entries {
			t.row(ifWide(a.wide(), []string{e.Time.UTC().Format(time.RFC3339), orDash(e.Person), orDash(e.Group), e.Outcome, statusText(e.Status), e.Route, orDash(e.Target), orDash(e.Reason), e.CorrelationID},
				orDash(e.RequestID), orDash(e.Subject), e.Path)...)
		}
		t.flush()
	})
}
