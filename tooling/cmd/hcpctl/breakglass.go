package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// Break-glass commands (docs/sre.md#break-glass): a session on a hosted cluster in the caller's
// name, used through the break-glass gateway with the caller's own certificate; the live ones,
// their approval, closing and revocation.
func init() {
	open := func(verb, summary string) command {
		return command{noun: "breakglass", verb: verb, args: "<cluster: cluster service ID | ARM resource ID>", nargs: 1,
			summary: summary, flags: breakGlassOpenFlags, run: breakGlassOpen}
	}
	commands = append(commands,
		open("open", "a time-boxed session on a hosted cluster in your name, through the gateway (--access read-only|admin, --ttl, --reason, --kubeconfig FILE)"),
		open("request", "the same as open (its former name)"),
		command{noun: "breakglass", verb: "list", summary: "live break-glass sessions (--cluster, --person, --all)", flags: breakGlassListFlags, run: breakGlassList},
		command{noun: "breakglass", verb: "close", args: "<session ID>", nargs: 1,
			summary: "close a session (yours; an sre-admin may close anyone's): the gateway refuses it and cuts its streams (--reason)", flags: breakGlassReasonFlags("why you close it"), run: breakGlassClose},
		command{noun: "breakglass", verb: "revoke", summary: "revoke --session ID, or every live one of --person (rotates the cluster's SRE break-glass signer)",
			flags: breakGlassRevokeFlags, run: breakGlassRevoke},
		command{noun: "breakglass", verb: "pending", summary: "admin sessions waiting for a second sre-admin's approval", run: breakGlassPending},
		command{noun: "breakglass", verb: "approve", args: "<session ID>", nargs: 1,
			summary: "approve another sre-admin's admin session (--reason); it becomes usable by its owner only", flags: breakGlassReasonFlags("why you approve"), run: breakGlassApprove},
		command{noun: "breakglass", verb: "kubeconfig", args: "<session ID>", nargs: 1,
			summary: "write a kubeconfig for one of your sessions again (--kubeconfig FILE)", flags: breakGlassKubeconfigFlags, run: breakGlassKubeconfig},
	)
}

var (
	bgAccess, bgTTL, bgKubeconfig, bgReason string
	bgFilter                                adminapi.BreakGlassFilter
	bgRevokePerson, bgRevokeSession         string
)

func breakGlassOpenFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgAccess, "access", adminapi.AccessReadOnly, "read-only or admin (admin needs the sre-admin group and a second sre-admin's approval)")
	fs.StringVar(&bgTTL, "ttl", "", "lifetime such as 30m or 2h (default: the admin API's default; bounds in docs/sre.md)")
	fs.StringVar(&bgKubeconfig, "kubeconfig", "", "file to write the session's kubeconfig to, mode 0600 (required; it must not exist)")
	fs.StringVar(&bgReason, "reason", "", "why (required; kept in the audit log)")
	return func(args []string) error {
		switch {
		case strings.TrimSpace(bgReason) == "":
			return usagef("--reason is required: say why you need break-glass access to %s", args[0])
		case bgKubeconfig == "":
			return usagef("--kubeconfig is required: the file to write the session's kubeconfig to")
		case bgAccess != adminapi.AccessReadOnly && bgAccess != adminapi.AccessAdmin:
			return usagef("--access must be %s or %s, not %q", adminapi.AccessReadOnly, adminapi.AccessAdmin, bgAccess)
		}
		if bgTTL != "" {
			if _, err := time.ParseDuration(bgTTL); err != nil {
				return usagef("--ttl must be a duration such as 30m or 2h, not %q", bgTTL)
			}
		}
		return newFile(bgKubeconfig)
	}
}

// newFile refuses an existing --kubeconfig: a kubeconfig is never written over another.
func newFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return usagef("--kubeconfig %s exists: choose a new file (a kubeconfig is never written over another)", path)
	}
	return nil
}

func breakGlassOpen(ctx context.Context, a *app, args []string) error {
	s, err := a.c.OpenBreakGlass(ctx, args[0], adminapi.BreakGlassRequest{Access: bgAccess, TTL: bgTTL, Reason: bgReason})
	if err != nil {
		return err
	}
	if err := writeSessionKubeconfig(a, s); err != nil {
		return err
	}
	return a.print(s, func(w io.Writer) {
		if s.State == adminapi.StateAwaitingApproval {
			fmt.Fprintf(w, "session %s for admin access to cluster %s awaits a second sre-admin's approval; the gateway refuses it until then:\n  hcpctl --as <another sre-admin; locally carol> breakglass approve %s --reason \"…\"\n", s.ID, s.ClusterID, s.ID)
		}
		printSession(w, s)
	})
}

// writeSessionKubeconfig writes --kubeconfig (a new file, 0600) for session s: its server is the
// session's URL at the gateway, verified with the CA that verifies the admin API; its user is
// the caller's own certificate and key, referenced by path. It grants nothing by itself: the
// gateway admits it only for the caller's own live session.
func writeSessionKubeconfig(a *app, s adminapi.BreakGlassSession) error {
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
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.GatewayURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[s.Person] = &clientcmdapi.AuthInfo{ClientCertificate: abs(a.files.Cert), ClientKey: abs(a.files.Key)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: s.Person}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	// O_EXCL: never replace a file; 0600 like every kubeconfig.
	f, err := os.OpenFile(bgKubeconfig, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w (session %s is open: `hcpctl breakglass kubeconfig %s --kubeconfig FILE` writes one, `hcpctl breakglass close %s` ends it)", err, s.ID, s.ID, s.ID)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("--kubeconfig: write %s: %w", bgKubeconfig, err), os.Remove(bgKubeconfig))
	}
	return nil
}

func printSession(w io.Writer, s adminapi.BreakGlassSession) {
	exp := "-"
	if s.ExpirationTime != nil {
		exp = s.ExpirationTime.Format(time.RFC3339) + " (in " + age(time.Until(*s.ExpirationTime)) + ")"
	}
	fmt.Fprintf(w, "wrote %s (mode 0600): session %s on cluster %s, %s\n  through %s as %s, group %s; expires %s\n  KUBECONFIG=%s kubectl get nodes\n  hcpctl breakglass close %s --reason \"done\"   # when done\n",
		bgKubeconfig, s.ID, s.ClusterID, s.State, s.GatewayURL, s.Person, s.Group, exp, bgKubeconfig, s.ID)
}

func breakGlassKubeconfigFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgKubeconfig, "kubeconfig", "", "file to write the kubeconfig to, mode 0600 (required; it must not exist)")
	return func([]string) error {
		if bgKubeconfig == "" {
			return usagef("--kubeconfig is required: the file to write the session's kubeconfig to")
		}
		return newFile(bgKubeconfig)
	}
}

func breakGlassKubeconfig(ctx context.Context, a *app, args []string) error {
	s, err := a.c.GetBreakGlass(ctx, args[0])
	if err != nil {
		return err
	}
	if err := writeSessionKubeconfig(a, s); err != nil {
		return err
	}
	return a.print(s, func(w io.Writer) { printSession(w, s) })
}

func breakGlassReasonFlags(why string) func(fs *flag.FlagSet) func([]string) error {
	return func(fs *flag.FlagSet) func([]string) error {
		fs.StringVar(&bgReason, "reason", "", why+" (required; kept in the audit log)")
		return func([]string) error {
			if strings.TrimSpace(bgReason) == "" {
				return usagef("--reason is required: say %s", why)
			}
			return nil
		}
	}
}

func breakGlassClose(ctx context.Context, a *app, args []string) error {
	s, err := a.c.CloseBreakGlass(ctx, args[0], bgReason)
	if err != nil {
		return err
	}
	return a.print(s, func(w io.Writer) {
		fmt.Fprintf(w, "session %s on cluster %s is %s: the gateway refuses it and closes its open streams within seconds\n", s.ID, s.ClusterID, s.State)
	})
}

func breakGlassPending(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.PendingBreakGlass(ctx)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "SESSION", "CLUSTER", "PERSON", "TTL", "APPROVE BEFORE", "REASON")
		for _, c := range l.Sessions {
			before := "-"
			if c.ApproveBefore != nil {
				before = c.ApproveBefore.Format(time.RFC3339)
			}
			t.row(c.ID, c.ClusterID, c.Person, (time.Duration(c.TTLSeconds) * time.Second).String(), before, orDash(c.Reason))
		}
		t.flush()
	})
}

func breakGlassApprove(ctx context.Context, a *app, args []string) error {
	s, err := a.c.ApproveBreakGlass(ctx, args[0], bgReason)
	if err != nil {
		return err
	}
	return a.print(s, func(w io.Writer) {
		fmt.Fprintf(w, "approved: session %s of %s on cluster %s is %s; only %s can use it, through the gateway\n", s.ID, s.Person, s.ClusterID, s.State, s.Person)
	})
}

func breakGlassListFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&bgFilter.Cluster, "cluster", "", "only this cluster's (Cluster Service ID or ARM resource ID)")
	fs.StringVar(&bgFilter.Person, "person", "", "only this SRE's")
	fs.BoolVar(&bgFilter.All, "all", false, "also closed, expired and revoked ones")
	return func([]string) error { return nil }
}

func breakGlassList(ctx context.Context, a *app, _ []string) error {
	l, err := a.c.ListBreakGlass(ctx, bgFilter)
	if err != nil {
		return err
	}
	return a.print(l, func(w io.Writer) {
		t := table(w, "SESSION", "CLUSTER", "PERSON", "ACCESS", "STATE", "EXPIRES", "REASON")
		for _, c := range l.Sessions {
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
	fs.StringVar(&bgRevokeSession, "session", "", "the session ID to revoke ('hcpctl breakglass list' shows them)")
	fs.StringVar(&bgRevokePerson, "person", "", "revoke every live session of this SRE instead")
	fs.StringVar(&bgReason, "reason", "", "why (required; kept in the audit log)")
	return func([]string) error {
		switch {
		case (bgRevokeSession == "") == (bgRevokePerson == ""):
			return usagef("name either --session or --person, not both and not neither")
		case strings.TrimSpace(bgReason) == "":
			return usagef("--reason is required: say why you revoke")
		}
		return nil
	}
}

func breakGlassRevoke(ctx context.Context, a *app, _ []string) error {
	r, err := a.c.RevokeBreakGlass(ctx, adminapi.BreakGlassRevoke{Session: bgRevokeSession, Person: bgRevokePerson, Reason: bgReason})
	if err != nil {
		return err
	}
	return a.print(r, func(w io.Writer) {
		if len(r.Revocations) == 0 {
			fmt.Fprintln(w, "nothing to revoke: no live session")
			return
		}
		t := table(w, "CLUSTER", "REVOCATION", "STATE", "SESSIONS")
		for _, v := range r.Revocations {
			t.row(v.ClusterID, orDash(v.RevocationID), orDash(v.State), strings.Join(v.Sessions, ","))
		}
		t.flush()
		fmt.Fprintln(w, "the sessions are revoked (the gateway cuts their streams within seconds), and every SRE break-glass credential of these clusters is being revoked: their SRE break-glass signer rotates (customers' credentials have their own signer and keep working)")
	})
}
