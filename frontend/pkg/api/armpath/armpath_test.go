package armpath_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/frontend/pkg/api/v20260630preview"
)

const testDES = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des-1"

// everyNodePoolProperty is a node pool's ARM properties with every property set.
const everyNodePoolProperty = `{"properties":{"version":{"id":"4.19.7","channelGroup":"candidate"},"replicas":3,"autoRepair":true,
	"autoScaling":{"min":2,"max":7},"labels":[{"key":"a","value":"1"},{"key":"b","value":""}],
	"taints":[{"key":"k","value":"v","effect":"NoSchedule"}],"nodeDrainTimeoutMinutes":0,
	"platform":{"subnetId":"/subnet","vmSize":"Standard_D8s_v3","enableEncryptionAtHost":true,"availabilityZone":"2",
	"osDisk":{"sizeGiB":128,"diskStorageAccountType":"Standard_LRS","encryptionSetId":"` + testDES + `","diskType":"Ephemeral"}}}}`

// TestNodePoolSpecFillsEveryARMPathField: a node pool with every property set reaches every
// field of Cluster Service's spec that has an arm_path, with the value it holds (an arm_path that
// names no property, a typo or a renamed field, fails here), and renders back to the same ARM
// form.
func TestNodePoolSpecFillsEveryARMPathField(t *testing.T) {
	doc, err := armpath.Parse([]byte(everyNodePoolProperty))
	if err != nil {
		t.Fatal(err)
	}
	want := &csv1.NodePoolSpec{
		VersionId: "4.19.7", ChannelGroup: "candidate", Replicas: 3, AutoRepair: true,
		Autoscaling: &csv1.NodePoolAutoscaling{Min: 2, Max: 7},
		Labels:      map[string]string{"a": "1", "b": ""},
		Taints:      []*csv1.Taint{{Key: "k", Value: "v", Effect: "NoSchedule"}},
		Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128, OsDiskStorageAccountType: "Standard_LRS", SubnetId: "/subnet",
			AvailabilityZone: "2", EncryptionAtHost: true, OsDiskEncryptionSetId: testDES, OsDiskPersistence: "Ephemeral"},
		NodeDrainTimeoutMinutes: proto.Int32(0),
	}
	got := api.NodePoolFromARM(doc).Spec
	if !proto.Equal(got, want) {
		t.Fatalf("filled:\n got %v\nwant %v", got, want)
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
		t.Fatalf("fields with an arm_path the ARM form did not reach: %v", unset)
	}
	// A body decoded into its api-version's type fills the same spec as its JSON objects.
	var ext v20260630preview.NodePool
	if err := json.Unmarshal([]byte(everyNodePoolProperty), &ext); err != nil {
		t.Fatal(err)
	}
	if typed := api.NodePoolFromARM(&ext).Spec; !proto.Equal(typed, want) {
		t.Fatalf("filled from the version's type:\n got %v\nwant %v", typed, want)
	}
	back := armpath.Render(got.ProtoReflect(), api.NodePoolShapes)
	if a, b := jsonOf(t, back), jsonOf(t, doc); a != b {
		t.Fatalf("rendered back:\n got %s\nwant %s", a, b)
	}
}

// TestRenderLeavesOutWhatIsNotSet: a scalar without presence is written when not zero, a bool
// always, an optional by its presence, and an unset message or empty list not at all.
func TestRenderLeavesOutWhatIsNotSet(t *testing.T) {
	got := armpath.Render((&csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "x"}}).ProtoReflect(), api.NodePoolShapes)
	want := map[string]any{"properties": map[string]any{"autoRepair": false,
		"platform": map[string]any{"vmSize": "x", "enableEncryptionAtHost": false}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rendered %v, want %v", got, want)
	}
}

// TestFillFromARMPathForms: "/a" is read from the document's root whatever the message's place,
// "." is the holder's own object, and "-" is never read from the document.
func TestFillFromARMPathForms(t *testing.T) {
	doc := map[string]any{
		"name":       "c1",
		"id":         "not-from-the-model",
		"properties": map[string]any{"version": map[string]any{"id": "4.19", "channelGroup": "fast"}},
	}
	var c csv1.Cluster
	if err := armpath.Fill(c.ProtoReflect(), doc, nil); err != nil {
		t.Fatal(err)
	}
	if c.GetArmResourceId() != "c1" || c.GetSpec().GetVersionId() != "4.19" || c.GetSpec().GetChannelGroup() != "fast" || c.GetId() != "" {
		t.Fatalf("filled %v", &c)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(back)
	return string(b)
}

// TestFillAndRenderConcurrently: Fill and Render of the same message type from many goroutines at
// once, each goroutine's first call among them (each descriptor's arm_path options are read once
// per process and shared), give each the same spec and the same ARM form (run with -race too).
func TestFillAndRenderConcurrently(t *testing.T) {
	doc, err := armpath.Parse([]byte(everyNodePoolProperty))
	if err != nil {
		t.Fatal(err)
	}
	want := api.NodePoolFromARM(doc).Spec
	wantARM := jsonOf(t, doc)
	const goroutines = 8
	errs := make(chan error, goroutines)
	for range goroutines {
		go func() {
			got := &csv1.NodePoolSpec{}
			if err := armpath.Fill(got.ProtoReflect(), doc, api.NodePoolShapes); err != nil {
				errs <- err
				return
			}
			if !proto.Equal(got, want) {
				errs <- fmt.Errorf("filled %v, want %v", got, want)
				return
			}
			b, err := json.Marshal(armpath.Render(got.ProtoReflect(), api.NodePoolShapes))
			if err != nil {
				errs <- err
				return
			}
			var back any
			if err := json.Unmarshal(b, &back); err != nil {
				errs <- err
				return
			}
			if b, _ = json.Marshal(back); string(b) != wantARM {
				errs <- fmt.Errorf("rendered %s, want %s", b, wantARM)
				return
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Embedded is embedded in lookupHolder and namedFirst, for TestLookupByJSONName.
type Embedded struct {
	C string `json:"c"`
	A string `json:"a"`
}

type inner struct {
	A string `json:"a"`
}

// lookupHolder and namedFirst are typed bodies' shapes: JSON names from tags or Go names, an
// embedded struct's fields found in its place among the holder's, the first of a name winning.
type lookupHolder struct {
	*Embedded
	A     string `json:"a"`
	Plain string
	Named *inner `json:"named"`
}

type namedFirst struct {
	A string `json:"a"`
	*Embedded
}

// TestLookupByJSONName: a struct's property is its first field of that JSON name in field order
// (untagged: its Go name), an embedded struct searched in its place, and skipped while nil.
func TestLookupByJSONName(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  any
		path string
		want any
	}{
		{"tagged", &lookupHolder{A: "holder"}, "a", "holder"},
		{"untagged_by_go_name", &lookupHolder{Plain: "p"}, "Plain", "p"},
		{"through_a_tagged_struct", &lookupHolder{Named: &inner{A: "n"}}, "named.a", "n"},
		{"embedded_before_wins", &lookupHolder{Embedded: &Embedded{A: "embedded"}, A: "holder"}, "a", "embedded"},
		{"embedded_nil_skipped", &lookupHolder{A: "holder"}, "a", "holder"},
		{"embedded_only_name", &lookupHolder{Embedded: &Embedded{C: "c"}}, "c", "c"},
		{"embedded_only_name_nil", &lookupHolder{}, "c", nil},
		{"named_before_embedded_wins", &namedFirst{A: "holder", Embedded: &Embedded{A: "embedded"}}, "a", "holder"},
		{"embedded_after_named", &namedFirst{Embedded: &Embedded{C: "c"}}, "c", "c"},
		{"no_such_name", &lookupHolder{}, "d", nil},
		{"json_objects", map[string]any{"a": map[string]any{"b": "x"}}, "a.b", "x"},
		{"json_null", map[string]any{"a": nil}, "a", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := armpath.Lookup(tc.obj, tc.path); got != tc.want {
				t.Fatalf("Lookup(%s) = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}
}
