package csv1

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// shape is a message's fields: number, name, cardinality and type, with the kind's own name
// (NodePool, node_pool) written <kind>.
func shape(md protoreflect.MessageDescriptor, own string) string {
	var b strings.Builder
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		typ := f.Kind().String()
		switch {
		case f.Message() != nil:
			typ = string(f.Message().Name())
		case f.Enum() != nil:
			typ = string(f.Enum().Name())
		}
		typ = strings.Replace(typ, own, "<kind>", 1)
		name := strings.Replace(string(f.Name()), snake(own), "<kind>", 1)
		fmt.Fprintf(&b, "%d %s %s %s; ", f.Number(), name, f.Cardinality(), typ)
	}
	r := md.ReservedRanges()
	for i := range r.Len() {
		fmt.Fprintf(&b, "reserved %d-%d; ", r.Get(i)[0], r.Get(i)[1]-1)
	}
	return b.String()
}

// TestChildKindsShareTheirRequestShape: node pools and external auths are served by one model
// (the store's child kinds, the backend's csfollow), which rests on their requests, events and
// states having one shape on the wire. Each kind keeps its own message types (a shared message
// would change every caller's Go types and the JSON names of the states stored in PostgreSQL);
// this holds the shapes, field numbers included, to each other.
func TestChildKindsShareTheirRequestShape(t *testing.T) {
	kinds := []struct {
		own   string // the object's message name
		files protoreflect.FileDescriptor
	}{
		{"NodePool", File_v1_clusterservice_proto},
		{"ExternalAuth", File_v1_externalauth_proto},
	}
	messages := []string{"Get%sRequest", "Delete%sRequest", "List%ssRequest", "List%ssResponse", "Update%sRequest", "Watch%ssRequest", "%sEvent", "%sStatus"}
	for _, m := range messages {
		t.Run(strings.ReplaceAll(m, "%s", "X"), func(t *testing.T) {
			var want string
			for i, k := range kinds {
				name := fmt.Sprintf(m, k.own)
				md := k.files.Messages().ByName(protoreflect.Name(name))
				if md == nil {
					t.Fatalf("no message %s", name)
				}
				got := shape(md, k.own)
				if m == "%sStatus" {
					got = commonFields(md, k.own)
				}
				if i == 0 {
					want = got
				} else if got != want {
					t.Errorf("%s is %q; %s is %q", name, got, fmt.Sprintf(m, kinds[0].own), want)
				}
			}
		})
	}
	t.Run("state", func(t *testing.T) {
		np, ea := NodePoolState(0).Descriptor().Values(), ExternalAuthState(0).Descriptor().Values()
		if np.Len() != ea.Len() {
			t.Fatalf("NodePoolState has %d values, ExternalAuthState %d", np.Len(), ea.Len())
		}
		for i := range np.Len() {
			a, b := np.Get(i), ea.Get(i)
			if a.Number() != b.Number() || strings.TrimPrefix(string(a.Name()), "NODE_POOL_STATE_") != strings.TrimPrefix(string(b.Name()), "EXTERNAL_AUTH_STATE_") {
				t.Errorf("state %d: node pool %s = %d, external auth %s = %d", i, a.Name(), a.Number(), b.Name(), b.Number())
			}
		}
	})
}

// commonFields is the shape of a status's fields every child kind has (state, message,
// error_code, conditions, applied, observed_revision), by name: each kind adds its own
// observations, so their numbers differ and only their names and kinds are held alike.
func commonFields(md protoreflect.MessageDescriptor, own string) string {
	var b strings.Builder
	for _, name := range []protoreflect.Name{"state", "message", "error_code", "conditions", "applied", "observed_revision"} {
		f := md.Fields().ByName(name)
		if f == nil {
			fmt.Fprintf(&b, "no %s; ", name)
			continue
		}
		typ := f.Kind().String()
		if f.Enum() != nil {
			typ = strings.Replace(string(f.Enum().Name()), own, "<kind>", 1)
		}
		fmt.Fprintf(&b, "%s %s %s; ", name, f.Cardinality(), typ)
	}
	return b.String()
}

// snake is a message name in the snake case of its fields: NodePool → node_pool.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
