package frontend

import (
	"encoding/json"
	"fmt"
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
		// A kept item names the cluster, so the document is needed only if it must be rendered.
		body, l := s.keptItem(key, d.ETag)
		if body != nil {
			out[i] = body
			continue
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
		s.keepItem(p.key, p.doc, p.rd, cl, b)
	}
	return out, nil
}

// looked is one status cache lookup of a cluster: the status, and whether the cache vouched for
// it. A request that has looked a cluster up hands it on, so that each cluster is looked up once.
type looked struct {
	cl     *csv1.Cluster
	cached bool
}

// keptItem is the body kept under key for the document with etag, when it still shows what it
// would be rendered from now: a cluster Cluster Service does not know, or one whose status the
// cache vouches for at the revision the body shows. When the document's item is kept but its
// status is not current, it returns the lookup that found so (nil when none was made).
func (s *Server) keptItem(key listItemKey, etag string) (json.RawMessage, *looked) {
	it, kept := s.listItems.get(key)
	if !kept || it.etag != etag {
		return nil, nil
	}
	if it.csID == "" {
		return it.body, nil
	}
	cl, cached := s.cachedStatusOf(it.csID, it.docRevision)
	if cached && cl.GetRevision() == it.csRevision {
		return it.body, nil
	}
	return nil, &looked{cl: cl, cached: cached}
}

// keptETag is the ETag of the document of the item kept under key when that item would answer
// a read of an unchanged document now: a cluster Cluster Service does not know, or one whose
// status the cache vouches for at the revision the item shows (keptItem's rule, looked at
// without counting a lookup). Else "".
func (s *Server) keptETag(key listItemKey) string {
	it, kept := s.listItems.get(key)
	if !kept {
		return ""
	}
	if it.csID == "" {
		return it.etag
	}
	if s.statuses == nil {
		return ""
	}
	if cl, cached := s.statuses.Peek(it.csID, it.docRevision); !cached || cl.GetRevision() != it.csRevision {
		return ""
	}
	return it.etag
}

// keepItem keeps body, the cluster in doc (rd, decoded from it) rendered with Cluster Service's
// status cl, under key. A cluster shown without the status it has (Cluster Service did not
// answer) is not kept.
func (s *Server) keepItem(key listItemKey, doc *docstore.Document, rd *armdoc.ResourceDocument, cl *csv1.Cluster, body json.RawMessage) {
	if rd.InternalID == "" || cl != nil {
		s.listItems.put(key, listItem{etag: doc.ETag, csID: rd.InternalID, docRevision: rd.InternalRevision,
			csRevision: cl.GetRevision(), body: body})
	}
}

// clusterBody is the body of a GET of the cluster in doc (rd, decoded from it) as the
// request's api-version shows it: the item a list or an earlier GET kept while it holds
// (keptItem), else rendered with its status (clusterStatus) and kept. The bytes are the same
// either way; keeping them spares an unchanged cluster's repeated GETs the decoding and
// rendering, most of a GET's CPU.
func (s *Server) clusterBody(r *http.Request, rd *armdoc.ResourceDocument, doc *docstore.Document) (json.RawMessage, error) {
	ver := info(r).version
	key := listItemKey{partition: doc.PartitionKey, id: doc.ID, version: ver.String()}
	body, l := s.keptItem(key, doc.ETag)
	if body != nil {
		return body, nil
	}
	return s.renderCluster(r, key, rd, doc, l)
}

// renderCluster renders the cluster in doc (rd, decoded from it) with its status (l: the lookup
// the request made already; nil: look up now) and keeps it under key.
func (s *Server) renderCluster(r *http.Request, key listItemKey, rd *armdoc.ResourceDocument, doc *docstore.Document, l *looked) (json.RawMessage, error) {
	ver := info(r).version
	c, err := clusterFromDoc(rd)
	if err != nil {
		return nil, err
	}
	cl := s.clusterStatus(r, rd, l)
	if cl != nil {
		setClusterStatus(c, cl)
	}
	b, err := json.Marshal(ver.RenderCluster(c))
	if err != nil {
		return nil, fmt.Errorf("render cluster %s: %w", c.ID, err)
	}
	s.keepItem(key, doc, rd, cl, b)
	return b, nil
}
