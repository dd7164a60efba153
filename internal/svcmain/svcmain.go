// Package svcmain holds what every service's main does the same way: parse the flags, run, and
// exit with the status a process supervisor expects, and the log level and JSON logger that
// --log-level sets.
package svcmain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
)

// Main parses args and the environment with parse, then calls run. It exits 0 after -h, 2 when
// the flags are invalid, and 1 when run fails, each error printed on stderr after name.
func Main[O any](name string, parse func(args []string, getenv func(string) string) (O, error), run func(O) error) {
	os.Exit(exitCode(os.Stderr, name, os.Args[1:], os.Getenv, parse, run))
}

func exitCode[O any](stderr io.Writer, name string, args []string, getenv func(string) string,
	parse func([]string, func(string) string) (O, error), run func(O) error) int {
	o, err := parse(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if err := run(o); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// Level parses a --log-level value: debug, info, warn or error.
func Level(s string) (slog.Level, error) {
	switch s {
	case "debug", "info", "warn", "error":
		var l slog.Level
		err := l.UnmarshalText([]byte(s))
		return l, err
	}
	return 0, fmt.Errorf("invalid value %q for --log-level: use debug, info, warn or error", s)
}

// Logger is a service's logger: JSON lines on stderr at level, set as slog's default too (for
// libraries that log through it).
func Logger(level slog.Level) *slog.Logger {
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	return log
}

// ReplicaID is a replica's default name (--replica-id) in the leases and records it shares with
// the others: the host name (service when it cannot be read) and the process ID, so that two
// replicas on one host differ too.
func ReplicaID(service string) string {
	h, err := os.Hostname()
	if err != nil {
		h = service
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}
