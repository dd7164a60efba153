package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// globals are the flags of every command (root's persistent flags), given before or after
// the command's words.
type globals struct {
	regionFile, adminURL, adminServerName, ca, cert, key, as, output string
	timeout                                                          time.Duration
}

// Output formats of -o.
const (
	outputTable = "table"
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

var outputFormats = []string{outputTable, outputWide, outputJSON, outputYAML}

// cli is what every command's RunE closes over: the global flags and where output goes.
type cli struct {
	g   globals
	out io.Writer
}

// call connects to the admin API and runs fn under the --timeout deadline (long: until
// interrupted). Any error but a usage error is a failed call (exit status 1).
func (c *cli) call(ctx context.Context, long bool, fn func(ctx context.Context, a *app) error) error {
	client, files, err := connect(&c.g)
	if err != nil {
		return asCallError(err)
	}
	if !long {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.g.timeout)
		defer cancel()
	}
	return asCallError(fn(ctx, &app{c: client, out: c.out, output: c.g.output, files: files}))
}

func asCallError(err error) error {
	var ue usageError
	if err == nil || errors.As(err, &ue) {
		return err
	}
	return callError{err}
}

// app is what a command runs with.
type app struct {
	c      *adminapi.Client
	out    io.Writer
	output string // one of outputFormats
	// files are the caller's TLS files: the CA that verifies the admin API (and the
	// break-glass gateway, a service of the same CA) and the SRE's own certificate and key.
	files tlsconfig.Files
}

// connect builds the admin client from --admin-url and its files, or from region.json, and
// returns the files it used.
func connect(g *globals) (*adminapi.Client, tlsconfig.Files, error) {
	files := tlsconfig.Files{CA: g.ca, Cert: g.cert, Key: g.key, ServerName: g.adminServerName}
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
		files = tlsconfig.Files{CA: info.Admin.CAFile, Cert: sre.CertFile, Key: sre.KeyFile, ServerName: info.Admin.ServerName}
	} else if files.CA == "" || files.Cert == "" || files.Key == "" {
		return nil, files, usagef("--admin-url needs --ca, --cert and --key (your SRE certificate)")
	}
	if !strings.HasPrefix(url, "https://") {
		return nil, files, usagef("invalid admin URL %q: the admin API is https only", url)
	}
	host := strings.TrimPrefix(url, "https://")
	host, _, _ = strings.Cut(host, "/")
	if files.ServerName == "" {
		files.ServerName = serverNameFor(host, "admin")
	}
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
	// The message may relay Cluster Service's, or be a proxy's page: escaped as a cell is.
	msg := fmt.Sprintf("%s (HTTP %d): %s", printable(ae.Code), ae.Status, printable(ae.Message))
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

// serverNameFor is the name to ask a server for when hostport is how it is dialed: none (the
// host itself) for a DNS name, the name of the region's server identity (pki.ServerName) for an address or
// localhost, since the region's server certificates name their service, never an address
// (docs/security.md, "Clients check the server's identity too").
func serverNameFor(hostport, server string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if net.ParseIP(host) == nil && host != "localhost" {
		return ""
	}
	return pki.ServerName(server)
}
