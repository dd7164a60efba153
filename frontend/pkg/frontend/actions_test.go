package frontend

import (
	"testing"

	"github.com/openhcp/openhcp/internal/opkind"
)

// TestEveryActionKindIsStarted: every action kind registered in internal/opkind has the
// frontend's start (its route is served), and the frontend starts nothing that is not registered.
func TestEveryActionKindIsStarted(t *testing.T) {
	starts := (&Server{}).actionStarts()
	for _, reg := range opkind.Actions() {
		if starts[reg.Kind] == nil {
			t.Errorf("action kind %s (POST …/%s) has no start in actionStarts", reg.Kind, reg.Action)
		}
	}
	for k := range starts {
		if reg, ok := opkind.Lookup(k); !ok || !reg.IsAction() {
			t.Errorf("actionStarts has %s, which is not an action kind of internal/opkind", k)
		}
	}
}
