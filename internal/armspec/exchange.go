package armspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// ValidateExchange checks one answer of the RP to a request, whatever the route:
//   - a route of the spec (found by method and path in the request's api-version): the
//     operation's declared response (ValidateResponse);
//   - the RP's async-operation routes, which ARM's contract has and the spec does not declare
//     (…/locations/{location}/hcpOperationStatuses/{id} and …/hcpOperationResults/{id}): the
//     status is common-types' OperationStatusResult; a result is what the operation that
//     started it answers synchronously (the resource's GET body, or an action's body);
//   - any other error status with a body: common-types' ErrorResponse.
//
// validated is false for an answer it has no schema for (a path outside ARM's
// /subscriptions and /providers, a 304 to a conditional GET, subscription lifecycle and
// deployment preflight, which belong to ARM's RP contract, not to this spec; a success on a
// route of an api-version the spec does not have). err is Violations, or another error when
// the spec itself is broken.
func ValidateExchange(method string, u *url.URL, status int, header http.Header, body []byte) (validated bool, err error) {
	empty := len(bytes.TrimSpace(body)) == 0
	if status == http.StatusNotModified && empty {
		return false, nil // a conditional GET: HTTP's answer, not the operation's
	}
	apiVersion := u.Query().Get("api-version")
	var s *Spec
	if slices.Contains(Versions(), apiVersion) {
		if s, err = Load(apiVersion); err != nil {
			return false, err
		}
		if o, ok := s.Match(method, u.Path); ok {
			return true, s.ValidateResponse(o.ID, status, header, body)
		}
	}
	switch {
	case !armPath(u.Path):
		return false, nil // e.g. /healthz
	case status >= 400:
		return true, ValidateCommon("ErrorResponse", body)
	}
	if s == nil || method != http.MethodGet {
		return false, nil
	}
	switch asyncRoute(u.Path) {
	case "hcpoperationstatuses":
		return true, ValidateCommon("OperationStatusResult", body)
	case "hcpoperationresults":
		if status != http.StatusOK {
			if !empty {
				return true, Violations{{"(root)", fmt.Sprintf("an operation result with status %d has a body", status)}}
			}
			return true, nil
		}
		return true, s.validateResult(status, body)
	}
	return false, nil
}

// armPath says whether a path is one ARM routes to an RP.
func armPath(p string) bool {
	first := strings.ToLower(splitPath(p)[0])
	return first == "subscriptions" || first == "providers"
}

// asyncRoute names the async-operation route of a path, or "".
// /subscriptions/{s}/providers/Microsoft.RedHatOpenShift/locations/{l}/{route}/{id}
func asyncRoute(p string) string {
	segs := splitPath(p)
	if len(segs) != 8 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "providers") ||
		!strings.EqualFold(segs[3], "Microsoft.RedHatOpenShift") || !strings.EqualFold(segs[4], "locations") {
		return ""
	}
	return strings.ToLower(segs[6])
}

// resultOps is the operation whose 200 body an operation result of each resource type is.
var resultOps = map[string]string{
	"microsoft.redhatopenshift/hcpopenshiftclusters":               "HcpOpenShiftClusters_Get",
	"microsoft.redhatopenshift/hcpopenshiftclusters/nodepools":     "NodePools_Get",
	"microsoft.redhatopenshift/hcpopenshiftclusters/externalauths": "ExternalAuths_Get",
}

// validateResult checks a finished operation's 200 result: a resource (known by its type) or
// the admin credential of requestAdminCredential (the one action with a body).
func (s *Spec) validateResult(status int, body []byte) error {
	var probe struct {
		Type       *string          `json:"type"`
		Kubeconfig *json.RawMessage `json:"kubeconfig"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return Violations{{"(root)", fmt.Sprintf("operation result is not a JSON object: %v", err)}}
	}
	switch {
	case probe.Type != nil:
		op, ok := resultOps[strings.ToLower(*probe.Type)]
		if !ok {
			return Violations{{"type", fmt.Sprintf("operation result of unknown resource type %q", *probe.Type)}}
		}
		return s.ValidateResponse(op, status, nil, body)
	case probe.Kubeconfig != nil:
		return s.ValidateResponse("HcpOpenShiftClusters_RequestAdminCredential", status, nil, body)
	}
	return Violations{{"(root)", "operation result is neither a resource nor an admin credential"}}
}
