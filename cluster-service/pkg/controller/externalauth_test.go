package controller

import (
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

const eaClusterARM = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/Alpha"

func eaSpec() *csv1.ExternalAuthSpec {
	return &csv1.ExternalAuthSpec{
		Issuer:        &csv1.TokenIssuer{Url: "https://login.example.com/t/v2.0", Audiences: []string{"console-app"}},
		Clients:       []*csv1.ExternalAuthClient{{ComponentName: "console", ComponentNamespace: "openshift-console", ClientId: "console-app", Type: "Public"}},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "email"}},
	}
}

// authWork is the cluster's work as the agent reports it: the live authentication spec (as
// built for spec, or none), the generation, ValidConfiguration and the OIDC client status.
func authWork(t *testing.T, spec *csv1.ExternalAuthSpec, gen, validGen int64, valid metav1.ConditionStatus, clientsInUse bool) *workv1.ManifestWork {
	t.Helper()
	conds := []cond{{Type: "Available", Status: metav1.ConditionTrue}}
	if validGen > 0 {
		conds = append(conds, cond{Type: "ValidConfiguration", Status: valid, Reason: "AsExpected", Message: "checked", ObservedGeneration: validGen})
	}
	w := work(t, true, conds, nil, "", "")
	hc := &w.Status.ResourceStatus.Manifests[1].StatusFeedbacks
	hc.Values = append(hc.Values, workv1.FeedbackValue{Name: manifests.FeedbackGeneration, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &gen}})
	if spec != nil {
		p := manifests.OIDCProvider(manifests.HostedClusterName("", eaClusterARM), manifests.ExternalAuth{ARMResourceID: eaClusterARM + "/externalAuths/Entra", Spec: spec})
		hc.Values = append(hc.Values, workv1.FeedbackValue{Name: manifests.FeedbackAuthenticationSpec, Value: workv1.FieldValue{Type: workv1.JsonRaw,
			JsonRaw: raw(t, configv1.AuthenticationSpec{Type: configv1.AuthenticationTypeOIDC, OIDCProviders: []configv1.OIDCProvider{p}})}})
		if clientsInUse {
			hc.Values = append(hc.Values, workv1.FeedbackValue{Name: manifests.FeedbackAuthenticationStatus, Value: workv1.FieldValue{Type: workv1.JsonRaw,
				JsonRaw: raw(t, configv1.AuthenticationStatus{OIDCClients: []configv1.OIDCClientStatus{{ComponentName: "console", ComponentNamespace: "openshift-console",
					CurrentOIDCClients: []configv1.OIDCClientReference{{OIDCProviderName: p.Name, IssuerURL: p.Issuer.URL, ClientID: "console-app"}}}}})}})
		}
	}
	return w
}

func TestDeriveExternalAuthStatus(t *testing.T) {
	changed := eaSpec()
	changed.ClaimMappings.Username.Claim = "sub"
	applied := &store.Cluster{ARMResourceID: eaClusterARM, Status: &csv1.ClusterStatus{Applied: true}}
	tests := []struct {
		name      string
		cluster   *store.Cluster
		state     csv1.ExternalAuthState // the stored state before
		deleting  bool
		work      *workv1.ManifestWork
		want      csv1.ExternalAuthState
		wantGone  bool
		wantApply bool
	}{
		{"pending_until_the_cluster_is_applied", &store.Cluster{ARMResourceID: eaClusterARM, Status: &csv1.ClusterStatus{}}, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, false, nil, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, false, false},
		{"installing_while_the_provider_is_not_reported", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, false, authWork(t, nil, 2, 2, metav1.ConditionTrue, false), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, false},
		{"installing_while_validation_is_for_an_older_generation", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, authWork(t, eaSpec(), 3, 2, metav1.ConditionTrue, true), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, true},
		{"installing_while_clients_are_not_in_use", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, authWork(t, eaSpec(), 3, 3, metav1.ConditionTrue, false), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, true},
		{"ready_when_applied_valid_and_in_use", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, authWork(t, eaSpec(), 3, 3, metav1.ConditionTrue, true), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, false, true},
		{"error_when_hypershift_says_invalid", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING, false, authWork(t, eaSpec(), 3, 3, metav1.ConditionFalse, false), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, false, true},
		{"updating_while_the_old_spec_is_reported", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING, false, authWork(t, changed, 3, 3, metav1.ConditionTrue, true), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING, false, false},
		{"uninstalling_while_the_provider_is_reported", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, true, authWork(t, eaSpec(), 3, 3, metav1.ConditionTrue, true), csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, false, true},
		{"gone_once_the_provider_is_not_reported", applied, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, true, authWork(t, nil, 4, 4, metav1.ConditionTrue, false), 0, true, false},
		{"gone_at_once_if_never_sent", &store.Cluster{ARMResourceID: eaClusterARM, Status: &csv1.ClusterStatus{}}, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, true, nil, 0, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ea := &store.ExternalAuth{ID: "x", ARMResourceID: eaClusterARM + "/externalAuths/Entra", Spec: eaSpec(), Deleting: tc.deleting,
				Status: &csv1.ExternalAuthStatus{State: tc.state}}
			if tc.name == "updating_while_the_old_spec_is_reported" {
				ea.Spec = eaSpec() // stored is the new spec; the work reports `changed`
			}
			st, gone, err := DeriveExternalAuthStatus("", tc.cluster, ea, tc.work)
			if err != nil {
				t.Fatal(err)
			}
			if gone != tc.wantGone {
				t.Fatalf("gone = %v, want %v (status %v)", gone, tc.wantGone, st)
			}
			if gone {
				return
			}
			if st.GetState() != tc.want || st.GetApplied() != tc.wantApply {
				t.Fatalf("status = %v, want %s applied=%v", st, tc.want, tc.wantApply)
			}
			if tc.want == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR && (st.GetErrorCode() != "InvalidConfiguration" || st.GetMessage() == "") {
				t.Fatalf("error status = %v", st)
			}
		})
	}
}

func TestWithExternalAuth(t *testing.T) {
	cl := manifests.Cluster{ID: "0123456789abcdefghijklmnopqrstuv", ARMResourceID: eaClusterARM, EtcdEncryptionKey: make([]byte, 32), SSHPublicKey: "ssh-ed25519 AAAA",
		Spec: &csv1.ClusterSpec{VersionId: "4.19.7", ChannelGroup: "stable", Network: &csv1.NetworkSpec{NetworkType: "OVNKubernetes", PodCidr: "10.128.0.0/14", ServiceCidr: "172.30.0.0/16", MachineCidr: "10.0.0.0/16", HostPrefix: 23},
			ApiVisibility: "Public", Azure: &csv1.AzureSpec{Location: "eastus", SubscriptionId: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", ManagedResourceGroup: "mrg",
				SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s", TenantId: "00000000-0000-0000-0000-000000000002"}}}
	base, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: "00000000-0000-0000-0000-000000000003"}, cl)
	if err != nil {
		t.Fatal(err)
	}
	spec := eaSpec()
	spec.Issuer.Ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	tests := []struct {
		name          string
		ea            *manifests.ExternalAuth
		wantManifests int
		wantProvider  bool
	}{
		{"without_external_auth_only_feedback_is_added", nil, len(base.Spec.Workload.Manifests), false},
		{"with_external_auth_and_ca", &manifests.ExternalAuth{ARMResourceID: eaClusterARM + "/externalAuths/Entra", Spec: spec}, len(base.Spec.Workload.Manifests) + 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: "00000000-0000-0000-0000-000000000003"}, cl)
			if err != nil {
				t.Fatal(err)
			}
			w, err = manifests.WithExternalAuth(w, tc.ea)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Spec.Workload.Manifests) != tc.wantManifests || w.Annotations[manifests.AnnotationSpecHash] == base.Annotations[manifests.AnnotationSpecHash] {
				t.Fatalf("manifests = %d (want %d), hash unchanged = %v", len(w.Spec.Workload.Manifests), tc.wantManifests, w.Annotations[manifests.AnnotationSpecHash] == base.Annotations[manifests.AnnotationSpecHash])
			}
			if h, _ := manifests.SpecHash(w); h != w.Annotations[manifests.AnnotationSpecHash] {
				t.Fatal("spec hash annotation is not the hash of the returned spec")
			}
			var paths []string
			for _, mc := range w.Spec.ManifestConfigs {
				if mc.ResourceIdentifier.Resource == "hostedclusters" {
					for _, p := range mc.FeedbackRules[0].JsonPaths {
						paths = append(paths, p.Path)
					}
				}
			}
			if len(paths) != 12 || paths[4] != ".metadata.generation" || paths[10] != ".spec.configuration.authentication" || paths[11] != ".status.configuration.authentication" {
				t.Fatalf("HostedCluster feedback paths = %v", paths)
			}
			last := w.Spec.Workload.Manifests[len(w.Spec.Workload.Manifests)-1].Raw
			has := strings.Contains(string(last), `"oidcProviders":[{`) && strings.Contains(string(last), `"name":"entra"`) && strings.Contains(string(last), `"issuerCertificateAuthority":{"name":"alpha-entra-oidc-ca"}`)
			if has != tc.wantProvider {
				t.Fatalf("HostedCluster has the provider = %v, want %v: %s", has, tc.wantProvider, last)
			}
			if strings.Contains(string(last), "null") {
				t.Fatalf("the HostedCluster has null values, which its CRD refuses: %s", last)
			}
			if tc.wantProvider && !strings.Contains(string(w.Spec.Workload.Manifests[len(w.Spec.Workload.Manifests)-2].Raw), `"ca-bundle.crt"`) {
				t.Fatal("the CA ConfigMap is not just before the HostedCluster")
			}
		})
	}
}
