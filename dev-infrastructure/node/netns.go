// Package node brings up a real single-node Kubernetes inside a network namespace it owns, so the
// node's address, its pod and service ranges and every rule it adds live there and never on the
// host's interfaces, routes or global sysctls. This file owns the namespace: creating it with its
// node address and removing it again.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// netnsDir is where `ip netns` keeps the bind mounts of named namespaces.
const netnsDir = "/run/netns"

// nodeLink is the empty bridge inside the namespace that carries the node address: kubelet refuses
// a loopback node IP and this kernel has no `dummy` link type, so a bridge with no ports holds it.
const nodeLink = "node0"

// Netns is a named network namespace created by this package, with loopback up and the node
// address on an empty bridge. Delete removes it and everything inside it.
type Netns struct {
	Name   string
	NodeIP netip.Addr
}

// CreateNetns creates a network namespace with a fresh name starting with prefix, brings loopback
// up and puts nodeIP/32 on an empty bridge. On failure it removes what it created.
func CreateNetns(ctx context.Context, prefix string, nodeIP netip.Addr) (_ *Netns, err error) {
	if !nodeIP.Is4() {
		return nil, fmt.Errorf("node IP %s: want an IPv4 address", nodeIP)
	}
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, fmt.Errorf("naming the network namespace: %w", err)
	}
	n := &Netns{Name: prefix + hex.EncodeToString(suffix), NodeIP: nodeIP}
	if err := run(ctx, "ip", "netns", "add", n.Name); err != nil {
		return nil, fmt.Errorf("creating network namespace %s: %w", n.Name, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Delete(context.WithoutCancel(ctx)))
		}
	}()
	for _, args := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", nodeLink, "type", "bridge"},
		{"ip", "addr", "add", nodeIP.String() + "/32", "dev", nodeLink},
		{"ip", "link", "set", nodeLink, "up"},
	} {
		if err := n.Run(ctx, args...); err != nil {
			return nil, fmt.Errorf("setting up network namespace %s: %w", n.Name, err)
		}
	}
	return n, nil
}

// Command returns a command that runs inside the namespace. It enters only the network namespace
// (nsenter --net): `ip netns exec` also makes a new mount namespace with /sys remounted, which hides
// the cgroup mounts the kubelet needs.
func (n *Netns) Command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.Path(), "--"}, args...)...)
}

// Path is the namespace's bind mount.
func (n *Netns) Path() string { return filepath.Join(netnsDir, n.Name) }

// Run runs a command inside the namespace and returns its output in the error when it fails.
func (n *Netns) Run(ctx context.Context, args ...string) error {
	return run(ctx, append([]string{"nsenter", "--net=" + n.Path(), "--"}, args...)...)
}

// Delete removes the namespace. The kernel drops its links, addresses, routes and netfilter rules
// with it once no process is left inside, so callers stop their processes first. Deleting a
// namespace that is already gone is not an error.
func (n *Netns) Delete(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(netnsDir, n.Name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := run(ctx, "ip", "netns", "delete", n.Name); err != nil {
		return fmt.Errorf("deleting network namespace %s: %w", n.Name, err)
	}
	return nil
}

func run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
