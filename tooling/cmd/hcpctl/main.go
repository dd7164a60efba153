// Command hcpctl is the SRE's CLI over the admin API (docs/sre.md#hcpctl): clusters, operations,
// provision shards, break-glass sessions and the audit log of a region, as aligned tables or as
// JSON/YAML, following kubectl's conventions (cobra commands, -o, --help, completion).
//
//	hcpctl [global flags] <noun> <verb> [args] [flags]
//
// A local region is found through its region.json (--region-file); any other through
// --admin-url with --ca, --cert and --key. Exit status: 0 done, 1 the call failed or was
// refused, 2 the command line is wrong (nothing was called).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses (docs/sre.md#hcpctl).
const (
	exitOK     = 0
	exitFailed = 1 // the admin API refused the call, or it failed
	exitUsage  = 2 // the command line is wrong; nothing was called
)

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// callError is a call that was made and failed or was refused (exit status 1). Every other
// error cobra returns is about the command line.
type callError struct{ err error }

func (e callError) Error() string { return e.err.Error() }
func (e callError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status; errors go to stderr. An
// interrupt cancels the call (and stops a long command such as portal).
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(getenv, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ce callError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "hcpctl:", explain(ce.err))
		return exitFailed
	}
	path := root.Name()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "hcpctl: %s\nSee '%s --help' for usage and examples.\n", err, path)
	return exitUsage
}
