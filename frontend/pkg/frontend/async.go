package frontend

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/opkind"
)

// externalBase is the scheme and host clients reach us by. ARM sends the URL it was called with
// as Referer; async URLs must point at ARM, not at the RP's own address.
func externalBase(r *http.Request) string {
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Scheme != "" && ref.Host != "" {
		return ref.Scheme + "://" + ref.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) operationPath(subID, kind, opID string) string {
	return "/subscriptions/" + subID + "/providers/Microsoft.RedHatOpenShift/locations/" + s.cfg.Location + "/" + kind + "/" + opID
}

func (s *Server) operationURL(r *http.Request, subID, kind, opID string) string {
	q := url.Values{"api-version": {info(r).apiVersion}}
	return externalBase(r) + s.operationPath(subID, kind, opID) + "?" + q.Encode()
}

// setAsyncHeaders points the client at the operation: Azure-AsyncOperation (status) always,
// Location (result) when asked.
func (s *Server) setAsyncHeaders(w http.ResponseWriter, r *http.Request, subID, opID string, location bool) {
	h := w.Header()
	h.Set(arm.HeaderAsyncOperation, s.operationURL(r, subID, "hcpOperationStatuses", opID))
	if location {
		h.Set(arm.HeaderLocation, s.operationURL(r, subID, "hcpOperationResults", opID))
	}
	h.Set(arm.HeaderRetryAfter, strconv.Itoa(s.retryAfterSeconds()))
}

// actionStart is the frontend's own part of one cluster action kind (internal/opkind): it reads
// the request and returns the Cluster Service call that starts the action under a new ID, or
// why the request is refused (before anything is written).
type actionStart func(r *http.Request) (call func(id, clusterID string) error, err error)

// actionRoutes serves POST …/hcpOpenShiftClusters/{name}/{action} for every action kind
// registered in internal/opkind, each started by its entry of starts; an action without one is
// not served (TestEveryActionKindIsStarted keeps starts complete).
func (s *Server) actionRoutes(starts map[opkind.Kind]actionStart) {
	for _, reg := range opkind.Actions() {
		start := starts[reg.Kind]
		if start == nil {
			continue
		}
		s.handle("POST "+clusterPattern+"/"+strings.ToLower(reg.Action), func(w http.ResponseWriter, r *http.Request) error {
			call, err := start(r)
			if err != nil {
				return err
			}
			return s.startAction(w, r, reg.Request, call)
		}, resourceRoute)
	}
}

// actionCluster checks the cluster of an action exists and returns it.
func (s *Server) actionCluster(r *http.Request) (*arm.ResourceID, *armdoc.ResourceDocument, error) {
	full, err := arm.ParseResourceID(strings.TrimSuffix(info(r).originalPath, "/"+actionSegment(info(r).originalPath)))
	if err != nil || len(full.Names) != 1 || !clusterNameRE.MatchString(full.Name()) {
		return nil, nil, cloudError(http.StatusBadRequest, arm.CodeInvalidResourceName, "", "The resource ID %q is not valid.", info(r).originalPath)
	}
	rd, _, err := s.getResourceDoc(r.Context(), full)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, notFound(full)
	}
	if err != nil {
		return nil, nil, err
	}
	if rd.InternalID == "" {
		return nil, nil, cloudError(http.StatusConflict, arm.CodeConflict, "", "The cluster '%s' is not provisioned yet.", full.Name())
	}
	return full, rd, nil
}

func actionSegment(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// startAction records the action's operation, then asks Cluster Service to start it with a new
// ID (idempotent there). A definitive refusal (a revocation running: 409, a bad CSR: 400) takes
// the operation back; an unknown outcome leaves it for the backend, which fails it after its
// grace period if Cluster Service never heard of it.
func (s *Server) startAction(w http.ResponseWriter, r *http.Request, req armdoc.OperationRequest, call func(id, clusterID string) error) error {
	id, rd, err := s.actionCluster(r)
	if err != nil {
		return err
	}
	opID, csID, now := newUUID(), newClusterServiceID(), time.Now().UTC()
	part := partitionKey(id.SubscriptionID)
	op := s.newOperation(r, opID, req, id.String(), csID, now)
	opDoc, err := newDoc(part, opID, docstore.TypeOperation, strings.ToLower(id.String()), op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	written, err := s.store.Transact(r.Context(), part, []docstore.TxOp{{Kind: docstore.TxCreate, Doc: opDoc}})
	if err != nil {
		return fmt.Errorf("record %s of %s: %w", req, id, err)
	}
	log := info(r).logger().With("resourceID", id.String(), "clusterID", rd.InternalID, "operationID", opID, "internalID", csID, "request", req)
	if err := call(csID, rd.InternalID); err != nil {
		if definitive(err) {
			s.rollback(r, part, opID, []docstore.TxOp{{Kind: docstore.TxDelete, Doc: written[0], IfMatch: written[0].ETag}})
		}
		log.Warn("cluster action refused by cluster service", "error", err)
		return err
	}
	log.Info("cluster action accepted")
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// quoteETag and matchETag implement If-Match / If-None-Match on the store's ETags.
func quoteETag(etag string) string { return `"` + etag + `"` }

// etagMatches reports whether the header value (a list of ETags or "*") matches current ("" when
// the resource does not exist).
func etagMatches(header, current string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return current != ""
		}
		t = strings.TrimPrefix(t, "W/")
		t = strings.Trim(t, `"`)
		if current != "" && t == current {
			return true
		}
	}
	return false
}

// checkPreconditions applies If-Match and If-None-Match to a write; current is the stored ETag,
// "" if the resource does not exist.
func checkPreconditions(r *http.Request, current string) error {
	if h := r.Header.Get(arm.HeaderIfMatch); h != "" && !etagMatches(h, current) {
		return cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-Match",
			"The resource's ETag does not match the If-Match header.")
	}
	if h := r.Header.Get(arm.HeaderIfNoneMatch); h != "" && etagMatches(h, current) {
		return cloudError(http.StatusPreconditionFailed, arm.CodePreconditionFailed, "If-None-Match",
			"The resource exists and matches the If-None-Match header.")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, statusCode int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusCode)
	w.Write(body)
}
