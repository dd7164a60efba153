package server

import (
	"fmt"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// progress is what Cluster Service reports of a cluster or node pool, the input of waitStep.
type progress struct {
	kind    string // "cluster" or "node pool"
	state   string // stateName of Cluster Service's state
	applied bool   // Maestro reported the ManifestWork applied
	message string
	shard   string
	conds   []*csv1.Condition
}

// readyCondition is the HyperShift condition that says a kind is done: a HostedCluster's
// Available, a NodePool's Ready.
var readyCondition = map[string]string{"cluster": "Available", "node pool": "Ready"}

// waitStep names the step of the path an active operation waits on, the first that is not
// done: Cluster Service (placement), Maestro (the ManifestWork applied on the shard), HyperShift
// (the object's conditions), in that order — the order the describe view's diagnosis reads.
func waitStep(p progress) string {
	on := ""
	if p.shard != "" {
		on = " on shard " + p.shard
	}
	switch {
	case p.state == "pending":
		return fmt.Sprintf("Cluster Service: %s pending (placement, or a ManifestWork not yet sent)%s", p.kind, suffix(p.message))
	case p.state == "uninstalling":
		return fmt.Sprintf("Maestro/HyperShift: %s uninstalling%s, waiting for its ManifestWork and objects to be gone%s", p.kind, on, suffix(p.message))
	case !p.applied:
		return fmt.Sprintf("Maestro: ManifestWork of the %s not applied%s yet (Cluster Service: %s)%s", p.kind, on, p.state, suffix(p.message))
	case len(p.conds) == 0:
		return fmt.Sprintf("HyperShift: no %s conditions reported%s yet (Cluster Service: %s)", p.kind, on, p.state)
	}
	want := readyCondition[p.kind]
	for _, c := range p.conds {
		if c.GetType() == want && c.GetStatus() != "True" {
			return fmt.Sprintf("HyperShift: %s=%s (%s)%s", c.GetType(), c.GetStatus(), c.GetReason(), suffix(c.GetMessage()))
		}
	}
	return fmt.Sprintf("Cluster Service: %s %s%s", p.kind, p.state, suffix(p.message))
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
