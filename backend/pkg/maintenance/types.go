package maintenance

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// TaskTypes is every task type the maintenance service runs, the one list of them: its actuator
// runs these, and an SRE's request to create a single task may name any of them (the admin API
// refuses another name, or a parameter the type does not list, before it signs the request). A
// new task type is added here and nowhere else. The admin API calls it with a nil cs: it only
// reads the types' names and parameters, it never runs a step. rc reaches the region's PKI
// holder (its zero value: none here, and a region certificate rotation fails saying so).
func TaskTypes(cs ClusterService, cfg ZStreamConfig, rc RegionCertConfig) []TaskType {
	return []TaskType{
		ZStreamUpgrade(cs, cfg),
		NodePoolZStreamUpgrade(cs, cfg),
		BreakGlassSignerRotation(cs, SignerRotationConfig{}),
		RegionCertificateRotation(rc),
	}
}

// regionType says whether the type named works on the region (TaskType.Region).
func regionType(types []TaskType, name string) bool {
	i := slices.IndexFunc(types, func(t TaskType) bool { return t.Name == name })
	return i >= 0 && types[i].Region
}

// Bounds of a task created by a request: its parameters are copied into the task document and
// shown in listings, so the maintenance service bounds them rather than trust the document's
// writer.
const (
	maxTaskParams     = 16
	maxTaskParamValue = 256
)

var (
	// taskTypeRE is what a task type's name may be.
	taskTypeRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,62}[a-z0-9])?$`)
	// paramNameRE is what a parameter's name may be (the types' names are camelCase).
	paramNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)
	// clusterIDRE bounds a cluster ID, which becomes part of document IDs (window/<id>,
	// lock/cluster/<id>); whether a cluster has it is Cluster Service's to say.
	clusterIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,62}[a-z0-9])?$`)
	// taskIDRE bounds a task ID named by a request (a campaign's task ID is
	// <campaign>-<cluster>[-<node pool>], a request's task the request's UUID).
	taskIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,198}[a-z0-9])?$`)
)

// TaskSpec is a single task an SRE asks for: its type and the type's parameters. The cluster is
// the request's.
type TaskSpec struct {
	Type   string            `json:"type"`
	Params map[string]string `json:"params,omitempty"`
}

// validate checks what the spec says on its own: a type name and bounded parameters.
func (s *TaskSpec) validate() error {
	if !taskTypeRE.MatchString(s.Type) {
		return invalidRequest("type", "task type %.64q is no task type name", s.Type)
	}
	if len(s.Params) > maxTaskParams {
		return invalidRequest("params", "at most %d parameters, got %d", maxTaskParams, len(s.Params))
	}
	for k, v := range s.Params {
		if !paramNameRE.MatchString(k) {
			return invalidRequest("params", "parameter name %.64q must be letters and digits, starting with a letter", k)
		}
		if len(v) > maxTaskParamValue || strings.ContainsFunc(v, unicode.IsControl) {
			return invalidRequest("params."+k, "must be at most %d bytes without control characters, got %d bytes", maxTaskParamValue, len(v))
		}
	}
	return nil
}

// checkAgainst checks the spec against the task types: the type is one of them, every parameter
// it names is one the type lists, every required one is there.
func (s *TaskSpec) checkAgainst(types []TaskType) error {
	i := slices.IndexFunc(types, func(t TaskType) bool { return t.Name == s.Type })
	if i < 0 {
		names := make([]string, len(types))
		for j, t := range types {
			names[j] = t.Name
		}
		return invalidRequest("type", "unknown task type %q: the maintenance service runs %s", s.Type, strings.Join(names, ", "))
	}
	tt := types[i]
	if tt.Params == nil {
		return nil
	}
	for k := range s.Params {
		if !slices.ContainsFunc(tt.Params, func(p Param) bool { return p.Name == k }) {
			return invalidRequest("params."+k, "task type %s takes no parameter %q; it takes %s", tt.Name, k, paramList(tt.Params))
		}
	}
	for _, p := range tt.Params {
		v, given := s.Params[p.Name]
		if p.Required && v == "" {
			return invalidRequest("params."+p.Name, "task type %s needs parameter %s: %s", tt.Name, p.Name, p.Doc)
		}
		if given && p.Check != nil {
			if err := p.Check(v); err != nil {
				return invalidRequest("params."+p.Name, "task type %s: %v", tt.Name, err)
			}
		}
	}
	return nil
}

func paramList(ps []Param) string {
	if len(ps) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		if p.Required {
			b.WriteString(" (required)")
		}
	}
	return b.String()
}
