package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

func newPortalCmd(c *cli) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "portal",
		Short: "Serve the SRE portal on a loopback address, as your SRE identity (until interrupted)",
		Example: `  hcpctl --as sre-admin portal
  hcpctl portal --listen 127.0.0.1:0`,
		Args:              exactArgs(0, ""),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := tlsconfig.RequireLoopback(listen); err != nil {
				return usagef("--listen %s: the portal proxy acts with your SRE certificate, so it serves loopback only", listen)
			}
			return c.call(cmd.Context(), true, func(ctx context.Context, a *app) error { return portal(ctx, a, listen) })
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8090", "loopback address to serve the portal on (port 0: any free port)")
	return cmd
}

// portal serves the admin API's portal on a loopback address, presenting the SRE's client
// certificate upstream (as kubectl proxy does for a kubeconfig), to the browser that opens the
// address it prints: that address holds a key made for this run, which the proxy takes once and
// keeps in a cookie (tokenGate). Without the key, any process of the machine, another user's
// included, could have acted as the SRE through the proxy (a probe listed every cluster and
// opened a break-glass session so). The admin API still identifies, authorizes and audits every
// page and form as that SRE.
func portal(ctx context.Context, a *app, listen string) error {
	target, err := url.Parse(a.c.BaseURL)
	if err != nil {
		return err
	}
	limits := serverlimits.API()
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	l = serverlimits.LimitListener(l, limits.MaxConns)
	local := "http://" + l.Addr().String()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		l.Close()
		return fmt.Errorf("--listen %s: %w", listen, err)
	}
	hosts := portalHosts(port)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			dropCookie(pr.Out, portalCookie(port)) // the proxy's key is the proxy's, not the admin API's
			// The portal's forms must come from the portal's origin (admin/pkg/server): a post
			// from this proxy's page is one, so it is passed on as the admin API's own origin;
			// any other Origin is passed on unchanged, and refused there.
			if o := pr.In.Header.Get("Origin"); strings.HasPrefix(o, "http://") && hosts[strings.ToLower(strings.TrimPrefix(o, "http://"))] {
				pr.Out.Header.Set("Origin", target.Scheme+"://"+target.Host)
			}
			// A browser's requests may post the portal's forms, never make API calls: those
			// are hcpctl's own (adminapi.HeaderClient).
			pr.Out.Header.Del(adminapi.HeaderClient)
		},
		ModifyResponse: func(resp *http.Response) error {
			csp := resp.Header.Get("Content-Security-Policy")
			if csp == "" {
				csp = adminapi.BaseCSP
			}
			adminapi.SetSecurityHeaders(resp.Header, csp)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			adminapi.SetSecurityHeaders(w.Header(), adminapi.BaseCSP)
			http.Error(w, "hcpctl portal: the admin API cannot be reached: "+err.Error(), http.StatusBadGateway)
		},
		Transport: a.c.HTTP.Transport,
	}
	token, err := newPortalToken()
	if err != nil {
		l.Close()
		return err
	}
	srv := limits.Server("", hostAllowList(hosts, tokenGate(token, port, proxy)), nil)
	fmt.Fprintf(a.out, "portal: %s/portal/?%s=%s (as your SRE identity; open this address, which holds the proxy's key; Ctrl-C stops it)\n",
		local, portalTokenParam, token)
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

// portalHosts are the Host values the portal proxy answers: the loopback names at its own
// port. A page of another site whose name was made to resolve to 127.0.0.1 (DNS rebinding)
// reaches the proxy with its own name in Host, and is refused.
func portalHosts(port string) map[string]bool {
	return map[string]bool{"127.0.0.1:" + port: true, "localhost:" + port: true, "[::1]:" + port: true}
}

// hostAllowList answers 403, without forwarding, a request whose Host is not one of hosts
// (compared without case, as DNS names are).
func hostAllowList(hosts map[string]bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts[strings.ToLower(r.Host)] {
			adminapi.SetSecurityHeaders(w.Header(), adminapi.BaseCSP)
			http.Error(w, fmt.Sprintf("hcpctl portal: Host %q is not this proxy's loopback address; open the address hcpctl printed", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// portalTokenParam is the query parameter of the printed address that carries the proxy's key.
const portalTokenParam = "hcpctl-portal-key"

// newPortalToken is a key for one run of the proxy: 32 random bytes, URL-safe.
func newPortalToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the portal's key: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// portalCookie is the name of the cookie that holds the key of the proxy at port (a browser
// sends a loopback cookie to every port, so each proxy names its own).
func portalCookie(port string) string { return "hcpctl-portal-" + port }

// tokenGate forwards to next only a request that holds token: in the cookie portalCookie(port),
// or in the query parameter portalTokenParam, which it answers by setting that cookie and
// sending the browser to the same address without the key (so the key leaves the address bar
// and the history). Anything else is 401 and never reaches the admin API.
func tokenGate(token, port string, next http.Handler) http.Handler {
	name := portalCookie(port)
	holds := func(v string) bool { return subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(name); err == nil && holds(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		if v := q.Get(portalTokenParam); v != "" && holds(v) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			http.SetCookie(w, &http.Cookie{Name: name, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del(portalTokenParam)
			u := *r.URL
			u.RawQuery = q.Encode()
			adminapi.SetSecurityHeaders(w.Header(), adminapi.BaseCSP)
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		adminapi.SetSecurityHeaders(w.Header(), adminapi.BaseCSP)
		http.Error(w, "hcpctl portal: this proxy acts as an SRE for the browser that opened the address hcpctl printed (it holds the proxy's key); open that address", http.StatusUnauthorized)
	})
}

// dropCookie removes the cookie name from r's Cookie header, keeping the others.
func dropCookie(r *http.Request, name string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
}
