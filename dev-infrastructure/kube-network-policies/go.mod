module github.com/openhcp/openhcp/dev-infrastructure/kube-network-policies

go 1.26

// SIG Network's reference NetworkPolicy agent, v0.8.0 from the module proxy with OpenHCP's patch
// (README.md), built as a pinned tool (GOWORK=off, hack/tool.sh) for the make-deploy node.
require sigs.k8s.io/kube-network-policies v0.8.0

replace sigs.k8s.io/kube-network-policies => ./upstream
