package deploy

import "github.com/openhcp/openhcp/dev-infrastructure/node"

// metricsOverTLS is why a service's metrics port may answer /metrics without a client
// certificate (docs/security.md, "Metrics endpoints").
const metricsOverTLS = "metrics over TLS with the service's server certificate: scrapers present no client certificate, and metrics carry no customer data (docs/security.md, \"Metrics endpoints\")"

// PodDoors are the pod listeners of the deployed charts that may answer more than their health
// paths without a client certificate, over TLS only, and why (node.Node.OpenDoors; the ports
// are the charts' ports.metrics, the sim's --metrics-addr and the agent's --listen). Plaintext HTTP on a pod address is
// never among them. Neither are the hosted kube-apiservers in the sim's pod (program
// kube-apiserver, a port per hosted cluster; --anonymous-auth=false), which answer nothing
// without a client certificate, health paths included; the hosted etcds have no port (unix
// sockets).
func PodDoors() []node.PodDoor {
	return []node.PodDoor{
		{Process: "frontend", Port: 9443, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "backend", Port: 8081, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "monitor", Port: 8083, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "maintenance", Port: 8084, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "cluster-service", Port: 8091, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "hypershift-sim", Port: 8080, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		// The Maestro server's metrics, which its gate relays over TLS (maestro-gate --metrics).
		{Process: "maestro-gate", Port: 8080, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "admin", Port: 9444, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "gateway", Port: 9445, Paths: []string{"/metrics"}, Reason: metricsOverTLS},
		{Process: "maestro", Port: 8443, Paths: []string{"/version"}, Reason: "the pinned Maestro agent authorizes every path but its health paths with a SubjectAccessReview, and Kubernetes' default system:public-info-viewer binding lets unauthenticated callers get /version: the version of the Kubernetes libraries it is built with, no secret; closing it means removing that default binding cluster-wide"},
	}
}
