package maestro

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
	cecommon "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/common"
	cerrors "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/errors"
	ceutils "open-cluster-management.io/sdk-go/pkg/cloudevents/clients/utils"
)

// TestRefusalIsOnlyMaestrosInvalid: Apply's error is a *RefusedError exactly when Maestro's
// source client refused the work as invalid (built here as the client builds it, from sdk-go's
// own ValidateWork of a work over the size limit), with the validator's words as Reason; an
// unavailable broker, a conflict or a NotFound stay plain errors, which the caller retries.
func TestRefusalIsOnlyMaestrosInvalid(t *testing.T) {
	big := &workv1.ManifestWork{}
	big.Name, big.Namespace, big.UID, big.ResourceVersion = "w", "mgmt-1", "0b6f4c5e", "1"
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"},"data":{"k":%q}}`, strings.Repeat("x", 600*1024))
	big.Spec.Workload.Manifests = []workv1.Manifest{{}}
	big.Spec.Workload.Manifests[0].Raw = []byte(cm)
	errs := ceutils.ValidateWork(big)
	if len(errs) == 0 {
		t.Fatal("sdk-go's ValidateWork takes a work of 600 KiB of manifests; the test's premise is gone")
	}
	invalid := apierrors.NewInvalid(cecommon.ManifestWorkGK, big.Name, errs)
	gr := schema.GroupResource{Group: "work.open-cluster-management.io", Resource: "manifestworks"}

	for _, tc := range []struct {
		name       string
		err        error
		refused    bool
		wantReason string
	}{
		{"the_validators_refusal_is_permanent", fmt.Errorf("maestro apply work mgmt-1/w: %w", invalid), true, "exceeds the 512000 limit"},
		{"an_unavailable_broker_is_not", cerrors.NewPublishError(gr, "w", errors.New("the cloudevents client is not ready")), false, ""},
		{"a_conflict_is_not", apierrors.NewConflict(gr, "w", errors.New("moved on")), false, ""},
		{"not_found_is_not", apierrors.NewNotFound(gr, "w"), false, ""},
		{"a_plain_error_is_not", errors.New("connection refused"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refusal("mgmt-1", "w", tc.err)
			var re *RefusedError
			if errors.As(err, &re) != tc.refused {
				t.Fatalf("refusal(%v) = %#v; refused want %v", tc.err, err, tc.refused)
			}
			if !tc.refused {
				if err != tc.err {
					t.Fatalf("refusal changed a transient error: %v", err)
				}
				return
			}
			if re.Work != "w" || re.Consumer != "mgmt-1" || !strings.Contains(re.Reason, tc.wantReason) || !apierrors.IsInvalid(err) {
				t.Fatalf("refusal = %+v (reason %q); want work mgmt-1/w, a reason with %q, still Invalid", re, re.Reason, tc.wantReason)
			}
			t.Logf("reason: %s", re.Reason)
		})
	}
}
