package operations

import (
	"io"
	"log/slog"
	"testing"

	"github.com/openhcp/openhcp/internal/opkind"
)

// TestEveryKindIsObserved: every operation kind registered in internal/opkind has the backend's
// observe, and the backend registers nothing opkind does not know.
func TestEveryKindIsObserved(t *testing.T) {
	c := New(nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{})
	for _, reg := range opkind.All() {
		if c.kinds[reg.Kind].observe == nil {
			t.Errorf("operation kind %s has no observe in the backend's kindTable", reg.Kind)
		}
	}
	for k := range c.kinds {
		if _, ok := opkind.Lookup(k); !ok {
			t.Errorf("kindTable has %s, which internal/opkind does not register", k)
		}
	}
}
