package server

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Which log lines a must-gather takes. The logs are every tenant's, so a line is taken only
// when it names one of the cluster's own full IDs, and each kind of ID is matched as narrowly
// as it can be named:
//   - Cluster Service IDs (the cluster's, its node pools'): 32 characters the service chose at
//     random, taken wherever they occur (also inside a name such as "cluster-<id>");
//   - ARM resource IDs (recorded by the frontend): a value that is the ID, or the ID followed
//     by "/" or "?" (a child resource, a request path);
//   - operation IDs: a value that is the ID;
//   - correlation IDs: chosen by ARM's caller, so only the ones recorded for the cluster's
//     operations, only full GUIDs, and only as the whole value of a correlation field
//     ("correlationId", "correlationRequestID", ...). A caller's "e" would otherwise take
//     every tenant's lines.
// A line that is not a JSON object (a process's own log format) is searched for Cluster
// Service and ARM IDs only.

// logIDs are the lowercase IDs of one cluster, by kind.
type logIDs struct {
	clusterIDs, armIDs, operationIDs, correlationIDs []string
}

// refusedCorrelation is a recorded correlation ID that is not searched, and why.
type refusedCorrelation struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// correlations sets the correlation IDs to search: the full ones of recorded (the cluster's
// operations'), or, when the SRE asked for some, those, each of which must be one of them.
// It returns the recorded ones it refused.
func (ids *logIDs) correlations(recorded, asked []string) ([]refusedCorrelation, error) {
	refused := []refusedCorrelation{}
	var full []string
	for _, c := range recorded {
		lc := strings.ToLower(strings.TrimSpace(c))
		switch {
		case lc == "":
		case !guidRE.MatchString(lc):
			refused = append(refused, refusedCorrelation{ID: c, Why: "not a full correlation ID (a GUID): matching it could take other tenants' lines"})
		case !slices.Contains(full, lc):
			full = append(full, lc)
		}
	}
	if len(asked) == 0 {
		ids.correlationIDs = full
		return refused, nil
	}
	ids.correlationIDs = nil
	for _, a := range asked {
		la := strings.ToLower(strings.TrimSpace(a))
		if !slices.Contains(full, la) {
			return nil, badRequest("correlationId",
				"correlationId %q is not a full correlation ID of this cluster's operations (they are: %s)", truncate(a, 64), strings.Join(full, ", "))
		}
		if !slices.Contains(ids.correlationIDs, la) {
			ids.correlationIDs = append(ids.correlationIDs, la)
		}
	}
	return refused, nil
}

// compact drops empty and repeated IDs.
func (ids logIDs) compact() logIDs {
	return logIDs{clusterIDs: compact(ids.clusterIDs), armIDs: compact(ids.armIDs),
		operationIDs: compact(ids.operationIDs), correlationIDs: compact(ids.correlationIDs)}
}

// all lists every ID searched for.
func (ids logIDs) all() []string {
	return slices.Concat(ids.clusterIDs, ids.armIDs, ids.operationIDs, ids.correlationIDs)
}

// match says whether a log line is about the cluster.
func (ids logIDs) match(line []byte) bool {
	lower := bytes.ToLower(line)
	// Every match contains one of the IDs: most lines are dismissed without parsing.
	hit := false
	for _, id := range ids.all() {
		if bytes.Contains(lower, []byte(id)) {
			hit = true
			break
		}
	}
	if !hit {
		return false
	}
	var v any
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && json.Unmarshal(line, &v) == nil {
		return ids.matchValue("", v)
	}
	return ids.matchText(string(lower))
}

// matchValue walks a JSON value; key is the field it is the value of.
func (ids logIDs) matchValue(key string, v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if ids.matchValue(k, x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if ids.matchValue(key, x) {
				return true
			}
		}
	case string:
		lv := strings.ToLower(v)
		if strings.HasPrefix(strings.ToLower(key), "correlation") && slices.Contains(ids.correlationIDs, lv) {
			return true
		}
		if slices.Contains(ids.operationIDs, lv) {
			return true
		}
		return ids.matchText(lv)
	}
	return false
}

// matchText finds Cluster Service and ARM IDs in lowercase text.
func (ids logIDs) matchText(lv string) bool {
	for _, id := range ids.clusterIDs {
		if strings.Contains(lv, id) {
			return true
		}
	}
	for _, id := range ids.armIDs {
		for rest := lv; ; {
			i := strings.Index(rest, id)
			if i < 0 {
				break
			}
			if after := rest[i+len(id):]; after == "" || strings.ContainsRune("/?\" \t,;)]}'", rune(after[0])) {
				return true
			}
			rest = rest[i+1:]
		}
	}
	return false
}
