package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

const (
	testSub      = "1D3E5C2A-0000-4000-8000-00000000ABCD"
	testLocation = "eastus"
	testVersion  = "2024-06-10-preview"
)

func clusterPath(rg, name string) string {
	return "/subscriptions/" + testSub + "/resourceGroups/" + rg + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
}

// minimalBody is the smallest valid cluster for 2024-06-10-preview.
func minimalBody() map[string]any {
	ua := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/smi"
	return map[string]any{
		"location": testLocation,
		"identity": map[string]any{"type": "UserAssigned", "userAssignedIdentities": map[string]any{ua: map[string]any{}}},
		"properties": map[string]any{
			"version": map[string]any{"id": "4.19.7"},
			"platform": map[string]any{
				"subnetId":               "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
				"networkSecurityGroupId": "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
				"operatorsAuthentication": map[string]any{"userAssignedIdentities": map[string]any{
					"controlPlaneOperators": map[string]any{}, "dataPlaneOperators": map[string]any{}, "serviceManagedIdentity": ua,
				}},
			},
		},
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// set changes one field of a body map by dotted path (nil deletes it).
func set(m map[string]any, path string, v any) map[string]any {
	keys := strings.Split(path, ".")
	cur := m
	for _, k := range keys[:len(keys)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	if v == nil {
		delete(cur, keys[len(keys)-1])
	} else {
		cur[keys[len(keys)-1]] = v
	}
	return m
}

// fakeClusterService is a test double of Cluster Service (the real one cannot run in these
// tests): a real gRPC server that remembers clusters by ID, is idempotent on ARM resource ID
// like the real contract, and fails calls on demand.
type fakeClusterService struct {
	csv1.UnimplementedClustersServer
	mu        sync.Mutex
	clusters  map[string]*csv1.Cluster
	creates   []*csv1.CreateClusterRequest
	deletes   []string
	createMD  []metadata.MD
	createErr error
	deleteErr error
	// getCalls and lists count GetCluster calls and record ListClusters requests; statusErr,
	// if set, fails both (Cluster Service down for reads).
	getCalls  int
	lists     []*csv1.ListClustersRequest
	statusErr error
	// beforeUpdateAnswer, if set, runs when UpdateCluster is called, before it answers: a test
	// plays the backend there (it writes to a new operation at once).
	beforeUpdateAnswer func(req *csv1.UpdateClusterRequest)
}

func (f *fakeClusterService) CreateCluster(ctx context.Context, req *csv1.CreateClusterRequest) (*csv1.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	f.creates = append(f.creates, req)
	f.createMD = append(f.createMD, md)
	if f.createErr != nil {
		return nil, f.createErr
	}
	for _, c := range f.clusters {
		if strings.EqualFold(c.ArmResourceId, req.GetCluster().GetArmResourceId()) {
			return c, nil
		}
	}
	c := &csv1.Cluster{Id: req.Cluster.Id, ArmResourceId: req.Cluster.ArmResourceId, Spec: proto.Clone(req.Cluster.Spec).(*csv1.ClusterSpec),
		Status: &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_PENDING}}
	// Like the real one, Cluster Service chooses the DNS domain and the OIDC issuer at create.
	if c.Spec == nil {
		c.Spec = &csv1.ClusterSpec{}
	}
	// Like the real one, it holds the spec with its model's defaults applied.
	model.DefaultCluster(c.Spec)
	c.Spec.DnsBaseDomain = "ocm-dev-" + c.Id + ".hypershift.local"
	c.Spec.IssuerUrl = "https://oidc.hypershift.local/" + c.Id
	f.clusters[c.Id] = c
	return c, nil
}

func (f *fakeClusterService) GetCluster(ctx context.Context, req *csv1.GetClusterRequest) (*csv1.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getCalls++
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	if c, ok := f.clusters[req.Id]; ok {
		return c, nil
	}
	return nil, status.Error(codes.NotFound, "no such cluster")
}

// ListClusters supports the ids filter the frontend's lists use (in id order, unknown IDs left
// out, more than 1000 refused, as the real one does); the other filters are not needed here.
func (f *fakeClusterService) ListClusters(ctx context.Context, req *csv1.ListClustersRequest) (*csv1.ListClustersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, req)
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	if len(req.GetIds()) == 0 || len(req.GetIds()) > 1000 {
		return nil, status.Error(codes.InvalidArgument, "the fake serves only lists by 1 to 1000 ids")
	}
	resp := &csv1.ListClustersResponse{}
	for _, id := range req.GetIds() {
		if c, ok := f.clusters[id]; ok {
			resp.Clusters = append(resp.Clusters, c)
		}
	}
	sort.Slice(resp.Clusters, func(i, j int) bool { return resp.Clusters[i].GetId() < resp.Clusters[j].GetId() })
	return resp, nil
}

// statusCalls reports the GetCluster and ListClusters calls so far, and resets them.
func (f *fakeClusterService) statusCalls() (gets int, lists []*csv1.ListClustersRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gets, lists = f.getCalls, f.lists
	f.getCalls, f.lists = 0, nil
	return gets, lists
}

func (f *fakeClusterService) setStatusErr(err error) {
	f.mu.Lock()
	f.statusErr = err
	f.mu.Unlock()
}

func (f *fakeClusterService) DeleteCluster(ctx context.Context, req *csv1.DeleteClusterRequest) (*csv1.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, req.Id)
	if f.deleteErr != nil {
		return nil, f.deleteErr
	}
	c, ok := f.clusters[req.Id]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such cluster")
	}
	c.Status.State = csv1.ClusterState_CLUSTER_STATE_UNINSTALLING
	return c, nil
}

// forgetCluster drops the cluster of an ARM resource ID and every recorded request, as if
// that cluster had never been created (a fuzz input's create, so a long run does not grow).
func (f *fakeClusterService) forgetCluster(armID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.clusters {
		if strings.EqualFold(c.ArmResourceId, armID) {
			delete(f.clusters, id)
		}
	}
	f.creates, f.deletes, f.createMD, f.lists, f.getCalls = nil, nil, nil, nil, 0
}

func (f *fakeClusterService) setCreateErr(err error) {
	f.mu.Lock()
	f.createErr = err
	f.mu.Unlock()
}

func (f *fakeClusterService) setDeleteErr(err error) {
	f.mu.Lock()
	f.deleteErr = err
	f.mu.Unlock()
}

func (f *fakeClusterService) snapshot() (creates []*csv1.CreateClusterRequest, deletes []string, mds []metadata.MD) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*csv1.CreateClusterRequest(nil), f.creates...), append([]string(nil), f.deletes...), append([]metadata.MD(nil), f.createMD...)
}

// pg is the PostgreSQL of every test here (each takes its own database); it outlives the test
// that started it and stops after all of them.
var pg pgservertest.Shared

func TestMain(m *testing.M) { pg.Main(m) }

// env is one frontend with a fresh database, a fake Cluster Service and a registered
// subscription.
type env struct {
	t     testing.TB
	srv   *Server
	http  *httptest.Server
	store *postgres.Store
	cs    *fakeClusterService
}

func newEnv(t testing.TB, mutate ...func(*Config)) *env {
	t.Helper()
	st, err := postgres.Open(context.Background(), pgservertest.NewDatabase(t, pg.Get(t)), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)

	fake := &fakeClusterService{clusters: map[string]*csv1.Cluster{}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterClustersServer(gs, fake) })

	cfg := Config{
		Store:      st,
		Clusters:   csv1.NewClustersClient(conn),
		Location:   testLocation,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		RetryAfter: 2 * time.Second,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	e := &env{t: t, srv: srv, http: hs, store: st, cs: fake}
	e.registerSubscription(testSub, armdoc.SubscriptionRegistered)
	return e
}

func (e *env) registerSubscription(sub string, state armdoc.SubscriptionState) {
	e.t.Helper()
	resp := e.do("PUT", "/subscriptions/"+sub+"?api-version=2.0", mustJSON(map[string]any{
		"state": state, "registrationDate": "2024-01-01T00:00:00Z",
		"properties": map[string]any{"tenantId": "72f988bf-0000-0000-0000-000000000000"},
	}), nil)
	if resp.code != 200 {
		e.t.Fatalf("register subscription: %d %s", resp.code, resp.body)
	}
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

// armError checks the response is an ARM error body with the code also in x-ms-error-code.
func (r response) armError(t *testing.T) (code, target string) {
	t.Helper()
	var b struct {
		Error *armdoc.CloudErrorBody `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Error == nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("not an ARM error body (status %d): %s", r.code, r.body)
	}
	if h := r.header.Get("x-ms-error-code"); h != b.Error.Code {
		t.Fatalf("x-ms-error-code %q != body code %q", h, b.Error.Code)
	}
	return b.Error.Code, b.Error.Target
}

// do sends a request; a path without '?' gets the test api-version. Every answer is validated
// against the schema of its route in the specification (spec_test.go).
func (e *env) do(method, path string, body []byte, header map[string]string) response {
	e.t.Helper()
	if !strings.Contains(path, "?") {
		path += "?api-version=" + testVersion
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.http.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-ms-correlation-request-id", "corr-1")
	req.Header.Set("x-ms-client-request-id", "client-1")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("x-ms-request-id") == "" {
		e.t.Fatalf("%s %s: response without x-ms-request-id", method, path)
	}
	out := response{code: resp.StatusCode, header: resp.Header, body: b}
	validateExchange(e.t, method, path, out)
	return out
}

func (e *env) put(path string, body map[string]any) response {
	e.t.Helper()
	return e.do("PUT", path, mustJSON(body), nil)
}

func (e *env) resource(path string) (*armdoc.ResourceDocument, *docstore.Document) {
	e.t.Helper()
	d, err := e.store.Get(context.Background(), strings.ToLower(testSub), strings.ToLower(path))
	if err != nil {
		return nil, nil
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		e.t.Fatal(err)
	}
	return &rd, d
}

func (e *env) operation(id string) (*armdoc.OperationDocument, *docstore.Document) {
	e.t.Helper()
	d, err := e.store.Get(context.Background(), strings.ToLower(testSub), id)
	if err != nil {
		return nil, nil
	}
	var op armdoc.OperationDocument
	if err := json.Unmarshal(d.Body, &op); err != nil {
		e.t.Fatal(err)
	}
	return &op, d
}

// finish does what the backend does when an operation ends.
func (e *env) finish(opID string, st armdoc.ProvisioningState, cerr *armdoc.CloudErrorBody) {
	e.t.Helper()
	ctx := context.Background()
	op, opDoc := e.operation(opID)
	if op == nil {
		e.t.Fatalf("no operation %s", opID)
	}
	now := time.Now().UTC()
	op.Status, op.Error, op.EndTime, op.LastTransitionTime = st, cerr, &now, now
	ops := []docstore.TxOp{{Kind: docstore.TxReplace, Doc: mustWithBody(opDoc, op), IfMatch: opDoc.ETag}}
	rd, resDoc := e.resource(op.ExternalID)
	if rd != nil {
		if op.Request == armdoc.OperationDelete && st == armdoc.StateSucceeded {
			ops = append(ops, docstore.TxOp{Kind: docstore.TxDelete, Doc: resDoc, IfMatch: resDoc.ETag})
		} else {
			rd.ProvisioningState, rd.ActiveOperationID = st, ""
			ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: mustWithBody(resDoc, rd), IfMatch: resDoc.ETag})
		}
	}
	if _, err := e.store.Transact(ctx, opDoc.PartitionKey, ops); err != nil {
		e.t.Fatalf("finish operation: %v", err)
	}
}

func mustWithBody(d *docstore.Document, body any) *docstore.Document {
	out, err := withBody(d, body)
	if err != nil {
		panic(err)
	}
	return out
}

// opIDFrom extracts the operation ID from an Azure-AsyncOperation or Location URL.
func opIDFrom(t testing.TB, u string) string {
	t.Helper()
	i := strings.LastIndex(u, "/")
	j := strings.Index(u, "?")
	if i < 0 || j < i {
		t.Fatalf("bad operation URL %q", u)
	}
	return u[i+1 : j]
}

// serveFake serves fake Cluster Service gRPC services (register adds them) on a loopback port
// for the test and returns a client connection to them.
func serveFake(t testing.TB, register func(*grpc.Server)) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	register(gs)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
