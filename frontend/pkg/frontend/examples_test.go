package frontend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	docs "github.com/openhcp/openhcp/internal/api"
)

// The api-versions of the specification; each is served.
var specVersions = []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"}

// Cluster operations whose examples another test drives: the break-glass actions, in
// TestSpecExamplesCredentials (examples_credential_test.go). An example of any other operation
// that TestSpecExamplesClusters does not drive fails it, so a new example in the spec is never
// skipped silently.
var notServedClusterOps = map[string]bool{
	"HcpOpenShiftClusters_RequestAdminCredential": true,
	"HcpOpenShiftClusters_RevokeCredentials":      true,
}

// mayOmit are required, read-only properties the RP leaves out: none. Every response of a
// provisioned cluster — GET, a replacing PUT (200), lists, an operation's result — carries
// console.url, api.url, dns.baseDomain and platform.issuerUrl from Cluster Service.
var mayOmit = map[string]bool{}

// mayOmitOnCreate is what a create's 201 cannot show yet: Cluster Service has no URLs for a
// cluster it has only just accepted (its DNS domain and OIDC issuer it chose at create, so
// those are shown).
var mayOmitOnCreate = map[string]bool{
	"properties.console.url": true,
	"properties.api.url":     true,
}

type specExample struct {
	file        string
	OperationID string                     `json:"operationId"`
	Parameters  map[string]json.RawMessage `json:"parameters"`
	Responses   map[string]struct {
		Body json.RawMessage `json:"body"`
	} `json:"responses"`
}

func (x *specExample) param(t *testing.T, name string) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(x.Parameters[name], &s); err != nil {
		t.Fatalf("%s: parameter %s: %v", x.file, name, err)
	}
	return s
}

func (x *specExample) body(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(x.Parameters[name], &m); err != nil || m == nil {
		t.Fatalf("%s: body parameter %s: %v", x.file, name, err)
	}
	return m
}

// specOperations indexes a version's openapi.json by operationId.
type specOperations struct {
	file string
	ops  map[string]map[string]any
}

func loadSpecOperations(t *testing.T, l *specLoader, apiVersion string) specOperations {
	t.Helper()
	file, _ := filepath.Abs(filepath.Join(specDir(apiVersion), "openapi.json"))
	doc := l.load(t, file)
	out := specOperations{file: file, ops: map[string]map[string]any{}}
	for _, item := range asMap(doc["paths"]) {
		for _, op := range item.(map[string]any) {
			if m, ok := op.(map[string]any); ok {
				if id, ok := m["operationId"].(string); ok {
					out.ops[id] = m
				}
			}
		}
	}
	return out
}

// checkResponse validates a response against the operation's spec: the status code is one
// the operation declares, the declared headers are there, and the body matches the declared
// schema (or is empty when none is declared).
func (so specOperations) checkResponse(t *testing.T, v *specValidator, opID string, resp response) {
	t.Helper()
	op, ok := so.ops[opID]
	if !ok {
		t.Fatalf("operation %s not in the spec", opID)
	}
	code := fmt.Sprint(resp.code)
	r, ok := asMap(op["responses"])[code].(map[string]any)
	if !ok {
		t.Fatalf("%s: status %d is not a response the spec declares: %s", opID, resp.code, resp.body)
	}
	for h := range asMap(r["headers"]) {
		if resp.header.Get(h) == "" {
			t.Errorf("%s %s: header %s missing", opID, code, h)
		}
	}
	s, ok := r["schema"].(map[string]any)
	if !ok {
		if len(bytes.TrimSpace(resp.body)) != 0 {
			t.Errorf("%s %s: the spec declares no body, got %s", opID, code, resp.body)
		}
		return
	}
	v.validateJSON(t, opID+" "+code, schema{so.file, s}, resp.body)
}

func loadExamples(t *testing.T, apiVersion, prefix string) []*specExample {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(specDir(apiVersion), "examples", prefix+"*.json"))
	if len(files) == 0 {
		t.Skipf("no examples for %s in %s", prefix, specDir(apiVersion))
	}
	sort.Strings(files)
	var out []*specExample
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		x := &specExample{file: filepath.Base(f)}
		if err := json.Unmarshal(b, x); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, x)
	}
	return out
}

// adaptCluster changes what the RP cannot accept as the example has it, within what the
// spec allows: the example's location is a random string, and this frontend serves one
// region (any string is valid for the spec). Nothing else is changed.
func adaptCluster(body map[string]any) map[string]any {
	body["location"] = testLocation
	return body
}

// examplePath builds a request path from an example's parameters. The subscription is the
// test's registered one (any subscription ID is valid for the spec; the example's is not
// registered with this RP); names and the resource group are the example's, in its casing.
func examplePath(t *testing.T, x *specExample, name string) string {
	t.Helper()
	p := "/subscriptions/" + testSub
	if _, ok := x.Parameters["resourceGroupName"]; ok {
		p += "/resourceGroups/" + x.param(t, "resourceGroupName")
	}
	p += "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
	if name != "" {
		p += "/" + name
	}
	return p + "?api-version=" + x.param(t, "api-version")
}

// contains checks that every value in want is in got (objects recursively; empty objects in
// want, like the read-only "console": {} of the examples, are satisfied by anything).
func contains(t *testing.T, got, want any, path string) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		if len(w) == 0 {
			return
		}
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: want an object, got %v", path, got)
			return
		}
		for k, wv := range w {
			contains(t, g[k], wv, path+"."+k)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			t.Errorf("%s: want %v, got %v", path, w, got)
			return
		}
		for i := range w {
			contains(t, g[i], w[i], fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: want %v, got %v", path, want, got)
		}
	}
}

// setClusterURLs plays Cluster Service having provisioned the cluster: its status carries the
// API and console URLs and the HostedCluster's conditions (some the spec does not know).
func (f *fakeClusterService) setClusterURLs(csID, apiURL, consoleURL string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clusters[csID]; ok {
		c.Status.ApiUrl, c.Status.ConsoleUrl = apiURL, consoleURL
		at := timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		c.Status.Conditions = []*csv1.Condition{
			{Type: "Available", Status: "True", Reason: "AsExpected", Message: "The hosted control plane is available", LastTransitionTime: at},
			{Type: "Degraded", Status: "False", Reason: "AsExpected", LastTransitionTime: at},
			{Type: "Progressing", Status: "False", Reason: "", Message: "no reason given", LastTransitionTime: at},
			{Type: "EtcdAvailable", Status: "True", Reason: "QuorumAvailable", LastTransitionTime: at},
		}
	}
}

// checkProvisionedStatus fails unless a cluster body shows what setClusterURLs gave Cluster
// Service: both URLs, and from 2026-06-30-preview on the spec's three conditions.
func checkProvisionedStatus(t *testing.T, ver string, got map[string]any, what string) {
	t.Helper()
	props, _ := got["properties"].(map[string]any)
	console, _ := props["console"].(map[string]any)
	api, _ := props["api"].(map[string]any)
	if console["url"] != "https://console.example.openhcp.test" || api["url"] != "https://api.example.openhcp.test:443" {
		t.Fatalf("%s: console.url %v, api.url %v; want Cluster Service's", what, console["url"], api["url"])
	}
	dns, _ := props["dns"].(map[string]any)
	platform, _ := props["platform"].(map[string]any)
	if d, _ := dns["baseDomain"].(string); !strings.HasSuffix(d, ".hypershift.local") {
		t.Fatalf("%s: dns.baseDomain %v; want Cluster Service's", what, dns["baseDomain"])
	}
	if u, _ := platform["issuerUrl"].(string); !strings.HasPrefix(u, "https://oidc.hypershift.local/") {
		t.Fatalf("%s: platform.issuerUrl %v; want Cluster Service's", what, platform["issuerUrl"])
	}
	st, hasStatus := props["status"].(map[string]any)
	if hasStatus != (ver >= "2026-06-30-preview") {
		t.Fatalf("%s: status in %s: %v", what, ver, props["status"])
	}
	if hasStatus {
		if conds, _ := st["conditions"].([]any); len(conds) != 3 {
			t.Fatalf("%s: conditions %v, want Available, Degraded, Progressing", what, st["conditions"])
		}
	}
}

// createFromExample creates a cluster from a CreateOrUpdate example body and finishes the create
// the way the backend would; it returns the 201 response.
func (e *env) createFromExample(t *testing.T, path string, body map[string]any) response {
	t.Helper()
	resp := e.do("PUT", path, mustJSON(body), nil)
	if resp.code != 201 {
		t.Fatalf("PUT %s: %d %s", path, resp.code, resp.body)
	}
	plain, _, _ := strings.Cut(path, "?")
	rd, _ := e.resource(plain)
	e.cs.setClusterURLs(rd.InternalID, "https://api.example.openhcp.test:443", "https://console.example.openhcp.test")
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), docs.StateSucceeded, nil)
	return resp
}

// TestSpecExamplesClusters drives every hcpOpenShiftClusters example of every api-version
// through the frontend (real store, fake Cluster Service) and validates each response against
// the spec's schema for that operation and version.
func TestSpecExamplesClusters(t *testing.T) {
	if _, err := os.Stat(specRoot); err != nil {
		t.Skipf("the specification is not checked out beside the repository (%s): %v", specRoot, err)
	}
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			l := newSpecLoader()
			v := &specValidator{t: t, l: l, mayOmit: mayOmit}
			vCreate := &specValidator{t: t, l: l, mayOmit: mayOmitOnCreate}
			so := loadSpecOperations(t, l, ver)
			byOp := map[string]*specExample{}
			for _, x := range loadExamples(t, ver, "HcpOpenShiftClusters_") {
				if x.param(t, "api-version") != ver {
					t.Fatalf("%s: api-version %s", x.file, x.param(t, "api-version"))
				}
				// The validator must accept the spec's own example responses of the operations
				// driven here, or it is wrong. (The RequestAdminCredential examples before
				// 2026-09-01-preview omit the required kubeconfig; that operation is driven, and
				// its answers validated, in TestSpecExamplesCredentials.)
				strict := &specValidator{t: t, l: l}
				for code, r := range x.Responses {
					if len(r.Body) > 0 && !notServedClusterOps[x.OperationID] {
						so.checkResponse(t, strict, x.OperationID, response{code: atoi(t, code), header: exampleHeaders(so, x.OperationID, code), body: r.Body})
					}
				}
				byOp[x.OperationID] = x
			}
			// PageSize 1: the two clusters of the examples make lists span two pages.
			e := newEnv(t, func(c *Config) { c.PageSize = 1 })
			driven := map[string]bool{}

			create := byOp["HcpOpenShiftClusters_CreateOrUpdate"]
			name := create.param(t, "hcpOpenShiftClusterName")
			path := examplePath(t, create, name)
			body := adaptCluster(create.body(t, "resource"))
			t.Run("CreateOrUpdate", func(t *testing.T) {
				resp := e.createFromExample(t, path, body)
				so.checkResponse(t, vCreate, create.OperationID, resp)
				contains(t, resp.json(t), body, "")
				// Replace with the same body once the create succeeded: 200, with the URLs
				// (and from 2026-06-30-preview on the conditions) a GET shows.
				again := e.do("PUT", path, mustJSON(body), nil)
				if again.code != 200 {
					t.Fatalf("second PUT: %d %s", again.code, again.body)
				}
				so.checkResponse(t, v, create.OperationID, again)
				contains(t, again.json(t), body, "")
				checkProvisionedStatus(t, ver, again.json(t), "PUT 200")
			})
			driven[create.OperationID] = true

			get := byOp["HcpOpenShiftClusters_Get"]
			t.Run("Get", func(t *testing.T) {
				// The Get example names a cluster of its own; it is created from this version's
				// CreateOrUpdate example body.
				getPath := examplePath(t, get, get.param(t, "hcpOpenShiftClusterName"))
				e.createFromExample(t, getPath, body)
				resp := e.do("GET", getPath, nil, nil)
				if resp.code != 200 {
					t.Fatalf("GET: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, v, get.OperationID, resp)
				got := resp.json(t)
				contains(t, got, body, "")
				props := got["properties"].(map[string]any)
				if props["provisioningState"] != "Succeeded" || props["console"].(map[string]any)["url"] != "https://console.example.openhcp.test" ||
					props["api"].(map[string]any)["url"] != "https://api.example.openhcp.test:443" {
					t.Fatalf("GET does not show the provisioned cluster: %s", resp.body)
				}
				// status.conditions exists from 2026-06-30-preview on: the spec's three
				// condition types, a reason the pattern allows ("Unknown" for an empty one).
				st, hasStatus := props["status"].(map[string]any)
				if hasStatus != (ver >= "2026-06-30-preview") {
					t.Fatalf("status in %s: %v", ver, props["status"])
				}
				if hasStatus {
					conds := st["conditions"].([]any)
					if len(conds) != 3 || conds[2].(map[string]any)["reason"] != "Unknown" || conds[0].(map[string]any)["lastTransitionTime"] != "2026-01-02T03:04:05Z" {
						t.Fatalf("conditions %v", conds)
					}
				}
				if want := strings.Split(getPath, "?")[0]; got["id"] != want {
					t.Fatalf("id %v, want the caller's casing %s", got["id"], want)
				}
			})
			driven[get.OperationID] = true

			update := byOp["HcpOpenShiftClusters_Update"]
			t.Run("Update", func(t *testing.T) {
				patch := update.body(t, "properties")
				resp := e.do("PATCH", examplePath(t, update, update.param(t, "hcpOpenShiftClusterName")), mustJSON(patch), nil)
				if resp.code != 202 {
					t.Fatalf("PATCH: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, v, update.OperationID, resp)
				loc, _ := url.Parse(resp.header.Get("Location"))
				result := e.do("GET", loc.RequestURI(), nil, nil)
				if result.code != 200 {
					t.Fatalf("operation result: %d %s", result.code, result.body)
				}
				so.checkResponse(t, v, update.OperationID, result)
				contains(t, result.json(t)["tags"], patch["tags"], "tags")
				if got := len(result.json(t)["tags"].(map[string]any)); got != len(patch["tags"].(map[string]any))+len(body["tags"].(map[string]any)) {
					t.Fatalf("merge patch should add the tags to the existing ones: %s", result.body)
				}
			})
			driven[update.OperationID] = true

			for _, opID := range []string{"HcpOpenShiftClusters_ListByResourceGroup", "HcpOpenShiftClusters_ListBySubscription"} {
				x := byOp[opID]
				t.Run(strings.TrimPrefix(opID, "HcpOpenShiftClusters_"), func(t *testing.T) {
					next := examplePath(t, x, "")
					var names []string
					for pages := 0; next != ""; pages++ {
						if pages > 5 {
							t.Fatal("nextLink does not end")
						}
						resp := e.do("GET", next, nil, nil)
						if resp.code != 200 {
							t.Fatalf("list: %d %s", resp.code, resp.body)
						}
						so.checkResponse(t, v, opID, resp)
						var page struct {
							Value    []map[string]any `json:"value"`
							NextLink string           `json:"nextLink"`
						}
						json.Unmarshal(resp.body, &page)
						for _, it := range page.Value {
							name, _ := it["name"].(string)
							names = append(names, name)
							checkProvisionedStatus(t, ver, it, "list item "+name)
						}
						next = ""
						if page.NextLink != "" {
							u, err := url.Parse(page.NextLink)
							if err != nil || u.Query().Get("$skipToken") == "" {
								t.Fatalf("nextLink %q", page.NextLink)
							}
							next = u.RequestURI()
						}
					}
					sort.Strings(names)
					if want := []string{name, get.param(t, "hcpOpenShiftClusterName")}; fmt.Sprint(names) != fmt.Sprint(sortedCopy(want)) {
						t.Fatalf("listed %v, want %v", names, want)
					}
				})
				driven[opID] = true
			}

			del := byOp["HcpOpenShiftClusters_Delete"]
			t.Run("Delete", func(t *testing.T) {
				delPath := examplePath(t, del, del.param(t, "hcpOpenShiftClusterName"))
				resp := e.do("DELETE", delPath, nil, nil)
				if resp.code != 202 {
					t.Fatalf("DELETE: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, v, del.OperationID, resp)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), docs.StateSucceeded, nil)
				gone := e.do("DELETE", delPath, nil, nil)
				if gone.code != 204 {
					t.Fatalf("DELETE of a deleted cluster: %d %s", gone.code, gone.body)
				}
				so.checkResponse(t, v, del.OperationID, gone)
			})
			driven[del.OperationID] = true

			for op, x := range byOp {
				if !driven[op] && !notServedClusterOps[op] {
					t.Errorf("example %s (%s) is neither driven nor listed as not served", x.file, op)
				}
			}
		})
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("status code %q", s)
	}
	return n
}

// exampleHeaders fills the headers the spec declares for a response, so an example response
// (which lists some of them only) is checked for its body alone.
func exampleHeaders(so specOperations, opID, code string) http.Header {
	h := http.Header{}
	r := asMap(asMap(so.ops[opID]["responses"])[code])
	for k := range asMap(r["headers"]) {
		h.Set(k, "x")
	}
	return h
}

// TestSpecExamplesOperations drives the Operations_List examples of every api-version and
// validates the answer against the spec; the list names every action of the spec's paths.
func TestSpecExamplesOperations(t *testing.T) {
	if _, err := os.Stat(specRoot); err != nil {
		t.Skipf("the specification is not checked out beside the repository (%s): %v", specRoot, err)
	}
	e := newEnv(t)
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			l := newSpecLoader()
			v := &specValidator{t: t, l: l}
			so := loadSpecOperations(t, l, ver)
			xs := loadExamples(t, ver, "Operations_List")
			for _, x := range xs {
				for code, r := range x.Responses {
					so.checkResponse(t, v, x.OperationID, response{code: atoi(t, code), header: http.Header{}, body: r.Body})
				}
				resp := e.do("GET", "/providers/Microsoft.RedHatOpenShift/operations?api-version="+x.param(t, "api-version"), nil, nil)
				if resp.code != 200 {
					t.Fatalf("%s: %d %s", x.file, resp.code, resp.body)
				}
				so.checkResponse(t, v, x.OperationID, resp)
				names := map[string]bool{}
				for _, op := range resp.json(t)["value"].([]any) {
					names[op.(map[string]any)["name"].(string)] = true
				}
				for _, want := range []string{
					"Microsoft.RedHatOpenShift/hcpOpenShiftClusters/write",
					"Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools/delete",
					"Microsoft.RedHatOpenShift/hcpOpenShiftClusters/revokeCredentials/action",
					"Microsoft.RedHatOpenShift/locations/hcpOpenShiftVersions/read",
				} {
					if !names[want] {
						t.Errorf("%s missing from %s", want, resp.body)
					}
				}
			}
		})
	}
	t.Run("unknown_api_version_returns_400", func(t *testing.T) {
		resp := e.do("GET", "/providers/Microsoft.RedHatOpenShift/operations?api-version=2020-01-01", nil, nil)
		if code, _ := resp.armError(t); resp.code != 400 || code != "InvalidResourceType" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})
}
