package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// Cross-site request forgery. An SRE's browser presents their client certificate to any page
// that asks (and hcpctl portal adds it to whatever reaches its loopback port), so a page of
// another site could make the browser send a mutating call as the SRE. Every mutating request
// (any method but GET, HEAD and OPTIONS), whatever its route and content type, must show it
// comes from the admin API's own client or page:
//   - a browser's Sec-Fetch-Site must not be cross-site, nor same-site from another origin;
//   - an Origin, when sent, must be the admin API's own;
//   - an API call carries adminapi.HeaderClient and a JSON body: a page cannot send a custom
//     header or that content type cross-site without a CORS preflight, which is never granted;
//   - a portal form comes from the portal's own Origin (or "null" with Sec-Fetch-Site
//     same-origin, see forgeryCheck), as a form, with the form token the portal put in the
//     page (formTokens): a page of another site cannot read it.
// docs/security.md ("Admin API and portal in a browser") explains the choice.

// mutating says whether a method can change something (every method a CORS "simple request"
// can use to change state, and all others).
func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

func forged(target, format string, args ...any) *apiError {
	return errorf(http.StatusForbidden, adminapi.CodeForbidden, target, forgedPrefix+format, args...)
}

// forgedPrefix begins the message of every refusal of a possible cross-site request.
const forgedPrefix = "refused as a possible cross-site request: "

func mediaType(r *http.Request) string {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	return strings.ToLower(strings.TrimSpace(ct))
}

// origins are the admin API's own origins, "https://host[:port]" as a browser writes them
// (ownOrigins).
type origins map[string]bool

// String lists them for a refusal's message.
func (o origins) String() string {
	if len(o) == 0 {
		return "none: this admin API has no configured URL (--url)"
	}
	list := make([]string, 0, len(o))
	for k := range o {
		list = append(list, k)
	}
	sort.Strings(list)
	return strings.Join(list, " or ")
}

// ownOrigins is the origin of each of the admin API's URLs (https://host[:port], nothing
// after the host but an optional "/"), as a browser writes an Origin: host in lower case, the
// default port 443 left out.
func ownOrigins(urls []string) (origins, error) {
	out := origins{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("%q is not an https://host[:port] URL", raw)
		}
		host := strings.ToLower(u.Host)
		host = strings.TrimSuffix(host, ":443")
		out["https://"+host] = true
	}
	return out, nil
}

// hostOrigin is the origin a browser gives a page of host (a request's Host) on https, as
// ownOrigins writes it.
func hostOrigin(host string) string {
	return "https://" + strings.TrimSuffix(strings.ToLower(host), ":443")
}

// forgeryCheck applies the header rules above to a mutating request, own being the admin
// API's configured origins (never the request's Host); the form token is checked once the form
// is read (serve).
func forgeryCheck(r *http.Request, own origins) *apiError {
	origin, fetchSite := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
	// Our pages' Referrer-Policy is no-referrer, and under it a browser sends "Origin: null"
	// on every POST (the Fetch standard). Such a request is the portal's own only if the
	// browser's Sec-Fetch-Site, which no page can set, says same-origin, and the origin it
	// means, the one of the name the browser dialled (Host), is the admin API's own: any page
	// may choose no-referrer, a page of a name made to resolve to this address (DNS rebinding)
	// too, and the browser calls its POST to its own name same-origin.
	ownOrigin := own[origin]
	sameOrigin := ownOrigin || (origin == "null" && fetchSite == "same-origin" && own[hostOrigin(r.Host)])
	switch {
	case fetchSite == "cross-site":
		return forged("Sec-Fetch-Site", "the browser says it comes from another site")
	case fetchSite == "same-site" && !ownOrigin:
		return forged("Sec-Fetch-Site", "the browser says it comes from another origin of this site (Origin %q)", origin)
	case origin != "" && !sameOrigin:
		return forged("Origin", "it comes from Origin %q, not the admin API's own (%s)", origin, own)
	}
	if strings.HasPrefix(r.URL.Path, "/portal/") {
		if !sameOrigin {
			return forged("Origin", "a form must be posted from the portal itself (Origin %q, want %s)", origin, own)
		}
		if mediaType(r) != "application/x-www-form-urlencoded" {
			return forged("Content-Type", "the portal takes forms only (application/x-www-form-urlencoded)")
		}
		return nil
	}
	if r.Header.Get(adminapi.HeaderClient) == "" {
		return forged(adminapi.HeaderClient, "an API call that changes something must carry the %s header (hcpctl and adminapi.Client send it)", adminapi.HeaderClient)
	}
	if ct := mediaType(r); ct != "application/json" && (ct != "" || r.ContentLength != 0) {
		return forged("Content-Type", "an API call's body must be application/json, not %q", ct)
	}
	return nil
}

// formTokenTTL is how long a portal page's forms can be posted: a page older than this is
// reloaded.
const formTokenTTL = 12 * time.Hour

// formTokens issues and checks the portal's form tokens: the expiry and an HMAC of the person
// and the expiry under the region's form key (Config.FormKey; a synchronizer token that needs
// no session store, valid on every replica). A token names its SRE, so one SRE's page cannot
// post as another.
type formTokens struct {
	key []byte
	now func() time.Time
}

// newFormTokens uses key, or, when it is empty, a random key of this process (tests, and a
// single replica without a shared key: its restart then invalidates open pages).
func newFormTokens(key []byte, now func() time.Time) *formTokens {
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &formTokens{key: key, now: now}
}

func (f *formTokens) mac(person string, expiry []byte) []byte {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte("openhcp admin portal form\x00"))
	m.Write([]byte(person))
	m.Write([]byte{0})
	m.Write(expiry)
	return m.Sum(nil)
}

// issue returns a token for person's forms.
func (f *formTokens) issue(person string) string {
	raw := binary.BigEndian.AppendUint64(nil, uint64(f.now().Add(formTokenTTL).Unix()))
	return base64.RawURLEncoding.EncodeToString(append(raw, f.mac(person, raw)...))
}

// valid says whether tok is a token issue gave person and has not expired.
func (f *formTokens) valid(person, tok string) bool {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil || len(raw) != 8+sha256.Size {
		return false
	}
	if !hmac.Equal(raw[8:], f.mac(person, raw[:8])) {
		return false
	}
	return f.now().Unix() < int64(binary.BigEndian.Uint64(raw[:8]))
}

// crossSiteRead refuses a read that a page of another site made the SRE's browser send as a
// subresource or a script's fetch (an <img>, a <script>, fetch() with no-cors): the page cannot
// read the answer, but each such load would still cost a call and two audit rows. A top-level
// navigation (a link to the portal followed from elsewhere; Sec-Fetch-Mode navigate) is let
// through, and so is every client that sends no Sec-Fetch-Site (hcpctl, curl).
func crossSiteRead(r *http.Request) *apiError {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		return forged("Sec-Fetch-Site", "the browser says another site's page loads it (Sec-Fetch-Mode %q)", r.Header.Get("Sec-Fetch-Mode"))
	}
	return nil
}
