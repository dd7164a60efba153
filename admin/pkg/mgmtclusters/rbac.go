package mgmtclusters

import rbacv1 "k8s.io/api/rbac/v1"

// ReaderUser is the user the admin API's kubeconfigs act as on a management cluster (in Azure
// the admin service's workload identity mapped to it by the AKS cluster's Entra RBAC).
const ReaderUser = "openhcp-admin"

// Rules are all the admin API may do on a management cluster: read the HostedClusters and
// NodePools, and the events. /readyz needs no rule (system:public-info-viewer). Whoever
// installs the identity (the local region, a deployment) grants exactly these.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{hostedClusters.Group}, Resources: []string{hostedClusters.Resource, nodePools.Resource}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{events.Resource}, Verbs: []string{"get", "list"}},
	}
}
