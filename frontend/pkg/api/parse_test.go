package api_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// FuzzParseObjectAgreesWithEncodingJSON: ParseObject reads any object encoding/json reads, to
// the same value (numbers as json.Number, the last of repeated keys), and refuses what
// encoding/json refuses. The committed corpus (testdata/fuzz) varies the shape: depth around
// the limit, many keys, long and escaped strings.
func FuzzParseObjectAgreesWithEncodingJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,-2.5e3,true,false,null,"x\u00e9\"\\"],"b":{"c":{}},"a":"last"}`))
	f.Add([]byte(` { "k" : "\ud83d\ude00" , "n" : 0 } `))
	f.Add([]byte(`{"bad utf8":"` + "\xff\xfe" + `"}`))
	f.Add([]byte(`{"a":` + strings.Repeat("[", api.MaxDepth-1) + strings.Repeat("]", api.MaxDepth-1) + `}`))
	f.Add([]byte(`{"a":1,}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := api.ParseObject(body)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var want map[string]any
		wantErr := json.Unmarshal(body, new(any)) // the syntax, trailing data included
		if wantErr == nil {
			wantErr = dec.Decode(&want)
		}
		if wantErr == nil && want == nil {
			wantErr = json.Unmarshal([]byte(`1`), &want) // null: not an object
		}
		switch {
		case wantErr != nil && err == nil:
			t.Fatalf("%q: accepted, encoding/json refuses it: %v", body, wantErr)
		case wantErr == nil && err == nil:
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: read as\n%#v\nencoding/json reads\n%#v", body, got, want)
			}
		case wantErr == nil && err != nil && !refusedForShape(err):
			t.Fatalf("%q: refused (%v), encoding/json reads it", body, err)
		}
	})
}

// refusedForShape says err refuses a body for what encoding/json allows and ARM does not: a key
// given twice, or nesting deeper than api.MaxDepth.
func refusedForShape(err error) bool {
	ce, ok := arm.AsCloudError(err)
	if !ok {
		return false
	}
	says := func(m string) bool {
		return strings.Contains(m, "appears more than once") || strings.Contains(m, "nested deeper than") ||
			strings.Contains(m, "values") || strings.Contains(m, "NUL character")
	}
	if says(ce.Message) {
		return true
	}
	for _, d := range ce.Details {
		if !says(d.Message) {
			return false
		}
	}
	return len(ce.Details) > 0
}
