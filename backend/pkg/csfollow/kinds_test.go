package csfollow

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/opkind"
)

// TestEveryKindIsObserved: every operation kind registered in internal/opkind has the backend's
// Observe, and the backend registers nothing opkind does not know.
func TestEveryKindIsObserved(t *testing.T) {
	kinds := Kinds(Clients{})
	for _, reg := range opkind.All() {
		if kinds[reg.Kind].Observe == nil {
			t.Errorf("operation kind %s has no Observe in csfollow.Kinds", reg.Kind)
		}
	}
	for k := range kinds {
		if _, ok := opkind.Lookup(k); !ok {
			t.Errorf("csfollow.Kinds has %s, which internal/opkind does not register", k)
		}
	}
}

// TestChildKindsEndInterruptedOperationsCanceled: every child kind of a cluster (opkind
// ChildType) ends a create or update a delete removed Canceled, naming which delete; a cluster
// and an action have no parent whose delete could overtake them.
func TestChildKindsEndInterruptedOperationsCanceled(t *testing.T) {
	kinds := Kinds(Clients{})
	for _, reg := range opkind.All() {
		t.Run(string(reg.Kind), func(t *testing.T) {
			k := kinds[reg.Kind]
			if reg.ChildType == "" {
				if k.Interrupted != nil {
					t.Fatalf("Interrupted is set for a kind that is no cluster's child")
				}
				return
			}
			if k.Interrupted == nil {
				t.Fatalf("child kind without Interrupted")
			}
			for _, own := range []bool{false, true} {
				want := "its cluster was deleted"
				if own {
					want = "the " + reg.What + " was deleted"
				}
				out := k.Interrupted(own)
				if out.Status != armdoc.StateCanceled || out.Gone || out.Err == nil || out.Err.Code != "Canceled" || !strings.Contains(out.Err.Message, want) {
					t.Errorf("Interrupted(own=%v) = %+v (error %+v), want Canceled with code Canceled and %q", own, out, out.Err, want)
				}
			}
		})
	}
}

// TestKindWithoutClientFailsToObserve: a kind whose Cluster Service client is nil is not
// followed, and its operations fail to observe with an error naming the missing client, the
// same way for every kind.
func TestKindWithoutClientFailsToObserve(t *testing.T) {
	for k, kind := range Kinds(Clients{}) {
		t.Run(string(k), func(t *testing.T) {
			if kind.Follow != nil {
				t.Errorf("Follow is set without a client")
			}
			_, err := kind.Observe(t.Context(), &armdoc.OperationDocument{ID: "op1", Request: armdoc.OperationCreate, InternalID: "x"})
			if err == nil || !strings.Contains(err.Error(), "no Cluster Service client") || !strings.Contains(err.Error(), "op1") {
				t.Errorf("Observe error = %v, want one naming the operation and the missing client", err)
			}
		})
	}
}
