package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestNodePoolAnswersOfManyProblems: a body with a problem in each checked node pool property is
// answered with every problem, in the order of the properties (location, version, platform with
// vmSize before subnetId, its OS disk, replicas, autoScaling, labels entry by entry, taints,
// identity), each with its code, target and message; a body without properties is told that
// properties.platform is missing; and an OS disk size kept from the stored pool is not held to
// the version's bounds. The answers were taken from the hand-written node pool checks the
// generated ones replaced.
func TestNodePoolAnswersOfManyProblems(t *testing.T) {
	const many = `{"properties":{
		"version":{"channelGroup":""},
		"platform":{"subnetId":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n","vmSize":"",
			"osDisk":{"sizeGiB":32,"diskStorageAccountType":"Ultra","encryptionSetId":"nope","diskType":"Other"}},
		"replicas":-1,"autoScaling":{"min":-1,"max":-2},
		"labels":[{"key":""},{"key":"a"},{"key":"a"}],
		"taints":[{"key":"","effect":"Sometimes"}]},
		"identity":{"type":"Odd"}}`
	stored := &api.NodePool{}
	// manyAnswers are the answers to many: version.id is required from 2025-12-23-preview on,
	// the OS disk's maximum is the version's (maxDisk), and diskType came with 2025-12-23-preview.
	manyAnswers := func(idRequired bool, maxDisk string, diskType bool) []string {
		const c = "InvalidRequestContent "
		out := []string{
			c + "location: Missing required field 'location'.",
			c + "properties.version.channelGroup: The value of 'properties.version.channelGroup' must not be empty: leave it out for the default channel group 'stable'.",
		}
		if idRequired {
			out = append(out, c+"properties.version.id: Missing required field 'properties.version.id'.")
		}
		out = append(out,
			c+"properties.platform.vmSize: Missing required field 'properties.platform.vmSize'.",
			c+"properties.platform.subnetId: Invalid value '/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n' for field 'properties.platform.subnetId': must be a resource ID of type Microsoft.Network/virtualNetworks/subnets.",
			c+"properties.platform.osDisk.sizeGiB: Invalid value '32' for field 'properties.platform.osDisk.sizeGiB' (must be between 64 and "+maxDisk+").",
			c+"properties.platform.osDisk.diskStorageAccountType: Invalid value 'Ultra' for field 'properties.platform.osDisk.diskStorageAccountType' (must be one of: Premium_LRS, StandardSSD_LRS, Standard_LRS).",
			c+"properties.platform.osDisk.encryptionSetId: Invalid value 'nope' for field 'properties.platform.osDisk.encryptionSetId': not a resource ID.")
		if diskType {
			out = append(out, c+"properties.platform.osDisk.diskType: Invalid value 'Other' for field 'properties.platform.osDisk.diskType' (must be one of: Managed, Ephemeral).")
		}
		return append(out,
			c+"properties.replicas: Invalid value '-1' for field 'properties.replicas' (must be at least 0).",
			c+"properties.autoScaling.min: Invalid value '-1' for field 'properties.autoScaling.min' (must be at least 0).",
			c+"properties.autoScaling.max: Invalid value '-2' for field 'properties.autoScaling.max' (must be at least 0).",
			c+"properties.labels[0].key: Missing required field 'properties.labels[0].key'.",
			c+"properties.labels[2].key: The label key 'a' is given more than once.",
			c+"properties.taints[0].key: Field 'properties.taints[0].key' must be 1 to 316 characters long.",
			c+"properties.taints[0].effect: Invalid value 'Sometimes' for field 'properties.taints[0].effect' (must be one of: NoSchedule, PreferNoSchedule, NoExecute).",
			c+"identity.type: Invalid value 'Odd' for field 'identity.type' (must be one of: None, SystemAssigned, UserAssigned, SystemAssigned,UserAssigned).")
	}
	for _, tc := range []struct {
		name, version, body string
		stored              *api.NodePool
		storedSize          int32
		want                []string
	}{
		// 2024-06-10-preview has no osDisk.diskType.
		{name: "many", version: "2024-06-10-preview", body: strings.Replace(many, `,"diskType":"Other"`, "", 1), want: manyAnswers(false, "2147483647", false)},
		{name: "many", version: "2025-12-23-preview", body: many, want: manyAnswers(true, "2147483647", true)},
		{name: "many", version: "2026-06-30-preview", body: many, want: manyAnswers(true, "4095", true)},
		{name: "many", version: "2026-09-01-preview", body: many, want: manyAnswers(true, "4095", true)},
		{name: "no_properties", version: "2026-06-30-preview", body: `{"location":"eastus"}`,
			want: []string{"InvalidRequestContent properties.platform: Missing required field 'properties.platform'."}},
		{name: "stored_size_kept", version: "2026-06-30-preview", stored: stored, storedSize: 8000,
			body: `{"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{"vmSize":"x","osDisk":{"sizeGiB":8000}}}}`},
		{name: "stored_size_changed", version: "2026-06-30-preview", stored: stored, storedSize: 8000,
			body: `{"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{"vmSize":"x","osDisk":{"sizeGiB":7000}}}}`,
			want: []string{"InvalidRequestContent properties.platform.osDisk.sizeGiB: Invalid value '7000' for field 'properties.platform.osDisk.sizeGiB' (must be between 64 and 4095)."}},
	} {
		t.Run(tc.name+"/"+tc.version, func(t *testing.T) {
			if tc.stored != nil {
				np, err := npVersion(t, tc.version).DecodeNodePool([]byte(`{"location":"eastus","properties":{"version":{"id":"4.19"},"platform":{"vmSize":"x"}}}`), nil)
				if err != nil {
					t.Fatal(err)
				}
				np.Spec.Platform.OsDiskSizeGib = tc.storedSize
				tc.stored = np
			}
			_, err := npVersion(t, tc.version).DecodeNodePool([]byte(tc.body), tc.stored)
			var got []string
			if err != nil {
				ce, ok := arm.AsCloudError(err)
				if !ok {
					t.Fatalf("want a CloudError, got %v", err)
				}
				details := ce.Details
				if len(details) == 0 {
					details = []armdoc.CloudErrorBody{ce.CloudErrorBody}
				}
				for _, d := range details {
					got = append(got, fmt.Sprintf("%s %s: %s", d.Code, d.Target, d.Message))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
