package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

var portalListen string

func portalFlags(fs *flag.FlagSet) func([]string) error {
	fs.StringVar(&portalListen, "listen", "127.0.0.1:8090", "loopback address to serve the portal on (port 0: any free port)")
	return func([]string) error {
		if err := tlsconfig.RequireLoopback(portalListen); err != nil {
			return usagef("--listen %s: the portal proxy acts with your SRE certificate, so it serves loopback only", portalListen)
		}
		return nil
	}
}

// portal serves the admin API's portal on a loopback address, presenting the SRE's client
// certificate upstream (as kubectl proxy does for a kubeconfig), so any local browser can open
// it. The admin API still identifies, authorizes and audits every page and form as that SRE.
func portal(ctx context.Context, a *app, _ []string) error {
	target, err := url.Parse(a.c.BaseURL)
	if err != nil {
		return err
	}
	limits := serverlimits.API()
	l, err := net.Listen("tcp", portalListen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", portalListen, err)
	}
	l = serverlimits.LimitListener(l, limits.MaxConns)
	local := "http://" + l.Addr().String()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The portal's forms must come from the portal's origin (admin/pkg/server): a post
			// from this proxy's page is one, so it is passed on as the admin API's own origin;
			// any other Origin is passed on unchanged, and refused there.
			if pr.In.Header.Get("Origin") == local {
				pr.Out.Header.Set("Origin", target.Scheme+"://"+target.Host)
			}
		},
		Transport: a.c.HTTP.Transport,
	}
	srv := limits.Server("", proxy, nil)
	fmt.Fprintf(a.out, "portal: %s/portal/ (as your SRE identity; Ctrl-C stops it)\n", local)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
