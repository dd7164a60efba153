package frontend

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// bodyShape is a fuzzer-chosen shape for a JSON value: Depth objects and arrays nested inside
// one another (alternating), whose innermost object holds Keys keys and an array of ArrayLen
// strings, every string (keys included) StringLen bytes long. Where picks the place in an
// otherwise valid cluster body the value goes (shapeSites). Sizes are bounded so that one body
// stays near the frontend's size limit: the fuzzer reaches every refusal (depth, value count,
// size) and the shapes just under them, without building bodies no client could send.
type bodyShape struct {
	Depth, Keys, ArrayLen, StringLen int
	Where                            uint8
}

// shapeSites are where a shaped value goes: a known free-form map (tags), a known field that
// expects a scalar, an unknown property, the envelope, and a field deep in properties.
var shapeSites = []string{"tags", "properties.version.id", "properties.unknownField", "extra", "properties.platform.operatorsAuthentication"}

// shapeLimit bounds a shaped body: a little over MaxBodyBytes, so oversize refusals are reached too.
const shapeLimit = MaxBodyBytes + 64<<10

func newBodyShape(depth, keys, arrayLen, stringLen uint16, where uint8) bodyShape {
	s := bodyShape{Depth: int(depth) % (2*api.MaxDepth + 1), Keys: int(keys), ArrayLen: int(arrayLen), StringLen: int(stringLen), Where: where}
	// Scale the widths down, keeping their ratio, until the body fits shapeLimit.
	for s.size() > shapeLimit {
		s.Keys, s.ArrayLen, s.StringLen = s.Keys*3/4, s.ArrayLen*3/4, s.StringLen*3/4
	}
	return s
}

// size is the number of bytes value() writes, within a few bytes per level.
func (s bodyShape) size() int {
	return 2*s.Depth*(s.StringLen+4) + s.Keys*(2*s.StringLen+6) + s.ArrayLen*(s.StringLen+3) + 64
}

// value writes the shaped JSON value.
func (s bodyShape) value(b *bytes.Buffer) {
	str := strings.Repeat("a", s.StringLen)
	for i := 0; i < s.Depth; i++ {
		if i%2 == 0 {
			b.WriteString(`{"` + str + `":`)
		} else {
			b.WriteString(`[`)
		}
	}
	b.WriteString(`{`)
	for i := 0; i < s.Keys; i++ {
		// Keys differ (a repeated key is refused on its own) and all have StringLen+ bytes.
		b.WriteString(`"` + str + strconv.Itoa(i) + `":"` + str + `",`)
	}
	b.WriteString(`"list":[`)
	for i := 0; i < s.ArrayLen; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + str + `"`)
	}
	b.WriteString(`]}`)
	for i := s.Depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
}

// body is base with the shaped value at the chosen site. The value is spliced into base's
// encoding in place of a placeholder, so building it is linear in its size.
func (s bodyShape) body(base map[string]any) []byte {
	const placeholder = "\x00shape\x00"
	site := shapeSites[int(s.Where)%len(shapeSites)]
	set(base, site, placeholder)
	enc := mustJSON(base)
	quoted := mustJSON(placeholder)
	i := bytes.Index(enc, quoted)
	var b bytes.Buffer
	b.Grow(len(enc) + s.size())
	b.Write(enc[:i])
	s.value(&b)
	b.Write(enc[i+len(quoted):])
	return b.Bytes()
}

// TestBodyShapeIsValidJSONOfItsShape checks the generator itself: what it builds is JSON with
// the nesting depth and widths asked for, and stays under its bound.
func TestBodyShapeIsValidJSONOfItsShape(t *testing.T) {
	for _, tc := range []struct {
		name                             string
		depth, keys, arrayLen, stringLen uint16
	}{
		{"flat", 0, 0, 0, 0},
		{"deep", 64, 1, 1, 1},
		{"deeper_than_allowed", 65, 0, 0, 1},
		{"wide", 1, 5000, 0, 8},
		{"long_array", 1, 0, 60000, 1},
		{"long_strings_scaled_to_the_limit", 3, 10, 10, 65535},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBodyShape(tc.depth, tc.keys, tc.arrayLen, tc.stringLen, 0)
			b := s.body(minimalBody())
			if len(b) > shapeLimit+1024 {
				t.Fatalf("body of %d bytes is over the bound %d", len(b), shapeLimit)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			v := m["tags"]
			for i := 0; i < s.Depth; i++ {
				switch x := v.(type) {
				case map[string]any:
					v = x[strings.Repeat("a", s.StringLen)]
				case []any:
					v = x[0]
				default:
					t.Fatalf("level %d is %T, want an object or array", i, v)
				}
			}
			inner, ok := v.(map[string]any)
			if !ok || len(inner) != s.Keys+1 || len(inner["list"].([]any)) != s.ArrayLen {
				t.Fatalf("innermost value %T has %d keys, want %d and a list of %d", v, len(inner), s.Keys+1, s.ArrayLen)
			}
		})
	}
}

// FuzzClusterBodyShape sends cluster bodies of fuzzer-chosen shape (nesting depth, key count,
// array length, string length, each up to the size limit) as creates and PATCHes through the
// whole handler chain, so a cost or failure that grows with shape rather than value is
// reachable. Each input is one of FuzzPutClusterBody (putClusterBody) or FuzzPatchClusterBody
// (patchClusterBody), with the same checks.
func FuzzClusterBodyShape(f *testing.F) {
	f.Add(uint16(0), uint16(0), uint16(0), uint16(0), uint8(0), false)
	f.Add(uint16(api.MaxDepth), uint16(1), uint16(1), uint16(1), uint8(2), false)
	f.Add(uint16(api.MaxDepth+1), uint16(0), uint16(0), uint16(1), uint8(3), true)
	f.Add(uint16(1), uint16(40000), uint16(0), uint16(4), uint8(0), false)
	f.Add(uint16(2), uint16(0), uint16(60000), uint16(1), uint8(4), true)
	f.Add(uint16(0), uint16(3), uint16(0), uint16(65535), uint8(1), false)
	f.Add(uint16(0), uint16(10), uint16(0), uint16(8), uint8(0), false)
	e := newEnv(f)
	existing := succeededCluster(f, e, "fuzz-shape-existing")
	f.Fuzz(func(t *testing.T, depth, keys, arrayLen, stringLen uint16, where uint8, patch bool) {
		s := newBodyShape(depth, keys, arrayLen, stringLen, where)
		if patch {
			patchClusterBody(t, e, existing, s.body(map[string]any{}), testVersion)
			return
		}
		putClusterBody(t, e, s.body(minimalBody()), 0)
	})
}
