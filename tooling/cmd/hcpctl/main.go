// Command hcpctl is the SRE's CLI over the admin API (docs/sre.md): clusters, operations,
// provision shards and the audit log of a region, as aligned tables or as JSON/YAML.
//
//	hcpctl [global flags] <noun> <verb> [args] [flags]
//
// A local region is found through its region.json (--region-file); any other through
// --admin-url with --ca, --cert and --key.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// globals are the flags every command takes, before or after its words.
type globals struct {
	regionFile, adminURL, ca, cert, key, as, output string
	timeout                                         time.Duration
}

// register binds the global flags to fs. Values already set (by the flags before the
// command's words) are the defaults, so parsing the command's flags keeps them.
func (g *globals) register(fs *flag.FlagSet, getenv func(string) string) {
	pick := func(current, env, def string) string {
		if current != "" {
			return current
		}
		if v := getenv(env); env != "" && v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&g.regionFile, "region-file", pick(g.regionFile, "OPENHCP_REGION_FILE", ".run/region.json"), "region.json of a local region (env OPENHCP_REGION_FILE); ignored with --admin-url")
	fs.StringVar(&g.adminURL, "admin-url", pick(g.adminURL, "HCPCTL_ADMIN_URL", ""), "admin API base URL, https://host:port (env HCPCTL_ADMIN_URL); needs --ca, --cert and --key")
	fs.StringVar(&g.ca, "ca", pick(g.ca, "HCPCTL_CA", ""), "CA file that verifies the admin API (env HCPCTL_CA)")
	fs.StringVar(&g.cert, "cert", pick(g.cert, "HCPCTL_CERT", ""), "your SRE client certificate (env HCPCTL_CERT)")
	fs.StringVar(&g.key, "key", pick(g.key, "HCPCTL_KEY", ""), "its key (env HCPCTL_KEY)")
	fs.StringVar(&g.as, "as", pick(g.as, "", "sre-readonly"), "with --region-file: act as the region's SRE of this group (sre-readonly or sre-admin), or this person (locally alice, bob, carol)")
	fs.StringVar(&g.output, "o", pick(g.output, "", "table"), "output: table, json or yaml")
	timeout := g.timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	fs.DurationVar(&g.timeout, "timeout", timeout, "timeout of the call")
}

// command is one hcpctl command.
type command struct {
	noun, verb string
	args       string // the positional arguments, for usage
	summary    string
	// flags registers the command's flags; the returned func checks them and the positional
	// arguments after parsing, before anything is called.
	flags func(fs *flag.FlagSet) func(args []string) error
	run   func(ctx context.Context, a *app, args []string) error
	nargs int
	// long commands run until interrupted (no --timeout).
	long bool
}

// app is what a command runs with.
type app struct {
	c   *adminapi.Client
	g   *globals
	out io.Writer
	// files are the caller's TLS files: the CA that verifies the admin API (and the
	// break-glass gateway, a service of the same CA) and the SRE's own certificate and key.
	files tlsconfig.Files
}

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := execute(args, getenv, stdout)
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "hcpctl: %s\nRun 'hcpctl help' for the commands and their flags.\n", ue.msg)
		return 2
	}
	fmt.Fprintln(stderr, "hcpctl:", explain(err))
	return 1
}

func execute(args []string, getenv func(string) string, stdout io.Writer) error {
	g := &globals{}
	words, rest, err := splitWords(args, g, getenv)
	if err != nil {
		return err
	}
	if len(words) == 0 || words[0] == "help" {
		printHelp(stdout)
		return nil
	}
	if words[0] == "completion" {
		if len(words) != 2 || (words[1] != "bash" && words[1] != "zsh") {
			return usagef("completion takes one shell: bash or zsh")
		}
		if words[1] == "zsh" {
			// zsh runs the bash script through its own bash-completion emulation.
			fmt.Fprint(stdout, "# zsh completion for hcpctl: source <(hcpctl completion zsh)\nautoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n")
		}
		fmt.Fprint(stdout, bashCompletion())
		return nil
	}
	cmd, err := find(words)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("hcpctl "+cmd.name(), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs, getenv)
	after := func([]string) error { return nil }
	if cmd.flags != nil {
		after = cmd.flags(fs)
	}
	// The words may be followed by positional arguments and flags in any order.
	positional := words[len(strings.Fields(cmd.name())):]
	for {
		if err := fs.Parse(rest); err != nil {
			return usagef("%s: %v", cmd.name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != cmd.nargs {
		return usagef("%s takes %s, got %d argument(s)", cmd.name(), orNone(cmd.args), len(positional))
	}
	if err := after(positional); err != nil {
		return err
	}
	switch g.output {
	case "table", "json", "yaml":
	default:
		return usagef("invalid value %q for -o: use table, json or yaml", g.output)
	}
	c, files, err := connect(g)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !cmd.long {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	return cmd.run(ctx, &app{c: c, g: g, out: stdout, files: files}, positional)
}

// name is the command's words ("shard cordon", or "audit" for a noun without verbs).
func (c *command) name() string { return strings.TrimSpace(c.noun + " " + c.verb) }

func orNone(s string) string {
	if s == "" {
		return "no arguments"
	}
	return s
}

// splitWords parses the global flags before the command and returns the command's words
// (noun, verb and any positional arguments that precede the first flag) and the rest.
func splitWords(args []string, g *globals, getenv func(string) string) (words, rest []string, err error) {
	fs := flag.NewFlagSet("hcpctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs, getenv)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, nil
		}
		return nil, nil, usagef("%v", err)
	}
	args = fs.Args()
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") && len(words) < 2 {
		words, args = append(words, args[0]), args[1:]
	}
	return words, args, nil
}

func find(words []string) (*command, error) {
	for i := range commands {
		if commands[i].verb == "" && commands[i].noun == words[0] {
			return &commands[i], nil
		}
	}
	if len(words) < 2 {
		return nil, usagef("%q needs a verb: %s", words[0], strings.Join(verbs(words[0]), ", "))
	}
	for i := range commands {
		if commands[i].noun == words[0] && commands[i].verb == words[1] {
			return &commands[i], nil
		}
	}
	if vs := verbs(words[0]); len(vs) > 0 {
		return nil, usagef("unknown command %q %q: %s takes %s", words[0], words[1], words[0], strings.Join(vs, ", "))
	}
	return nil, usagef("unknown command %q: the commands are %s", words[0], strings.Join(nouns(), ", "))
}

func nouns() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range commands {
		if !seen[c.noun] {
			seen[c.noun] = true
			out = append(out, c.noun)
		}
	}
	return out
}

func verbs(noun string) []string {
	var out []string
	for _, c := range commands {
		if c.noun == noun {
			out = append(out, c.verb)
		}
	}
	return out
}

// connect builds the admin client from --admin-url and its files, or from region.json, and
// returns the files it used.
func connect(g *globals) (*adminapi.Client, tlsconfig.Files, error) {
	files := tlsconfig.Files{CA: g.ca, Cert: g.cert, Key: g.key}
	url := g.adminURL
	if url == "" {
		b, err := os.ReadFile(g.regionFile)
		if err != nil {
			return nil, files, usagef("no admin API to call: cannot read --region-file %s (%v); start a local region with 'make run', or pass --admin-url with --ca, --cert and --key", g.regionFile, err)
		}
		var info localregion.Info
		if err := json.Unmarshal(b, &info); err != nil {
			return nil, files, fmt.Errorf("--region-file %s: %w", g.regionFile, err)
		}
		if info.Admin.URL == "" {
			return nil, files, fmt.Errorf("--region-file %s lists no admin API (admin.url); the region predates it: restart it", g.regionFile)
		}
		sre, err := info.Admin.SRE(g.as)
		if err != nil {
			var groups []string
			for _, s := range info.Admin.SREs {
				groups = append(groups, s.Group)
			}
			return nil, files, usagef("--as %s: %v; it lists %s", g.as, err, strings.Join(groups, ", "))
		}
		url = info.Admin.URL
		files = tlsconfig.Files{CA: info.Admin.CAFile, Cert: sre.CertFile, Key: sre.KeyFile}
	} else if files.CA == "" || files.Cert == "" || files.Key == "" {
		return nil, files, usagef("--admin-url needs --ca, --cert and --key (your SRE certificate)")
	}
	if !strings.HasPrefix(url, "https://") {
		return nil, files, usagef("invalid admin URL %q: the admin API is https only", url)
	}
	host := strings.TrimPrefix(url, "https://")
	host, _, _ = strings.Cut(host, "/")
	cfg, err := files.Client(host)
	if err != nil {
		return nil, files, fmt.Errorf("TLS files: %w", err)
	}
	return &adminapi.Client{BaseURL: url, HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}}, files, nil
}

// explain turns an admin API error into what to do about it.
func explain(err error) string {
	var ae *adminapi.Error
	if !errors.As(err, &ae) {
		return err.Error()
	}
	msg := fmt.Sprintf("%s (HTTP %d): %s", ae.Code, ae.Status, ae.Message)
	switch ae.Status {
	case http.StatusUnauthorized:
		msg += "\n  The admin API admits SRE certificates only (subject O = your group): check --cert/--key, or --region-file and --as."
	case http.StatusForbidden:
		msg += "\n  Your group lacks this permission (docs/sre.md lists what each group may do); in a local region, --as sre-admin."
	case http.StatusNotFound:
		msg += "\n  Check the ID or name: 'hcpctl cluster list' and 'hcpctl shard list' show what exists."
	case http.StatusPreconditionFailed:
		msg += "\n  It changed since you read it: 'hcpctl shard list' (a shard) or the last change's ETAG column (a cluster or node pool) shows the current etag; retry with --if-match set to it."
	case http.StatusConflict:
		if ae.Code == adminapi.CodeNotCancelable {
			msg += "\n  Retrying will not help: 'hcpctl cluster pause <cluster ID>' stops a rollout where it stands (docs/sre.md, Cancel)."
			break
		}
		msg += "\n  Something else is changing it now: 'hcpctl operation list' shows running operations; retry once it has ended."
	case http.StatusBadRequest:
		if ae.Target != "" {
			msg += "\n  Fix " + flagFor(ae.Target) + "."
		}
	case http.StatusServiceUnavailable:
		msg += "\n  Retry later; nothing was changed."
	}
	return msg
}

// flagFor names the hcpctl flag that sets an API field.
func flagFor(target string) string {
	if f, ok := map[string]string{"reason": "--reason", "status": "--status", "If-Match": "--if-match", "pageSize": "--page-size",
		"subscription": "--subscription", "shard": "--shard", "pageToken": "--page-token", "all": "--all", "state": "--state", "health": "--health", "since": "--since", "until": "--until", "outcome": "--outcome",
		"replicas": "--replicas", "autoscaling": "--min/--max", "autoscaling.min": "--min", "autoscaling.max": "--max", "version": "--version",
		"ttl": "--ttl", "access": "--access", "credential": "--credential", "person": "--person", "cluster": "--cluster"}[target]; ok {
		return f
	}
	return target
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "hcpctl: the SRE CLI over a region's admin API (docs/sre.md)")
	fmt.Fprintln(w, "\nUsage: hcpctl [flags] <noun> <verb> [args] [flags]\n\nCommands:")
	cmds := append([]command(nil), commands...)
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].noun < cmds[j].noun })
	for _, c := range cmds {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		var flags []string
		if c.flags != nil {
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) { flags = append(flags, "--"+f.Name) })
		}
		fmt.Fprintf(w, "  %s %s\n      %s", c.name(), c.args, c.summary)
		if len(flags) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(flags, " "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  completion bash|zsh\n      print a completion script: source <(hcpctl completion bash), or zsh\n")
	fmt.Fprintln(w, "\nFlags of every command:")
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	(&globals{}).register(fs, func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// bashCompletion completes nouns, then verbs, then the command's flags.
func bashCompletion() string {
	var b strings.Builder
	b.WriteString("# bash completion for hcpctl: source <(hcpctl completion bash)\n_hcpctl() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} noun=${COMP_WORDS[1]} verb=${COMP_WORDS[2]}\n")
	b.WriteString("  if [ $COMP_CWORD -eq 1 ]; then COMPREPLY=($(compgen -W \"" + strings.Join(append(nouns(), "completion", "help"), " ") + "\" -- \"$cur\")); return; fi\n")
	b.WriteString("  if [ $COMP_CWORD -eq 2 ]; then case $noun in\n")
	for _, n := range nouns() {
		if vs := verbs(n); len(vs) > 0 && vs[0] != "" {
			b.WriteString("    " + n + ") COMPREPLY=($(compgen -W \"" + strings.Join(vs, " ") + "\" -- \"$cur\")); return;;\n")
		}
	}
	// A noun without verbs (audit) falls through to its flags.
	b.WriteString("    completion) COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); return;;\n  esac; fi\n")
	var global []string
	gfs := flag.NewFlagSet("", flag.ContinueOnError)
	(&globals{}).register(gfs, func(string) string { return "" })
	gfs.VisitAll(func(f *flag.Flag) { global = append(global, "--"+f.Name) })
	b.WriteString("  case \"$noun $verb\" in\n")
	// A noun without verbs (audit) takes its flags from the second word on.
	for _, c := range commands {
		var fl []string
		if c.flags != nil {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) { fl = append(fl, "--"+f.Name) })
		}
		pattern := "\"" + c.noun + " " + c.verb + "\""
		if c.verb == "" {
			pattern = "\"" + c.noun + " \"*"
		}
		b.WriteString("    " + pattern + ") COMPREPLY=($(compgen -W \"" + strings.Join(append(fl, global...), " ") + "\" -- \"$cur\"));;\n")
	}
	b.WriteString("  esac\n}\ncomplete -F _hcpctl hcpctl\n")
	return b.String()
}
