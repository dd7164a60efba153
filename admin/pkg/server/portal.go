package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// The SRE portal: server-rendered pages over the same data and the same middleware as the
// JSON routes (identity, permission, audit), so a page shows nothing its viewer could not read
// through the API and a form changes nothing the API would refuse.

//go:embed portal/*.html
var portalFiles embed.FS

// portalCSS is the portal's one stylesheet, inlined in every page's <style> and allowed there
// by its hash (portalCSP): no other style, no script at all.
//
//go:embed portal/portal.css
var portalCSS string

// portalCSP is the portal pages' Content-Security-Policy: the base policy, plus the
// stylesheet by its hash and forms posted to the portal itself.
var portalCSP = func() string {
	sum := sha256.Sum256([]byte(portalCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}()

var portalTemplates = template.Must(template.New("portal").Funcs(template.FuncMap{
	"stylesheet": func() template.CSS { return template.CSS(portalCSS) },
	"percent":    func(load float64) int { return int(load*100 + 0.5) },
	"age":        func(s int64) string { return (time.Duration(s) * time.Second).String() },
	"last":       func(id string) string { return id[strings.LastIndex(id, "/")+1:] },
	// clusterPath is the portal path of the cluster an ARM resource ID belongs to.
	"clusterPath": func(id string) string {
		lower := strings.ToLower(id)
		const seg = "/hcpopenshiftclusters/"
		if i := strings.Index(lower, seg); i >= 0 {
			rest := id[i+len(seg):]
			if j := strings.Index(rest, "/"); j >= 0 {
				rest = rest[:j]
			}
			id = id[:i+len(seg)] + rest
		}
		return strings.TrimPrefix(id, "/")
	},
	"indent": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if json.Indent(&b, raw, "", "  ") != nil {
			return string(raw)
		}
		return b.String()
	},
}).ParseFS(portalFiles, "portal/*.html"))

// page is what every portal page gets.
type page struct {
	Title          string
	Who            access.Identity
	Message, Error string
	// CSRF is the form token of the viewer's forms (middleware_forgery.go), set by render.
	CSRF string
}

func (p *page) portalPage() *page { return p }

// render answers a portal page; data is a pointer to a struct that embeds page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data interface{ portalPage() *page }) error {
	p := data.portalPage()
	p.CSRF = s.forms.issue(p.Who.Person)
	var b bytes.Buffer
	if err := portalTemplates.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := w.Write(b.Bytes())
	return err
}

// DefaultPortalPageSize is how many clusters one fleet page lists.
const DefaultPortalPageSize = 100

// portalFleet serves GET /portal/?pageToken=: clusters by state and shard over the whole fleet,
// shard capacity, active operations, and one page of the clusters (PortalPageSize) with a link
// to the next. The counts are read page by page from Cluster Service and kept as counts only, so
// a page's size and the memory it takes do not grow with the fleet.
func (s *Server) portalFleet(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r, "pageToken"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	shards, err := s.shards(ctx)
	if err != nil {
		return err
	}
	listed, err := s.cfg.Clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: int32(s.cfg.PortalPageSize), PageToken: r.URL.Query().Get("pageToken")})
	if err != nil {
		return upstream("list clusters in Cluster Service", "pageToken", err)
	}
	clusters := make([]adminapi.ClusterSummary, 0, len(listed.GetClusters()))
	for _, c := range listed.GetClusters() {
		clusters = append(clusters, summarize(c))
	}
	counts, totals := map[string]map[string]int{}, map[string]int{}
	for _, st := range clusterStates {
		counts[st] = map[string]int{}
	}
	for token := ""; ; {
		resp, err := s.cfg.Clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			return upstream("list clusters in Cluster Service", "", err)
		}
		for _, c := range resp.GetClusters() {
			sum := summarize(c)
			if counts[sum.State] == nil {
				counts[sum.State] = map[string]int{}
			}
			counts[sum.State][sum.Shard]++
			totals[sum.State]++
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	ops, err := s.operations(ctx, false, 1000, "")
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "fleet.html", &struct {
		page
		States     []string
		Shards     []adminapi.Shard
		Counts     map[string]map[string]int
		Totals     map[string]int
		Operations []adminapi.Operation
		Clusters   []adminapi.ClusterSummary
		NextPage   string
	}{page{Title: "Fleet", Who: identityFrom(ctx)}, clusterStates, shards.Shards, counts, totals, ops.Operations, clusters, listed.GetNextPageToken()})
}

// portalCluster serves GET /portal/clusters/{id...}: the describe view and its operation
// timeline.
func (s *Server) portalCluster(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	d, _, _, err := s.describe(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "cluster.html", &struct {
		page
		ID       string
		Describe adminapi.ClusterDescription
	}{page{Title: "Cluster " + lastSegmentOf(d.Summary.ARMResourceID), Who: identityFrom(ctx)}, d.Summary.ID, d})
}

func lastSegmentOf(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// portalShards serves GET /portal/shards.
func (s *Server) portalShards(w http.ResponseWriter, r *http.Request) error {
	return s.renderShards(w, r, http.StatusOK, "", "")
}

func (s *Server) renderShards(w http.ResponseWriter, r *http.Request, status int, message, errText string) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	shards, err := s.shards(ctx)
	if err != nil {
		return err
	}
	return s.render(w, status, "shards.html", &struct {
		page
		Shards []adminapi.Shard
	}{page{Title: "Shards", Who: identityFrom(r.Context()), Message: message, Error: errText}, shards.Shards})
}

// portalShardChange serves the shards page's forms (POST /portal/shards/{name}/cordon and
// /uncordon): conditional on the etag the page showed, so a stale page changes nothing.
func (s *Server) portalShardChange(kind shardChange) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.PathValue("name")
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		sh, err := s.setShard(ctx, name, kind, "", r.PostForm.Get("etag"))
		var ae *apiError
		if errors.As(err, &ae) {
			return s.renderShards(w, r, ae.status, "", ae.body.Message)
		}
		if err != nil {
			return err
		}
		return s.renderShards(w, r, http.StatusOK, fmt.Sprintf("Shard %s is now %s.", sh.Name, sh.Status), "")
	}
}

// portalAudit serves GET /portal/audit with the same filters as the API (a subset in the form).
func (s *Server) portalAudit(w http.ResponseWriter, r *http.Request) error {
	f, err := parseAuditQuery(r, 200)
	if err != nil {
		return err
	}
	entries, _, err := s.cfg.Audit.Query(r.Context(), f)
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "audit.html", &struct {
		page
		Filter   audit.Filter
		Outcomes []string
		Entries  []audit.Entry
	}{page{Title: "Audit log", Who: identityFrom(r.Context())}, f, auditOutcomes, entries})
}
