package frontend

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
)

// TestStoreUnavailableIsServiceUnavailable: a request that failed because the document store
// could not be reached (its database down or restarting) is answered 503 with a Retry-After,
// as a client should retry it, never 500.
func TestStoreUnavailableIsServiceUnavailable(t *testing.T) {
	s := &Server{}
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	ce := s.toCloudError(r, fmt.Errorf("get document p/d: %w", fmt.Errorf("%w: unexpected EOF", docstore.ErrUnavailable)))
	if ce.StatusCode != http.StatusServiceUnavailable || ce.RetryAfter < 1 {
		t.Fatalf("store unavailable answered %d with Retry-After %d, want 503 with at least 1", ce.StatusCode, ce.RetryAfter)
	}
}
