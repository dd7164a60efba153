package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/internal/armspec"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestEveryExample sends every CreateOrUpdate (PUT) and Update (PATCH) example of every
// api-version of the vendored specification to the running region, as ARM would. The examples
// are found through the operations' x-ms-examples, so a new one is driven without a change
// here, and one the test cannot drive fails it.
//
// Each example is changed only as exampleAdaptations says (one table, listed with its reasons
// in docs/api.md, "Every example, end to end"). An example that is not valid for OpenShift as
// written (an adaptation with refused set applies to it) must be refused at once with 400 and
// ARM targets naming only what those adaptations change; then the corrected example is sent.
// Every accepted example must end Succeeded (polled through Azure-AsyncOperation, its result
// read through Location, as ARM clients do), show what was sent, and be applied by the real
// management apiserver: the HostedCluster or NodePool on the management cluster carries it.
// Update examples run against the resource their CreateOrUpdate example created. Every answer
// is validated against the spec's response schema (doARM).
func TestEveryExample(t *testing.T) {
	for _, ver := range armspec.Versions() {
		t.Run(ver, func(t *testing.T) {
			t.Parallel()
			driveExamples(t, ver)
		})
	}
}

// sentExample is one example to send: its file, operation, the resource it writes and the body.
type sentExample struct {
	x      *armspec.Example
	method string // PUT or PATCH
	kind   string // the resource type: hcpOpenShiftClusters, nodePools, externalAuths
	path   string // the resource's path with the test's subscription, without api-version
	parent string // the parent resource's path ("" for a cluster)
	body   map[string]any
}

// exampleRun drives the examples of one api-version.
type exampleRun struct {
	vt       *testing.T // the api-version's test, which outlives each example's
	ver      string
	sub      string              // the test's subscription, registered with the region
	xSub     string              // the subscription the examples name
	versions map[string][]string // channel group → the enabled versions the region offers
	ca       string              // a PEM certificate, for an issuer's CA
}

// exampleKinds are the resource types whose examples this test drives, parents first; an
// example of another type fails the test.
var exampleKinds = []string{"hcpOpenShiftClusters", "nodePools", "externalAuths"}

func driveExamples(t *testing.T, ver string) {
	spec, err := armspec.Load(ver)
	if err != nil {
		t.Fatal(err)
	}
	run := &exampleRun{vt: t, ver: ver, sub: uuid.NewString(), ca: selfSignedCA(t)}
	registerSubscription(t, run.sub)
	run.versions = offeredVersions(t, run.sub, ver)

	var todo []*sentExample
	for _, op := range spec.Operations() {
		if op.Method != http.MethodPut && op.Method != http.MethodPatch {
			continue
		}
		xs, err := op.Examples()
		if err != nil {
			t.Fatal(err)
		}
		if len(xs) == 0 {
			t.Errorf("%s has no examples", op.ID)
		}
		for _, x := range xs {
			todo = append(todo, run.prepare(t, op, x))
		}
	}
	// Parents before children, a resource's create before its update.
	rank := func(e *sentExample) int {
		for i, k := range exampleKinds {
			if k == e.kind {
				if e.method == http.MethodPatch {
					return 2*i + 1
				}
				return 2 * i
			}
		}
		return -1
	}
	sort.SliceStable(todo, func(i, j int) bool { return rank(todo[i]) < rank(todo[j]) })

	created := map[string]bool{} // lower-cased paths of the resources CreateOrUpdate examples made
	driven := map[string]bool{}
	for _, e := range todo {
		t.Run(strings.TrimSuffix(e.x.File, ".json"), func(t *testing.T) {
			switch {
			case rank(e) < 0:
				t.Fatalf("%s writes %s, a resource type this test does not drive (exampleKinds)", e.x.File, e.kind)
			case e.parent != "" && !created[strings.ToLower(e.parent)]:
				t.Fatalf("its cluster %s was not created from a CreateOrUpdate example of %s", e.parent, ver)
			case e.method == http.MethodPatch && !created[strings.ToLower(e.path)]:
				t.Fatalf("no CreateOrUpdate example of %s created %s, which this Update example changes", ver, e.path)
			}
			run.send(t, e)
			driven[e.x.File] = true
			if e.method == http.MethodPut {
				created[strings.ToLower(e.path)] = true
			}
		})
	}
	for _, e := range todo {
		if !driven[e.x.File] {
			t.Errorf("example %s (%s) was not driven to its end", e.x.File, e.x.OperationID)
		}
	}
}

// prepare fills the operation's path from the example's parameters (with the test's
// subscription) and finds its body: the one parameter that is a JSON object.
func (r *exampleRun) prepare(t *testing.T, op *armspec.Operation, x *armspec.Example) *sentExample {
	e := &sentExample{x: x, method: op.Method}
	param := func(name string) string {
		var s string
		if err := json.Unmarshal(x.Parameters[name], &s); err != nil {
			t.Fatalf("%s: parameter %s: %v", x.File, name, err)
		}
		return s
	}
	if got := param("api-version"); got != r.ver {
		t.Fatalf("%s: api-version %s in the folder of %s", x.File, got, r.ver)
	}
	r.xSub = param("subscriptionId")
	segs := strings.Split(strings.Trim(op.Path, "/"), "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, "{") {
			continue
		}
		if name := strings.Trim(s, "{}"); name == "subscriptionId" {
			segs[i] = r.sub
		} else {
			segs[i] = param(name)
		}
	}
	e.kind = segs[len(segs)-2]
	e.path = "/" + strings.Join(segs, "/")
	if e.kind != exampleKinds[0] {
		e.parent = "/" + strings.Join(segs[:len(segs)-2], "/")
	}
	for _, raw := range x.Parameters {
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil {
			continue
		}
		if e.body != nil {
			t.Fatalf("%s: two object parameters; which is the body?", x.File)
		}
		e.body = obj
	}
	if e.body == nil {
		t.Fatalf("%s: no body parameter", x.File)
	}
	return e
}

// send drives one example: first, if it is not valid for OpenShift as written, its refusal;
// then the accepted request to Succeeded, what ARM shows of it, and what the management
// cluster has.
func (r *exampleRun) send(t *testing.T, e *sentExample) {
	u := e.path + "?api-version=" + r.ver
	body, applied := r.adapt(t, e, nil)
	var names []string
	for _, a := range applied {
		names = append(names, a.field)
	}
	t.Logf("adapted: %s", strings.Join(names, "; "))
	// What is invalid for OpenShift is refused at once, with its ARM target: each such field
	// alone, and the example as written (only the environment adapted).
	var refused []string
	for _, a := range applied {
		if a.refused {
			only, _ := r.adapt(t, e, func(x *adaptation) bool { return x == a })
			checkRefusal(t, fmt.Sprintf("%s with %s as written", e.method, a.field), arm(t, e.method, u, only), a.targets)
			refused = append(refused, a.targets...)
		}
	}
	if len(refused) > 0 {
		asWritten, _ := r.adapt(t, e, func(x *adaptation) bool { return x.refused })
		checkRefusal(t, e.method+" as written", arm(t, e.method, u, asWritten), refused)
	}
	resp := arm(t, e.method, u, body)
	want := map[string]int{http.MethodPut: http.StatusCreated, http.MethodPatch: http.StatusAccepted}[e.method]
	if resp.Status != want {
		t.Fatalf("%s %s: got %d, want %d: %s", e.method, e.path, resp.Status, want, resp.Raw)
	}
	async, loc := resp.Header.Get("Azure-AsyncOperation"), resp.Header.Get("Location")
	if async == "" {
		t.Fatalf("%s %s: %d without Azure-AsyncOperation", e.method, e.path, resp.Status)
	}
	if e.method == http.MethodPut && e.kind == exampleKinds[0] {
		r.deleteWhenDone(e.path) // its node pools and external auth go with it
	}
	if final := waitOperation(t, async, 5*time.Minute); final["status"] != "Succeeded" {
		t.Fatalf("%s %s ended %v: %v", e.method, e.path, final["status"], final["error"])
	}
	got := arm(t, http.MethodGet, u, nil)
	if loc != "" {
		// What an ARM client reads at the end of a PATCH: the operation result.
		got = armURL(t, http.MethodGet, loc, nil)
	}
	if got.Status != http.StatusOK {
		t.Fatalf("the resource after Succeeded: %d %s", got.Status, got.Raw)
	}
	if ps := nested(got.Body, "properties.provisioningState"); ps != "Succeeded" {
		t.Errorf("%s is %v after its operation Succeeded", e.path, ps)
	}
	for _, m := range missing(body, got.Body, "") {
		t.Errorf("the resource does not show what was sent: %s", m)
	}
	r.checkApplied(t, e, got.Body)
}

// deleteWhenDone deletes a cluster when the api-version's test ends, and checks the delete
// Succeeded.
func (r *exampleRun) deleteWhenDone(path string) {
	u := path + "?api-version=" + r.ver
	t := r.vt
	t.Cleanup(func() {
		del := arm(t, http.MethodDelete, u, nil)
		if del.Status != http.StatusAccepted {
			t.Errorf("DELETE %s: got %d: %s", path, del.Status, del.Raw)
			return
		}
		if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
			t.Errorf("delete of %s ended %v: %v", path, final["status"], final["error"])
		}
	})
}

// checkRefusal requires a 400 whose ARM targets (the error's and its details') are at least
// one, each naming a field that refused adaptations change.
func checkRefusal(t *testing.T, what string, resp armResponse, fields []string) {
	t.Helper()
	if resp.Status != http.StatusBadRequest {
		t.Fatalf("%s: got %d, want 400 naming %v: %s", what, resp.Status, fields, resp.Raw)
	}
	errBody, _ := resp.Body["error"].(map[string]any)
	var targets []string
	if s, _ := errBody["target"].(string); s != "" {
		targets = append(targets, s)
	}
	for _, d := range asList(errBody["details"]) {
		if s, _ := d.(map[string]any)["target"].(string); s != "" {
			targets = append(targets, s)
		}
	}
	if len(targets) == 0 {
		t.Errorf("%s: 400 without an ARM target (want one of %v): %s", what, fields, resp.Raw)
	}
	for _, tg := range targets {
		if !slicesContainsFold(fields, anyIndex.ReplaceAllString(tg, "[]")) {
			t.Errorf("%s: refused with target %q, which no refused adaptation changes (%v): %s", what, tg, fields, resp.Raw)
		}
	}
	if !t.Failed() {
		t.Logf("%s: refused as expected: %s", what, resp.Raw)
	}
}

var anyIndex = regexp.MustCompile(`\[\d+\]`)

func slicesContainsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// adaptation is one change the test makes to examples: either because the example names
// something that cannot exist in this region, or (refused) because the example is not valid
// for OpenShift as written, so the RP must refuse it first.
type adaptation struct {
	kinds   []string // resource types it applies to
	field   string   // the ARM property it changes
	targets []string // refused: the ARM targets the refusal may name ("[]" stands for any index)
	refused bool
	why     string
	// apply changes an example's body (a PUT's resource or a PATCH's update) and says whether
	// it changed anything.
	apply func(r *exampleRun, body map[string]any) bool
}

// exampleAdaptations is every change the test makes to an example; docs/api.md lists them.
var exampleAdaptations = []adaptation{
	{
		kinds: exampleKinds, field: "subscriptionId (request path and every resource ID in the body)",
		why: "the examples' subscription is not registered with the region; each api-version runs in a subscription of its own, so the four run at once with the examples' resource groups and names",
		apply: func(r *exampleRun, body map[string]any) bool {
			return replaceStrings(body, r.xSub, r.sub)
		},
	},
	{
		kinds: []string{"hcpOpenShiftClusters", "nodePools"}, field: "location",
		why: "the examples' location is a random string; the region serves one location",
		apply: func(r *exampleRun, body map[string]any) bool {
			if _, ok := body["location"]; !ok {
				return false
			}
			body["location"] = region.Info.Location
			return true
		},
	},
	{
		kinds: []string{"hcpOpenShiftClusters", "nodePools"}, field: "properties.version.id",
		why: "the examples' version (4.12) is not in the region's catalogue: it becomes the newest enabled version of the example's channel group (HcpOpenShiftVersions_List), in the example's form (X.Y)",
		apply: func(r *exampleRun, body map[string]any) bool {
			v, _ := nested(body, "properties.version").(map[string]any)
			id, _ := v["id"].(string)
			if id == "" {
				return false
			}
			group, _ := v["channelGroup"].(string)
			if group == "" {
				group = "stable"
			}
			offered := r.versions[group]
			for _, o := range offered {
				if o == id || strings.HasPrefix(o, id+".") {
					return false
				}
			}
			if len(offered) == 0 {
				return false // the region offers none of the group: let the RP say so
			}
			newest := offered[len(offered)-1]
			if strings.Count(id, ".") == 1 {
				newest = strings.Join(strings.SplitN(newest, ".", 3)[:2], ".")
			}
			v["id"] = newest
			return true
		},
	},
	{
		kinds: []string{"hcpOpenShiftClusters"}, field: "properties.network.hostPrefix", refused: true,
		targets: []string{"properties.network.hostPrefix"},
		why:     "the examples' 21 is outside what OpenShift on Azure takes (23-26, Cluster Service's rule, as ARO-HCP's): it becomes 23",
		apply: func(r *exampleRun, body map[string]any) bool {
			n, _ := nested(body, "properties.network").(map[string]any)
			hp, ok := n["hostPrefix"].(float64)
			if !ok || (hp >= 23 && hp <= 26) {
				return false
			}
			n["hostPrefix"] = 23
			return true
		},
	},
	{
		kinds: []string{"nodePools"}, field: "properties.replicas", refused: true,
		targets: []string{"properties.replicas", "properties.autoScaling"},
		why:     "set together with autoScaling, which the spec says cannot be used together: replicas is left out",
		apply: func(r *exampleRun, body map[string]any) bool {
			p, _ := body["properties"].(map[string]any)
			if p["replicas"] == nil || p["autoScaling"] == nil {
				return false
			}
			delete(p, "replicas")
			return true
		},
	},
	{
		kinds: []string{"nodePools"}, field: "properties.autoScaling.min, .max", refused: true,
		targets: []string{"properties.autoScaling.min", "properties.autoScaling.max", "properties.autoScaling"},
		why:     "min is larger than max (29 and 2 in the Update examples): they are swapped",
		apply: func(r *exampleRun, body map[string]any) bool {
			as, _ := nested(body, "properties.autoScaling").(map[string]any)
			lo, _ := as["min"].(float64)
			hi, _ := as["max"].(float64)
			if as == nil || lo <= hi {
				return false
			}
			as["min"], as["max"] = hi, lo
			return true
		},
	},
	{
		kinds: []string{"nodePools"}, field: "properties.platform.availabilityZone", refused: true,
		targets: []string{"properties.platform.availabilityZone"},
		why:     "\"australiaeast-az1\" is not a zone HyperShift's NodePool takes (1, 2 or 3): it becomes 1",
		apply: func(r *exampleRun, body map[string]any) bool {
			p, _ := nested(body, "properties.platform").(map[string]any)
			z, ok := p["availabilityZone"].(string)
			if !ok || z == "1" || z == "2" || z == "3" {
				return false
			}
			p["availabilityZone"] = "1"
			return true
		},
	},
	{
		kinds: []string{"nodePools"}, field: "properties.taints[].key", refused: true,
		targets: []string{"properties.taints[].key"},
		why:     "a 230-letter key without a prefix is not a Kubernetes qualified name (at most 63 characters after an optional prefix/): it is cut to its first 63",
		apply: func(r *exampleRun, body map[string]any) bool {
			changed := false
			for _, tn := range asList(nested(body, "properties.taints")) {
				m, _ := tn.(map[string]any)
				k, _ := m["key"].(string)
				if _, name, ok := strings.Cut(k, "/"); (ok && len(name) > 63) || (!ok && len(k) > 63) {
					m["key"], changed = k[:63], true
				}
			}
			return changed
		},
	},
	{
		kinds: []string{"externalAuths"}, field: "properties.issuer.ca", refused: true,
		targets: []string{"properties.issuer.ca"},
		why:     "a random string; it must be a PEM bundle of CA certificates (Cluster Service and the kube-apiserver parse it): it becomes a self-signed certificate",
		apply: func(r *exampleRun, body map[string]any) bool {
			is, _ := nested(body, "properties.issuer").(map[string]any)
			ca, ok := is["ca"].(string)
			if !ok || strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----") {
				return false
			}
			is["ca"] = r.ca
			return true
		},
	},
	{
		kinds: []string{"externalAuths"}, field: "properties.issuer.audiences", refused: true,
		targets: []string{"properties.issuer.audiences", "properties.clients[].clientId", "properties.clients"},
		why:     "the spec says each client's clientId must be one of the issuer's audiences, and the examples' is not: it is appended to the audiences",
		apply: func(r *exampleRun, body map[string]any) bool {
			is, _ := nested(body, "properties.issuer").(map[string]any)
			if is == nil {
				return false
			}
			changed := false
			for _, c := range asList(nested(body, "properties.clients")) {
				id, _ := c.(map[string]any)["clientId"].(string)
				auds := asList(is["audiences"])
				if id != "" && !containsValue(auds, id) {
					is["audiences"], changed = append(auds, id), true
				}
			}
			return changed
		},
	},
	{
		kinds: []string{"externalAuths"}, field: "properties.claim.mappings.username.prefixPolicy", refused: true,
		targets: []string{"properties.claim.mappings.username.prefixPolicy", "properties.claim.mappings.username"},
		why:     "a random string, not None, Prefix or NoPrefix; the examples set a prefix, which goes with Prefix",
		apply: func(r *exampleRun, body map[string]any) bool {
			u, _ := nested(body, "properties.claim.mappings.username").(map[string]any)
			switch u["prefixPolicy"] {
			case nil, "None", "Prefix", "NoPrefix":
				return false
			}
			u["prefixPolicy"] = "Prefix"
			return true
		},
	},
}

// adapt applies exampleAdaptations (but those skip says to leave out) to a copy of an example's
// body, and lists those that changed it.
func (r *exampleRun) adapt(t *testing.T, e *sentExample, skip func(*adaptation) bool) (body map[string]any, applied []*adaptation) {
	body = deepCopy(t, e.body)
	for i := range exampleAdaptations {
		a := &exampleAdaptations[i]
		if !slicesContainsFold(a.kinds, e.kind) || (skip != nil && skip(a)) {
			continue
		}
		if a.apply(r, body) {
			applied = append(applied, a)
		}
	}
	return body, applied
}

func deepCopy(t *testing.T, v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// replaceStrings replaces old (case-insensitively) in every string and object key under v.
func replaceStrings(v any, old, repl string) bool {
	re := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(old))
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				nk := re.ReplaceAllString(k, repl)
				nv := walk(val)
				if nk != k {
					delete(x, k)
					changed = true
				}
				x[nk] = nv
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			if n := re.ReplaceAllString(x, repl); n != x {
				changed = true
				return n
			}
		}
		return v
	}
	walk(v)
	return changed
}

func containsValue(list []any, v any) bool {
	for _, l := range list {
		if l == v {
			return true
		}
	}
	return false
}

// nested reads a dotted path ("spec.networking.clusterNetwork[0].cidr") out of decoded JSON;
// nil when any step is missing.
func nested(v any, path string) any {
	for _, step := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(step, "[")
		if name != "" {
			m, _ := v.(map[string]any)
			v = m[name]
		}
		if hasIdx {
			i, _ := strconv.Atoi(strings.TrimSuffix(idx, "]"))
			l, _ := v.([]any)
			if i >= len(l) {
				return nil
			}
			v = l[i]
		}
	}
	return v
}

// missing lists what of want got does not have: objects compare key by key, arrays item by
// item, scalars by value. A read-only {} (the examples' console) is satisfied by anything.
func missing(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok && len(w) > 0 {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for k, wv := range w {
			out = append(out, missing(wv, g[k], strings.TrimPrefix(path+"."+k, "."))...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, w, got)}
		}
		var out []string
		for i := range w {
			out = append(out, missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
	}
	return nil
}

// offeredVersions lists the enabled versions the region offers, by channel group, oldest first,
// through the api-version's HcpOpenShiftVersions_List.
func offeredVersions(t *testing.T, sub, ver string) map[string][]string {
	r := arm(t, http.MethodGet, fmt.Sprintf("/subscriptions/%s/providers/Microsoft.RedHatOpenShift/locations/%s/hcpOpenShiftVersions?api-version=%s", sub, region.Info.Location, ver), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("list versions: %d %s", r.Status, r.Raw)
	}
	out := map[string][]string{}
	for _, it := range asList(r.Body["value"]) {
		m, _ := it.(map[string]any)
		name, _ := m["name"].(string)
		group, _ := nested(m, "properties.channelGroup").(string)
		if nested(m, "properties.enabled") == true {
			out[group] = append(out[group], name)
		}
	}
	for g := range out {
		sort.Slice(out[g], func(i, j int) bool { return versionLess(out[g][i], out[g][j]) })
	}
	return out
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, _ := strconv.Atoi(pa[i])
		nb, _ := strconv.Atoi(pb[i])
		if na != nb {
			return na < nb
		}
	}
	return len(pa) < len(pb)
}

// selfSignedCA is a PEM CA certificate, for an external auth's issuer.ca.
func selfSignedCA(t *testing.T) string {
	ca, err := pki.NewAuthority("issuer-ca.openhcp.test", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return string(ca.PEM)
}

// appliedField says where an ARM property of the resource shows on the object HyperShift
// reads: the HostedCluster, its OIDC provider, or the NodePool.
type appliedField struct {
	arm, kube string
	conv      func(any) any // the ARM value as the object has it (nil: unchanged)
	fold      bool          // compared case-insensitively (a resource ID)
}

var hostedClusterFields = []appliedField{
	{arm: "location", kube: "spec.platform.azure.location"},
	{arm: "properties.network.podCidr", kube: "spec.networking.clusterNetwork[0].cidr"},
	{arm: "properties.network.hostPrefix", kube: "spec.networking.clusterNetwork[0].hostPrefix"},
	{arm: "properties.network.serviceCidr", kube: "spec.networking.serviceNetwork[0].cidr"},
	{arm: "properties.network.machineCidr", kube: "spec.networking.machineNetwork[0].cidr"},
	{arm: "properties.api.authorizedCidrs", kube: "spec.networking.apiServer.allowedCIDRBlocks"},
	{arm: "properties.platform.managedResourceGroup", kube: "spec.platform.azure.resourceGroup"},
	{arm: "properties.dns.baseDomain", kube: "spec.dns.baseDomain"},
	{arm: "properties.dns.baseDomainPrefix", kube: "spec.dns.baseDomainPrefix"},
	{arm: "properties.platform.issuerUrl", kube: "spec.issuerURL"},
	{arm: "properties.autoscaling.maxNodesTotal", kube: "spec.autoscaling.maxNodesTotal"},
	{arm: "properties.autoscaling.maxPodGracePeriodSeconds", kube: "spec.autoscaling.maxPodGracePeriod"},
	{arm: "properties.autoscaling.podPriorityThreshold", kube: "spec.autoscaling.podPriorityThreshold"},
	{arm: "properties.autoscaling.maxNodeProvisionTimeSeconds", kube: "spec.autoscaling.maxNodeProvisionTime", conv: func(v any) any { return fmt.Sprintf("%vs", v) }},
	{arm: "properties.etcd.dataEncryption.customerManaged.kms.activeKey.vaultName", kube: "spec.secretEncryption.kms.azure.activeKey.keyVaultName"},
	{arm: "properties.etcd.dataEncryption.customerManaged.kms.vaultName", kube: "spec.secretEncryption.kms.azure.activeKey.keyVaultName"},
	{arm: "properties.etcd.dataEncryption.customerManaged.kms.activeKey.name", kube: "spec.secretEncryption.kms.azure.activeKey.keyName"},
	{arm: "properties.etcd.dataEncryption.customerManaged.kms.activeKey.version", kube: "spec.secretEncryption.kms.azure.activeKey.keyVersion"},
	{arm: "properties.imageDigestMirrors", kube: "spec.imageContentSources"},
	{arm: "properties.cryptoRestrictions", kube: "spec.fips", conv: func(v any) any { return v == "FIPS" }},
}

var nodePoolFields = []appliedField{
	{arm: "properties.platform.vmSize", kube: "spec.platform.azure.vmSize"},
	{arm: "properties.platform.availabilityZone", kube: "spec.platform.azure.availabilityZone"},
	{arm: "properties.platform.osDisk.sizeGiB", kube: "spec.platform.azure.osDisk.sizeGiB"},
	{arm: "properties.platform.osDisk.diskStorageAccountType", kube: "spec.platform.azure.osDisk.diskStorageAccountType"},
	{arm: "properties.platform.osDisk.encryptionSetId", kube: "spec.platform.azure.osDisk.encryptionSetID", fold: true},
	{arm: "properties.platform.osDisk.diskType", kube: "spec.platform.azure.osDisk.persistence", conv: func(v any) any {
		return map[any]any{"Managed": "Persistent", "Ephemeral": "Ephemeral"}[v]
	}},
	{arm: "properties.platform.enableEncryptionAtHost", kube: "spec.platform.azure.encryptionAtHost", conv: func(v any) any {
		return map[any]any{true: "Enabled", false: "Disabled"}[v]
	}},
	{arm: "properties.replicas", kube: "spec.replicas"},
	{arm: "properties.autoScaling.min", kube: "spec.autoScaling.min"},
	{arm: "properties.autoScaling.max", kube: "spec.autoScaling.max"},
	{arm: "properties.autoRepair", kube: "spec.management.autoRepair"},
	{arm: "properties.labels", kube: "spec.nodeLabels", conv: func(v any) any {
		out := map[string]any{}
		for _, l := range asList(v) {
			m, _ := l.(map[string]any)
			out[fmt.Sprint(m["key"])] = m["value"]
		}
		return out
	}},
	{arm: "properties.taints", kube: "spec.taints"},
	{arm: "properties.nodeDrainTimeoutMinutes", kube: "spec.nodeDrainTimeout", conv: func(v any) any {
		n, _ := v.(float64)
		return (time.Duration(n) * time.Minute).String()
	}},
}

// oidcProviderFields are relative to the external auth's properties and its OIDC provider.
var oidcProviderFields = []appliedField{
	{arm: "issuer.url", kube: "issuer.issuerURL"},
	{arm: "issuer.audiences", kube: "issuer.audiences"},
	{arm: "claim.mappings.username.claim", kube: "claimMappings.username.claim"},
	{arm: "claim.mappings.username.prefixPolicy", kube: "claimMappings.username.prefixPolicy"},
	{arm: "claim.mappings.username.prefix", kube: "claimMappings.username.prefix.prefixString"},
	{arm: "claim.mappings.groups.claim", kube: "claimMappings.groups.claim"},
	{arm: "claim.mappings.groups.prefix", kube: "claimMappings.groups.prefix"},
	{arm: "clients[0].clientId", kube: "oidcClients[0].clientID"},
	{arm: "clients[0].component.name", kube: "oidcClients[0].componentName"},
	{arm: "clients[0].component.authClientNamespace", kube: "oidcClients[0].componentNamespace"},
	{arm: "clients[0].extraScopes", kube: "oidcClients[0].extraScopes"},
	{arm: "claim.validationRules[0].type", kube: "claimValidationRules[0].type"},
	{arm: "claim.validationRules[0].requiredClaim.claim", kube: "claimValidationRules[0].requiredClaim.claim"},
	{arm: "claim.validationRules[0].requiredClaim.requiredValue", kube: "claimValidationRules[0].requiredClaim.requiredValue"},
}

// compareApplied checks every field ARM shows (armObj) against the object on the management
// cluster.
func compareApplied(t *testing.T, what string, fields []appliedField, armObj, kubeObj any) {
	t.Helper()
	for _, f := range fields {
		want := nested(armObj, f.arm)
		if want == nil {
			continue
		}
		if f.conv != nil {
			want = f.conv(want)
		}
		// Compared as JSON: numbers decode as float64 on one side and int64 on the other.
		w, got := canonical(want), canonical(nested(kubeObj, f.kube))
		if w != got && !(f.fold && strings.EqualFold(w, got)) {
			t.Errorf("%s %s = %v, want %v (ARM %s)", what, f.kube, got, want, f.arm)
		}
	}
}

func canonical(v any) string {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	b, _ = json.Marshal(out)
	return string(b)
}

// checkApplied finds the object the example became on the management cluster Cluster Service
// placed its cluster on, as the real apiserver stored it, and compares it with what ARM shows.
func (r *exampleRun) checkApplied(t *testing.T, e *sentExample, shown map[string]any) {
	clusterPath := e.path
	if e.parent != "" {
		clusterPath = e.parent
	}
	cs := csClusters(t, clusterPath)
	if len(cs) != 1 {
		t.Fatalf("cluster service holds %d clusters for %s, want 1", len(cs), clusterPath)
	}
	mc := managementCluster(t, cs[0].GetShard())
	hcs := hostedClusters(t, mc, cs[0].GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s on %s, want 1", len(hcs), cs[0].GetId(), mc.Name)
	}
	hc := hcs[0]
	switch e.kind {
	case "hcpOpenShiftClusters":
		if got := condition(hc, "Available"); got != "True" {
			t.Errorf("HostedCluster Available = %q, want True", got)
		}
		compareApplied(t, "HostedCluster", hostedClusterFields, shown, hc.Object)
	case "nodePools":
		np, err := kube(t, mc).Resource(nodePoolGVR).Namespace(cs[0].GetNamespace()).Get(context.Background(), manifests.NodePoolName(e.path), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("NodePool of %s on %s: %v", e.path, mc.Name, err)
		}
		if got := condition(*np, "Ready"); got != "True" {
			t.Errorf("NodePool Ready = %q, want True", got)
		}
		compareApplied(t, "NodePool", nodePoolFields, shown, np.Object)
	case "externalAuths":
		name := manifests.OIDCProviderName(e.path)
		var provider map[string]any
		ps, _, _ := unstructured.NestedSlice(hc.Object, "spec", "configuration", "authentication", "oidcProviders")
		for _, p := range ps {
			if m, _ := p.(map[string]any); m["name"] == name {
				provider = m
			}
		}
		if provider == nil {
			t.Fatalf("the HostedCluster has no OIDC provider %s: %v", name, ps)
		}
		compareApplied(t, "OIDC provider", oidcProviderFields, shown["properties"], provider)
	}
}
