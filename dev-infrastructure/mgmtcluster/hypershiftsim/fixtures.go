package hypershiftsim

import (
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ExampleHostedCluster returns a small HostedCluster that the real CRD schema accepts (platform
// None, the four published services, managed etcd), for tests and local experiments that do not
// go through Cluster Service.
func ExampleHostedCluster(namespace, name, releaseImage string) *hyperv1.HostedCluster {
	route := hyperv1.ServicePublishingStrategy{Type: hyperv1.Route}
	size := resource.MustParse("8Gi")
	return &hyperv1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hyperv1.HostedClusterSpec{
			Release:  hyperv1.Release{Image: releaseImage},
			Platform: hyperv1.PlatformSpec{Type: hyperv1.NonePlatform},
			DNS:      hyperv1.DNSSpec{BaseDomain: "example.openhcp.test"},
			Networking: hyperv1.ClusterNetworking{
				NetworkType: hyperv1.OVNKubernetes,
			},
			Services: []hyperv1.ServicePublishingStrategyMapping{
				{Service: hyperv1.APIServer, ServicePublishingStrategy: hyperv1.ServicePublishingStrategy{Type: hyperv1.LoadBalancer}},
				{Service: hyperv1.OAuthServer, ServicePublishingStrategy: route},
				{Service: hyperv1.Konnectivity, ServicePublishingStrategy: route},
				{Service: hyperv1.Ignition, ServicePublishingStrategy: route},
			},
			Etcd: hyperv1.EtcdSpec{
				ManagementType: hyperv1.Managed,
				Managed: &hyperv1.ManagedEtcdSpec{Storage: hyperv1.ManagedEtcdStorageSpec{
					Type:             hyperv1.PersistentVolumeEtcdStorage,
					PersistentVolume: &hyperv1.PersistentVolumeEtcdStorageSpec{Size: &size},
				}},
			},
			PullSecret: corev1.LocalObjectReference{Name: name + "-pull-secret"},
		},
	}
}

// ExampleNodePool returns a NodePool of cluster that the real CRD schema accepts.
func ExampleNodePool(namespace, name, cluster, releaseImage string, replicas int32) *hyperv1.NodePool {
	return &hyperv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hyperv1.NodePoolSpec{
			ClusterName: cluster,
			Release:     hyperv1.Release{Image: releaseImage},
			Platform:    hyperv1.NodePoolPlatform{Type: hyperv1.NonePlatform},
			Replicas:    ptr.To(replicas),
			Management:  hyperv1.NodePoolManagement{UpgradeType: hyperv1.UpgradeTypeReplace},
		},
	}
}
