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

// listItems is the kept rendered clusters, at most maxBytes of them (Config.ListItemsBytes): an
// item that does not fit drops others, in no particular order, until it does. A cluster Cluster
// Service removed takes its items with it (dropCluster, on the status cache's DELETED).
// They stay apart from the status cache's per-cluster floors: those are keyed by Cluster Service
// ID and live until the stream reaches a write, these by document and api-version (several per
// cluster, some for clusters Cluster Service does not know yet) under a byte bound, and the
// cache would have to learn rendering to hold them.
type listItems struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	items    map[listItemKey]listItem
	// byCluster is the keys of each Cluster Service ID's items (one per api-version listed).
	byCluster map[string]map[listItemKey]struct{}
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

// listItemOverhead is roughly what a kept item costs beyond its strings: the map entries, the
// slice and string headers, the revisions.
const listItemOverhead = 200

// size is what the item under k counts against maxBytes.
func (it listItem) size(k listItemKey) int {
	return len(it.body) + len(it.etag) + len(it.csID) + len(k.partition) + len(k.id) + len(k.version) + listItemOverhead
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
	l.remove(k)
	size := it.size(k)
	if size > l.maxBytes {
		return
	}
	for old := range l.items {
		if l.bytes+size <= l.maxBytes {
			break
		}
		l.remove(old)
	}
	if l.items == nil {
		l.items, l.byCluster = map[listItemKey]listItem{}, map[string]map[listItemKey]struct{}{}
	}
	l.items[k] = it
	l.bytes += size
	if it.csID != "" {
		if l.byCluster[it.csID] == nil {
			l.byCluster[it.csID] = map[listItemKey]struct{}{}
		}
		l.byCluster[it.csID][k] = struct{}{}
	}
}

// dropCluster forgets the items of the cluster with Cluster Service ID csID.
func (l *listItems) dropCluster(csID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.byCluster[csID] {
		l.remove(k)
	}
}

// remove forgets the item under k, if any. l.mu is held.
func (l *listItems) remove(k listItemKey) {
	it, ok := l.items[k]
	if !ok {
		return
	}
	delete(l.items, k)
	l.bytes -= it.size(k)
	if keys := l.byCluster[it.csID]; keys != nil {
		delete(keys, k)
		if len(keys) == 0 {
			delete(l.byCluster, it.csID)
		}
	}
}

// renderClusterPage renders a list page's clusters at their documents' indexes (nil for
// documents of other types, and for one deleted since the page was listed), each
// with its Cluster Service status, reusing what an earlier list rendered where its inputs have
// not changed. Each cluster is looked up in the status cache once: that answer decides whether
// the kept item still holds and, when it does not, is the status rendered; only the clusters the
// cache cannot vouch for are asked of Cluster Service, in one call per page (clusterStatuses).
func (s *Server) renderClusterPage(r *http.Request, docs []*docstore.Document) ([]json.RawMessage, error) {
	ver := info(r).version
	out := make([]json.RawMessage, len(docs))
	type pending struct {
		i   int
		key listItemKey
		doc *docstore.Document
		rd  *armdoc.ResourceDocument
		cl  *csv1.Cluster // from the status cache; nil: ask Cluster Service
	}
	// looked is a status cache lookup already made for a document (a kept item's), so that
	// each cluster is looked up once per list.
	type looked struct {
		cl     *csv1.Cluster
		cached bool
	}
	var todo []pending
	var ask []string
	add := func(i int, key listItemKey, d *docstore.Document, pre *looked) error {
		rd, ok, err := decodeResource(d, api.ClusterResourceType)
		if err != nil || !ok {
			return err
		}
		l := pre
		if l == nil {
			cl, cached := s.cachedStatusOf(rd.InternalID, rd.InternalRevision)
			l = &looked{cl: cl, cached: cached}
		}
		if rd.InternalID != "" && !l.cached {
			ask = append(ask, rd.InternalID)
		}
		todo = append(todo, pending{i: i, key: key, doc: d, rd: rd, cl: l.cl})
		return nil
	}
	pre := map[int]*looked{}
	var unread []int // documents listed without a body, not answered from a kept item
	for i, d := range docs {
		key := listItemKey{partition: d.PartitionKey, id: d.ID, version: ver.String()}
		it, kept := s.listItems.get(key)
		kept = kept && it.etag == d.ETag
		if kept && it.csID == "" {
			out[i] = it.body
			continue
		}
		var l *looked
		if kept {
			// A kept item names the cluster, so the document is needed only if it must be rendered.
			cl, cached := s.cachedStatusOf(it.csID, it.docRevision)
			if cached && cl.GetRevision() == it.csRevision {
				out[i] = it.body
				continue
			}
			l = &looked{cl: cl, cached: cached}
		}
		if d.Body == nil {
			if listedAs(d, api.ClusterResourceType) {
				unread = append(unread, i)
				pre[i] = l
			}
			continue
		}
		if err := add(i, key, d, l); err != nil {
			return nil, err
		}
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
			key := listItemKey{partition: d.PartitionKey, id: d.ID, version: ver.String()}
			// A document written between the two queries has another ETag: its kept item's
			// lookup does not hold for it.
			l := pre[i]
			if d.ETag != docs[i].ETag {
				l = nil
			}
			if err := add(i, key, d, l); err != nil {
				return nil, err
			}
		}
	}
	var asked map[string]*csv1.Cluster
	if len(ask) > 0 {
		asked = s.clusterStatuses(r, ask)
	}
	for _, p := range todo {
		c, err := clusterFromDoc(p.rd)
		if err != nil {
			return nil, err
		}
		cl := p.cl
		if cl == nil {
			cl = asked[p.rd.InternalID]
		}
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
	return out, nil
}
