package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// Break-glass commands (docs/sre.md#break-glass): a kubeconfig for a hosted cluster in the
// caller's name, the active ones, and their revocation.
func init() {
	commands = append(commands,
		command{noun: "breakglass", verb: "request", args: "<cluster: cluster service ID | ARM resource ID>", nargs: 1,
			summary: "a time-boxed kubeconfig for a hosted cluster in your name (--access read-only|admin, --ttl, --kubeconfig FILE)", flags: breakGlassRequestFlags, run: breakGlassRequest},
		command{noun: "breakglass", verb: "list", summary: "active SRE break-glass credentials (--cluster, --person, --all)", flags: breakGlassListFlags, run: breakGlassList},
		command{noun: "breakglass", verb: "revoke", summary: "revoke --credential ID, or every active one of --person (rotates the cluster's SRE break-glass signer)",
			flags: breakGlassRevokeFlags, run: breakGlassRevoke},
		command{noun: "breakglass", verb: "pending", summary: "admin break-glass requests waiting for a second sre-admin's approval", run: breakGlassPending},
		command{noun: "breakglass", verb: "approve", args: "<request ID>", nargs: 1,
			summary: "approve another sre-admin's admin break-glass request (--reason); you get no kubeconfig, the requester collects it", flags: breakGlassApproveFlags, run: breakGlassApprove},
		command{noun: "breakglass", verb: "kubeconfig", args: "<request ID>", nargs: 1,
			summary: "collect your approved admin break-glass credential (--kubeconfig FILE)", flags: breakGlassKubeconfigFlags, run: breakGlassKubeconfig},
	)
}

var (
	bgAccess, bgTTL, bgKubeconfig, bgReason string
	bgFilter                                adminapi.BreakGlassFilter
	bgRevokePerson, bgRevokeCredential      string
)

func breakGlassRequestFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgAccess, "access", adminapi.AccessReadOnly, "read-only or admin (admin needs the sre-admin group)")
	fs.StringVar(&bgTTL, "ttl", "", "lifetime such as 30m or 2h (default: the admin API's default; bounds in docs/sre.md)")
	fs.StringVar(&bgKubeconfig, "kubeconfig", "", "file to write the kubeconfig to, mode 0600 (required; it must not exist)")
	fs.StringVar(&bgReason, "reason", "", "why (required; kept in the audit log)")
	return func(args []string) error {
		switch {
		case strings.TrimSpace(bgReason) == "":
			return usagef("--reason is required: say why you need break-glass access to %s", args[0])
		case bgKubeconfig == "":
			return usagef("--kubeconfig is required: the file to write the credential to")
		case bgAccess != adminapi.AccessReadOnly && bgAccess != adminapi.AccessAdmin:
			return usagef("--access must be %s or %s, not %q", adminapi.AccessReadOnly, adminapi.AccessAdmin, bgAccess)
		}
		if bgTTL != "" {
			if _, err := time.ParseDuration(bgTTL); err != nil {
				return usagef("--ttl must be a duration such as 30m or 2h, not %q", bgTTL)
			}
		}
		if _, err := os.Stat(bgKubeconfig); err == nil {
			return usagef("--kubeconfig %s exists: choose a new file (a credential is never written over another)", bgKubeconfig)
		}
		return nil
	}
}

func breakGlassRequest(ctx context.Context, a *app, args []string) error {
	c, err := a.c.RequestBreakGlass(ctx, args[0], adminapi.BreakGlassRequest{Access: bgAccess, TTL: bgTTL, Reason: bgReason})
	if err != nil {
		return err
	}
	if c.State == adminapi.StateAwaitingApproval {
		return a.print(c, func(w io.Writer) {
			fmt.Fprintf(w, "request %s for admin access to cluster %s awaits a second sre-admin's approval:\n  hcpctl --as <another sre-admin; locally carol> breakglass approve %s --reason \"…\"\nthen collect it:\n  hcpctl --as sre-admin breakglass kubeconfig %s --kubeconfig %s\n",
				c.ID, c.ClusterID, c.ID, c.ID, bgKubeconfig)
		})
	}
	return writeBreakGlassKubeconfig(a, c)
}

// writeBreakGlassKubeconfig writes an issued credential's kubeconfig to --kubeconfig (a new
// file, 0600) and prints the rest.
func writeBreakGlassKubeconfig(a *app, c adminapi.BreakGlassCredential) error {
	if c.Kubeconfig == "" {
		return fmt.Errorf("credential %s on cluster %s is %s: the management cluster has not signed it yet; see `hcpctl breakglass list --cluster %s` and ask again if it fails",
			c.ID, c.ClusterID, c.State, c.ClusterID)
	}
	// O_EXCL: never replace a file; 0600: the key is in it.
	f, err := os.OpenFile(bgKubeconfig, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w (credential %s was issued; revoke it if it cannot be used)", err, c.ID)
	}
	_, err = f.WriteString(c.Kubeconfig)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("--kubeconfig: write %s: %w", bgKubeconfig, err), os.Remove(bgKubeconfig))
	}
	c.Kubeconfig = "" // in the file, not on the terminal
	return a.print(c, func(w io.Writer) {
		exp := "-"
		if c.ExpirationTime != nil {
			exp = c.ExpirationTime.Format(time.RFC3339) + " (in " + age(time.Until(*c.ExpirationTime)) + ")"
		}
		fmt.Fprintf(w, "wrote %s (mode 0600): credential %s on cluster %s\n  user %s, group %s, expires %s\n  KUBECONFIG=%s kubectl get nodes\n",
			bgKubeconfig, c.ID, c.ClusterID, c.Username, c.Group, exp, bgKubeconfig)
	})
}

func breakGlassPending(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.PendingBreakGlass(ctx)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "REQUEST", "CLUSTER", "PERSON", "TTL", "APPROVE BEFORE", "REASON")
		for _, c := range l.Credentials {
			before := "-"
			if c.ApproveBefore != nil {
				before = c.ApproveBefore.Format(time.RFC3339)
			}
			t.row(c.ID, c.ClusterID, c.Person, (time.Duration(c.TTLSeconds) * time.Second).String(), before, orDash(c.Reason))
		}
		t.flush()
	})
}

func breakGlassApproveFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgReason, "reason", "", "why you approve (required; kept in the audit log)")
	return func([]string) error {
		if strings.TrimSpace(bgReason) == "" {
			return usagef("--reason is required: say why you approve")
		}
		return nil
	}
}

func breakGlassApprove(ctx context.Context, a *app, args []string) error {
	c, err := a.c.ApproveBreakGlass(ctx, args[0], bgReason)
	if err != nil {
		return err
	}
	return a.print(c, func(w io.Writer) {
		fmt.Fprintf(w, "approved: credential %s for %s on cluster %s is %s; %s collects it with `hcpctl breakglass kubeconfig %s`\n",
			c.ID, c.Person, c.ClusterID, c.State, c.Person, c.ID)
	})
}

func breakGlassKubeconfigFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgKubeconfig, "kubeconfig", "", "file to write the kubeconfig to, mode 0600 (required; it must not exist)")
	return func([]string) error {
		if bgKubeconfig == "" {
			return usagef("--kubeconfig is required: the file to write the credential to")
		}
		if _, err := os.Stat(bgKubeconfig); err == nil {
			return usagef("--kubeconfig %s exists: choose a new file (a credential is never written over another)", bgKubeconfig)
		}
		return nil
	}
}

func breakGlassKubeconfig(ctx context.Context, a *app, args []string) error {
	c, err := a.c.BreakGlassKubeconfig(ctx, args[0])
	if err != nil {
		return err
	}
	if c.State == adminapi.StateAwaitingApproval {
		return fmt.Errorf("request %s still awaits a second sre-admin's approval (approve before %v)", c.ID, c.ApproveBefore)
	}
	return writeBreakGlassKubeconfig(a, c)
}

func breakGlassListFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgFilter.Cluster, "cluster", "", "only this cluster's (Cluster Service ID or ARM resource ID)")
	fs.StringVar(&bgFilter.Person, "person", "", "only this SRE's")
	fs.BoolVar(&bgFilter.All, "all", false, "also expired, revoked and failed ones")
	return func([]string) error { return nil }
}

func breakGlassList(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.ListBreakGlass(ctx, bgFilter)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "ID", "CLUSTER", "PERSON", "ACCESS", "STATE", "EXPIRES", "REASON")
		for _, c := range l.Credentials {
			exp := "-"
			if c.ExpirationTime != nil {
				exp = c.ExpirationTime.Format(time.RFC3339)
			}
			t.row(c.ID, c.ClusterID, c.Person, c.Access, c.State, exp, orDash(c.Reason))
		}
		t.flush()
	})
}

func breakGlassRevokeFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgRevokeCredential, "credential", "", "the credential ID to revoke ('hcpctl breakglass list' shows them)")
	fs.StringVar(&bgRevokePerson, "person", "", "revoke every active credential of this SRE instead")
	fs.StringVar(&bgReason, "reason", "", "why (required; kept in the audit log)")
	return func([]string) error {
		switch {
		case (bgRevokeCredential == "") == (bgRevokePerson == ""):
			return usagef("name either --credential or --person, not both and not neither")
		case strings.TrimSpace(bgReason) == "":
			return usagef("--reason is required: say why you revoke")
		}
		return nil
	}
}

func breakGlassRevoke(ctx context.Context, a *app, _ []string) error {
	r, err := a.c.RevokeBreakGlass(ctx, adminapi.BreakGlassRevoke{Credential: bgRevokeCredential, Person: bgRevokePerson, Reason: bgReason})
	if err != nil {
		return err
	}
	return a.print(r, func(w io.Writer) {
		if len(r.Revocations) == 0 {
			fmt.Fprintln(w, "nothing to revoke: no active credential")
			return
		}
		t := table(w, "CLUSTER", "REVOCATION", "STATE", "CREDENTIALS")
		for _, v := range r.Revocations {
			t.row(v.ClusterID, v.RevocationID, v.State, strings.Join(v.Credentials, ","))
		}
		t.flush()
		fmt.Fprintln(w, "every SRE break-glass credential of these clusters is being revoked: their SRE break-glass signer rotates (customers' credentials have their own signer and keep working)")
	})
}
