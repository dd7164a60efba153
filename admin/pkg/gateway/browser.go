package gateway

import (
	"fmt"
	"net/http"
)

// fromBrowser says why a request is refused as a browser's, or "" when it is not one.
//
// A browser presents the SRE's certificate to any page that asks, and a page of any site can
// open a WebSocket (exec, attach, a watch) or send a simple request to the gateway with it: no
// CORS rule covers a WebSocket, and the hosted kube-apiserver does not check Origin. kubectl and
// client-go send neither Origin nor Sec-Fetch-Site, and the gateway has no page of its own, so
// no request of a browser is the SRE's own. That makes this rule stricter than the admin API's
// (admin/pkg/server/middleware_forgery.go, which must let its portal's own origin through), and
// so it is not that one: any Origin at all is refused, "null" included, and any Sec-Fetch-Site
// but "none" (an address typed in the browser's bar, which no page can cause).
func fromBrowser(r *http.Request) string {
	origin, site := r.Header.Values("Origin"), r.Header.Get("Sec-Fetch-Site")
	switch {
	case len(origin) > 0:
		return fmt.Sprintf("it carries Origin %.200q", origin[0])
	case site != "" && site != "none":
		return fmt.Sprintf("it carries Sec-Fetch-Site %.40q", site)
	}
	return ""
}
