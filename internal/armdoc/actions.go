package armdoc

// Cluster actions (POST …/hcpOpenShiftClusters/{name}/<action>) are operations too. They act on
// the cluster but never own it: they do not set its ActiveOperationID or provisioningState
// (Cluster Service refuses a conflicting action, and the frontend maps that to 409). Their
// InternalID is the Cluster Service ID of what they created: the credential or the revocation.
const (
	// OperationRequestCredential is requestAdminCredential: its result is the kubeconfig.
	OperationRequestCredential OperationRequest = "RequestCredential"
	// OperationRevokeCredentials is revokeCredentials.
	OperationRevokeCredentials OperationRequest = "RevokeCredentials"
)

// IsAction reports whether r is a cluster action rather than a write of the resource.
func (r OperationRequest) IsAction() bool {
	return r == OperationRequestCredential || r == OperationRevokeCredentials
}
