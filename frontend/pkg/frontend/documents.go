package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Document keys. Everything a subscription owns lives in its partition (the lowercase
// subscription ID): the subscription document (ID /subscriptions/<id>), resources (ID = the
// lowercase resource ID) and operations (ID = the operation UUID, ResourceID = the lowercase ID
// of the resource it acts on).
func partitionKey(subscriptionID string) string { return strings.ToLower(subscriptionID) }

func subscriptionDocID(subscriptionID string) string {
	return "/subscriptions/" + strings.ToLower(subscriptionID)
}

func newDoc(partition, id, typ, resourceID string, body any, ttl time.Duration) (*docstore.Document, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s document %s: %w", typ, id, err)
	}
	return &docstore.Document{PartitionKey: partition, ID: id, Type: typ, ResourceID: strings.ToLower(resourceID), Body: b, TTL: ttl}, nil
}

// withBody is d with a new body, for a conditional replace of what was read.
func withBody(d *docstore.Document, body any) (*docstore.Document, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode document %s: %w", d.ID, err)
	}
	out := *d
	out.Body = b
	return &out, nil
}

func (s *Server) getSubscriptionDoc(ctx context.Context, subID string) (*armdoc.SubscriptionDocument, *docstore.Document, error) {
	d, err := s.store.Get(ctx, partitionKey(subID), subscriptionDocID(subID))
	if err != nil {
		return nil, nil, err
	}
	var sub armdoc.SubscriptionDocument
	if err := json.Unmarshal(d.Body, &sub); err != nil {
		return nil, nil, fmt.Errorf("decode subscription %s: %w", subID, err)
	}
	return &sub, d, nil
}

func (s *Server) getResourceDoc(ctx context.Context, id *arm.ResourceID) (*armdoc.ResourceDocument, *docstore.Document, error) {
	d, err := s.store.Get(ctx, partitionKey(id.SubscriptionID), id.Lower())
	if err != nil {
		return nil, nil, err
	}
	rd, err := decodeResourceDoc(id, d)
	if err != nil {
		return nil, nil, err
	}
	return rd, d, nil
}

// decodeResourceDoc decodes d, the document of resource id.
func decodeResourceDoc(id *arm.ResourceID, d *docstore.Document) (*armdoc.ResourceDocument, error) {
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		return nil, fmt.Errorf("decode resource %s: %w", id, err)
	}
	return &rd, nil
}

func (s *Server) getOperationDoc(ctx context.Context, partition, opID string) (*armdoc.OperationDocument, *docstore.Document, error) {
	d, err := s.store.Get(ctx, partition, opID)
	if err != nil {
		return nil, nil, err
	}
	if d.Type != docstore.TypeOperation {
		return nil, nil, docstore.ErrNotFound
	}
	var op armdoc.OperationDocument
	if err := json.Unmarshal(d.Body, &op); err != nil {
		return nil, nil, fmt.Errorf("decode operation %s: %w", opID, err)
	}
	return &op, d, nil
}

// clusterFromDoc rebuilds the internal model from a resource document.
func clusterFromDoc(rd *armdoc.ResourceDocument) (*api.Cluster, error) {
	c := &api.Cluster{}
	if len(rd.Properties) > 0 {
		if err := json.Unmarshal(rd.Properties, c); err != nil {
			return nil, fmt.Errorf("decode cluster %s: %w", rd.ResourceID, err)
		}
	}
	id, err := arm.ParseResourceID(rd.ResourceID)
	if err != nil {
		return nil, fmt.Errorf("stored resource ID %q: %w", rd.ResourceID, err)
	}
	c.Default()
	c.ID = id
	c.Location = rd.Location
	c.Tags = rd.Tags
	c.ProvisioningState = rd.ProvisioningState
	if len(rd.SystemData) > 0 {
		var sd arm.SystemData
		if err := json.Unmarshal(rd.SystemData, &sd); err == nil {
			c.SystemData = &sd
		}
	}
	return c, nil
}

// storedModel is what ResourceDocument.Properties holds: identity and properties, with the
// read-only fields cleared (they come from Cluster Service when rendered).
func storedModel(c *api.Cluster) (json.RawMessage, error) {
	cp := *c
	cp.BaseDomain, cp.ConsoleURL, cp.APIURL, cp.IssuerURL = "", "", "", ""
	b, err := json.Marshal(&cp)
	if err != nil {
		return nil, fmt.Errorf("encode cluster: %w", err)
	}
	return b, nil
}
