package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// maxBody is the frontend's body limit (frontend.MaxBodyBytes, which this package cannot import).
const maxBody = 4 << 20

// shapes are bodies at the size limit, one per shape a hostile caller can choose.
func shapes() []struct {
	name string
	body []byte
} {
	fill := func(prefix, item, suffix string) []byte {
		n := (maxBody - len(prefix) - len(suffix)) / len(item)
		return []byte(prefix + strings.TrimSuffix(strings.Repeat(item, n), ",") + suffix)
	}
	// distinct fills with items numbered 0, 1, …: every key its own.
	distinct := func(prefix, format, suffix string, most int) []byte {
		var b strings.Builder
		b.WriteString(prefix)
		for i := 0; b.Len()+len(format)+len(suffix)+8 < maxBody && i < most; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, format, i)
		}
		b.WriteString(suffix)
		return []byte(b.String())
	}
	// upTo repeats item, which counts as values values, as often as the value limit allows.
	upTo := func(prefix, item, suffix string, values int) []byte {
		return []byte(prefix + strings.TrimSuffix(strings.Repeat(item, api.MaxValues/values-10), ",") + suffix)
	}
	deep := func(open, close string) []byte {
		n := (maxBody - 8) / (len(open) + len(close))
		return []byte(strings.Repeat(open, n) + `1` + strings.Repeat(close, n))
	}
	return []struct {
		name string
		body []byte
	}{
		{"deep_arrays", append(append([]byte(`{"a":`), deep("[", "]")...), '}')},
		{"deep_objects", append(append([]byte(`{"a":`), deep(`{"a":`, "}")...), '}')},
		{"many_keys", distinct(`{"tags":{`, `"k%d":"v"`, `}}`, maxBody)},
		{"many_unknown_keys", distinct(`{"properties":{`, `"k%d":1`, `}}`, maxBody)},
		{"long_string", []byte(`{"location":"` + strings.Repeat("x", maxBody-16) + `"}`)},
		{"long_array", fill(`{"properties":{"imageDigestMirrors":[`, `{},`, `]}}`)},
		{"repeated_keys", fill(`{"tags":{`, `"a":"b",`, `}}`)},
		// Under api.MaxValues: built and checked in full.
		{"many_keys_at_value_limit", distinct(`{"tags":{`, `"k%d":"v"`, `}}`, api.MaxValues-10)},
		{"long_array_at_value_limit", upTo(`{"properties":{"imageDigestMirrors":[`, `{},`, `]}}`, 2)},
		{"repeated_keys_at_value_limit", upTo(`{"tags":{`, `"a":"b",`, `}}`, 1)},
		{"unknown_keys_at_value_limit", upTo(`{"properties":{`, `"x":1,`, `}}`, 1)},
	}
}

// BenchmarkEncodingJSONAtTheLimit is the yardstick: encoding/json reading the same bodies into
// an any, which neither refuses repeated keys nor bounds depth or values.
func BenchmarkEncodingJSONAtTheLimit(b *testing.B) {
	for _, shape := range shapes() {
		b.Run(shape.name, func(b *testing.B) {
			b.SetBytes(int64(len(shape.body)))
			b.ReportAllocs()
			for b.Loop() {
				var v any
				_ = json.Unmarshal(shape.body, &v)
			}
		})
	}
}

// BenchmarkParsersAtTheLimit parses each shape at the body size limit with every parser of
// ARM bodies. A parser that is linear in its input answers each in milliseconds; a quadratic
// one shows up here as seconds.
func BenchmarkParsersAtTheLimit(b *testing.B) {
	v, _ := api.Lookup(api.Versions()[len(api.Versions())-1])
	stored, err := v.DecodeCluster([]byte(clusterBodyFor(v.String())))
	if err != nil {
		b.Fatal(err)
	}
	parsers := []struct {
		name  string
		parse func(body []byte) error
	}{
		{"DecodeCluster", func(body []byte) error { _, err := v.DecodeCluster(body); return err }},
		{"ParseObject", func(body []byte) error { _, err := api.ParseObject(body); return err }},
		{"PatchCluster", func(body []byte) error { _, err := v.PatchCluster(stored, body); return err }},
	}
	for _, shape := range shapes() {
		if len(shape.body) > maxBody {
			b.Fatalf("%s: %d bytes, over the limit", shape.name, len(shape.body))
		}
		for _, p := range parsers {
			b.Run(shape.name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(len(shape.body)))
				b.ReportAllocs()
				for b.Loop() {
					_ = p.parse(shape.body)
				}
			})
		}
	}
}
