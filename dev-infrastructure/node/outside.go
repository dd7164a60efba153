package node

// Services outside the cluster. PostgreSQL and the MQTT broker stay on the host's loopback, as
// managed services (Azure Database for PostgreSQL, Event Grid) stay outside AKS. The node's
// namespace has no route to the host, so a pod reaches such a service only through ExposeHost:
//
//	pod → <name>.<namespace>.svc:<port> (ClusterIP, kube-proxy DNAT)
//	    → node address 10.250.0.1:<relay port> (an EndpointSlice of the selector-less Service)
//	    → Netns.Expose relay (listens inside the namespace, dials from the host's namespace)
//	    → 127.0.0.1:<service port> on the host
//
// The pod keeps TLS end to end (the relay copies bytes), so it verifies the service's certificate
// against the name it dialled: that certificate must carry the Service's DNS name.

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// OutsideService is a host service exposed to pods.
type OutsideService struct {
	// Host is the Service's DNS name in the cluster (<name>.<namespace>.svc.cluster.local).
	Host string
	// Port is the Service's port.
	Port int
	// Relay is the relay's address inside the namespace (the EndpointSlice's endpoint).
	Relay string
}

// Addr is Host:Port, what a pod dials.
func (s OutsideService) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// outsideServiceManifest is a Service without a selector and the EndpointSlice that points it at
// the relay; the namespace is created if it does not exist.
const outsideServiceManifest = `apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Service
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app.kubernetes.io/managed-by: openhcp-node}
  annotations: {openhcp.dev/outside-service: %[5]q}
spec:
  ports: [{name: tcp, port: %[3]d, protocol: TCP, targetPort: %[4]d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[2]s-outside
  namespace: %[1]s
  labels: {kubernetes.io/service-name: %[2]s, endpointslice.kubernetes.io/managed-by: openhcp-node}
addressType: IPv4
ports: [{name: tcp, port: %[4]d, protocol: TCP}]
endpoints: [{addresses: [%[6]q], conditions: {ready: true}}]
`

// ExposeHost makes hostAddr (a TCP service on the host, normally on loopback) reachable from
// pods as the Service name.namespace on port: a relay listens on the node address inside the
// namespace and a selector-less Service with an EndpointSlice points at it. The relay runs until
// Stop.
func (n *Node) ExposeHost(ctx context.Context, namespace, name string, port int, hostAddr string) (OutsideService, error) {
	relayCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	relay, err := n.Netns.Expose(relayCtx, net.JoinHostPort(DefaultNodeIP.String(), "0"), hostAddr)
	if err != nil {
		cancel()
		return OutsideService{}, err
	}
	n.relays = append(n.relays, cancel)
	n.relayAddrs = append(n.relayAddrs, relay)
	_, rp, _ := net.SplitHostPort(relay)
	relayPort, _ := strconv.Atoi(rp)
	manifest := fmt.Appendf(nil, outsideServiceManifest, namespace, name, port, relayPort, hostAddr, DefaultNodeIP)
	if err := n.Apply(ctx, "outside-"+namespace+"-"+name, manifest); err != nil {
		return OutsideService{}, err
	}
	return OutsideService{Host: fmt.Sprintf("%s.%s.svc.%s", name, namespace, ClusterDomain), Port: port, Relay: relay}, nil
}
