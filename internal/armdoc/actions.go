package armdoc

// Cluster actions (POST …/hcpOpenShiftClusters/{name}/<action>) are operations too. They act on
// the cluster but never own it: they do not set its ActiveOperationID or provisioningState
// (Cluster Service refuses a conflicting action, and the frontend maps that to 409). Their
// InternalID is the Cluster Service ID of what they created: the credential or the revocation.
// Each action is a kind registered in internal/opkind (opkind.IsAction tells an action's request
// from a resource write).
const (
	// OperationRequestCredential is requestAdminCredential: its result is the kubeconfig.
	OperationRequestCredential OperationRequest = "RequestCredential"
	// OperationRevokeCredentials is revokeCredentials.
	OperationRevokeCredentials OperationRequest = "RevokeCredentials"
)
