package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// startExternalAuths runs the real server (as start does) and returns clients for clusters,
// shards and external auths.
func startExternalAuths(t *testing.T) (*env, csv1.ExternalAuthsClient) {
	t.Helper()
	pg := pgservertest.Start(t)
	st, err := store.Open(context.Background(), pgservertest.NewDatabase(t, pg), slog.Default(), envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	srv := New(st, Config{KeepAlive: 200 * time.Millisecond})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis) //nolint:errcheck
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &env{st: st, clusters: csv1.NewClustersClient(conn), shards: csv1.NewProvisionShardsClient(conn)}, csv1.NewExternalAuthsClient(conn)
}

func externalAuthARM(cluster, name string) string { return arm(cluster) + "/externalAuths/" + name }

func validExternalAuthSpec() *csv1.ExternalAuthSpec {
	return &csv1.ExternalAuthSpec{
		Issuer: &csv1.TokenIssuer{Url: "https://login.microsoftonline.com/tenant/v2.0", Audiences: []string{"console-app", "cli-app"}},
		Clients: []*csv1.ExternalAuthClient{
			{ComponentName: "console", ComponentNamespace: "openshift-console", ClientId: "console-app", Type: "Confidential", ExtraScopes: []string{"email"}},
			{ComponentName: "cli", ComponentNamespace: "openshift-console", ClientId: "cli-app", Type: "Public"},
		},
		ClaimMappings: &csv1.TokenClaimMappings{
			Username: &csv1.UsernameClaimMapping{Claim: "email", PrefixPolicy: "Prefix", Prefix: "entra:"},
			Groups:   &csv1.GroupsClaimMapping{Claim: "groups", Prefix: "entra:"},
		},
		ValidationRules: []*csv1.TokenClaimValidationRule{{RequiredClaim: "tid", RequiredValue: "tenant"}},
	}
}

func testCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "issuer-ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidateExternalAuthSpec(t *testing.T) {
	ca := testCA(t)
	tests := []struct {
		name   string
		mutate func(s *csv1.ExternalAuthSpec)
		fields []string // the violations expected, exactly
	}{
		{"valid", func(s *csv1.ExternalAuthSpec) {}, nil},
		{"valid_with_ca_and_no_clients", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = ca; s.Clients = nil }, nil},
		{"issuer_url_required", func(s *csv1.ExternalAuthSpec) { s.Issuer.Url = "" }, []string{"spec.issuer.url"}},
		{"issuer_url_must_be_https", func(s *csv1.ExternalAuthSpec) { s.Issuer.Url = "http://login.example.com" }, []string{"spec.issuer.url"}},
		{"issuer_url_no_query", func(s *csv1.ExternalAuthSpec) { s.Issuer.Url = "https://login.example.com/?a=b" }, []string{"spec.issuer.url"}},
		{"issuer_url_of_512_characters", func(s *csv1.ExternalAuthSpec) {
			s.Issuer.Url = "https://login.example.com/" + strings.Repeat("t", 512-len("https://login.example.com/"))
		}, nil},
		{"issuer_url_at_most_512_characters", func(s *csv1.ExternalAuthSpec) {
			s.Issuer.Url = "https://login.example.com/" + strings.Repeat("t", 513-len("https://login.example.com/"))
		}, []string{"spec.issuer.url"}},
		{"audiences_required", func(s *csv1.ExternalAuthSpec) { s.Issuer.Audiences = nil; s.Clients = nil }, []string{"spec.issuer.audiences"}},
		{"audiences_at_most_ten", func(s *csv1.ExternalAuthSpec) {
			s.Issuer.Audiences = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
			s.Clients = nil
		}, []string{"spec.issuer.audiences"}},
		{"audiences_unique", func(s *csv1.ExternalAuthSpec) { s.Issuer.Audiences = append(s.Issuer.Audiences, "cli-app") }, []string{"spec.issuer.audiences[2]"}},
		{"ca_must_be_pem", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = "lrakpuqodeqscdauefb" }, []string{"spec.issuer.ca"}},
		{"ca_bundle_in_blank_lines", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = "\n\n" + ca + "\n" + ca + " \n" }, nil},
		{"ca_text_before", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = "junk\n" + ca }, []string{"spec.issuer.ca"}},
		{"ca_text_between", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = ca + "junk\n" + ca }, []string{"spec.issuer.ca"}},
		{"ca_indented", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = "\n  " + ca }, []string{"spec.issuer.ca"}},
		{"ca_text_after", func(s *csv1.ExternalAuthSpec) { s.Issuer.Ca = ca + "junk" }, []string{"spec.issuer.ca"}},
		{"client_id_must_be_an_audience", func(s *csv1.ExternalAuthSpec) { s.Clients[1].ClientId = "other" }, []string{"spec.clients[1].client_id"}},
		{"client_type_enum", func(s *csv1.ExternalAuthSpec) { s.Clients[0].Type = "Secret" }, []string{"spec.clients[0].type"}},
		{"client_type_required", func(s *csv1.ExternalAuthSpec) { s.Clients[0].Type = "" }, []string{"spec.clients[0].type"}},
		{"client_component_unique", func(s *csv1.ExternalAuthSpec) { s.Clients[1].ComponentName = "console" }, []string{"spec.clients[1].component_name"}},
		{"client_namespace_length", func(s *csv1.ExternalAuthSpec) { s.Clients[0].ComponentNamespace = string(make([]byte, 64)) }, []string{"spec.clients[0].component_namespace"}},
		// HyperShift's extraScopes is a set: a scope given twice is refused where it repeats.
		{"client_scope_twice", func(s *csv1.ExternalAuthSpec) { s.Clients[0].ExtraScopes = []string{"email", "profile", "email"} }, []string{"spec.clients[0].extra_scopes[2]"}},
		{"client_scope_without_spaces", func(s *csv1.ExternalAuthSpec) { s.Clients[0].ExtraScopes = []string{"a b"} }, []string{"spec.clients[0].extra_scopes[0]"}},
		{"at_most_twenty_clients", func(s *csv1.ExternalAuthSpec) {
			for i := range 20 {
				s.Clients = append(s.Clients, &csv1.ExternalAuthClient{ComponentName: "c" + string(rune('a'+i)), ComponentNamespace: "ns", ClientId: "cli-app", Type: "Public"})
			}
		}, []string{"spec.clients"}},
		{"username_claim_required", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Username = nil }, []string{"spec.claim_mappings.username.claim"}},
		{"prefix_required_with_prefix_policy", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Username.Prefix = "" }, []string{"spec.claim_mappings.username.prefix"}},
		{"prefix_refused_without_prefix_policy", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Username.PrefixPolicy = "NoPrefix" }, []string{"spec.claim_mappings.username.prefix"}},
		// A policy the specification does not allow is the one fault; the prefix is not judged.
		{"prefix_policy_enum", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Username.PrefixPolicy = "mdbghfytgejdqobfllqmajtc" }, []string{"spec.claim_mappings.username.prefix_policy"}},
		{"groups_claim_required_when_groups_given", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Groups.Claim = "" }, []string{"spec.claim_mappings.groups.claim"}},
		{"rule_needs_claim_and_value", func(s *csv1.ExternalAuthSpec) { s.ValidationRules[0] = &csv1.TokenClaimValidationRule{Type: "CEL"} },
			[]string{"spec.validation_rules[0].type", "spec.validation_rules[0].required_claim", "spec.validation_rules[0].required_value"}},
		{"spec_required", nil, []string{"spec"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in *csv1.ExternalAuthSpec
			if tc.mutate != nil {
				in = validExternalAuthSpec()
				tc.mutate(in)
			}
			var v violations
			model.ValidateExternalAuthSpec(v.model(), "spec", in)
			got := map[string]bool{}
			for _, f := range v {
				got[f.Field] = true
			}
			if len(got) != len(tc.fields) {
				t.Fatalf("violations = %v, want exactly %v", v, tc.fields)
			}
			for _, f := range tc.fields {
				if !got[f] {
					t.Fatalf("violations = %v, want %s", v, f)
				}
			}
		})
	}
	t.Run("defaults_policy_and_rule_type", func(t *testing.T) {
		in := validExternalAuthSpec()
		in.ClaimMappings.Username = &csv1.UsernameClaimMapping{Claim: "sub"}
		var v violations
		out := model.ValidateExternalAuthSpec(v.model(), "spec", in)
		if len(v) != 0 || out.ClaimMappings.Username.PrefixPolicy != "None" || out.ValidationRules[0].Type != "RequiredClaim" || in.ValidationRules[0].Type != "" || in.ClaimMappings.Username.PrefixPolicy != "" {
			t.Fatalf("normalised = %v (input changed: %v), violations %v", out, in, v)
		}
	})
}

func TestExternalAuths(t *testing.T) {
	e, eas := startExternalAuths(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	newEA := func(n int, clusterID, cluster, name string) *csv1.CreateExternalAuthRequest {
		return &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{Id: id(n), ClusterId: clusterID, ArmResourceId: externalAuthARM(cluster, name), Spec: validExternalAuthSpec()}}
	}
	watch, err := eas.WatchExternalAuths(ctx, &csv1.WatchExternalAuthsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := watch.Recv(); err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
		t.Fatalf("first watch event = %v, %v; want the snapshot's BOOKMARK", ev, err)
	}

	var created *csv1.ExternalAuth
	t.Run("create_is_pending_and_normalised", func(t *testing.T) {
		ea, err := eas.CreateExternalAuth(ctx, newEA(200, cl.Id, "alpha", "entra"))
		if err != nil {
			t.Fatal(err)
		}
		if ea.GetStatus().GetState() != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING || ea.GetSpec().GetValidationRules()[0].GetType() != "RequiredClaim" {
			t.Fatalf("created = %v", ea)
		}
		created = ea
	})
	t.Run("watch_sees_the_create", func(t *testing.T) {
		ev, err := watch.Recv()
		if err != nil || ev.GetType() != csv1.EventType_EVENT_TYPE_UPSERTED || ev.GetExternalAuth().GetId() != created.GetId() || ev.GetRevision() != created.GetRevision() {
			t.Fatalf("event = %v, %v", ev, err)
		}
	})
	errCases := []struct {
		name  string
		req   *csv1.CreateExternalAuthRequest
		code  codes.Code
		field string
	}{
		{"retry_in_other_case_returns_the_existing_one", newEA(201, cl.Id, "ALPHA", "ENTRA"), codes.OK, ""},
		{"second_external_auth_of_the_cluster_is_failed_precondition", newEA(202, cl.Id, "alpha", "other"), codes.FailedPrecondition, ""},
		{"unknown_cluster_is_not_found", newEA(203, id(99), "alpha", "other"), codes.NotFound, ""},
		{"arm_id_of_another_cluster_is_invalid", newEA(204, cl.Id, "beta", "other"), codes.InvalidArgument, "external_auth.arm_resource_id"},
		{"name_too_long_is_invalid", newEA(205, cl.Id, "alpha", "abcdefghijklmnop"), codes.InvalidArgument, "external_auth.arm_resource_id"},
		{"bad_id_is_invalid", &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{Id: "X", ClusterId: cl.Id, ArmResourceId: externalAuthARM("alpha", "x"), Spec: validExternalAuthSpec()}}, codes.InvalidArgument, "external_auth.id"},
		{"spec_violation_is_invalid", &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{Id: id(206), ClusterId: cl.Id, ArmResourceId: externalAuthARM("alpha", "x"), Spec: &csv1.ExternalAuthSpec{}}}, codes.InvalidArgument, "external_auth.spec.issuer.url"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eas.CreateExternalAuth(ctx, tc.req)
			if status.Code(err) != tc.code {
				t.Fatalf("got %v, want %v", err, tc.code)
			}
			if tc.code == codes.OK && (got.GetId() != created.GetId() || got.GetRevision() != created.GetRevision()) {
				t.Fatalf("retry = %v; want the existing %s", got, created.GetId())
			}
			if tc.field != "" && !fieldViolations(err)[tc.field] {
				t.Fatalf("violations of %v do not name %s", err, tc.field)
			}
			if tc.code == codes.FailedPrecondition {
				var pf *errdetails.PreconditionFailure
				for _, d := range status.Convert(err).Details() {
					if p, ok := d.(*errdetails.PreconditionFailure); ok {
						pf = p
					}
				}
				if pf == nil || pf.GetViolations()[0].GetType() != "EXTERNAL_AUTH_LIMIT" {
					t.Fatalf("details of %v: no EXTERNAL_AUTH_LIMIT precondition failure", err)
				}
			}
		})
	}
	t.Run("get_and_list", func(t *testing.T) {
		got, err := eas.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: created.GetId()})
		if err != nil || !proto.Equal(got.GetSpec(), created.GetSpec()) {
			t.Fatalf("get = %v, %v", got, err)
		}
		if _, err := eas.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: id(299)}); status.Code(err) != codes.NotFound {
			t.Fatalf("get unknown: %v", err)
		}
		l, err := eas.ListExternalAuths(ctx, &csv1.ListExternalAuthsRequest{ClusterId: cl.Id})
		if err != nil || len(l.GetExternalAuths()) != 1 {
			t.Fatalf("list = %v, %v", l, err)
		}
		if _, err := eas.ListExternalAuths(ctx, &csv1.ListExternalAuthsRequest{ClusterId: id(99)}); status.Code(err) != codes.NotFound {
			t.Fatalf("list of unknown cluster: %v", err)
		}
	})
	t.Run("update_is_validated_and_conditional", func(t *testing.T) {
		spec := validExternalAuthSpec()
		spec.ClaimMappings.Username.Claim = "preferred_username"
		if _, err := eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: created.GetId(), Update: csv1.FullExternalAuthUpdate(spec), Revision: created.GetRevision() - 1}); status.Code(err) != codes.Aborted {
			t.Fatalf("stale update: %v, want Aborted", err)
		}
		bad := validExternalAuthSpec()
		bad.Issuer.Url = "ftp://x"
		if _, err := eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: created.GetId(), Update: csv1.FullExternalAuthUpdate(bad)}); status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["update.issuer.url"] {
			t.Fatalf("invalid update: %v", err)
		}
		up, err := eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: created.GetId(), Update: csv1.FullExternalAuthUpdate(spec), Revision: created.GetRevision()})
		if err != nil || up.GetSpec().GetClaimMappings().GetUsername().GetClaim() != "preferred_username" || up.GetRevision() <= created.GetRevision() {
			t.Fatalf("update = %v, %v", up, err)
		}
		created = up
	})
	t.Run("delete_then_updates_are_refused_and_watch_resumes", func(t *testing.T) {
		d, err := eas.DeleteExternalAuth(ctx, &csv1.DeleteExternalAuthRequest{Id: created.GetId()})
		if err != nil || d.GetStatus().GetState() != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING {
			t.Fatalf("delete = %v, %v", d, err)
		}
		if _, err := eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: created.GetId(), Update: csv1.FullExternalAuthUpdate(validExternalAuthSpec())}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("update while deleting: %v, want FailedPrecondition", err)
		}
		if _, err := eas.CreateExternalAuth(ctx, newEA(201, cl.Id, "alpha", "entra")); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("create for the deleting ARM resource: %v, want FailedPrecondition", err)
		}
		// Resume after the create: the update and the delete come in order.
		w2, err := eas.WatchExternalAuths(ctx, &csv1.WatchExternalAuthsRequest{SinceRevision: created.GetRevision() - 1})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := w2.Recv()
		if err != nil || ev.GetRevision() != d.GetRevision() || ev.GetExternalAuth().GetStatus().GetState() != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING {
			t.Fatalf("resumed event = %v, %v; want the delete's latest state at %d", ev, err, d.GetRevision())
		}
		neg, err := eas.WatchExternalAuths(ctx, &csv1.WatchExternalAuthsRequest{SinceRevision: -1})
		if err == nil {
			_, err = neg.Recv()
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("watch from -1: %v, want InvalidArgument", err)
		}
	})
}
