package csfollow

import (
	"testing"

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
