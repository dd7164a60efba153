package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/internal/identity"
)

func newBreakGlassCmd(c *cli) *cobra.Command {
	return noun("breakglass", "Break-glass sessions on hosted clusters, through the gateway (docs/sre.md#break-glass)",
		"  hcpctl breakglass open <cluster ID> --ttl 30m --kubeconfig c1.kubeconfig --reason \"INC-42\"\n  hcpctl breakglass list",
		newBreakGlassOpenCmd(c, "open", "Open a time-boxed session on a hosted cluster in your name, through the gateway"),
		newBreakGlassOpenCmd(c, "request", "The same as open (its former name)"),
		newBreakGlassListCmd(c),
		newBreakGlassCloseCmd(c),
		newBreakGlassRevokeCmd(c),
		newBreakGlassPendingCmd(c),
		newBreakGlassApproveCmd(c),
		newBreakGlassKubeconfigCmd(c),
	)
}

// Break-glass commands (docs/sre.md#break-glass): a session on a hosted cluster in the caller's
// name, used through the break-glass gateway with the caller's own certificate; the live ones,
// their approval, closing and revocation.
func newBreakGlassOpenCmd(c *cli, verb, short string) *cobra.Command {
	const arg = "<cluster: cluster service ID | ARM resource ID>"
	var access, ttl, kubeconfig, reason string
	cmd := &cobra.Command{
		Use:   verb + " " + arg,
		Short: short + " (--access read-only|admin, --ttl, --reason, --kubeconfig FILE)",
		Example: fmt.Sprintf(`  hcpctl breakglass %[1]s <cluster ID> --ttl 30m --kubeconfig c1.kubeconfig --reason "INC-42"
  KUBECONFIG=c1.kubeconfig kubectl get nodes
  hcpctl --as sre-admin breakglass %[1]s <cluster ID> --access admin --kubeconfig c1-admin.kubeconfig --reason "INC-42"`, verb),
		Args:              exactArgs(1, arg),
		ValidArgsFunction: c.clusterIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case strings.TrimSpace(reason) == "":
				return usagef("--reason is required: say why you need break-glass access to %s", args[0])
			case kubeconfig == "":
				return usagef("--kubeconfig is required: the file to write the session's kubeconfig to")
			case access != adminapi.AccessReadOnly && access != adminapi.AccessAdmin:
				return usagef("--access must be %s or %s, not %q", adminapi.AccessReadOnly, adminapi.AccessAdmin, access)
			}
			if ttl != "" {
				if _, err := time.ParseDuration(ttl); err != nil {
					return usagef("--ttl must be a duration such as 30m or 2h, not %q", ttl)
				}
			}
			if err := newFile(kubeconfig); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				s, err := a.c.OpenBreakGlass(ctx, args[0], adminapi.BreakGlassRequest{Access: access, TTL: ttl, Reason: reason})
				if err != nil {
					return err
				}
				if err := writeSessionKubeconfig(a, s, kubeconfig); err != nil {
					return err
				}
				return a.print(s, func(w io.Writer) {
					if s.State == adminapi.StateAwaitingApproval {
						fmt.Fprintf(w, "session %s for admin access to cluster %s awaits a second sre-admin's approval; the gateway refuses it until then:\n  hcpctl --as <another sre-admin; locally carol> breakglass approve %s --reason \"…\"\n", s.ID, s.ClusterID, s.ID)
					}
					printSession(w, s, kubeconfig)
				})
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&access, "access", adminapi.AccessReadOnly, "read-only or admin (admin needs the sre-admin group and a second sre-admin's approval)")
	fs.StringVar(&ttl, "ttl", "", "lifetime such as 30m or 2h (default: the admin API's default; bounds in docs/sre.md)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "file to write the session's kubeconfig to, mode 0600 (required; it must not exist)")
	fs.StringVar(&reason, "reason", "", "why (required; kept in the audit log)")
	_ = cmd.RegisterFlagCompletionFunc("access", fixed(adminapi.AccessReadOnly, adminapi.AccessAdmin))
	return cmd
}

// newFile refuses an existing --kubeconfig: a kubeconfig is never written over another.
func newFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return usagef("--kubeconfig %s exists: choose a new file (a kubeconfig is never written over another)", path)
	}
	return nil
}

// writeSessionKubeconfig writes --kubeconfig (a new file, 0600) for session s: its server is the
// session's URL at the gateway, verified with the CA that verifies the admin API; its user is
// the caller's own certificate and key, referenced by path. It grants nothing by itself: the
// gateway admits it only for the caller's own live session.
func writeSessionKubeconfig(a *app, s adminapi.BreakGlassSession, path string) error {
	if s.GatewayURL == "" {
		return fmt.Errorf("session %s is open but the admin API names no gateway (--gateway-url): no kubeconfig can reach it", s.ID)
	}
	if a.files.CA == "" || a.files.Cert == "" || a.files.Key == "" {
		return fmt.Errorf("session %s is open, but hcpctl has no CA, certificate and key files to write its kubeconfig with", s.ID)
	}
	caPEM, err := os.ReadFile(a.files.CA)
	if err != nil {
		return fmt.Errorf("--kubeconfig: the gateway's CA: %w", err)
	}
	abs := func(p string) string {
		if q, err := filepath.Abs(p); err == nil {
			return q
		}
		return p
	}
	name := "breakglass-" + s.ID
	cfg := clientcmdapi.NewConfig()
	gw, err := url.Parse(s.GatewayURL)
	if err != nil {
		return fmt.Errorf("session %s: gateway URL %q: %w", s.ID, s.GatewayURL, err)
	}
	// The gateway's certificate names its service, not an address: a gateway reached by address
	// is asked for that name (tls-server-name).
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.GatewayURL, CertificateAuthorityData: caPEM,
		TLSServerName: serverNameFor(gw.Host, identity.Gateway)}
	cfg.AuthInfos[s.Person] = &clientcmdapi.AuthInfo{ClientCertificate: abs(a.files.Cert), ClientKey: abs(a.files.Key)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: s.Person}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	// O_EXCL: never replace a file; 0600 like every kubeconfig.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w (session %s is open: `hcpctl breakglass kubeconfig %s --kubeconfig FILE` writes one, `hcpctl breakglass close %s` ends it)", err, s.ID, s.ID, s.ID)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("--kubeconfig: write %s: %w", path, err), os.Remove(path))
	}
	return nil
}

func printSession(w io.Writer, s adminapi.BreakGlassSession, kubeconfig string) {
	exp := "-"
	if s.ExpirationTime != nil {
		exp = s.ExpirationTime.Format(time.RFC3339) + " (in " + age(time.Until(*s.ExpirationTime)) + ")"
	}
	fmt.Fprintf(w, "wrote %s (mode 0600): session %s on cluster %s, %s\n  through %s as %s, group %s; expires %s\n  KUBECONFIG=%s kubectl get nodes\n  hcpctl breakglass close %s --reason \"done\"   # when done\n",
		kubeconfig, s.ID, s.ClusterID, s.State, s.GatewayURL, s.Person, s.Group, exp, kubeconfig, s.ID)
}

func newBreakGlassKubeconfigCmd(c *cli) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:               "kubeconfig <session ID>",
		Short:             "Write a kubeconfig for one of your sessions again (--kubeconfig FILE)",
		Example:           "  hcpctl breakglass kubeconfig <session ID> --kubeconfig c1.kubeconfig",
		Args:              exactArgs(1, "<session ID>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if kubeconfig == "" {
				return usagef("--kubeconfig is required: the file to write the session's kubeconfig to")
			}
			if err := newFile(kubeconfig); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				s, err := a.c.GetBreakGlass(ctx, args[0])
				if err != nil {
					return err
				}
				if err := writeSessionKubeconfig(a, s, kubeconfig); err != nil {
					return err
				}
				return a.print(s, func(w io.Writer) { printSession(w, s, kubeconfig) })
			})
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "file to write the kubeconfig to, mode 0600 (required; it must not exist)")
	return cmd
}

// sessionVerb is a verb on one session that needs a reason (close, approve).
func sessionVerb(c *cli, verb, short, example, why string, do func(ctx context.Context, a *app, id, reason string) error) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:               verb + " <session ID>",
		Short:             short,
		Example:           example,
		Args:              exactArgs(1, "<session ID>"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("--reason is required: say %s", why)
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error { return do(ctx, a, args[0], reason) })
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", why+" (required; kept in the audit log)")
	return cmd
}

func newBreakGlassCloseCmd(c *cli) *cobra.Command {
	return sessionVerb(c, "close", "Close a session (yours; an sre-admin may close anyone's): the gateway refuses it and cuts its streams (--reason)",
		`  hcpctl breakglass close <session ID> --reason "done"`, "why you close it",
		func(ctx context.Context, a *app, id, reason string) error {
			s, err := a.c.CloseBreakGlass(ctx, id, reason)
			if err != nil {
				return err
			}
			return a.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "session %s on cluster %s is %s: the gateway refuses it and closes its open streams within seconds\n", s.ID, s.ClusterID, s.State)
			})
		})
}

func newBreakGlassApproveCmd(c *cli) *cobra.Command {
	return sessionVerb(c, "approve", "Approve another sre-admin's admin session (--reason); it becomes usable by its owner only",
		`  hcpctl --as carol breakglass approve <session ID> --reason "INC-42: agreed with alice"`, "why you approve",
		func(ctx context.Context, a *app, id, reason string) error {
			s, err := a.c.ApproveBreakGlass(ctx, id, reason)
			if err != nil {
				return err
			}
			return a.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "approved: session %s of %s on cluster %s is %s; only %s can use it, through the gateway\n", s.ID, s.Person, s.ClusterID, s.State, s.Person)
			})
		})
}

func newBreakGlassPendingCmd(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:               "pending",
		Short:             "List admin sessions waiting for a second sre-admin's approval (-o wide adds access and creation time)",
		Example:           "  hcpctl --as sre-admin breakglass pending",
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				l, err := a.c.PendingBreakGlass(ctx)
				if err != nil {
					return err
				}
				return a.print(l, func(w io.Writer) {
					t := table(w, ifWide(a.wide(), []string{"SESSION", "CLUSTER", "PERSON", "TTL", "APPROVE BEFORE", "REASON"}, "ACCESS", "CREATED")...)
					for _, s := range l.Sessions {
						before := "-"
						if s.ApproveBefore != nil {
							before = s.ApproveBefore.Format(time.RFC3339)
						}
						t.row(ifWide(a.wide(), []string{s.ID, s.ClusterID, s.Person, (time.Duration(s.TTLSeconds) * time.Second).String(), before, orDash(s.Reason)},
							s.Access, s.CreateTime.Format(time.RFC3339))...)
					}
					t.flush()
				})
			})
		},
	}
}

func newBreakGlassListCmd(c *cli) *cobra.Command {
	var f adminapi.BreakGlassFilter
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List live break-glass sessions (--cluster, --person, --all; -o wide adds group, approver and gateway URL)",
		Example: `  hcpctl breakglass list
  hcpctl breakglass list --cluster <cluster ID> --all -o wide`,
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := personFlag(f.Person); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				l, err := a.c.ListBreakGlass(ctx, f)
				if err != nil {
					return err
				}
				return a.print(l, func(w io.Writer) {
					t := table(w, ifWide(a.wide(), []string{"SESSION", "CLUSTER", "PERSON", "ACCESS", "STATE", "EXPIRES", "REASON"}, "GROUP", "APPROVER", "GATEWAY URL")...)
					for _, s := range l.Sessions {
						exp := "-"
						if s.ExpirationTime != nil {
							exp = s.ExpirationTime.Format(time.RFC3339)
						}
						t.row(ifWide(a.wide(), []string{s.ID, s.ClusterID, s.Person, s.Access, s.State, exp, orDash(s.Reason)},
							orDash(s.Group), orDash(s.Approver), orDash(s.GatewayURL))...)
					}
					t.flush()
				})
			})
		},
	}
	cmd.Flags().StringVar(&f.Cluster, "cluster", "", "only this cluster's (Cluster Service ID or ARM resource ID)")
	cmd.Flags().StringVar(&f.Person, "person", "", "only this SRE's")
	cmd.Flags().BoolVar(&f.All, "all", false, "also closed, expired and revoked ones")
	_ = cmd.RegisterFlagCompletionFunc("cluster", c.clusterIDs)
	return cmd
}

func newBreakGlassRevokeCmd(c *cli) *cobra.Command {
	var r adminapi.BreakGlassRevoke
	cmd := &cobra.Command{
		Use:   "revoke",
		Short: "Revoke --session ID, or every live one of --person (rotates the cluster's SRE break-glass signer)",
		Example: `  hcpctl --as sre-admin breakglass revoke --session <session ID> --reason "INC-42: leaked kubeconfig"
  hcpctl --as sre-admin breakglass revoke --person mallory --reason "INC-43"`,
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case (r.Session == "") == (r.Person == ""):
				return usagef("name either --session or --person, not both and not neither")
			case strings.TrimSpace(r.Reason) == "":
				return usagef("--reason is required: say why you revoke")
			}
			if err := personFlag(r.Person); err != nil {
				return err
			}
			return c.call(cmd.Context(), false, func(ctx context.Context, a *app) error {
				res, err := a.c.RevokeBreakGlass(ctx, r)
				if err != nil {
					return err
				}
				return a.print(res, func(w io.Writer) {
					if len(res.Revocations) == 0 {
						fmt.Fprintln(w, "nothing to revoke: no live session")
						return
					}
					t := table(w, "CLUSTER", "REVOCATION", "STATE", "SESSIONS")
					for _, v := range res.Revocations {
						t.row(v.ClusterID, orDash(v.RevocationID), orDash(v.State), strings.Join(v.Sessions, ","))
					}
					t.flush()
					fmt.Fprintln(w, "the sessions are revoked (the gateway cuts their streams within seconds), and every SRE break-glass credential of these clusters is being revoked: their SRE break-glass signer rotates (customers' credentials have their own signer and keep working)")
				})
			})
		},
	}
	cmd.Flags().StringVar(&r.Session, "session", "", "the session ID to revoke ('hcpctl breakglass list' shows them)")
	cmd.Flags().StringVar(&r.Person, "person", "", "revoke every live session of this SRE instead")
	cmd.Flags().StringVar(&r.Reason, "reason", "", "why (required; kept in the audit log)")
	return cmd
}

// personFlag checks a --person flag, if given, by the one rule for a person's name.
func personFlag(person string) error {
	if person == "" {
		return nil
	}
	if err := identity.ValidPerson(person); err != nil {
		return usagef("--person: %v", err)
	}
	return nil
}
