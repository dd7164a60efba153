package server

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxNULViolations bounds the violations one request reports for NUL characters: a request of
// a thousand labels each holding one is answered with the first ones.
const maxNULViolations = 20

// nulStrings is the InvalidArgument error of a request holding a NUL (U+0000) in any string
// field, list entry or map key or value, each named by its field path
// ("cluster.spec.labels[a]"), or nil. The store is PostgreSQL, whose jsonb and text refuse a
// NUL: unchecked, such a request (from the admin API, or any client) failed its write with an
// Internal error. Invalid UTF-8 in a string field is refused while the request is decoded
// (InvalidArgument, decode.go); bytes fields may hold anything.
func nulStrings(req any) error {
	m, ok := req.(proto.Message)
	if !ok {
		return nil
	}
	var v violations
	walkNUL(&v, "", m.ProtoReflect())
	return v.err()
}

func walkNUL(v *violations, at string, m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		path := string(fd.Name())
		if at != "" {
			path = at + "." + path
		}
		switch {
		case fd.IsMap():
			val.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				entry := path + "[" + strings.ReplaceAll(k.String(), "\x00", `\u0000`) + "]"
				if fd.MapKey().Kind() == protoreflect.StringKind && hasNUL(k.String()) {
					v.add(entry, "a key holds a NUL character (\\u0000), which no string may hold")
				}
				checkNUL(v, entry, fd.MapValue(), mv)
				return len(*v) < maxNULViolations
			})
		case fd.IsList():
			l := val.List()
			for i := 0; i < l.Len() && len(*v) < maxNULViolations; i++ {
				checkNUL(v, path+"["+strconv.Itoa(i)+"]", fd, l.Get(i))
			}
		default:
			checkNUL(v, path, fd, val)
		}
		return len(*v) < maxNULViolations
	})
}

// checkNUL checks one value of fd's kind (a list's entry or a map's value included).
func checkNUL(v *violations, path string, fd protoreflect.FieldDescriptor, val protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if hasNUL(val.String()) {
			v.add(path, "holds a NUL character (\\u0000), which no string may hold")
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		walkNUL(v, path, val.Message())
	}
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }
