package maintenance

import (
	"context"
	"crypto/ed25519"
	"errors"
	"log/slog"
	"testing"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// requestHarness is the request path over real parts: a Cluster Service fleet with one shard
// (mgmt-1) and the maintenance store on one PostgreSQL, the admin API's statement key pair, and
// the admin API's side of the requests (submitter: it signs, submits and reads, it carries
// nothing out).
type requestHarness struct {
	f         *fleet
	st        *postgres.Store
	dsn       string // the maintenance store's database, for tests that write it as another login would
	pub       ed25519.PublicKey
	key       ed25519.PrivateKey
	submitter *Requests
}

// newRequestHarness starts the harness; shard mgmt-1 takes up to capacity clusters.
func newRequestHarness(t *testing.T, capacity int32) *requestHarness {
	t.Helper()
	pg := pgservertest.Start(t)
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", capacity)
	dsn := pgservertest.NewDatabase(t, pg)
	st := openStore(t, dsn)
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &requestHarness{f: f, st: st, dsn: dsn, pub: pub, key: key, submitter: NewRequests(st, nil, nil, nil).SignWith(key)}
}

// consumer is the maintenance service's side reading requests from s (the harness store, or a
// wrapper of it): it verifies with the harness key and runs every registered task type.
func (h *requestHarness) consumer(s docstore.Store, log *slog.Logger) *Requests {
	return NewRequests(s, NewCampaigns(NewTasks(h.st), h.f.cs, nil), nil, log).VerifyWith(h.pub).WithTypes(TaskTypes(h.f.cs, ZStreamConfig{}, RegionCertConfig{}))
}

// submit submits r as alice through the harness submitter.
func (h *requestHarness) submit(t *testing.T, r *Request) *Request {
	t.Helper()
	return submitAsAlice(t, h.submitter, r)
}

// outcome reads request id as it is stored.
func (h *requestHarness) outcome(t *testing.T, id string) *Request {
	t.Helper()
	return requestOutcome(t, h.submitter, id)
}

// storeSigned stores r, signed with the harness key, as its request document as it is: as a
// writer that skipped Submit's validation would, the admin API's store login being allowed to.
// forge, if set, changes r after the signature; docID, if set, is the document's ID instead of
// the one r names.
func (h *requestHarness) storeSigned(t *testing.T, r *Request, forge func(*Request), docID string) {
	t.Helper()
	sign(t, h.key, r)
	if forge != nil {
		forge(r)
	}
	d, err := requestDoc(r)
	if err != nil {
		t.Fatal(err)
	}
	if docID != "" {
		d.ID, d.ResourceID = "request/"+docID, "request/"+docID
	}
	if _, err := h.st.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// crashBeforeRecord has process carry the pending requests out on a store that loses the next
// write of a request's outcome, as a consumer that stops right after carrying a request out:
// process must report the failure and request id must stay Pending.
func (h *requestHarness) crashBeforeRecord(t *testing.T, process func(docstore.Store) error, id string) {
	t.Helper()
	if err := process(&unrecordedStore{Store: h.st, fails: 1}); err == nil {
		t.Fatal("the consumer that stopped before recording reported no error")
	}
	if got := h.outcome(t, id); got.State != RequestPending {
		t.Fatalf("request after the crash: %s %q; want still Pending", got.State, got.Message)
	}
}

// refusal is a request Submit must refuse naming field, before anything is stored.
type refusal struct {
	name  string
	r     Request
	field string
}

// wantRefused submits each of refusals as alice through s and wants each refused naming its
// field, and no request stored.
func wantRefused(t *testing.T, s *Requests, refusals []refusal) {
	t.Helper()
	ctx := context.Background()
	for _, c := range refusals {
		c.r.RequestedBy = "alice"
		_, err := s.Submit(ctx, &c.r)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: got %v, want a refusal of field %s", c.name, err, c.field)
		}
	}
	if rs, err := s.List(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("refused requests were stored: %v %v", rs, err)
	}
}

// submitAsAlice submits r through s as the SRE alice; a refusal fails the test.
func submitAsAlice(t *testing.T, s *Requests, r *Request) *Request {
	t.Helper()
	r.RequestedBy = "alice"
	out, err := s.Submit(context.Background(), r)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return out
}

// requestOutcome reads request id as it is stored.
func requestOutcome(t *testing.T, s *Requests, id string) *Request {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
