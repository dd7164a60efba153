package frontend

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Cluster operations whose examples another test drives: the break-glass actions, in
// TestSpecExamplesCredentials (examples_credential_test.go). An example of any other operation
// that TestSpecExamplesClusters does not drive fails it, so a new example in the spec is never
// skipped silently.
var notServedClusterOps = map[string]bool{
	"HcpOpenShiftClusters_RequestAdminCredential": true,
	"HcpOpenShiftClusters_RevokeCredentials":      true,
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
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	return resp
}

// TestSpecExamplesClusters drives every hcpOpenShiftClusters example of every api-version
// through the frontend (real store, fake Cluster Service) and validates each response against
// the spec's schema for that operation and version.
func TestSpecExamplesClusters(t *testing.T) {
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			byOp := map[string]*specExample{}
			for _, x := range loadExamples(t, ver, "HcpOpenShiftClusters_") {
				if x.param(t, "api-version") != ver {
					t.Fatalf("%s: api-version %s", x.file, x.param(t, "api-version"))
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
				so.checkResponse(t, create.OperationID, resp)
				contains(t, resp.json(t), body, "")
				// Replace with the same body once the create succeeded: 200, with the URLs
				// (and from 2026-06-30-preview on the conditions) a GET shows.
				again := e.do("PUT", path, mustJSON(body), nil)
				if again.code != 200 {
					t.Fatalf("second PUT: %d %s", again.code, again.body)
				}
				so.checkResponse(t, create.OperationID, again)
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
				so.checkResponse(t, get.OperationID, resp)
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
				so.checkResponse(t, update.OperationID, resp)
				loc, _ := url.Parse(resp.header.Get("Location"))
				result := e.do("GET", loc.RequestURI(), nil, nil)
				if result.code != 200 {
					t.Fatalf("operation result: %d %s", result.code, result.body)
				}
				so.checkResponse(t, update.OperationID, result)
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
						so.checkResponse(t, opID, resp)
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
				so.checkResponse(t, del.OperationID, resp)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				gone := e.do("DELETE", delPath, nil, nil)
				if gone.code != 204 {
					t.Fatalf("DELETE of a deleted cluster: %d %s", gone.code, gone.body)
				}
				so.checkResponse(t, del.OperationID, gone)
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

// TestSpecExamplesOperations drives the Operations_List examples of every api-version and
// validates the answer against the spec; the list names every action of the spec's paths.
func TestSpecExamplesOperations(t *testing.T) {
	e := newEnv(t)
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			xs := loadExamples(t, ver, "Operations_List")
			for _, x := range xs {
				resp := e.do("GET", "/providers/Microsoft.RedHatOpenShift/operations?api-version="+x.param(t, "api-version"), nil, nil)
				if resp.code != 200 {
					t.Fatalf("%s: %d %s", x.file, resp.code, resp.body)
				}
				so.checkResponse(t, x.OperationID, resp)
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
