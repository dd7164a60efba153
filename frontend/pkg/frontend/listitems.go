package frontend

import (
	"encoding/json"
	"net/http"
	"sync"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// Decoding a stored cluster and rendering it is most of a list's CPU once Cluster Service's
// status comes from the status cache, and between two lists few clusters change. So each
// cluster of a list is kept as one api-version rendered it, with what it was rendered from:
// the document's ETag (a new one on every write) and the Cluster Service revision of the status
// it shows. A later list reuses those bytes only when the document has the same ETag and the
// status cache vouches for the cluster at that same revision; anything else renders it again.
// The bytes are the same either way, as they are a function of those inputs alone.

// maxListItems bounds the kept items (a few KB each); past it they are all dropped and kept
// again as lists render them.
const maxListItems = 10000

// listItems is the kept rendered clusters; its zero value is ready to use.
type listItems struct {
	mu    sync.Mutex
	items map[listItemKey]listItem
}

type listItemKey struct{ partition, id, version string }

type listItem struct {
	etag string
	// csID and docRevision are the document's InternalID and InternalRevision, to ask the
	// status cache; csRevision is the revision of the status rendered.
	csID        string
	docRevision int64
	csRevision  int64
	body        json.RawMessage
}

func (l *listItems) get(k listItemKey) (listItem, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	it, ok := l.items[k]
	return it, ok
}

func (l *listItems) put(k listItemKey, it listItem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.items == nil || len(l.items) >= maxListItems {
		l.items = map[listItemKey]listItem{}
	}
	l.items[k] = it
}

// renderClusterPage renders a list page's clusters (documents of other types left out), each
// with its Cluster Service status, reusing what an earlier list rendered where its inputs have
// not changed.
func (s *Server) renderClusterPage(r *http.Request, docs []*docstore.Document) ([]json.RawMessage, error) {
	ver := info(r).version
	out := make([]json.RawMessage, len(docs))
	type pending struct {
		i   int
		key listItemKey
		doc *docstore.Document
		rd  *armdoc.ResourceDocument
	}
	var todo []pending
	var rds []*armdoc.ResourceDocument
	var unread []int // documents listed without a body, not kept
	for i, d := range docs {
		key := listItemKey{partition: d.PartitionKey, id: d.ID, version: ver.String()}
		if b, ok := s.keptItem(key, d.ETag); ok {
			out[i] = b
			continue
		}
		if d.Body == nil {
			if listedAs(d, api.ClusterResourceType) {
				unread = append(unread, i)
			}
			continue
		}
		rd, ok, err := decodeResource(d, api.ClusterResourceType)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		todo = append(todo, pending{i: i, key: key, doc: d, rd: rd})
		rds = append(rds, rd)
	}
	if len(unread) > 0 {
		read, err := s.readBodies(r, docs, unread)
		if err != nil {
			return nil, err
		}
		for _, i := range unread {
			d := read[docs[i].ID]
			if d == nil {
				continue // deleted since the page was listed
			}
			rd, ok, err := decodeResource(d, api.ClusterResourceType)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			key := listItemKey{partition: d.PartitionKey, id: d.ID, version: ver.String()}
			todo = append(todo, pending{i: i, key: key, doc: d, rd: rd})
			rds = append(rds, rd)
		}
	}
	var statuses map[string]*csv1.Cluster
	if len(rds) > 0 {
		statuses = s.clusterStatuses(r, rds)
	}
	for _, p := range todo {
		c, err := clusterFromDoc(p.rd)
		if err != nil {
			return nil, err
		}
		cl := statuses[p.rd.InternalID]
		if cl != nil {
			setClusterStatus(c, cl)
		}
		b, err := json.Marshal(ver.RenderCluster(c))
		if err != nil {
			return nil, err
		}
		out[p.i] = b
		// A cluster shown without the status it has (Cluster Service did not answer) is not kept.
		if p.rd.InternalID == "" || cl != nil {
			s.listItems.put(p.key, listItem{etag: p.doc.ETag, csID: p.rd.InternalID, docRevision: p.rd.InternalRevision,
				csRevision: cl.GetRevision(), body: b})
		}
	}
	listed := out[:0]
	for _, b := range out {
		if b != nil {
			listed = append(listed, b)
		}
	}
	return listed, nil
}

// keptItem is the kept rendering of key when it was rendered from a document with etag and,
// for a cluster Cluster Service knows, the status cache holds it at the revision rendered.
func (s *Server) keptItem(key listItemKey, etag string) (json.RawMessage, bool) {
	it, ok := s.listItems.get(key)
	if !ok || it.etag != etag {
		return nil, false
	}
	if it.csID == "" {
		return it.body, true
	}
	if s.statuses == nil {
		return nil, false
	}
	cl, ok := s.statuses.Get(it.csID, it.docRevision)
	if !ok || cl.GetRevision() != it.csRevision {
		return nil, false
	}
	return it.body, true
}
