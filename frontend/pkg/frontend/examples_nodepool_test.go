package frontend

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// adaptNodePool changes what the RP cannot accept as an example has it, within the spec: the
// location becomes the served region, and of replicas and autoScaling (which the spec says
// cannot be used together, though the generated examples set both) autoScaling is kept, with
// min and max in order.
func adaptNodePool(body map[string]any) map[string]any {
	if _, ok := body["location"]; ok {
		body["location"] = testLocation
	}
	props, _ := body["properties"].(map[string]any)
	if as, ok := props["autoScaling"].(map[string]any); ok {
		delete(props, "replicas")
		lo, _ := as["min"].(float64)
		hi, _ := as["max"].(float64)
		if hi < lo {
			as["min"], as["max"] = hi, lo
		}
	}
	return body
}

func nodePoolExamplePath(t *testing.T, x *specExample, name string) string {
	t.Helper()
	p := "/subscriptions/" + testSub + "/resourceGroups/" + x.param(t, "resourceGroupName") +
		"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + x.param(t, "hcpOpenShiftClusterName") + "/nodePools"
	if name != "" {
		p += "/" + name
	}
	return p + "?api-version=" + x.param(t, "api-version")
}

// TestSpecExamplesNodePools drives every NodePools example of every api-version through the
// frontend (real store, fake Cluster Service) under a cluster created from the same version's
// cluster example, and validates each response against the spec's schema.
func TestSpecExamplesNodePools(t *testing.T) {
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			byOp := map[string]*specExample{}
			for _, x := range loadExamples(t, ver, "NodePools_") {
				if x.param(t, "api-version") != ver {
					t.Fatalf("%s: api-version %s", x.file, x.param(t, "api-version"))
				}
				byOp[x.OperationID] = x
			}
			// PageSize 1: two pools make the list span two pages.
			e, _ := newNodePoolEnv(t, func(c *Config) { c.PageSize = 1 })
			driven := map[string]bool{}

			// The parent cluster, from this version's cluster example, under the node pool
			// examples' cluster name.
			create := byOp["NodePools_CreateOrUpdate"]
			clusterX := loadExamples(t, ver, "HcpOpenShiftClusters_CreateOrUpdate")[0]
			clusterPath := "/subscriptions/" + testSub + "/resourceGroups/" + create.param(t, "resourceGroupName") +
				"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + create.param(t, "hcpOpenShiftClusterName") + "?api-version=" + ver
			e.createFromExample(t, clusterPath, adaptCluster(clusterX.body(t, "resource")))

			name := create.param(t, "nodePoolName")
			path := nodePoolExamplePath(t, create, name)
			body := adaptNodePool(create.body(t, "resource"))
			createPool := func(t *testing.T, path string) response {
				resp := e.do("PUT", path, mustJSON(body), nil)
				if resp.code != 201 {
					t.Fatalf("PUT %s: %d %s", path, resp.code, resp.body)
				}
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				return resp
			}
			t.Run("CreateOrUpdate", func(t *testing.T) {
				resp := createPool(t, path)
				so.checkResponse(t, create.OperationID, resp)
				contains(t, resp.json(t), body, "")
				again := e.do("PUT", path, mustJSON(body), nil)
				if again.code != 200 {
					t.Fatalf("second PUT: %d %s", again.code, again.body)
				}
				so.checkResponse(t, create.OperationID, again)
				contains(t, again.json(t), body, "")
			})
			driven[create.OperationID] = true

			get := byOp["NodePools_Get"]
			getName := get.param(t, "nodePoolName")
			t.Run("Get", func(t *testing.T) {
				getPath := nodePoolExamplePath(t, get, getName)
				idPath := getPath
				if strings.EqualFold(getName, name) {
					idPath = path // the same resource; its ID keeps the casing it was created with
				} else {
					createPool(t, getPath)
				}
				resp := e.do("GET", getPath, nil, nil)
				if resp.code != 200 {
					t.Fatalf("GET: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, get.OperationID, resp)
				got := resp.json(t)
				contains(t, got, body, "")
				if got["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
					t.Fatalf("GET does not show the created pool: %s", resp.body)
				}
				if want := strings.Split(idPath, "?")[0]; got["id"] != want {
					t.Fatalf("id %v, want the caller's casing %s", got["id"], want)
				}
			})
			driven[get.OperationID] = true

			update := byOp["NodePools_Update"]
			t.Run("Update", func(t *testing.T) {
				patch := adaptNodePool(update.body(t, "properties"))
				resp := e.do("PATCH", nodePoolExamplePath(t, update, update.param(t, "nodePoolName")), mustJSON(patch), nil)
				if resp.code != 202 {
					t.Fatalf("PATCH: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, update.OperationID, resp)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				loc, _ := url.Parse(resp.header.Get("Location"))
				result := e.do("GET", loc.RequestURI(), nil, nil)
				if result.code != 200 {
					t.Fatalf("operation result: %d %s", result.code, result.body)
				}
				so.checkResponse(t, update.OperationID, result)
				contains(t, result.json(t)["properties"], patch["properties"], "properties")
			})
			driven[update.OperationID] = true

			list := byOp["NodePools_ListByParent"]
			t.Run("ListByParent", func(t *testing.T) {
				createPool(t, nodePoolExamplePath(t, list, "np2"))
				next := nodePoolExamplePath(t, list, "")
				var names []string
				for pages := 0; next != ""; pages++ {
					if pages > 5 {
						t.Fatal("nextLink does not end")
					}
					resp := e.do("GET", next, nil, nil)
					if resp.code != 200 {
						t.Fatalf("list: %d %s", resp.code, resp.body)
					}
					so.checkResponse(t, list.OperationID, resp)
					var page struct {
						Value []struct {
							Name string `json:"name"`
						} `json:"value"`
						NextLink string `json:"nextLink"`
					}
					json.Unmarshal(resp.body, &page)
					for _, it := range page.Value {
						names = append(names, it.Name)
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
				want := []string{name, "np2"}
				if !strings.EqualFold(getName, name) {
					want = append(want, getName)
				}
				sort.Strings(names)
				if fmt.Sprint(names) != fmt.Sprint(sortedCopy(want)) {
					t.Fatalf("listed %v, want %v", names, want)
				}
			})
			driven[list.OperationID] = true

			del := byOp["NodePools_Delete"]
			t.Run("Delete", func(t *testing.T) {
				delPath := nodePoolExamplePath(t, del, del.param(t, "nodePoolName"))
				resp := e.do("DELETE", delPath, nil, nil)
				if resp.code != 202 {
					t.Fatalf("DELETE: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, del.OperationID, resp)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				gone := e.do("DELETE", delPath, nil, nil)
				if gone.code != 204 {
					t.Fatalf("DELETE of a deleted node pool: %d %s", gone.code, gone.body)
				}
				so.checkResponse(t, del.OperationID, gone)
			})
			driven[del.OperationID] = true

			for op, x := range byOp {
				if !driven[op] {
					t.Errorf("example %s (%s) is not driven", x.file, op)
				}
			}
		})
	}
}
