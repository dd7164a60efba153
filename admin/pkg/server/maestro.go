package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// MaestroREST reads resource bundles from the Maestro server's REST API, presenting the admin
// API's certificate: the gate in front of that API admits it for reads only (docs/security.md).
type MaestroREST struct {
	URL    string
	Client *http.Client
}

type maestroBundle struct {
	ID           string          `json:"id"`
	ConsumerName string          `json:"consumer_name"`
	Version      int             `json:"version"`
	DeletedAt    *time.Time      `json:"deleted_at"`
	Status       json.RawMessage `json:"status"`
	Metadata     struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// BundlesNamed returns the bundles whose ManifestWork name is one of names. It asks Maestro
// for those only, by a search on the bundle's payload (the pinned Maestro's REST search takes
// PostgreSQL JSONB expressions), so a describe reads its cluster's bundles and not the
// region's; what comes back is still checked against names.
func (m MaestroREST) BundlesNamed(ctx context.Context, names []string) ([]adminapi.Bundle, error) {
	out := []adminapi.Bundle{}
	if len(names) == 0 {
		return out, nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + strings.ReplaceAll(strings.ReplaceAll(n, `\`, `\\`), "'", `\'`) + "'"
	}
	search := "payload->'metadata'->>'name' in (" + strings.Join(quoted, ", ") + ")"
	seen := 0
	for page := 1; ; page++ {
		var list struct {
			Items []maestroBundle `json:"items"`
			Total int             `json:"total"`
		}
		q := url.Values{"search": {search}, "page": {strconv.Itoa(page)}, "size": {"200"}}
		if err := m.get(ctx, m.URL+"/api/maestro/v1/resource-bundles?"+q.Encode(), &list); err != nil {
			return nil, err
		}
		for _, b := range list.Items {
			if slices.Contains(names, b.Metadata.Name) {
				out = append(out, adminapi.Bundle{ID: b.ID, Name: b.Metadata.Name, Consumer: b.ConsumerName, Version: b.Version, DeletedAt: b.DeletedAt, Status: b.Status})
			}
		}
		seen += len(list.Items)
		if len(list.Items) == 0 || seen >= list.Total {
			return out, nil
		}
	}
}

func (m MaestroREST) get(ctx context.Context, u string, into any) error {
	if _, err := url.Parse(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := m.Client.Do(req)
	if err != nil {
		return fmt.Errorf("maestro: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("maestro: GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("maestro: decode %s: %w", u, err)
	}
	return nil
}
