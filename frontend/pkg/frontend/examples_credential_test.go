package frontend

import (
	"context"
	"errors"
	"net/http"
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

// fakeCredentials is a test double of Cluster Service's Credentials service, named as one: the
// real service needs a management cluster. It keeps the contract's rules the frontend relies on:
// idempotent on id, FailedPrecondition while a revocation runs, InvalidArgument for a CSR that is
// not PEM, and a kubeconfig only for an ISSUED credential.
type fakeCredentials struct {
	mu          sync.Mutex
	creds       map[string]*csv1.Credential
	revocations map[string]*csv1.Revocation
	requests    []*csv1.RequestCredentialRequest
}

var _ csv1.CredentialsClient = (*fakeCredentials)(nil)

func newFakeCredentials() *fakeCredentials {
	return &fakeCredentials{creds: map[string]*csv1.Credential{}, revocations: map[string]*csv1.Revocation{}}
}

func (f *fakeCredentials) RequestCredential(_ context.Context, in *csv1.RequestCredentialRequest, _ ...grpc.CallOption) (*csv1.Credential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if csr := in.GetCertificateSigningRequest(); csr != "" && !strings.HasPrefix(csr, "-----BEGIN CERTIFICATE REQUEST-----") {
		// As Cluster Service refuses: a field violation, its path in the status message too.
		st, _ := status.New(codes.InvalidArgument, "invalid request: certificate_signing_request: is not a PEM CERTIFICATE REQUEST").WithDetails(
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "certificate_signing_request", Description: "is not a PEM CERTIFICATE REQUEST"}}})
		return nil, st.Err()
	}
	for _, r := range f.revocations {
		if r.GetClusterId() == in.GetClusterId() && r.GetStatus().GetState() == csv1.RevocationState_REVOCATION_STATE_REVOKING {
			return nil, status.Error(codes.FailedPrecondition, "request credential: the cluster's break-glass credentials are being revoked")
		}
	}
	f.requests = append(f.requests, in)
	if c, ok := f.creds[in.GetId()]; ok {
		return proto.Clone(c).(*csv1.Credential), nil
	}
	c := &csv1.Credential{Id: in.GetId(), ClusterId: in.GetClusterId(), CertificateSigningRequest: in.GetCertificateSigningRequest(),
		Status: &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_PENDING}}
	f.creds[c.Id] = c
	return proto.Clone(c).(*csv1.Credential), nil
}

func (f *fakeCredentials) GetCredential(_ context.Context, in *csv1.GetCredentialRequest, _ ...grpc.CallOption) (*csv1.Credential, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.creds[in.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "get credential: not found")
	}
	out := proto.Clone(c).(*csv1.Credential)
	if !in.GetIncludeKubeconfig() || out.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED {
		out.Kubeconfig = ""
	}
	return out, nil
}

func (f *fakeCredentials) ListCredentials(context.Context, *csv1.ListCredentialsRequest, ...grpc.CallOption) (*csv1.ListCredentialsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "fake")
}

func (f *fakeCredentials) RevokeCredentials(_ context.Context, in *csv1.RevokeCredentialsRequest, _ ...grpc.CallOption) (*csv1.Revocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &csv1.Revocation{Id: in.GetId(), ClusterId: in.GetClusterId(), Status: &csv1.RevocationStatus{State: csv1.RevocationState_REVOCATION_STATE_REVOKING}}
	f.revocations[r.Id] = r
	for _, c := range f.creds {
		if c.GetClusterId() == in.GetClusterId() {
			c.Status.State = csv1.CredentialState_CREDENTIAL_STATE_REVOKING
		}
	}
	return proto.Clone(r).(*csv1.Revocation), nil
}

func (f *fakeCredentials) GetRevocation(_ context.Context, in *csv1.GetRevocationRequest, _ ...grpc.CallOption) (*csv1.Revocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.revocations[in.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "get revocation: not found")
	}
	return proto.Clone(r).(*csv1.Revocation), nil
}

func (f *fakeCredentials) WatchCredentials(context.Context, *csv1.WatchCredentialsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[csv1.CredentialEvent], error) {
	return nil, errors.New("fake: the frontend does not watch")
}

// issue plays the signer and the backend: the credential becomes ISSUED with a kubeconfig.
func (f *fakeCredentials) issue(id, kubeconfig string, expires time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.creds[id]
	c.Status = &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_ISSUED, IssueTime: timestamppb.Now(), ExpirationTime: timestamppb.New(expires)}
	c.Kubeconfig = kubeconfig
}

func (f *fakeCredentials) revoked(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revocations[id].Status.State = csv1.RevocationState_REVOCATION_STATE_REVOKED
	for _, c := range f.creds {
		if c.GetStatus().GetState() == csv1.CredentialState_CREDENTIAL_STATE_REVOKING {
			c.Status.State = csv1.CredentialState_CREDENTIAL_STATE_REVOKED
		}
	}
}

// TestSpecExamplesCredentials drives the HcpOpenShiftClusters_RequestAdminCredential and
// _RevokeCredentials examples of every api-version through the handler (real store, fake
// Cluster Service) and validates each answer against the spec: 202 with Location and
// Retry-After, the operation result (the kubeconfig) against HcpOpenShiftClusterAdminCredential.
// Along the way: the result is only for the caller ARM named, a request during a revocation is
// 409, and a revoked credential's result is refused.
func TestSpecExamplesCredentials(t *testing.T) {
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			byOp := map[string]*specExample{}
			for _, x := range loadExamples(t, ver, "HcpOpenShiftClusters_") {
				byOp[x.OperationID] = x
			}
			fake := newFakeCredentials()
			e := newEnv(t, func(c *Config) { c.Credentials = fake })
			create := byOp["HcpOpenShiftClusters_CreateOrUpdate"]
			reqX, revX := byOp["HcpOpenShiftClusters_RequestAdminCredential"], byOp["HcpOpenShiftClusters_RevokeCredentials"]
			actionPath := func(x *specExample, action string) string {
				p := examplePath(t, x, x.param(t, "hcpOpenShiftClusterName"))
				base, q, _ := strings.Cut(p, "?")
				return base + "/" + action + "?" + q
			}
			clusterPath := examplePath(t, create, reqX.param(t, "hcpOpenShiftClusterName"))
			e.createFromExample(t, clusterPath, adaptCluster(create.body(t, "resource")))
			caller := map[string]string{"x-ms-client-object-id": "11111111-1111-1111-1111-111111111111"}

			var body []byte
			if _, ok := reqX.Parameters["body"]; ok {
				body = mustJSON(reqX.body(t, "body"))
			}
			var location string
			t.Run("RequestAdminCredential", func(t *testing.T) {
				resp := e.do("POST", actionPath(reqX, "requestAdminCredential"), body, caller)
				if resp.code != http.StatusAccepted {
					t.Fatalf("POST requestAdminCredential: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, reqX.OperationID, resp)
				location = resp.header.Get("Location")
				opID := opIDFrom(t, resp.header.Get("Azure-AsyncOperation"))
				op, _ := e.operation(opID)
				if op.Request != armdoc.OperationRequestCredential || op.InternalID == "" {
					t.Fatalf("operation = %+v", op)
				}
				if rd, _ := e.resource(strings.Split(clusterPath, "?")[0]); rd.ActiveOperationID != "" {
					t.Fatalf("the action took the cluster's active operation %s", rd.ActiveOperationID)
				}
				if len(body) > 0 && fake.requests[len(fake.requests)-1].GetCertificateSigningRequest() == "" {
					t.Fatal("the example's certificateSigningRequest did not reach Cluster Service")
				}
				running := e.do("GET", strings.TrimPrefix(location, e.http.URL), nil, caller)
				if running.code != http.StatusAccepted {
					t.Fatalf("result while running: %d %s", running.code, running.body)
				}
				// What the signer and the backend do.
				const kubeconfig = "apiVersion: v1\nkind: Config\n"
				expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
				fake.issue(op.InternalID, kubeconfig, expires)
				e.finish(opID, armdoc.StateSucceeded, nil)
				res := e.do("GET", strings.TrimPrefix(location, e.http.URL), nil, caller)
				if res.code != http.StatusOK {
					t.Fatalf("result: %d %s", res.code, res.body)
				}
				so.checkResponse(t, reqX.OperationID, res)
				got := res.json(t)
				if got["kubeconfig"] != kubeconfig || got["expirationTimestamp"] != expires.Format(time.RFC3339) {
					t.Fatalf("result = %v", got)
				}
				other := e.do("GET", strings.TrimPrefix(location, e.http.URL), nil, map[string]string{"x-ms-client-object-id": "22222222-2222-2222-2222-222222222222"})
				anonymous := e.do("GET", strings.TrimPrefix(location, e.http.URL), nil, nil)
				if other.code != http.StatusNotFound || anonymous.code != http.StatusNotFound {
					t.Fatalf("result read by another caller: %d, without a caller: %d; want 404 both", other.code, anonymous.code)
				}
			})

			t.Run("RevokeCredentials", func(t *testing.T) {
				resp := e.do("POST", actionPath(revX, "revokeCredentials"), nil, caller)
				if resp.code != http.StatusAccepted {
					t.Fatalf("POST revokeCredentials: %d %s", resp.code, resp.body)
				}
				so.checkResponse(t, revX.OperationID, resp)
				during := e.do("POST", actionPath(reqX, "requestAdminCredential"), body, caller)
				if during.code != http.StatusConflict {
					t.Fatalf("requestAdminCredential during a revocation: %d %s, want 409", during.code, during.body)
				}
				opID := opIDFrom(t, resp.header.Get("Azure-AsyncOperation"))
				op, _ := e.operation(opID)
				fake.revoked(op.InternalID)
				e.finish(opID, armdoc.StateSucceeded, nil)
				if res := e.do("GET", strings.TrimPrefix(resp.header.Get("Location"), e.http.URL), nil, caller); res.code != http.StatusNoContent {
					t.Fatalf("revoke result: %d %s", res.code, res.body)
				}
				if old := e.do("GET", strings.TrimPrefix(location, e.http.URL), nil, caller); old.code != http.StatusConflict {
					t.Fatalf("result of a revoked credential: %d %s, want 409", old.code, old.body)
				}
			})
		})
	}
}

// TestRequestAdminCredentialBody checks the action's body per api-version.
func TestRequestAdminCredentialBody(t *testing.T) {
	fake := newFakeCredentials()
	e := newEnv(t, func(c *Config) { c.Credentials = fake })
	e.readyCluster(t, "bodies")
	base := "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/bodies/requestAdminCredential?api-version="
	for _, tc := range []struct {
		name, version, body string
		want                int
		target              string // of the error, when one is wanted
	}{
		{"no_body_before_2026_09", "2024-06-10-preview", "", http.StatusAccepted, ""},
		{"empty_object_before_2026_09", "2025-12-23-preview", "{}", http.StatusAccepted, ""},
		{"csr_before_2026_09_is_unknown", "2026-06-30-preview", `{"certificateSigningRequest":"x"}`, http.StatusBadRequest, ""},
		{"no_body_in_2026_09", "2026-09-01-preview", "", http.StatusAccepted, ""},
		{"csr_in_2026_09", "2026-09-01-preview", `{"certificateSigningRequest":"-----BEGIN CERTIFICATE REQUEST-----\n"}`, http.StatusAccepted, ""},
		{"csr_not_pem_is_400_from_cluster_service", "2026-09-01-preview", `{"certificateSigningRequest":"nope"}`, http.StatusBadRequest, "certificateSigningRequest"},
		{"unknown_property", "2026-09-01-preview", `{"user":"x"}`, http.StatusBadRequest, ""},
		{"csr_not_a_string", "2026-09-01-preview", `{"certificateSigningRequest":1}`, http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			resp := e.do("POST", base+tc.version, body, nil)
			if resp.code != tc.want {
				t.Fatalf("got %d %s, want %d", resp.code, resp.body, tc.want)
			}
			if tc.target != "" {
				if _, target := resp.armError(t); target != tc.target || strings.Contains(string(resp.body), "certificate_signing_request") {
					t.Fatalf("target %q, want %q, and no proto field: %s", target, tc.target, resp.body)
				}
			}
		})
	}
	if r := e.do("POST", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/missing/requestAdminCredential?api-version=2024-06-10-preview", nil, nil); r.code != http.StatusNotFound {
		t.Fatalf("action on a missing cluster: %d %s", r.code, r.body)
	}
}
