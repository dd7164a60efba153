package api_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// storedClusterDocuments are cluster resource documents' identity and properties as the frontend
// wrote them while clusters had their own profile model (frontend/pkg/api/cluster.go): they must
// still read, render in every api-version and be written back as they were when the cluster
// model becomes Cluster Service's spec. Most are json.Marshal of that model; three are older
// forms it still read: autoscaling without zeroIsValue (0 meant "not given"), a customer-managed
// key without the key vault's visibility, and no ingress or cryptoRestrictions.
var storedClusterDocuments = []struct{ name, doc string }{
	{"example_written_by_2024_06_10", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"example_written_by_2026_09_01", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"autoscaling_values_with_explicit_zero", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true,"maxNodesTotal":0,"maxPodGracePeriodSeconds":300,"maxNodeProvisionTimeSeconds":900,"podPriorityThreshold":0},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"autoscaling_all_values", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true,"maxNodesTotal":24,"maxPodGracePeriodSeconds":600,"maxNodeProvisionTimeSeconds":1200,"podPriorityThreshold":-10},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":30,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"autoscaling_old_form_zero_means_absent", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"maxNodesTotal":0,"maxPodGracePeriodSeconds":600,"maxNodeProvisionTimeSeconds":0,"podPriorityThreshold":0},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":30,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"customer_managed_kms_2024_06_10", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"CustomerManaged","customerManaged":{"encryptionType":"KMS","kms":{"vaultName":"kv1","visibility":"Public","name":"etcd","version":"0123456789abcdef"}}}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"customer_managed_kms_private_2025_12_23", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"CustomerManaged","customerManaged":{"encryptionType":"KMS","kms":{"vaultName":"kv2","visibility":"Private","name":"etcd2","version":"fedcba9876543210"}}}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"private_api_with_authorized_cidrs", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Private","authorizedCidrs":["10.0.0.0/8","192.168.1.0/24"]},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Private"},"cryptoRestrictions":"None"}}`},
	{"image_digest_mirrors_one_without_mirrors", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"imageDigestMirrors":[{"source":"quay.io/openshift-release-dev","mirrors":["mirror.example.com/ocp","mirror2.example.com/ocp"]},{"source":"registry.redhat.io/ubi9","mirrors":null}],"cryptoRestrictions":"None"}}`},
	{"vnet_integration_base_domain_prefix_fips", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.20.1","channelGroup":"candidate"},"dns":{"baseDomainPrefix":"mycluster"},"network":{"networkType":"Other","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":24},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi2","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Disabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"FIPS"}}`},
	{"customer_managed_kms_stored_before_visibility", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Public"},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"CustomerManaged","customerManaged":{"encryptionType":"KMS","kms":{"vaultName":"kv1","name":"etcd","version":"0123456789abcdef"}}}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"},"ingress":{"type":"Public"},"cryptoRestrictions":"None"}}`},
	{"stored_before_ingress_and_crypto_restrictions", `{"identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk":{},"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service":{}}},"properties":{"version":{"id":"4.19","channelGroup":"stable"},"dns":{},"network":{"networkType":"OVNKubernetes","podCidr":"10.128.0.0/14","serviceCidr":"172.30.0.0/16","machineCidr":"10.0.0.0/16","hostPrefix":23},"console":{},"api":{"visibility":"Private","authorizedCidrs":["10.0.0.0/8","192.168.1.0/24"]},"platform":{"managedResourceGroup":"managed-rg1","subnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers","outboundType":"LoadBalancer","networkSecurityGroupId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/networkSecurityGroups/nsg","vnetIntegrationSubnetId":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/vnet/subnets/vi","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"cluster-api-azure":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/capz"},"dataPlaneOperators":{"disk-csi-driver":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/disk"},"serviceManagedIdentity":"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service"}}},"autoscaling":{"zeroIsValue":true},"etcd":{"dataEncryption":{"keyManagementMode":"PlatformManaged"}},"nodeDrainTimeoutMinutes":0,"clusterImageRegistry":{"state":"Enabled"}}}`},
}

// TestStoredClusterDocumentsReadAndRender: each stored document reads into the model, renders in
// every api-version exactly as testdata/cluster_documents.golden records (made by the frontend
// that wrote these documents), and what it is written back as reads and renders the same.
func TestStoredClusterDocumentsReadAndRender(t *testing.T) {
	id, _ := arm.ParseResourceID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c")
	var got bytes.Buffer
	for _, d := range storedClusterDocuments {
		var c api.Cluster
		if err := json.Unmarshal([]byte(d.doc), &c); err != nil {
			t.Fatalf("%s: read: %v", d.name, err)
		}
		c.Default()
		c.ID, c.Location, c.ProvisioningState = id, "eastus", "Succeeded"
		renders := renderClusterAll(t, &c)
		got.WriteString(renders)
		written, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("%s: write: %v", d.name, err)
		}
		var again api.Cluster
		if err := json.Unmarshal(written, &again); err != nil {
			t.Fatalf("%s: read what was written: %v\n%s", d.name, err, written)
		}
		again.Default()
		again.ID, again.Location, again.ProvisioningState = id, "eastus", "Succeeded"
		if r := renderClusterAll(t, &again); r != renders {
			t.Fatalf("%s: written and read again renders differently:\n%s\nwant\n%s", d.name, r, renders)
		}
	}
	matchStoredDocumentsGolden(t, "cluster_documents.golden", got.String())
}

// renderClusterAll is c rendered in every api-version, one line each.
func renderClusterAll(t *testing.T, c *api.Cluster) string {
	t.Helper()
	var b strings.Builder
	for _, v := range nodePoolVersions {
		ver, ok := api.Lookup(v)
		if !ok {
			t.Fatalf("cluster schema of %s not registered", v)
		}
		r, err := json.Marshal(ver.RenderCluster(c))
		if err != nil {
			t.Fatalf("render %s: %v", v, err)
		}
		b.WriteString(v + " " + canonicalJSON(t, r) + "\n")
	}
	return b.String()
}

// FuzzStoredClusterDocument: reading any stored cluster document gives a cluster or an error,
// never a panic, and what a cluster read is written as reads back and is written the same.
func FuzzStoredClusterDocument(f *testing.F) {
	for _, d := range storedClusterDocuments {
		f.Add([]byte(d.doc))
	}
	f.Add([]byte(`{"properties":{"autoscaling":{"maxNodesTotal":1.5}}}`))
	f.Add([]byte(`{"properties":{"imageDigestMirrors":[null]}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var c api.Cluster
		if json.Unmarshal(doc, &c) != nil {
			return
		}
		written, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		var again api.Cluster
		if err := json.Unmarshal(written, &again); err != nil {
			t.Fatalf("read what was written: %v\n%s", err, written)
		}
		if w, _ := json.Marshal(&again); string(w) != string(written) {
			t.Fatalf("written again differently:\n%s\nwant\n%s", w, written)
		}
	})
}

// TestStoredClusterDocumentSideFields: what the model keeps beside the spec (the operators'
// identities, the etcd block, the read-only URLs and the base domain) is read from a stored
// document's one decoding as a typed decoding of the document reads it.
func TestStoredClusterDocumentSideFields(t *testing.T) {
	withSideFields := `{"properties":{"dns":{"baseDomain":"abc.example.com"},"console":{"url":"https://console.example"},"api":{"url":"https://api.example:443"},"platform":{"issuerUrl":"https://issuer.example","operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"a":"/x/a","b":"/x/b"},"dataPlaneOperators":{},"serviceManagedIdentity":"/x/s"}}},"etcd":{"dataEncryption":{"keyManagementMode":"CustomerManaged","customerManaged":{"encryptionType":"KMS","kms":{"vaultName":"v","name":"k","version":"1","visibility":"Private"}}}}}}`
	docs := []string{withSideFields, `{"properties":{}}`, `{"properties":null}`}
	for _, d := range storedClusterDocuments {
		docs = append(docs, d.doc)
	}
	for i, doc := range docs {
		var typed struct {
			Properties struct {
				DNS struct {
					BaseDomain string `json:"baseDomain"`
				} `json:"dns"`
				Console struct {
					URL string `json:"url"`
				} `json:"console"`
				API struct {
					URL string `json:"url"`
				} `json:"api"`
				Platform struct {
					IssuerURL               string `json:"issuerUrl"`
					OperatorsAuthentication struct {
						UserAssignedIdentities api.UserAssignedIdentitiesProfile `json:"userAssignedIdentities"`
					} `json:"operatorsAuthentication"`
				} `json:"platform"`
				Etcd struct {
					DataEncryption api.EtcdDataEncryptionProfile `json:"dataEncryption"`
				} `json:"etcd"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(doc), &typed); err != nil {
			t.Fatalf("document %d: typed decoding: %v", i, err)
		}
		var c api.Cluster
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		p := typed.Properties
		got := []any{c.BaseDomain, c.ConsoleURL, c.APIURL, c.IssuerURL, c.OperatorIdentities, c.Etcd}
		want := []any{p.DNS.BaseDomain, p.Console.URL, p.API.URL, p.Platform.IssuerURL, p.Platform.OperatorsAuthentication.UserAssignedIdentities, p.Etcd.DataEncryption}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("document %d: read %#v\nwant %#v", i, got, want)
		}
	}
	var c api.Cluster
	if err := json.Unmarshal([]byte(withSideFields), &c); err != nil || c.Etcd.CustomerManaged == nil || c.Etcd.CustomerManaged.KMS.Visibility != "Private" ||
		len(c.OperatorIdentities.ControlPlaneOperators) != 2 || c.OperatorIdentities.DataPlaneOperators == nil {
		t.Fatalf("side fields not read: %v %#v", err, c)
	}
}

// TestStoredClusterDocumentSideFieldOfOddShapeIsAnError: a side field of another shape than its
// type's is an error naming it, never a panic or a silent empty value.
func TestStoredClusterDocumentSideFieldOfOddShapeIsAnError(t *testing.T) {
	for _, tc := range []struct{ name, props, wantPath string }{
		{"api_url_number", `{"api":{"url":5}}`, "api.url"},
		{"base_domain_object", `{"dns":{"baseDomain":{}}}`, "dns.baseDomain"},
		{"issuer_list", `{"platform":{"issuerUrl":[]}}`, "platform.issuerUrl"},
		{"identities_string", `{"platform":{"operatorsAuthentication":{"userAssignedIdentities":"x"}}}`, "userAssignedIdentities"},
		{"operator_number", `{"platform":{"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{"a":1}}}}}`, "controlPlaneOperators[a]"},
		{"operators_list", `{"platform":{"operatorsAuthentication":{"userAssignedIdentities":{"dataPlaneOperators":[]}}}}`, "dataPlaneOperators"},
		{"service_identity_bool", `{"platform":{"operatorsAuthentication":{"userAssignedIdentities":{"serviceManagedIdentity":true}}}}`, "serviceManagedIdentity"},
		{"etcd_mode_number", `{"etcd":{"dataEncryption":{"keyManagementMode":1}}}`, "etcd.dataEncryption"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c api.Cluster
			err := json.Unmarshal([]byte(`{"properties":`+tc.props+`}`), &c)
			if err == nil || !strings.Contains(err.Error(), tc.wantPath) {
				t.Fatalf("read %s: %v; want an error naming %s", tc.props, err, tc.wantPath)
			}
		})
	}
}
