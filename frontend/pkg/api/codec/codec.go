// Package codec is what every api-version does alike with its resources: decode a body into the
// version's generated type, check it, fill the internal model, and render the model back into
// that type. A version package gives only its types and what differs in meaning (its rules),
// and registers the codec with package api. The version's types differ, their properties do not:
// a body is read by path (armpath.Lookup) and a rendering is built in JSON form and read into the
// version's type, which leaves out what the version has no property for.
package codec

import (
	"encoding/json"
	"fmt"

	"github.com/openhcp/openhcp/frontend/pkg/api/armpath"
	"github.com/openhcp/openhcp/internal/arm"
)

// envelope is the ARM envelope of a tracked resource, as every api-version renders it: tags
// shown as {} when there are none, the location and IDs left out when empty.
func envelope(id *arm.ResourceID, resourceType, location string, tags map[string]string, systemData *arm.SystemData) map[string]any {
	doc := map[string]any{"tags": tags}
	if tags == nil {
		doc["tags"] = map[string]string{}
	}
	if id != nil {
		doc["id"], doc["name"], doc["type"] = id.String(), id.Name(), resourceType
	}
	if location != "" {
		doc["location"] = location
	}
	if systemData != nil {
		doc["systemData"] = systemData
	}
	return doc
}

// render reads doc, a resource in JSON form, into the version's type T.
func render[T any](doc map[string]any) *T {
	ext := new(T)
	b, err := json.Marshal(doc)
	if err == nil {
		err = json.Unmarshal(b, ext)
	}
	if err != nil {
		// The JSON form has the specification's types: a mismatch is a wrong arm_path or a
		// version's type that differs from the others where the codec says they are alike.
		panic(fmt.Sprintf("render into %T: %v", ext, err))
	}
	return ext
}

// str is the string at path in doc, "" when absent.
func str(doc any, path string) string {
	if s := armpath.As[string](doc, path); s != nil {
		return *s
	}
	return ""
}

// tags are the resource's tags in doc, nil when it has none.
func tags(doc any) map[string]string {
	t, _ := armpath.Lookup(doc, "tags").(map[string]string)
	return t
}
