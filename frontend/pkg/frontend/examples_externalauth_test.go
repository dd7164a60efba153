package frontend

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// fakeExternalAuths is a test double of Cluster Service's ExternalAuths service (named as a
// fake: the real one needs Cluster Service's database and controller). Like the real service it
// is idempotent on the ARM resource ID, allows one external auth per cluster (FailedPrecondition
// with an EXTERNAL_AUTH_LIMIT PreconditionFailure otherwise), makes updates conditional on the
// revision when one is given, merges a partial update with the real csv1.ApplyExternalAuthUpdate,
// and fails calls on demand.
type fakeExternalAuths struct {
	csv1.UnimplementedExternalAuthsServer
	mu        sync.Mutex
	auths     map[string]*csv1.ExternalAuth
	rev       int64
	creates   []*csv1.CreateExternalAuthRequest
	updates   []*csv1.UpdateExternalAuthRequest
	deletes   []string
	createErr error
	updateErr error
	deleteErr error
}

func (f *fakeExternalAuths) CreateExternalAuth(ctx context.Context, req *csv1.CreateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, req)
	if f.createErr != nil {
		return nil, f.createErr
	}
	in := req.GetExternalAuth()
	if in.GetClusterId() == "" {
		return nil, status.Error(codes.InvalidArgument, "cluster_id is required")
	}
	for _, a := range f.auths {
		if strings.EqualFold(a.ArmResourceId, in.GetArmResourceId()) {
			return proto.Clone(a).(*csv1.ExternalAuth), nil
		}
	}
	for _, a := range f.auths {
		if a.ClusterId == in.GetClusterId() {
			st, _ := status.New(codes.FailedPrecondition, "cluster "+a.ClusterId+" already has an external auth ("+a.ArmResourceId+"); a cluster has at most one").
				WithDetails(&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{
					Type: "EXTERNAL_AUTH_LIMIT", Subject: "clusters/" + a.ClusterId, Description: "a cluster has at most one external auth",
				}}})
			return nil, st.Err()
		}
	}
	f.rev++
	a := proto.Clone(in).(*csv1.ExternalAuth)
	a.Revision, a.SpecRevision, a.Status = f.rev, f.rev, &csv1.ExternalAuthStatus{State: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING}
	a.CreateTime, a.UpdateTime = timestamppb.Now(), timestamppb.Now()
	f.auths[a.Id] = a
	return proto.Clone(a).(*csv1.ExternalAuth), nil
}

func (f *fakeExternalAuths) GetExternalAuth(ctx context.Context, req *csv1.GetExternalAuthRequest) (*csv1.ExternalAuth, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.auths[req.GetId()]; ok {
		return proto.Clone(a).(*csv1.ExternalAuth), nil
	}
	return nil, status.Error(codes.NotFound, "no such external auth")
}

func (f *fakeExternalAuths) UpdateExternalAuth(ctx context.Context, req *csv1.UpdateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, req)
	if f.updateErr != nil {
		return nil, f.updateErr
	}
	a, ok := f.auths[req.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such external auth")
	}
	if req.GetRevision() != 0 && req.GetRevision() != a.Revision {
		return nil, status.Error(codes.Aborted, "stale revision")
	}
	if spec := csv1.ApplyExternalAuthUpdate(a.Spec, req.GetUpdate()); !proto.Equal(a.Spec, spec) {
		f.rev++
		a.Spec, a.Revision, a.SpecRevision = spec, f.rev, f.rev
		a.Status.State = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING
	}
	return proto.Clone(a).(*csv1.ExternalAuth), nil
}

func (f *fakeExternalAuths) DeleteExternalAuth(ctx context.Context, req *csv1.DeleteExternalAuthRequest) (*csv1.ExternalAuth, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, req.GetId())
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	a, ok := f.auths[req.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such external auth")
	}
	f.rev++
	a.Revision, a.Status.State = f.rev, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING
	return proto.Clone(a).(*csv1.ExternalAuth), nil
}

// setState plays Cluster Service's controller reporting a state.
func (f *fakeExternalAuths) setState(id string, st csv1.ExternalAuthState, code, msg string, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.auths[id]; ok {
		a.Status.State, a.Status.ErrorCode, a.Status.Message, a.UpdateTime = st, code, msg, timestamppb.New(at)
	}
}

// remove plays Cluster Service finishing a delete.
func (f *fakeExternalAuths) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.auths, id)
}

func (f *fakeExternalAuths) get(id string) *csv1.ExternalAuth {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.auths[id]; ok {
		return proto.Clone(a).(*csv1.ExternalAuth)
	}
	return nil
}

func (f *fakeExternalAuths) calls() (creates []*csv1.CreateExternalAuthRequest, updates []*csv1.UpdateExternalAuthRequest, deletes []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append(creates, f.creates...), append(updates, f.updates...), append(deletes, f.deletes...)
}

func (f *fakeExternalAuths) setErrs(create, update, del error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr, f.updateErr, f.deleteErr = create, update, del
}

// newExternalAuthEnv is newEnv with a fake ExternalAuths service wired in.
func newExternalAuthEnv(t testing.TB, mutate ...func(*Config)) (*env, *fakeExternalAuths) {
	t.Helper()
	fake := &fakeExternalAuths{auths: map[string]*csv1.ExternalAuth{}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterExternalAuthsServer(gs, fake) })
	e := newEnv(t, append([]func(*Config){func(c *Config) { c.ExternalAuths = csv1.NewExternalAuthsClient(conn) }}, mutate...)...)
	return e, fake
}

var (
	testCAOnce sync.Once
	testCAPEM  string
)

// testCA is a real PEM certificate (self-signed, generated once per test binary).
func testCA(t testing.TB) string {
	t.Helper()
	testCAOnce.Do(func() {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "issuer-ca.openhcp.test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		testCAPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	})
	if testCAPEM == "" {
		t.Fatal("no test CA")
	}
	return testCAPEM
}

// adaptExternalAuth changes what the RP cannot accept as the generated examples have it, within
// the spec, and nothing else (docs/api.md "Conformance test" lists the same):
//   - properties.issuer.ca is a random string; it must be a PEM certificate bundle (Cluster
//     Service and the kube-apiserver parse it), so it becomes a real self-signed certificate;
//   - each client's clientId must be one of the issuer's audiences (spec: "The clientId must
//     appear in the audience field"), and the examples' is not, so it is appended to the
//     audiences (5 + 1, within the 10 allowed);
//   - properties.claim.mappings.username.prefixPolicy is a random string, not one of None,
//     Prefix, NoPrefix; the examples set a prefix, which the spec allows only with Prefix, so it
//     becomes Prefix.
//
// It works on PUT bodies and on PATCH bodies (which carry the same properties).
func adaptExternalAuth(t testing.TB, body map[string]any) map[string]any {
	props, _ := body["properties"].(map[string]any)
	if props == nil {
		return body
	}
	issuer, _ := props["issuer"].(map[string]any)
	if issuer != nil {
		if _, ok := issuer["ca"]; ok {
			issuer["ca"] = testCA(t)
		}
	}
	clients, _ := props["clients"].([]any)
	for _, c := range clients {
		id, _ := c.(map[string]any)["clientId"].(string)
		if id == "" || issuer == nil {
			continue
		}
		auds, _ := issuer["audiences"].([]any)
		found := false
		for _, a := range auds {
			found = found || a == id
		}
		if !found {
			issuer["audiences"] = append(auds, id)
		}
	}
	claim, _ := props["claim"].(map[string]any)
	mappings, _ := claim["mappings"].(map[string]any)
	if u, ok := mappings["username"].(map[string]any); ok {
		switch u["prefixPolicy"] {
		case nil, "None", "Prefix", "NoPrefix":
		default:
			if u["prefix"] != nil {
				u["prefixPolicy"] = "Prefix"
			} else {
				u["prefixPolicy"] = "None"
			}
		}
	}
	return body
}

func externalAuthExamplePath(t *testing.T, x *specExample, name string) string {
	t.Helper()
	p := "/subscriptions/" + testSub + "/resourceGroups/" + x.param(t, "resourceGroupName") +
		"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + x.param(t, "hcpOpenShiftClusterName") + "/externalAuths"
	if name != "" {
		p += "/" + name
	}
	return p + "?api-version=" + x.param(t, "api-version")
}

// checkSpecSent checks the spec Cluster Service got against a request body (adapted example).
func checkSpecSent(t *testing.T, spec *csv1.ExternalAuthSpec, body map[string]any) {
	t.Helper()
	props := body["properties"].(map[string]any)
	issuer := props["issuer"].(map[string]any)
	if spec.GetIssuer().GetUrl() != issuer["url"] || spec.GetIssuer().GetCa() != issuer["ca"] ||
		strings.Join(spec.GetIssuer().GetAudiences(), ",") != joinAny(issuer["audiences"]) {
		t.Errorf("issuer sent %v, want %v", spec.GetIssuer(), issuer)
	}
	clients := props["clients"].([]any)
	if len(spec.GetClients()) != len(clients) {
		t.Fatalf("clients sent %v, want %v", spec.GetClients(), clients)
	}
	for i, c := range clients {
		c := c.(map[string]any)
		comp := c["component"].(map[string]any)
		got := spec.GetClients()[i]
		if got.GetClientId() != c["clientId"] || got.GetType() != c["type"] || got.GetComponentName() != comp["name"] ||
			got.GetComponentNamespace() != comp["authClientNamespace"] || strings.Join(got.GetExtraScopes(), ",") != joinAny(c["extraScopes"]) {
			t.Errorf("client %d sent %v, want %v", i, got, c)
		}
	}
	m := props["claim"].(map[string]any)["mappings"].(map[string]any)
	u, g := m["username"].(map[string]any), m["groups"].(map[string]any)
	cm := spec.GetClaimMappings()
	if cm.GetUsername().GetClaim() != u["claim"] || cm.GetUsername().GetPrefix() != u["prefix"] || cm.GetUsername().GetPrefixPolicy() != u["prefixPolicy"] {
		t.Errorf("username mapping sent %v, want %v", cm.GetUsername(), u)
	}
	if cm.GetGroups().GetClaim() != g["claim"] || cm.GetGroups().GetPrefix() != g["prefix"] {
		t.Errorf("groups mapping sent %v, want %v", cm.GetGroups(), g)
	}
	rules := props["claim"].(map[string]any)["validationRules"].([]any)
	if len(spec.GetValidationRules()) != len(rules) {
		t.Fatalf("validation rules sent %v, want %v", spec.GetValidationRules(), rules)
	}
	for i, r := range rules {
		r := r.(map[string]any)
		rc := r["requiredClaim"].(map[string]any)
		got := spec.GetValidationRules()[i]
		if got.GetType() != r["type"] || got.GetRequiredClaim() != rc["claim"] || got.GetRequiredValue() != rc["requiredValue"] {
			t.Errorf("validation rule %d sent %v, want %v", i, got, r)
		}
	}
}

func joinAny(v any) string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return strings.Join(out, ",")
}

// conditionOf is the condition a version renders: properties.condition before
// 2026-06-30-preview, properties.status.conditions[0] from it on; nil if the other form is
// there too or the expected one is missing.
func conditionOf(t *testing.T, ver string, props map[string]any) map[string]any {
	t.Helper()
	c, hasCond := props["condition"].(map[string]any)
	st, hasStatus := props["status"].(map[string]any)
	if ver < "2026-06-30-preview" {
		if hasStatus {
			t.Fatalf("%s renders properties.status: %v", ver, props)
		}
		return c
	}
	if hasCond {
		t.Fatalf("%s renders properties.condition: %v", ver, props)
	}
	conds, _ := st["conditions"].([]any)
	if len(conds) != 1 {
		t.Fatalf("%s: want one condition, got %v", ver, props["status"])
	}
	return conds[0].(map[string]any)
}

// TestSpecExamplesExternalAuths drives every ExternalAuths example of every api-version through
// the frontend (real store, fake Cluster Service) under a cluster created from the same version's
// cluster example, checks the outcome (status codes, what Cluster Service is sent, what is
// stored, what is rendered) and validates the examples' and our responses against the spec.
func TestSpecExamplesExternalAuths(t *testing.T) {
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			byOp := map[string]*specExample{}
			for _, x := range loadExamples(t, ver, "ExternalAuths_") {
				if x.param(t, "api-version") != ver {
					t.Fatalf("%s: api-version %s", x.file, x.param(t, "api-version"))
				}
				if prev, ok := byOp[x.OperationID]; ok {
					t.Fatalf("%s and %s are both %s; drive each", prev.file, x.file, x.OperationID)
				}
				byOp[x.OperationID] = x
			}
			e, fake := newExternalAuthEnv(t)
			driven := map[string]bool{}
			op := func(id string) *specExample {
				t.Helper()
				x, ok := byOp[id]
				if !ok {
					t.Fatalf("no %s example in %s", id, ver)
				}
				return x
			}

			create := op("ExternalAuths_CreateOrUpdate")
			clusterX := loadExamples(t, ver, "HcpOpenShiftClusters_CreateOrUpdate")[0]
			parent := "/subscriptions/" + testSub + "/resourceGroups/" + create.param(t, "resourceGroupName") +
				"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + create.param(t, "hcpOpenShiftClusterName")
			e.createFromExample(t, parent+"?api-version="+ver, adaptCluster(clusterX.body(t, "resource")))
			clusterRD, _ := e.resource(parent)

			name := create.param(t, "externalAuthName")
			path := externalAuthExamplePath(t, create, name)
			plain := strings.Split(path, "?")[0]
			body := adaptExternalAuth(t, create.body(t, "resource"))
			var csID string
			t.Run("CreateOrUpdate", func(t *testing.T) {
				resp := e.do("PUT", path, mustJSON(body), nil)
				if resp.code != 201 {
					t.Fatalf("PUT: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, create.OperationID, resp)
				got := resp.json(t)
				contains(t, got, body, "")
				if got["properties"].(map[string]any)["provisioningState"] != "Accepted" || got["id"] != plain || got["name"] != name ||
					got["type"] != "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/externalAuths" {
					t.Fatalf("201 body: %s", resp.body)
				}
				rd, _ := e.resource(plain)
				if rd == nil || rd.ProvisioningState != armdoc.StateAccepted || rd.ActiveOperationID == "" {
					t.Fatalf("stored %+v", rd)
				}
				csID = rd.InternalID
				creates, _, _ := fake.calls()
				if len(creates) != 1 {
					t.Fatalf("%d CreateExternalAuth calls", len(creates))
				}
				sent := creates[0].GetExternalAuth()
				if sent.GetId() != csID || sent.GetClusterId() != clusterRD.InternalID || !strings.EqualFold(sent.GetArmResourceId(), plain) {
					t.Fatalf("CreateExternalAuth %v; stored ID %s, cluster %s", sent, csID, clusterRD.InternalID)
				}
				checkSpecSent(t, sent.GetSpec(), body)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

				// The same body again once the create succeeded: 200, nothing for Cluster Service.
				again := e.do("PUT", path, mustJSON(body), nil)
				if again.code != 200 {
					t.Fatalf("second PUT: %d %s", again.code, again.body)
				}
				so.checkResponse(t, create.OperationID, again)
				contains(t, again.json(t), body, "")
				if again.json(t)["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
					t.Fatalf("second PUT: %s", again.body)
				}
				if c, u, _ := fake.calls(); len(c) != 1 || len(u) != 0 {
					t.Fatalf("an unchanged PUT called Cluster Service: %d creates, %d updates", len(c), len(u))
				}
			})
			driven[create.OperationID] = true
			if csID == "" {
				t.Fatal("the create failed; nothing else can be driven")
			}

			get := op("ExternalAuths_Get")
			t.Run("Get", func(t *testing.T) {
				at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
				fake.setState(csID, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, "", "the provider is configured", at)
				getPath := externalAuthExamplePath(t, get, get.param(t, "externalAuthName"))
				resp := e.do("GET", getPath, nil, nil)
				if resp.code != 200 {
					t.Fatalf("GET: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, get.OperationID, resp)
				got := resp.json(t)
				contains(t, got, body, "")
				props := got["properties"].(map[string]any)
				if props["provisioningState"] != "Succeeded" || got["id"] != plain {
					t.Fatalf("GET: %s", resp.body)
				}
				c := conditionOf(t, ver, props)
				if c["type"] != "Available" || c["status"] != "True" || c["message"] != "the provider is configured" || c["lastTransitionTime"] != "2026-02-03T04:05:06Z" {
					t.Fatalf("condition %v", c)
				}
				if resp.header.Get("ETag") == "" {
					t.Fatal("GET without ETag")
				}
				// Degraded with Cluster Service's error code as the reason.
				fake.setState(csID, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, "InvalidIssuer", "issuer unreachable", at)
				resp = e.do("GET", getPath, nil, nil)
				so.checkResponse(t, get.OperationID, resp)
				if c := conditionOf(t, ver, resp.json(t)["properties"].(map[string]any)); c["type"] != "Degraded" || c["reason"] != "InvalidIssuer" {
					t.Fatalf("condition %v", c)
				}
				fake.setState(csID, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, "", "", at)
			})
			driven[get.OperationID] = true

			update := op("ExternalAuths_Update")
			t.Run("Update", func(t *testing.T) {
				patch := adaptExternalAuth(t, update.body(t, "properties"))
				resp := e.do("PATCH", externalAuthExamplePath(t, update, update.param(t, "externalAuthName")), mustJSON(patch), nil)
				if resp.code != 202 {
					t.Fatalf("PATCH: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, update.OperationID, resp)
				_, updates, _ := fake.calls()
				// One partial update, not conditional on a revision read from Cluster Service
				// (the frontend never reads its spec to write it back); what Cluster Service
				// holds after merging it is the patched external auth.
				if len(updates) != 1 || updates[0].GetId() != csID || updates[0].GetRevision() != 0 || updates[0].GetUpdate() == nil {
					t.Fatalf("UpdateExternalAuth calls %v", updates)
				}
				fake.mu.Lock()
				merged := proto.Clone(fake.auths[csID].GetSpec()).(*csv1.ExternalAuthSpec)
				fake.mu.Unlock()
				checkSpecSent(t, merged, patch)
				rd, _ := e.resource(plain)
				if rd.ProvisioningState != armdoc.StateUpdating {
					t.Fatalf("stored state %s after PATCH", rd.ProvisioningState)
				}
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				loc, err := url.Parse(resp.header.Get("Location"))
				if err != nil {
					t.Fatal(err)
				}
				result := e.do("GET", loc.RequestURI(), nil, nil)
				if result.code != 200 {
					t.Fatalf("operation result: %d %s", result.code, result.body)
				}
				so.checkResponse(t, update.OperationID, result)
				contains(t, result.json(t)["properties"], patch["properties"], "properties")
				after := e.do("GET", path, nil, nil)
				contains(t, after.json(t)["properties"], patch["properties"], "properties")
			})
			driven[update.OperationID] = true

			list := op("ExternalAuths_ListByParent")
			t.Run("ListByParent", func(t *testing.T) {
				// Another cluster's external auth is not listed under this one.
				other := clusterPath(create.param(t, "resourceGroupName"), "other-cluster")
				e.createFromExample(t, other+"?api-version="+ver, adaptCluster(clusterX.body(t, "resource")))
				resp := e.do("PUT", other+"/externalAuths/other-auth?api-version="+ver, mustJSON(body), nil)
				if resp.code != 201 {
					t.Fatalf("PUT under another cluster: %d %s", resp.code, resp.body)
				}
				resp = e.do("GET", externalAuthExamplePath(t, list, ""), nil, nil)
				if resp.code != 200 {
					t.Fatalf("list: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, list.OperationID, resp)
				var page struct {
					Value []map[string]any `json:"value"`
				}
				if err := json.Unmarshal(resp.body, &page); err != nil {
					t.Fatal(err)
				}
				if len(page.Value) != 1 || page.Value[0]["name"] != name || page.Value[0]["id"] != plain {
					t.Fatalf("listed %s", resp.body)
				}
			})
			driven[list.OperationID] = true

			del := op("ExternalAuths_Delete")
			t.Run("Delete", func(t *testing.T) {
				delPath := externalAuthExamplePath(t, del, del.param(t, "externalAuthName"))
				resp := e.do("DELETE", delPath, nil, nil)
				if resp.code != 202 {
					t.Fatalf("DELETE: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, del.OperationID, resp)
				if _, _, deletes := fake.calls(); len(deletes) != 1 || deletes[0] != csID {
					t.Fatalf("DeleteExternalAuth calls %v", deletes)
				}
				if rd, _ := e.resource(plain); rd == nil || rd.ProvisioningState != armdoc.StateDeleting {
					t.Fatalf("stored %+v after DELETE", rd)
				}
				fake.remove(csID)
				e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
				gone := e.do("DELETE", delPath, nil, nil)
				if gone.code != 204 {
					t.Fatalf("DELETE of a deleted external auth: %d %s", gone.code, gone.body)
				}
				so.checkResponse(t, del.OperationID, gone)
				if r := e.do("GET", delPath, nil, nil); r.code != 404 {
					t.Fatalf("GET after delete: %d %s", r.code, r.body)
				}
			})
			driven[del.OperationID] = true

			for id, x := range byOp {
				if !driven[id] {
					t.Errorf("example %s (%s) is not driven", x.file, id)
				}
			}
		})
	}
}
