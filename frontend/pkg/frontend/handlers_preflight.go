package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Deployment preflight is ARM's validation of a template before it deploys it: ARM posts the
// template's resources of our namespace and expects 200 with {"status":"Succeeded"} or
// {"status":"Failed","error":{…}} — never an error status for invalid content. Each resource is
// checked as a PUT of its own api-version would check it, statically: no Cluster Service call,
// no store read (the resources may depend on others of the same template that do not exist yet).
// The preflight call's own api-version is ARM's, not ours, so it is not checked.
const preflightPattern = "POST /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}" + providerPath + "/deployments/{deploymentName}/preflight"

type preflightRequest struct {
	Resources []json.RawMessage `json:"resources"`
}

type preflightResult struct {
	Status string                 `json:"status"`
	Error  *armdoc.CloudErrorBody `json:"error,omitempty"`
}

// preflightValidators check one resource body of a type, in the given api-version. Keys are
// lowercase resource types.
var preflightValidators = map[string]func(v api.Version, body []byte) error{
	"microsoft.redhatopenshift/hcpopenshiftclusters": func(v api.Version, body []byte) error {
		c, err := v.DecodeCluster(body)
		if err != nil {
			return err
		}
		return preflightNetwork(v, c)
	},
}

// preflightNetwork refuses a cluster whose network or VNet integration subnet its PUT would have
// Cluster Service refuse (overlapping blocks, a host prefix out of range, the cluster's own
// subnet): the rules are Cluster Service's model, called here on the spec as Cluster Service
// would default it, and their violations are answered as the PUT answers them
// (fieldViolations, through CreateClusterRequest's arm_path options). The rest of Cluster
// Service's checks need what only the PUT has (the request's subscription, identities, the
// version catalogue), so they are left to it.
func preflightNetwork(v api.Version, c *api.Cluster) error {
	spec := c.CopySpec()
	model.DefaultCluster(spec)
	var vs model.Violations
	model.ValidateNetwork(&vs, "cluster.spec.network", spec.GetNetwork())
	model.ValidateVnetIntegrationSubnet(&vs, "cluster.spec.azure.vnet_integration_subnet_id", spec.GetAzure())
	return fieldViolations(v, &csv1.CreateClusterRequest{}, vs.Err())
}

// templateOnlyKeys are deployment-template keys of a resource that are not part of the
// resource's body.
var templateOnlyKeys = []string{"apiVersion", "dependsOn", "condition", "copy", "comments", "scope", "kind"}

func (s *Server) preflight(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	var req preflightRequest
	if err := json.Unmarshal(ri.body, &req); err != nil {
		return s.writePreflight(w, &armdoc.CloudErrorBody{Code: arm.CodeInvalidRequestContent,
			Message: fmt.Sprintf("The preflight request body is not valid JSON: %v", err)})
	}
	var details []armdoc.CloudErrorBody
	for i, raw := range req.Resources {
		// A request of tens of thousands of resources is answered with the first problems,
		// as a body is (api.MaxReportedProblems); the resources after them are not read.
		if len(details) >= api.MaxReportedProblems {
			details = details[:api.MaxReportedProblems]
			break
		}
		details = append(details, s.preflightResource(r, i, raw)...)
	}
	if len(details) > api.MaxReportedProblems {
		details = details[:api.MaxReportedProblems]
	}
	// Each message names its resource by what the caller sent (name, type, api-version,
	// location): cut as any ARM error is, so the answer is never many times the request.
	for i := range details {
		details[i].Message, details[i].Target = arm.Clip(details[i].Message), arm.Clip(details[i].Target)
	}
	switch len(details) {
	case 0:
		return s.writePreflight(w, nil)
	case 1:
		return s.writePreflight(w, &details[0])
	}
	return s.writePreflight(w, &armdoc.CloudErrorBody{Code: arm.CodeMultipleErrorsOccurred,
		Message: "Preflight validation failed for more than one problem; see details.", Details: details})
}

// preflightResource validates one template resource and returns its problems, each message
// naming the resource.
func (s *Server) preflightResource(r *http.Request, i int, raw json.RawMessage) []armdoc.CloudErrorBody {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return []armdoc.CloudErrorBody{{Code: arm.CodeInvalidRequestContent, Target: fmt.Sprintf("resources[%d]", i),
			Message: fmt.Sprintf("Resource %d is not a JSON object.", i)}}
	}
	var typ, apiVersion, name, location string
	_ = json.Unmarshal(m["type"], &typ)
	_ = json.Unmarshal(m["apiVersion"], &apiVersion)
	_ = json.Unmarshal(m["name"], &name)
	_ = json.Unmarshal(m["location"], &location)
	validate, ok := preflightValidators[strings.ToLower(typ)]
	if !ok {
		// Types of our namespace without static checks (and anything else ARM sends) pass:
		// their PUT still validates everything.
		return nil
	}
	label := fmt.Sprintf("Resource '%s' (%s)", name, typ)
	for _, k := range templateOnlyKeys {
		delete(m, k)
	}
	body, err := json.Marshal(m)
	if err != nil {
		return []armdoc.CloudErrorBody{{Code: arm.CodeInvalidRequestContent, Message: fmt.Sprintf("%s: %v", label, err)}}
	}
	if hasTemplateExpression(body) {
		// ARM sends what it could not evaluate before deployment as "[…]" expressions; a
		// static check would reject valid templates, so such a resource is left to its PUT.
		info(r).logger().Info("preflight: resource has unevaluated template expressions; not validated", "resourceName", name, "type", typ)
		return nil
	}
	v, ok := api.Lookup(apiVersion)
	if !ok {
		return []armdoc.CloudErrorBody{{Code: "InvalidApiVersionParameter", Target: fmt.Sprintf("resources[%d].apiVersion", i),
			Message: fmt.Sprintf("%s: the api-version '%s' is not supported. The supported versions are '%s'.", label, apiVersion, strings.Join(api.Versions(), ","))}}
	}
	v = v.WithRoleSets(s.cfg.RoleSets) // a cluster's operator names, checked as for a create
	var problems []armdoc.CloudErrorBody
	if location != "" && normalizeLocation(location) != s.cfg.Location {
		problems = append(problems, armdoc.CloudErrorBody{Code: arm.CodeInvalidRequestContent, Target: "location",
			Message: fmt.Sprintf("%s: the location '%s' is not served by this endpoint, which serves '%s'.", label, location, s.cfg.Location)})
	}
	// body was rebuilt from a map, which keeps one of two equal keys: the PUT of this resource
	// would refuse them, so preflight reads the resource as sent for them.
	if _, err := api.ParseObject(raw); err != nil {
		problems = append(problems, labelled(label, err)...)
	}
	if err := validate(v, body); err != nil {
		problems = append(problems, labelled(label, err)...)
	}
	return problems
}

// labelled is a decoder's error as preflight problems, each message naming the resource.
func labelled(label string, err error) []armdoc.CloudErrorBody {
	var ce *arm.CloudError
	if !errors.As(err, &ce) {
		return []armdoc.CloudErrorBody{{Code: arm.CodeInvalidRequestContent, Message: fmt.Sprintf("%s: %v", label, err)}}
	}
	found := ce.Details
	if len(found) == 0 {
		found = []armdoc.CloudErrorBody{ce.CloudErrorBody}
	}
	out := make([]armdoc.CloudErrorBody, 0, len(found))
	for _, d := range found {
		d.Message = label + ": " + d.Message
		out = append(out, d)
	}
	return out
}

// hasTemplateExpression says whether any string in the JSON value is an ARM template expression
// ("[…]", but not an escaped "[[…").
func hasTemplateExpression(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch t := v.(type) {
		case string:
			return strings.HasPrefix(t, "[") && !strings.HasPrefix(t, "[[") && strings.HasSuffix(t, "]")
		case []any:
			for _, e := range t {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range t {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func (s *Server) writePreflight(w http.ResponseWriter, problem *armdoc.CloudErrorBody) error {
	res := preflightResult{Status: "Succeeded"}
	if problem != nil {
		res = preflightResult{Status: "Failed", Error: problem}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode preflight result: %w", err)
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}
