package frontend

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestNodePoolSpecFillsEveryARMPathField: a node pool with every property set reaches every
// field of Cluster Service's spec that has an arm_path, with the value it holds; an arm_path
// that names no property of the internal model (a typo, a renamed field) fails here.
func TestNodePoolSpecFillsEveryARMPathField(t *testing.T) {
	np := &api.NodePool{Properties: api.NodePoolProperties{
		Version:     api.NodePoolVersionProfile{ID: "4.19.7", ChannelGroup: "candidate"},
		Replicas:    3,
		AutoRepair:  true,
		AutoScaling: &api.NodePoolAutoScaling{Min: 2, Max: 7},
		Labels:      []api.Label{{Key: "a", Value: "1"}, {Key: "b", Value: ""}},
		Taints:      []api.Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}},
		Platform: api.NodePoolPlatformProfile{SubnetID: "/subnet", VMSize: "Standard_D8s_v3", EnableEncryptionAtHost: true, AvailabilityZone: "2",
			OSDisk: api.OSDiskProfile{SizeGiB: 128, DiskStorageAccountType: "Standard_LRS", EncryptionSetID: testDES, DiskType: api.DiskTypeEphemeral}},
		NodeDrainTimeoutMinutes: proto.Int32(0),
	}}
	want := &csv1.NodePoolSpec{
		VersionId: "4.19.7", ChannelGroup: "candidate", Replicas: 3, AutoRepair: true,
		Autoscaling: &csv1.NodePoolAutoscaling{Min: 2, Max: 7},
		Labels:      map[string]string{"a": "1", "b": ""},
		Taints:      []*csv1.Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}},
		Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128, OsDiskStorageAccountType: "Standard_LRS", SubnetId: "/subnet",
			AvailabilityZone: "2", EncryptionAtHost: true, OsDiskEncryptionSetId: testDES, OsDiskPersistence: "Ephemeral"},
		NodeDrainTimeoutMinutes: proto.Int32(0),
	}
	got := nodePoolSpec(np)
	if !proto.Equal(got, want) {
		t.Fatalf("nodePoolSpec:\n got %v\nwant %v", got, want)
	}
	var unset []string
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if p := csv1.ARMPathOf(fd); p == "" || p == "-" {
				continue
			}
			if !m.Has(fd) {
				unset = append(unset, string(fd.FullName()))
				continue
			}
			if fd.Message() != nil && !fd.IsMap() && !fd.IsList() {
				walk(m.Get(fd).Message())
			}
		}
	}
	walk(got.ProtoReflect())
	if len(unset) > 0 {
		t.Fatalf("fields with an arm_path the model did not reach: %v", unset)
	}
}

// TestFillFromARMPathForms: "/a" is read from the model's root whatever the message's place,
// "." is the holder's own object, and "-" is never read from the model.
func TestFillFromARMPathForms(t *testing.T) {
	doc := map[string]any{
		"name":       "c1",
		"id":         "not-from-the-model",
		"properties": map[string]any{"version": map[string]any{"id": "4.19", "channelGroup": "fast"}},
	}
	var c csv1.Cluster
	fillFromARM(c.ProtoReflect(), doc, doc, "", nil)
	if c.GetArmResourceId() != "c1" || c.GetSpec().GetVersionId() != "4.19" || c.GetSpec().GetChannelGroup() != "fast" || c.GetId() != "" {
		t.Fatalf("filled %v", &c)
	}
}
