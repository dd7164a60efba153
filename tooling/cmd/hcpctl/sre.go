package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pki"
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
					fmt.Fprintln(w, revokedNote(args[0], r["revokedAt"]))
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

// revokedNote says what a person's revocation at revokedAt (the answer's RFC 3339 time) means
// for their next certificate: it works only if its NotBefore is after the revocation, and the
// region's PKI backdates NotBefore by pki.Backdate, so a replacement issued sooner than that
// after the revocation is refused for its whole life.
func revokedNote(person string, revokedAt any) string {
	note := fmt.Sprintf("%s's certificates issued before %v are refused from now on; they need a new one", person, revokedAt)
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(revokedAt))
	if err != nil {
		return note + fmt.Sprintf(", issued at least %s after the revocation (its NotBefore is backdated by %[1]s and must be after the revocation)", pki.Backdate)
	}
	from := at.Add(pki.Backdate)
	if t := from.Truncate(time.Second); !t.Equal(from) {
		from = t.Add(time.Second)
	}
	return note + fmt.Sprintf(", issued after %s: its NotBefore is backdated by %s, and one from before the revocation stays refused until it expires",
		from.UTC().Format(time.RFC3339), pki.Backdate)
}
