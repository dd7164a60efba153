package svcmain

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Flags is a service's flag set in which every flag defaults to its own environment variable,
// so the same binary runs from a command line, a launcher or a Helm chart's env block. Errors
// name the flag (and the variable, when the value came from there).
type Flags struct {
	*flag.FlagSet
	getenv  func(string) string
	envErrs []error
}

// NewFlags makes the flag set of the named service; getenv is os.Getenv outside tests.
func NewFlags(name string, getenv func(string) string) *Flags {
	return &Flags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), getenv: getenv}
}

// String adds a string flag whose default is env's value when set, else def.
func (f *Flags) String(p *string, name, env, def, usage string) {
	f.StringVar(p, name, fromEnv(f, name, env, def, func(v string) (string, error) { return v, nil }), usage+" (env "+env+")")
}

// Duration adds a duration flag whose default is env's value when set, else def. A variable
// that is not a duration is reported by Parse.
func (f *Flags) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	f.DurationVar(p, name, fromEnv(f, name, env, def, time.ParseDuration), usage+" (env "+env+")")
}

// Int adds an int flag whose default is env's value when set, else def. A variable that is not
// an integer is reported by Parse.
func (f *Flags) Int(p *int, name, env string, def int, usage string) {
	f.IntVar(p, name, fromEnv(f, name, env, def, strconv.Atoi), usage+" (env "+env+")")
}

// Bool adds a bool flag whose default is env's value when set (true, false, 1, 0, ...), else
// def. A variable that is not a boolean is reported by Parse.
func (f *Flags) Bool(p *bool, name, env string, def bool, usage string) {
	f.BoolVar(p, name, fromEnv(f, name, env, def, strconv.ParseBool), usage+" (env "+env+")")
}

// fromEnv is env's value read by parse when the variable is set and not empty, else def; a
// value parse refuses is kept for Parse to report, naming the flag and the variable.
func fromEnv[T any](f *Flags, name, env string, def T, parse func(string) (T, error)) T {
	v := f.getenv(env)
	if v == "" {
		return def
	}
	t, err := parse(v)
	if err != nil {
		f.envErrs = append(f.envErrs, fmt.Errorf("invalid value %q for --%s from %s: %v", v, name, env, err))
		return def
	}
	return t
}

// Parse parses args; it refuses bad environment values and positional arguments.
func (f *Flags) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		return err
	}
	if len(f.envErrs) > 0 {
		return errors.Join(f.envErrs...)
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(f.Args(), " "))
	}
	return nil
}

// Required names a flag that must be set, and the variable that can set it.
type Required struct{ Value, Flag, Env string }

// Require reports the first of reqs that is empty.
func Require(reqs ...Required) error {
	for _, r := range reqs {
		if r.Value == "" {
			return fmt.Errorf("--%s is required (or set %s)", r.Flag, r.Env)
		}
	}
	return nil
}

// Address names a flag whose value must be host:port.
type Address struct{ Value, Flag string }

// HostPorts reports the first of addrs that is not host:port.
func HostPorts(addrs ...Address) error {
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a.Value); err != nil {
			return fmt.Errorf("invalid value %q for --%s: %v", a.Value, a.Flag, err)
		}
	}
	return nil
}
