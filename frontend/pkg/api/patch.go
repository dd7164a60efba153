package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/openhcp/openhcp/internal/arm"
)

// readOnlyEnvelope are fields of every resource body that a PATCH may carry and that are ignored.
var readOnlyEnvelope = []string{"id", "name", "type", "systemData"}

// Patch implements Version.PatchCluster for a version: updatePaths are the paths of the
// version's update schema (HcpOpenShiftClusterUpdate), each allowing everything below it.
func Patch(v Version, stored *Cluster, body []byte, updatePaths []string) (*Cluster, error) {
	merged, err := patchedBody(body, v.RenderCluster(stored), v.String(), updatePaths, "cluster", nil)
	if err != nil {
		return nil, err
	}
	next, err := v.DecodeClusterUpdate(merged, stored)
	if err != nil {
		return nil, err
	}
	v.Preserve(stored, next)
	return next, nil
}

// patchedBody is the body a PATCH makes of a resource, for the version's decoder to read as a
// PUT body: the patch (decodePatch: updatePaths and noun as there) merged (RFC 7396) into
// rendered, the resource as the version shows it. Every kind patches through it; what differs
// is the kind's, in adjust, called with the merged document and the patch before the document
// is written out (a nil adjust changes nothing).
func patchedBody(body []byte, rendered any, version string, updatePaths []string, noun string, adjust func(merged, patch map[string]any)) ([]byte, error) {
	patch, err := decodePatch(body, rendered, version, updatePaths, noun)
	if err != nil {
		return nil, err
	}
	doc, err := renderedBody(rendered)
	if err != nil {
		return nil, err
	}
	merged, _ := mergePatch(doc, patch).(map[string]any)
	if adjust != nil {
		adjust(merged, patch)
	}
	return json.Marshal(merged)
}

// dropReadOnly removes the read-only properties keys from a merged body: the decoder accepts
// and ignores read-only fields, but these are not the caller's to send.
func dropReadOnly(merged map[string]any, keys ...string) {
	if props, ok := merged["properties"].(map[string]any); ok {
		for _, k := range keys {
			delete(props, k)
		}
	}
}

// decodePatch reads a PATCH body: one JSON object (numbers kept as written, no key twice in an
// object) whose keys are all in, or below, updatePaths (the version's update schema) or the
// read-only envelope, spelt exactly as they are. A key outside them is an error naming it;
// noun is what its message says cannot change.
//
// shape is the resource as the version renders it: a key that it names in another case is an
// error at any depth, also where its value is null (the merge would drop it silently, and the
// decoder of the merged body never sees it).
func decodePatch(body []byte, shape any, version string, updatePaths []string, noun string) (map[string]any, error) {
	raw, errs, err := parseJSON(body)
	if err != nil {
		return nil, err // says what could not be read: a syntax error, or nesting too deep
	}
	patch, ok := raw.(map[string]any)
	if !ok {
		return nil, arm.NewCloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "",
			"The request content was invalid and could not be deserialized: a PATCH body is one JSON object.")
	}
	unknownFields(patch, reflect.TypeOf(shape), false, errs)
	if len(errs.list) > 0 {
		return nil, arm.Multiple(errs.list) // a key in the wrong case would be reported again below
	}
	allowed := append(append([]string(nil), updatePaths...), readOnlyEnvelope...)
	checkPatchPaths(patch, &path{}, "", allowed, version, noun, errs)
	if len(errs.list) > 0 {
		return nil, arm.Multiple(errs.list)
	}
	return patch, nil
}

// renderedBody is a resource as a version renders it, as the JSON object a merge patch applies to.
func renderedBody(rendered any) (map[string]any, error) {
	current, err := json.Marshal(rendered)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(current, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// checkPatchPaths reports every key of the patch that is not in, or below, an allowed path. at
// and dotted are the same place: dotted, the form the allowed paths are written in, is only ever
// an ancestor of an allowed path, so it stays as short as they are.
func checkPatchPaths(obj map[string]any, at *path, dotted string, allowed []string, version, noun string, errs *problems) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs.full() {
			return
		}
		p := join(dotted, k)
		switch state, spelling := pathState(p, allowed); state {
		case pathAllowed:
		case pathPrefix:
			if sub, ok := obj[k].(map[string]any); ok {
				at.property(k)
				checkPatchPaths(sub, at, p, allowed, version, noun, errs)
				at.pop()
			}
		case pathWrongCase:
			at.property(k)
			errs.add(at, "The property '%s' is not known in %s: property names are case-sensitive; did you mean '%s'?", k, at.parent(), spelling)
			at.pop()
		default:
			at.property(k)
			errs.add(at, "The property '%s' is not part of a PATCH body in api-version %s: it cannot be changed after the %s is created.", p, version, noun)
			at.pop()
		}
	}
}

type patchPath int

const (
	pathUnknown   patchPath = iota
	pathPrefix              // an ancestor of an allowed path
	pathAllowed             // an allowed path or below one
	pathWrongCase           // would be one of the above in another case
)

// pathState says where p stands against the allowed paths; for pathWrongCase it also returns
// the last segment of p as the allowed path spells it.
func pathState(p string, allowed []string) (patchPath, string) {
	out := pathUnknown
	for _, a := range allowed {
		if p == a || strings.HasPrefix(p, a+".") {
			return pathAllowed, ""
		}
		if strings.HasPrefix(a, p+".") {
			out = pathPrefix
		}
	}
	if out != pathUnknown {
		return out, ""
	}
	lp := strings.ToLower(p)
	for _, a := range allowed {
		la := strings.ToLower(a)
		if lp == la || strings.HasPrefix(la, lp+".") {
			spelt := a[:len(p)]
			return pathWrongCase, spelt[strings.LastIndex(spelt, ".")+1:]
		}
		if strings.HasPrefix(lp, la+".") {
			// Below an allowed path in another case: the decoder names the wrong segment.
			return pathWrongCase, a[strings.LastIndex(a, ".")+1:]
		}
	}
	return pathUnknown, ""
}

// mergePatch applies an RFC 7396 merge patch. Keys match exactly, as ARM property names do.
func mergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		prev := t[k]
		delete(t, k)
		if v == nil {
			continue
		}
		t[k] = mergePatch(prev, v)
	}
	return t
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
