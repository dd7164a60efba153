package maintenance

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/logattr"
)

// An SRE's write to maintenance is a request document: the admin API inserts it (the only kind
// of document its store login may insert, migration 0003 of the document store) and the
// maintenance service, which owns the maintenance documents, carries it out with the campaign
// code and records the outcome in it. The partition and type are the store policy's.
const (
	RequestPartition = postgres.MaintenanceRequestPartition
	TypeRequest      = postgres.MaintenanceRequestType
)

// RequestRetention is how long an ended request stays in the store (the audit log keeps the
// call for longer): long enough to follow it and see its outcome, and the store holds only
// what SREs asked for in that time, not every request ever made.
const RequestRetention = 30 * 24 * time.Hour

// RequestAction is what a request asks for.
type RequestAction string

const (
	ActionCreateCampaign RequestAction = "create-campaign"
	ActionResumeCampaign RequestAction = "resume-campaign"
	ActionCancelCampaign RequestAction = "cancel-campaign"
	// ActionCreateTask creates a single task of any type the maintenance service runs
	// (TaskTypes) on Cluster; the task's ID is the request's.
	ActionCreateTask RequestAction = "create-task"
	// ActionCancelTask cancels task TaskID (Tasks.Cancel).
	ActionCancelTask RequestAction = "cancel-task"
	// ActionSetWindow sets Cluster's maintenance window to Window; ActionClearWindow removes it.
	ActionSetWindow   RequestAction = "set-window"
	ActionClearWindow RequestAction = "clear-window"
)

// actions are the request actions, in the order refusals list them.
var actions = []RequestAction{ActionCreateCampaign, ActionResumeCampaign, ActionCancelCampaign, ActionCreateTask, ActionCancelTask, ActionSetWindow, ActionClearWindow}

// ErrInvalidRequest is a request refused for what it says about a task or a window.
var ErrInvalidRequest = errors.New("invalid maintenance request")

// RequestState is where a request is: Pending until the maintenance service carried it out
// (Done) or refused it (Failed, with the reason in Message).
type RequestState string

const (
	RequestPending RequestState = "Pending"
	RequestDone    RequestState = "Done"
	RequestFailed  RequestState = "Failed"
)

// Request is one SRE write to maintenance.
type Request struct {
	ID     string        `json:"id"`
	Action RequestAction `json:"action"`
	// Campaign is the campaign acted on (for a create, the new campaign's ID: Spec.ID).
	Campaign string `json:"campaign"`
	// Spec is the campaign to create (create-campaign only).
	Spec *CampaignSpec `json:"spec,omitempty"`
	// Cluster is the cluster of a create-task, set-window or clear-window.
	Cluster string `json:"cluster,omitempty"`
	// Task is the task to create (create-task only).
	Task *TaskSpec `json:"task,omitempty"`
	// TaskID is the task acted on: the one to cancel, or the one a create-task made (the
	// request's own ID).
	TaskID string `json:"taskId,omitempty"`
	// Window is the maintenance window to set (set-window only).
	Window *Window `json:"window,omitempty"`
	// RequestedBy is the SRE (person) and Group their group, as the admin API verified them
	// from the caller's certificate; CorrelationID ties the request to the audited call.
	RequestedBy string `json:"requestedBy"`
	Group       string `json:"group,omitempty"`
	// Reason is why the SRE asked, as recorded in the audit log.
	Reason        string       `json:"reason,omitempty"`
	CorrelationID string       `json:"correlationId,omitempty"`
	State         RequestState `json:"state"`
	// Message says what was done, or why the request failed.
	Message string `json:"message,omitempty"`
	// CampaignState is the campaign's state right after the request was carried out.
	CampaignState CampaignState `json:"campaignState,omitempty"`
	Created       time.Time     `json:"created"`
	Finished      time.Time     `json:"finished,omitempty"`
	// Signature is the admin API's Ed25519 signature over what the SRE asked and who they are
	// (statement): the maintenance service takes the requester's name from nothing else, so the
	// admin API's store login, which can write request documents, cannot name another SRE.
	Signature []byte `json:"signature,omitempty"`

	etag string
	// stray is the ID the body gave when it differs from its document's: such a request was not
	// written by Submit and fails (the document's ID is the one its outcome is recorded under).
	stray string
	// garbled is why the document's body did not decode.
	garbled string
}

// Bounds of what a request carries besides its spec. The admin API writes a person's name from a
// certificate and a reason it bounds itself; the maintenance service copies them into the
// campaign's history, so it bounds them too rather than trust the writer of the document.
const (
	maxRequestName   = 256  // requestedBy, group, correlationId
	maxRequestReason = 1024 // reason, as the admin API bounds it
)

// Validate checks what a request says on its own (the campaign spec's fields included): the
// admin API answers 400 with it before storing, the maintenance service fails a request with it.
func (r *Request) Validate() error {
	if r.garbled != "" {
		return invalid("body", "%.256s", r.garbled)
	}
	if r.RequestedBy == "" {
		return invalid("requestedBy", "a request names the SRE who asked")
	}
	if r.stray != "" {
		return invalid("id", "the request's body names request %.64q, its document request %q", r.stray, r.ID)
	}
	for _, f := range []struct{ field, value string }{
		{"requestedBy", r.RequestedBy}, {"group", r.Group}, {"correlationId", r.CorrelationID},
	} {
		if len(f.value) > maxRequestName || strings.ContainsFunc(f.value, unicode.IsControl) {
			return invalid(f.field, "%s must be at most %d bytes without control characters, got %d bytes", f.field, maxRequestName, len(f.value))
		}
	}
	if err := identity.ValidPerson(r.RequestedBy); err != nil {
		return invalid("requestedBy", "requestedBy must be an SRE person's name: %v", err)
	}
	if len(r.Reason) > maxRequestReason {
		return invalid("reason", "reason must be at most %d bytes, got %d", maxRequestReason, len(r.Reason))
	}
	return r.validateAsked()
}

// CheckAsked checks what r asks for, not who asks: its action and the action's fields, and a
// create-task's type and parameters against types (TaskTypes). The admin API answers 400 with
// it before it signs; Submit and the maintenance service check it again.
func (r *Request) CheckAsked(types []TaskType) error {
	if err := r.validateAsked(); err != nil {
		return err
	}
	if r.Action == ActionCreateTask {
		return r.Task.checkAgainst(types)
	}
	return nil
}

// validateAsked checks the action and the fields it takes, on their own.
func (r *Request) validateAsked() error {
	if r.Action != ActionCreateCampaign && r.Spec != nil {
		return invalid("spec", "%s takes no spec", r.Action)
	}
	if r.Action != ActionCreateTask && r.Task != nil {
		return invalidRequest("task", "%s takes no task", r.Action)
	}
	if r.Action != ActionSetWindow && r.Window != nil {
		return invalidRequest("window", "%s takes no window", r.Action)
	}
	switch r.Action {
	case ActionCreateCampaign:
		if r.Spec == nil {
			return invalid("spec", "create-campaign needs the campaign's spec")
		}
		if r.Campaign != "" && r.Campaign != r.Spec.ID {
			return invalid("campaign", "campaign %q differs from the spec's id %q", r.Campaign, r.Spec.ID)
		}
		return r.Spec.Validate()
	case ActionResumeCampaign, ActionCancelCampaign:
		if !campaignIDRE.MatchString(r.Campaign) {
			return invalid("campaign", "campaign ID %q is no campaign ID", r.Campaign)
		}
		return nil
	case ActionCreateTask:
		if err := r.validateCluster(); err != nil {
			return err
		}
		if r.Task == nil {
			return invalidRequest("task", "create-task needs the task's type")
		}
		if r.TaskID != "" && r.TaskID != r.ID {
			return invalidRequest("taskId", "the task a request creates has the request's ID %q, not %.64q", r.ID, r.TaskID)
		}
		return r.Task.validate()
	case ActionCancelTask:
		if !taskIDRE.MatchString(r.TaskID) {
			return invalidRequest("taskId", "task ID %.64q is no task ID", r.TaskID)
		}
		return nil
	case ActionSetWindow:
		if err := r.validateCluster(); err != nil {
			return err
		}
		if r.Window == nil {
			return invalidRequest("window", "set-window needs the window (clear-window removes one)")
		}
		if err := r.Window.Validate(); err != nil {
			return invalidRequest("window", "%v", err)
		}
		return nil
	case ActionClearWindow:
		return r.validateCluster()
	}
	return invalid("action", "action %.64q must be one of %s", r.Action, actionList())
}

func (r *Request) validateCluster() error {
	if !clusterIDRE.MatchString(r.Cluster) {
		return invalidRequest("cluster", "cluster ID %.64q is no cluster ID", r.Cluster)
	}
	return nil
}

func actionList() string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// requestDomain separates request signatures from anything else the admin API's statement key
// signs (its break-glass statements to Cluster Service).
const requestDomain = "openhcp-maintenance-request-v1\x00"

// maxRequestSkew is how far in the future a request's creation time may be (clock difference
// between the admin API and the maintenance service).
const maxRequestSkew = 5 * time.Minute

// requestRecordRetention is how long the maintenance service keeps what it records of a
// carried-out request outside the request's own document (its requestRecord, a cleared window's
// record): longer
// than any request made before the record can still be carried out (RequestRetention after it
// was made, made at most maxRequestSkew ahead of this clock), and a day more for the store's and
// the purger's clocks.
const requestRecordRetention = RequestRetention + maxRequestSkew + 24*time.Hour

// statement is what the admin API signs: everything it vouches for, none of the outcome. The
// fields of the task and window requests are left out when empty, so a campaign request's
// statement is what it was before they existed (a request signed then still verifies).
func (r *Request) statement() ([]byte, error) {
	b, err := json.Marshal(struct {
		ID            string        `json:"id"`
		Action        RequestAction `json:"action"`
		Campaign      string        `json:"campaign"`
		Spec          *CampaignSpec `json:"spec,omitempty"`
		Cluster       string        `json:"cluster,omitempty"`
		Task          *TaskSpec     `json:"task,omitempty"`
		TaskID        string        `json:"taskId,omitempty"`
		Window        *Window       `json:"window,omitempty"`
		RequestedBy   string        `json:"requestedBy"`
		Group         string        `json:"group"`
		Reason        string        `json:"reason"`
		CorrelationID string        `json:"correlationId"`
		Created       time.Time     `json:"created"`
	}{r.ID, r.Action, r.Campaign, r.Spec, r.Cluster, r.Task, r.TaskID, r.Window, r.RequestedBy, r.Group, r.Reason, r.CorrelationID, r.Created})
	if err != nil {
		return nil, fmt.Errorf("encode the statement of maintenance request %s: %w", r.ID, err)
	}
	return append([]byte(requestDomain), b...), nil
}

// verify checks r's signature with pub, and that r is not a replay of a request older than the
// store keeps (its document could be gone, and its ID free again).
func (r *Request) verify(pub ed25519.PublicKey, now time.Time) error {
	if len(pub) != ed25519.PublicKeySize {
		return invalid("signature", "the maintenance service has no key to verify requests with")
	}
	st, err := r.statement()
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, st, r.Signature) {
		return invalid("signature", "the request's signature does not verify: the admin API did not make this request")
	}
	if r.Created.After(now.Add(maxRequestSkew)) || now.Sub(r.Created) > RequestRetention {
		return invalid("created", "a request created at %s is not carried out at %s", r.Created.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	return nil
}

// statementDigest is the SHA-256 of r's statement and signature, in hex: what the record of a
// carried-out request keeps to know its document again.
func (r *Request) statementDigest() (string, error) {
	st, err := r.statement()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(st)
	h.Write([]byte{0})
	h.Write(r.Signature)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrNoSigningKey is Submit's error when the request store has no key to sign with.
var ErrNoSigningKey = errors.New("no key to sign maintenance requests with")

// Requests stores maintenance requests and carries them out.
type Requests struct {
	st        docstore.Store
	campaigns *Campaigns
	types     []TaskType // the task types a create-task may name
	now       func() time.Time
	log       *slog.Logger
	key       ed25519.PrivateKey // the admin API's: Submit signs with it
	pub       ed25519.PublicKey  // the maintenance service's: Process verifies with it
}

// SignWith makes Submit sign each request with key, the admin API's statement key; without it
// Submit stores nothing.
func (s *Requests) SignWith(key ed25519.PrivateKey) *Requests {
	s.key = key
	return s
}

// VerifyWith makes Process carry out only requests whose signature pub verifies (the admin API's
// statement public key); without it every request fails.
func (s *Requests) VerifyWith(pub ed25519.PublicKey) *Requests {
	s.pub = pub
	return s
}

// WithTypes names the task types a create-task request may name (TaskTypes): Submit refuses
// another before signing, Process fails one. Without them every create-task is refused.
func (s *Requests) WithTypes(types []TaskType) *Requests {
	s.types = types
	return s
}

// NewRequests returns the request store on st. campaigns carries requests out (nil for a store
// that only submits and reads, the admin API's); now is the clock (nil: time.Now).
func NewRequests(st docstore.Store, campaigns *Campaigns, now func() time.Time, log *slog.Logger) *Requests {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Requests{st: st, campaigns: campaigns, now: now, log: log}
}

func requestDoc(r *Request) (*docstore.Document, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode maintenance request %s: %w", r.ID, err)
	}
	return &docstore.Document{PartitionKey: RequestPartition, ID: "request/" + r.ID, Type: TypeRequest, ResourceID: "request/" + r.ID, Body: b}, nil
}

// decodeRequest reads a request document. One whose body does not decode (the admin API's store
// login can write any Pending body) is a Pending request that fails for its body, so that it
// blocks neither the other requests nor a listing.
func decodeRequest(d *docstore.Document) (*Request, error) {
	var r Request
	if err := json.Unmarshal(d.Body, &r); err != nil {
		id := strings.TrimPrefix(d.ID, "request/")
		return &Request{ID: id, State: RequestPending, etag: d.ETag, garbled: fmt.Sprintf("decode maintenance request %s: %v", id, err)}, nil
	}
	r.etag = d.ETag
	if id := strings.TrimPrefix(d.ID, "request/"); r.ID != id {
		r.stray, r.ID = r.ID, id
		if r.stray == "" {
			r.stray = "(none)"
		}
	}
	return &r, nil
}

// Submit validates r and stores it Pending under a new ID.
func (s *Requests) Submit(ctx context.Context, r *Request) (*Request, error) {
	if r.Action == ActionCreateCampaign && r.Spec != nil {
		r.Campaign = r.Spec.ID
	}
	if r.Action == ActionCreateTask {
		r.TaskID = "" // the request's ID, given below
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if err := r.CheckAsked(s.types); err != nil {
		return nil, err
	}
	if len(s.key) != ed25519.PrivateKeySize {
		return nil, ErrNoSigningKey
	}
	r.ID, r.State, r.Created = uuid.NewString(), RequestPending, s.now().UTC()
	if r.Action == ActionCreateTask {
		r.TaskID = r.ID
	}
	r.Message, r.CampaignState, r.Finished = "", "", time.Time{}
	st, err := r.statement()
	if err != nil {
		return nil, err
	}
	r.Signature = ed25519.Sign(s.key, st)
	d, err := requestDoc(r)
	if err != nil {
		return nil, err
	}
	out, err := s.st.Create(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("store maintenance request %s: %w", r.ID, err)
	}
	r.etag = out.ETag
	return r, nil
}

// Get reads one request.
func (s *Requests) Get(ctx context.Context, id string) (*Request, error) {
	d, err := s.st.Get(ctx, RequestPartition, "request/"+id)
	if err != nil {
		return nil, fmt.Errorf("get maintenance request %s: %w", id, err)
	}
	return decodeRequest(d)
}

// List returns every request, oldest first.
func (s *Requests) List(ctx context.Context) ([]*Request, error) {
	return listAll(ctx, s.st, docstore.Query{Partition: RequestPartition, Type: TypeRequest}, "maintenance requests",
		decodeRequest, func(r *Request) (time.Time, string) { return r.Created, r.ID })
}

// Process carries out every Pending request, oldest first, and records each outcome. A request
// that cannot be carried out (invalid, an unknown campaign, a state that does not allow it)
// ends Failed with the reason; one that met a passing error (Cluster Service or the store
// unavailable) stays Pending for the next Process. Carrying a request out again after a crash
// between the change and its record changes nothing twice: the campaign records the request
// that changed it. It returns the first passing error.
func (s *Requests) Process(ctx context.Context) error {
	rs, err := s.List(ctx)
	if err != nil {
		return err
	}
	var first error
	for _, r := range rs {
		if r.State != RequestPending {
			continue
		}
		if err := s.process(ctx, r); err != nil {
			s.log.Warn("maintenance request not carried out; retrying at the next poll", "request", r.ID, "action", r.Action, "campaign", r.Campaign, "error", err)
			if first == nil {
				first = err
			}
		}
	}
	return first
}

func (s *Requests) process(ctx context.Context, r *Request) error {
	rec, err := s.getRecord(ctx, r.ID)
	if err != nil {
		return err
	}
	if rec != nil {
		return s.processRecorded(ctx, r, rec)
	}
	msg, c, err := s.carryOut(ctx, r)
	switch {
	case err == nil:
		r.State, r.Message = RequestDone, msg
		if c != nil {
			r.CampaignState = c.State
		}
	case permanent(err):
		r.State, r.Message = RequestFailed, err.Error()
		if c != nil {
			r.CampaignState = c.State
		}
	default:
		return err
	}
	r.Finished = s.now().UTC()
	// The record first: from the moment it exists, the request is never carried out again,
	// whatever its document says later.
	digest, err := r.statementDigest()
	if err != nil {
		return err
	}
	err = s.createRecord(ctx, &requestRecord{Request: r.ID, Action: r.Action, RequestETag: r.etag, Statement: digest, State: r.State,
		Message: r.Message, CampaignState: r.CampaignState, Finished: r.Finished})
	if errors.Is(err, docstore.ErrAlreadyExists) {
		return nil // another consumer carried it out and records it
	}
	if err != nil {
		return err
	}
	return s.recordOutcome(ctx, r)
}

// processRecorded ends a Pending request that the record rec says was carried out already.
// The same document the record names (its ETag, and the digest of its statement and signature:
// the admin API's login can insert a document with any ETag) is one whose outcome was not
// written (the service stopped in between): it gets the recorded outcome. Any other is a replay,
// a document written Pending again after its outcome (or deleted and inserted again, whatever
// its ETag): it fails, changing nothing, and is logged and counted
// (maintenance_request_replays_refused).
func (s *Requests) processRecorded(ctx context.Context, r *Request, rec *requestRecord) error {
	digest, err := r.statementDigest()
	if err != nil {
		return err
	}
	// A record written before records kept the digest has none: its ETag alone decides.
	if r.etag == rec.RequestETag && (rec.Statement == "" || rec.Statement == digest) {
		r.State, r.Message, r.CampaignState, r.Finished = rec.State, rec.Message, rec.CampaignState, rec.Finished
		return s.recordOutcome(ctx, r)
	}
	s.log.Warn("maintenance request replay refused: it was carried out before and is never carried out twice", "request", r.ID,
		"action", r.Action, "person", r.RequestedBy, logattr.KeyCorrelationRequestID, r.CorrelationID,
		"carriedOut", rec.Finished, "outcome", rec.State)
	rec.ReplaysRefused++
	if err := s.replaceRecord(ctx, rec); err != nil {
		return err
	}
	r.State, r.CampaignState, r.Finished = RequestFailed, "", s.now().UTC()
	r.Message = fmt.Sprintf("replay refused: request %s was carried out at %s (%s: %.256s); a request is carried out once",
		r.ID, rec.Finished.Format(time.RFC3339), rec.State, rec.Message)
	return s.recordOutcome(ctx, r)
}

// recordOutcome writes r's outcome into its document, which then expires after RequestRetention.
func (s *Requests) recordOutcome(ctx context.Context, r *Request) error {
	d, err := requestDoc(r)
	if err != nil {
		return err
	}
	d.TTL = RequestRetention
	out, err := s.st.Replace(ctx, d, r.etag)
	if errors.Is(err, docstore.ErrPreconditionFailed) {
		return nil // another consumer recorded it first
	}
	if err != nil {
		return fmt.Errorf("record the outcome of maintenance request %s: %w", r.ID, err)
	}
	r.etag = out.ETag
	s.log.Info("maintenance request carried out", "request", r.ID, "action", r.Action, "campaign", r.Campaign,
		"cluster", r.Cluster, "task", r.TaskID, "person", r.RequestedBy, logattr.KeyCorrelationRequestID, r.CorrelationID, "state", r.State, "message", r.Message)
	return nil
}

// TypeRequestRecord is the kind of document in which the maintenance service records each
// request it carried out (or refused): request/<id> in Partition, which only the store's owner
// group may write (not the admin API's login, which may insert requests and nothing else).
const TypeRequestRecord = "maintenance-request-record"

// requestRecord is the maintenance service's own record that it carried out a request. A request
// document is written by the admin API's store login too, so its state is not proof that it was
// carried out; the record is, and it outlives every request made before it
// (requestRecordRetention).
type requestRecord struct {
	Request string        `json:"request"`
	Action  RequestAction `json:"action"`
	// RequestETag is the ETag of the Pending request document that was carried out: found
	// Pending again with it, the document is the one whose outcome was not written yet.
	RequestETag string `json:"requestEtag"`
	// Statement is the digest of that document's statement and signature (statementDigest):
	// a document inserted again with the same ETag but saying anything else is a replay.
	Statement     string        `json:"statement,omitempty"`
	State         RequestState  `json:"state"`
	Message       string        `json:"message,omitempty"`
	CampaignState CampaignState `json:"campaignState,omitempty"`
	Finished      time.Time     `json:"finished"`
	// ReplaysRefused counts the times the request was found Pending again and refused.
	ReplaysRefused int `json:"replaysRefused,omitempty"`

	etag string
	ttl  time.Duration // the time left, as read: a replace keeps the record's expiry
}

func recordDoc(rec *requestRecord) (*docstore.Document, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode the record of maintenance request %s: %w", rec.Request, err)
	}
	id := "request/" + rec.Request
	ttl := rec.ttl
	if ttl <= 0 {
		ttl = requestRecordRetention
	}
	return &docstore.Document{PartitionKey: Partition, ID: id, Type: TypeRequestRecord, ResourceID: id, Body: b, TTL: ttl}, nil
}

func decodeRecord(d *docstore.Document) (*requestRecord, error) {
	var rec requestRecord
	if err := json.Unmarshal(d.Body, &rec); err != nil {
		return nil, fmt.Errorf("decode the record %s of a maintenance request: %w", d.ID, err)
	}
	rec.etag, rec.ttl = d.ETag, d.TTL
	return &rec, nil
}

// getRecord reads the record of request id; nil when it was not carried out.
func (s *Requests) getRecord(ctx context.Context, id string) (*requestRecord, error) {
	d, err := s.st.Get(ctx, Partition, "request/"+id)
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the record of maintenance request %s: %w", id, err)
	}
	if d.Type != TypeRequestRecord {
		return nil, fmt.Errorf("the record of maintenance request %s is a %s document", id, d.Type)
	}
	return decodeRecord(d)
}

func (s *Requests) createRecord(ctx context.Context, rec *requestRecord) error {
	d, err := recordDoc(rec)
	if err != nil {
		return err
	}
	out, err := s.st.Create(ctx, d)
	if err != nil {
		return fmt.Errorf("record maintenance request %s as carried out: %w", rec.Request, err)
	}
	rec.etag = out.ETag
	return nil
}

// replaceRecord writes rec if nobody wrote it since it was read; it keeps the record's expiry.
func (s *Requests) replaceRecord(ctx context.Context, rec *requestRecord) error {
	d, err := recordDoc(rec)
	if err != nil {
		return err
	}
	out, err := s.st.Replace(ctx, d, rec.etag)
	if err != nil {
		return fmt.Errorf("write the record of maintenance request %s: %w", rec.Request, err)
	}
	rec.etag = out.ETag
	return nil
}

// replaysRefused counts, by action, the replays refused over the records kept.
func (s *Requests) replaysRefused(ctx context.Context) (map[RequestAction]int, error) {
	recs, err := listAll(ctx, s.st, docstore.Query{Partition: Partition, Type: TypeRequestRecord}, "maintenance request records",
		decodeRecord, func(r *requestRecord) (time.Time, string) { return r.Finished, r.Request })
	if err != nil {
		return nil, err
	}
	n := map[RequestAction]int{}
	for _, r := range recs {
		n[r.Action] += r.ReplaysRefused
	}
	return n, nil
}

// permanent says whether err is the request's fault, not a passing one.
func permanent(err error) bool {
	return errors.Is(err, ErrInvalidCampaign) || errors.Is(err, ErrCampaignState) || errors.Is(err, ErrInvalidRequest) ||
		errors.Is(err, docstore.ErrNotFound) || errors.Is(err, errCampaignExists) || errors.Is(err, ErrInvalidTask) ||
		errors.Is(err, errNoCluster) || errors.Is(err, ErrInvalidWindow) || errors.Is(err, errSuperseded)
}

// errNoCluster is a request naming a cluster Cluster Service does not know.
var errNoCluster = errors.New("no such cluster")

// carryOut makes the change r asks for, or finds it already made by r, and says what it did; c
// is the campaign a campaign request left.
func (s *Requests) carryOut(ctx context.Context, r *Request) (msg string, c *Campaign, err error) {
	switch r.Action {
	case ActionCreateTask, ActionCancelTask, ActionSetWindow, ActionClearWindow:
		msg, err = s.applyOther(ctx, r)
		return msg, nil, err
	}
	c, err = s.apply(ctx, r)
	if err != nil {
		return "", c, err
	}
	return fmt.Sprintf("%s %s: campaign %s is %s", r.Action, r.Campaign, c.ID, c.State), c, nil
}

// applyOther carries out the requests that are not about a campaign. Each is idempotent of
// itself: a create-task's task has the request's ID (created once), a cancel of a cancelled
// task and a window set to what it is change nothing.
func (s *Requests) applyOther(ctx context.Context, r *Request) (string, error) {
	if err := r.Validate(); err != nil {
		return "", err
	}
	if err := r.verify(s.pub, s.now()); err != nil {
		return "", err
	}
	if err := r.CheckAsked(s.types); err != nil {
		return "", err
	}
	by := r.RequestedBy + " (request " + r.ID + ")"
	tasks := s.campaigns.tasks
	switch r.Action {
	case ActionCreateTask:
		// A run cut off after the create finds the task (and asks Cluster Service nothing: the
		// cluster may be gone since, the task's own steps see to that).
		t, err := tasks.Get(ctx, r.ID)
		if errors.Is(err, docstore.ErrNotFound) {
			task := &Task{ID: r.ID, Cluster: r.Cluster, Type: r.Task.Type, Params: r.Task.Params, RequestedBy: by}
			if regionType(s.types, r.Task.Type) {
				// The request names the region where it would name a cluster; the task's
				// steps check that it is this one.
				task.Cluster, task.Region = "", r.Cluster
			} else if err := s.clusterExists(ctx, r.Cluster); err != nil {
				return "", err
			}
			t, err = tasks.Create(ctx, task, s.now())
			if errors.Is(err, docstore.ErrAlreadyExists) {
				t, err = tasks.Get(ctx, r.ID)
			}
		}
		if err != nil {
			return "", err
		}
		if t.Region != "" {
			return fmt.Sprintf("task %s (%s on region %s) is %s", t.ID, t.Type, t.Region, t.State), nil
		}
		return fmt.Sprintf("task %s (%s on cluster %s) is %s", t.ID, t.Type, t.Cluster, t.State), nil
	case ActionCancelTask:
		t, err := tasks.cancel(ctx, r.TaskID, by, r.ID, s.now())
		if errors.Is(err, docstore.ErrNotFound) {
			return "", fmt.Errorf("no task %s: %w", r.TaskID, err)
		}
		if err != nil {
			return "", err
		}
		if t.State == StateRunning {
			return fmt.Sprintf("task %s is Running: asked to stop, it ends Cancelled before its next step", t.ID), nil
		}
		return fmt.Sprintf("task %s is %s", t.ID, t.State), nil
	case ActionSetWindow:
		if err := s.clusterExists(ctx, r.Cluster); err != nil {
			return "", err
		}
		// A set left Pending (Cluster Service unavailable) may be carried out after a newer
		// clear or set of the same cluster: setByRequest refuses it then.
		newer, err := NewWindows(s.st, nil).setByRequest(ctx, r.Cluster, r.Window, r.ID, r.Created, requestRecordRetention, s.now())
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("maintenance window of cluster %s set: %s", r.Cluster, r.Window)
		if newer != "" {
			msg += fmt.Sprintf("; then superseded by a newer request (%s), which changed it since", newer)
		}
		return msg, nil
	case ActionClearWindow:
		// No look at Cluster Service: the window of a cluster deleted since may be cleared.
		newer, err := NewWindows(s.st, nil).setByRequest(ctx, r.Cluster, nil, r.ID, r.Created, requestRecordRetention, s.now())
		if err != nil {
			return "", err
		}
		if newer != "" {
			return fmt.Sprintf("maintenance window of cluster %s cleared; then superseded by a newer request (%s), which changed it since", r.Cluster, newer), nil
		}
		return fmt.Sprintf("cluster %s has no maintenance window: maintained at any time outside blackouts", r.Cluster), nil
	}
	return "", invalid("action", "unknown action %q", r.Action)
}

// clusterExists fails a request for a cluster Cluster Service does not know; its other errors
// pass (the request is tried again).
func (s *Requests) clusterExists(ctx context.Context, id string) error {
	if s.campaigns == nil || s.campaigns.cs == nil {
		return errors.New("no Cluster Service to look the cluster up in")
	}
	_, err := s.campaigns.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.NotFound, codes.InvalidArgument:
		return fmt.Errorf("%w: %s: %s", errNoCluster, id, status.Convert(err).Message())
	}
	return fmt.Errorf("get cluster %s: %w", id, err)
}

var errCampaignExists = errors.New("campaign already exists")

// apply makes the change r asks for, or finds it already made by r.
func (s *Requests) apply(ctx context.Context, r *Request) (*Campaign, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if err := r.verify(s.pub, s.now()); err != nil {
		return nil, err
	}
	by := r.RequestedBy + " (request " + r.ID + ")"
	switch r.Action {
	case ActionCreateCampaign:
		spec := *r.Spec
		spec.RequestedBy, spec.Request = by, r.ID
		c, err := s.campaigns.Create(ctx, spec)
		if !errors.Is(err, docstore.ErrAlreadyExists) {
			return c, err
		}
		c, err = s.campaigns.Get(ctx, spec.ID)
		if err != nil {
			return nil, err
		}
		if c.Request != r.ID {
			return c, fmt.Errorf("%w: %s (created by %s)", errCampaignExists, spec.ID, c.RequestedBy)
		}
		return c, nil
	case ActionResumeCampaign:
		c, err := s.campaigns.resume(ctx, r.Campaign, by, r.ID)
		if errors.Is(err, docstore.ErrNotFound) {
			return nil, fmt.Errorf("no campaign %s: %w", r.Campaign, err)
		}
		return c, err
	case ActionCancelCampaign:
		c, err := s.campaigns.cancel(ctx, r.Campaign, by, r.ID)
		if errors.Is(err, docstore.ErrNotFound) && c == nil {
			return nil, fmt.Errorf("no campaign %s: %w", r.Campaign, err)
		}
		return c, err
	}
	return nil, invalid("action", "unknown action %q", r.Action)
}

// Run carries out pending requests every poll until ctx ends. Run it where the campaigns run
// (under the maintenance service's leader lease); two consumers would only repeat each other's
// idempotent changes.
func (s *Requests) Run(ctx context.Context, poll time.Duration) {
	for ctx.Err() == nil {
		_ = s.Process(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}
