package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/internal/identity"
)

func newSRECmd(c *cli) *cobra.Command {
	return noun("sre", "SRE credentials: revoke a person's certificates, list the revocations",
		"  hcpctl sre revocations", newSRERevokeCmd(c), newSRERevocationsCmd(c))
}

func newSRERevokeCmd(c *cli) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               "revoke <person>",
		Short:             "Refuse every certificate of an SRE issued before now (a leaked credential)",
		Example:           `  hcpctl --as sre-admin sre revoke mallory --reason "INC-42: laptop stolen"`,
		Args:              exactArgs(1, "<person>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := identity.ValidPerson(args[0]); err != nil {
				return usagef("<person> must be an SRE certificate's common name: %v", err)
			}
			if strings.TrimSpace(reason) == "" {
				return usagef("--reason is required: say why you revoke %s's certificates", args[0])
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				r, err := a.c.Revoke(ctx, args[0], reason)
				if err != nil {
					return err
				}
				return a.print(r, func(w io.Writer) {
					fmt.Fprintf(w, "%s's certificates issued before %v are refused from now on; they need a new one\n", args[0], r["revokedAt"])
				})
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; kept in the audit log and the revocation list)")
	return cmd
}

func newSRERevocationsCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "revocations",
		Short:             "List the SRE revocation list",
		Example:           "  hcpctl sre revocations\n  hcpctl sre revocations -o yaml",
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
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
			})
		},
	}
}
