package manifests

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/utils/ptr"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

func TestBuildConfiguration(t *testing.T) {
	const kv = "https://vault1.vault.azure.net/keys/etcd/"
	tests := []struct {
		name  string
		edit  func(s *csv1.ClusterSpec)
		check func(t *testing.T, hc *hypershiftv1beta1.HostedCluster)
	}{
		{
			name: "no_configuration_leaves_hypershift_defaults",
			edit: func(*csv1.ClusterSpec) {},
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				if !reflect.DeepEqual(hc.Spec.Autoscaling, hypershiftv1beta1.ClusterAutoscaling{}) || hc.Spec.Networking.APIServer != nil ||
					hc.Spec.ImageContentSources != nil || hc.Spec.FIPS || hc.Spec.DNS.BaseDomainPrefix != nil || len(hc.Annotations) != 0 || hc.Spec.Capabilities != nil {
					t.Fatalf("spec has configuration: %+v", hc.Spec)
				}
			},
		},
		{
			name: "autoscaling_maps_to_spec_autoscaling",
			edit: func(s *csv1.ClusterSpec) {
				s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](60), MaxPodGracePeriodSeconds: ptr.To[int32](300),
					MaxNodeProvisionTimeSeconds: ptr.To[int32](900), PodPriorityThreshold: ptr.To[int32](-5)}
			},
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				a := hc.Spec.Autoscaling
				if *a.MaxNodesTotal != 60 || *a.MaxPodGracePeriod != 300 || a.MaxNodeProvisionTime != "900s" || *a.PodPriorityThreshold != -5 {
					t.Fatalf("autoscaling = %+v", a)
				}
			},
		},
		{
			name: "unset_autoscaling_fields_stay_unset",
			edit: func(s *csv1.ClusterSpec) {
				s.Autoscaling = &csv1.ClusterAutoscaling{PodPriorityThreshold: ptr.To[int32](0)}
			},
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				a := hc.Spec.Autoscaling
				if a.MaxNodesTotal != nil || a.MaxPodGracePeriod != nil || a.MaxNodeProvisionTime != "" || a.PodPriorityThreshold == nil || *a.PodPriorityThreshold != 0 {
					t.Fatalf("autoscaling = %+v", a)
				}
			},
		},
		{
			name: "authorized_cidrs_are_the_api_servers_allowed_cidr_blocks",
			edit: func(s *csv1.ClusterSpec) { s.ApiAuthorizedCidrs = []string{"192.0.2.0/24", "198.51.100.7/32"} },
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				if got := hc.Spec.Networking.APIServer.AllowedCIDRBlocks; !reflect.DeepEqual(got, []hypershiftv1beta1.CIDRBlock{"192.0.2.0/24", "198.51.100.7/32"}) {
					t.Fatalf("allowedCIDRBlocks = %v", got)
				}
			},
		},
		{
			name: "image_digest_mirrors_are_image_content_sources",
			edit: func(s *csv1.ClusterSpec) {
				s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io/openshift-release-dev", Mirrors: []string{"mirror.example.com/ocp", "backup.example.com:5000/ocp"}}}
			},
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				want := []hypershiftv1beta1.ImageContentSource{{Source: "quay.io/openshift-release-dev", Mirrors: []string{"mirror.example.com/ocp", "backup.example.com:5000/ocp"}}}
				if !reflect.DeepEqual(hc.Spec.ImageContentSources, want) {
					t.Fatalf("imageContentSources = %+v", hc.Spec.ImageContentSources)
				}
			},
		},
		{
			name: "private_ingress_is_hypershifts_private_ingress_controller_annotation",
			edit: func(s *csv1.ClusterSpec) { s.IngressVisibility = "Private" },
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				if hc.Annotations[hypershiftv1beta1.PrivateIngressControllerAnnotation] != "true" || hc.Spec.Capabilities != nil {
					t.Fatalf("annotations %v capabilities %+v", hc.Annotations, hc.Spec.Capabilities)
				}
			},
		},
		{
			name: "disabled_ingress_disables_ingress_and_console_next_to_the_registry",
			edit: func(s *csv1.ClusterSpec) { s.IngressVisibility = "Disabled"; s.ImageRegistryState = "Disabled" },
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				want := []hypershiftv1beta1.OptionalCapability{"Console", "ImageRegistry", "Ingress"}
				if hc.Spec.Capabilities == nil || !reflect.DeepEqual(hc.Spec.Capabilities.Disabled, want) {
					t.Fatalf("capabilities = %+v, want disabled %v", hc.Spec.Capabilities, want)
				}
			},
		},
		{
			name: "fips_and_base_domain_prefix",
			edit: func(s *csv1.ClusterSpec) { s.CryptoRestrictions = "FIPS"; s.DnsBaseDomainPrefix = "shop" },
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				if !hc.Spec.FIPS || hc.Spec.DNS.BaseDomainPrefix == nil || *hc.Spec.DNS.BaseDomainPrefix != "shop" {
					t.Fatalf("fips %v prefix %v", hc.Spec.FIPS, hc.Spec.DNS.BaseDomainPrefix)
				}
			},
		},
		{
			name: "rotated_kms_key_keeps_the_previous_version_as_backup",
			edit: func(s *csv1.ClusterSpec) { s.EtcdEncryptionKeyId = kv + "v2"; s.EtcdEncryptionBackupKeyId = kv + "v1" },
			check: func(t *testing.T, hc *hypershiftv1beta1.HostedCluster) {
				az := hc.Spec.SecretEncryption.KMS.Azure
				if az.ActiveKey.KeyVersion != "v2" || az.BackupKey == nil || *az.BackupKey != (hypershiftv1beta1.AzureKMSKey{KeyVaultName: "vault1", KeyName: "etcd", KeyVersion: "v1"}) {
					t.Fatalf("azure kms = %+v", az)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := fullSpec()
			tc.edit(s)
			w, err := Build(Config{}, cluster(s))
			if err != nil {
				t.Fatal(err)
			}
			_, hc := decoded(t, w)
			tc.check(t, hc)
		})
	}
}

func TestConfigDifferences(t *testing.T) {
	built := func(edit func(s *csv1.ClusterSpec)) *hypershiftv1beta1.HostedCluster {
		s := fullSpec()
		s.EtcdEncryptionKeyId = "https://vault1.vault.azure.net/keys/etcd/v1"
		edit(s)
		w, err := Build(Config{}, cluster(s))
		if err != nil {
			t.Fatal(err)
		}
		_, hc := decoded(t, w)
		return hc
	}
	// reported turns a HostedCluster into feedback as the apiserver returns it: through JSON,
	// with a defaulted field the build never sets.
	reported := func(hc *hypershiftv1beta1.HostedCluster) ReportedConfig {
		var r ReportedConfig
		b, _ := json.Marshal(hc.Spec.Autoscaling)
		_ = json.Unmarshal(b, &r.Autoscaling)
		r.Autoscaling.Scaling = hypershiftv1beta1.ScaleUpAndScaleDown
		r.APIServer, r.ImageContentSources, r.SecretEncryption = hc.Spec.Networking.APIServer, hc.Spec.ImageContentSources, hc.Spec.SecretEncryption
		r.WorkloadIdentities = hc.Spec.Platform.Azure.AzureAuthenticationConfig.WorkloadIdentities
		return r
	}
	withAll := func(s *csv1.ClusterSpec) {
		s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: ptr.To[int32](10)}
		s.ApiAuthorizedCidrs = []string{"192.0.2.0/24", "203.0.113.0/24"}
		s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io", Mirrors: []string{"m.example.com"}}}
	}
	tests := []struct {
		name     string
		want     *hypershiftv1beta1.HostedCluster
		reported ReportedConfig
		diff     string
	}{
		{"the_same_configuration_has_no_differences", built(withAll), reported(built(withAll)), ""},
		{"defaults_added_by_the_apiserver_do_not_count", built(func(*csv1.ClusterSpec) {}), reported(built(func(*csv1.ClusterSpec) {})), ""},
		{"cidrs_in_another_order_are_the_same_set", built(withAll), reported(built(func(s *csv1.ClusterSpec) {
			withAll(s)
			s.ApiAuthorizedCidrs = []string{"203.0.113.0/24", "192.0.2.0/24"}
		})), ""},
		{"stale_feedback_before_an_update_differs", built(withAll), reported(built(func(*csv1.ClusterSpec) {})),
			"autoscaling, API authorized CIDRs, image digest mirrors"},
		{"a_changed_cidr_differs", built(withAll), reported(built(func(s *csv1.ClusterSpec) {
			withAll(s)
			s.ApiAuthorizedCidrs = []string{"192.0.2.0/24"}
		})), "API authorized CIDRs"},
		{"an_unrotated_key_differs", built(func(s *csv1.ClusterSpec) {
			s.EtcdEncryptionKeyId, s.EtcdEncryptionBackupKeyId = "https://vault1.vault.azure.net/keys/etcd/v2", "https://vault1.vault.azure.net/keys/etcd/v1"
		}), reported(built(func(*csv1.ClusterSpec) {})), "etcd encryption keys"},
		{"a_changed_workload_identity_differs", built(func(s *csv1.ClusterSpec) {
			s.Azure.WorkloadIdentities.Ingress = uuid(22)
		}), reported(built(func(*csv1.ClusterSpec) {})), "workload identities"},
		{"feedback_without_workload_identities_differs", built(func(*csv1.ClusterSpec) {}), func() ReportedConfig {
			r := reported(built(func(*csv1.ClusterSpec) {}))
			r.WorkloadIdentities = nil
			return r
		}(), "workload identities"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(ConfigDifferences(tc.want, tc.reported), ", "); got != tc.diff {
				t.Fatalf("differences = %q, want %q", got, tc.diff)
			}
		})
	}
}

// TestNodePoolDrainTimeout: a pool's own drain timeout wins over the cluster's, even when it
// is 0 (no limit); a pool without one gets the cluster's.
func TestNodePoolDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster int32
		pool    *int32
		want    time.Duration // 0: unset
	}{
		{"cluster_zero_means_no_limit_and_is_left_unset", 0, nil, 0},
		{"cluster_minutes_become_a_duration", 45, nil, 45 * time.Minute},
		{"cluster_a_week", 10080, nil, 7 * 24 * time.Hour},
		{"pool_value_wins_over_the_clusters", 45, ptr.To[int32](90), 90 * time.Minute},
		{"pool_value_without_a_cluster_value", 0, ptr.To[int32](5), 5 * time.Minute},
		{"pool_zero_is_no_limit_whatever_the_cluster_says", 45, ptr.To[int32](0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fullSpec()
			s.NodeDrainTimeoutMinutes = tc.cluster
			w, err := BuildNodePool(Config{}, NodePool{ID: id, ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/My-Cluster/nodePools/np1",
				Spec: &csv1.NodePoolSpec{Replicas: 1, NodeDrainTimeoutMinutes: tc.pool, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}, Cluster: cluster(s)})
			if err != nil {
				t.Fatal(err)
			}
			var np hypershiftv1beta1.NodePool
			if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &np); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == 0 && np.Spec.NodeDrainTimeout != nil:
				t.Fatalf("nodeDrainTimeout = %v, want unset", np.Spec.NodeDrainTimeout)
			case tc.want != 0 && (np.Spec.NodeDrainTimeout == nil || np.Spec.NodeDrainTimeout.Duration != tc.want):
				t.Fatalf("nodeDrainTimeout = %v, want %v", np.Spec.NodeDrainTimeout, tc.want)
			}
		})
	}
}

// TestPausedUntil: an SRE's pause is spec.pausedUntil of the HostedCluster and of every
// NodePool, and absent when the cluster is not paused.
func TestPausedUntil(t *testing.T) {
	const id = "0123456789abcdefghijklmnopqrstuv"
	for _, paused := range []string{"", "true", "2030-01-02T15:04:05Z"} {
		t.Run("paused_"+paused, func(t *testing.T) {
			s := fullSpec()
			s.PausedUntil = paused
			w, err := Build(Config{}, cluster(s))
			if err != nil {
				t.Fatal(err)
			}
			_, hc := decoded(t, w)
			pw, err := BuildNodePool(Config{}, NodePool{ID: id, ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/My-Cluster/nodePools/np1",
				Spec: &csv1.NodePoolSpec{Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}, Cluster: cluster(s)})
			if err != nil {
				t.Fatal(err)
			}
			var np hypershiftv1beta1.NodePool
			if err := json.Unmarshal(pw.Spec.Workload.Manifests[0].Raw, &np); err != nil {
				t.Fatal(err)
			}
			for what, got := range map[string]*string{"HostedCluster": hc.Spec.PausedUntil, "NodePool": np.Spec.PausedUntil} {
				if (paused == "") != (got == nil) || (got != nil && *got != paused) {
					t.Fatalf("%s spec.pausedUntil = %v, want %q", what, got, paused)
				}
			}
		})
	}
}
