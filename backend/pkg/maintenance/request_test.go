package maintenance

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openhcp/openhcp/internal/docstore"
)

// unrecordedStore is the store as a consumer that crashes right after carrying a request out
// sees it: its next fails writes of a request's outcome do not happen.
type unrecordedStore struct {
	docstore.Store
	fails int
}

func (s *unrecordedStore) Replace(ctx context.Context, d *docstore.Document, ifMatch string) (*docstore.Document, error) {
	if d.PartitionKey == RequestPartition && s.fails > 0 {
		s.fails--
		return nil, errors.New("injected: the consumer stopped before recording the outcome")
	}
	return s.Store.Replace(ctx, d, ifMatch)
}

// putCampaign stores a campaign as the campaign runner would have left it.
func putCampaign(t *testing.T, st docstore.Store, c *Campaign) {
	t.Helper()
	threshold := 0.1
	c.FromVersion, c.ChannelGroup, c.MaxInFlight, c.Bake, c.FailureThreshold = "4.19.16", "stable", 2, time.Minute, &threshold
	c.Created = time.Now().UTC()
	d, err := campaignDoc(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func TestRequests(t *testing.T) {
	h := newRequestHarness(t, 10)
	ctx := context.Background()
	f, st, pub, submitter := h.f, h.st, h.pub, h.submitter
	for _, n := range []string{"a", "b", "c"} {
		f.createCluster(n, "4.19.16")
	}
	campaigns := NewCampaigns(NewTasks(st), f.cs, nil)
	putCampaign(t, st, &Campaign{CampaignSpec: CampaignSpec{ID: "halted"}, State: CampaignHalted,
		Waves: []Wave{{Shard: "mgmt-1", Clusters: []string{"x", "y"}, Failed: 1}}})
	putCampaign(t, st, &Campaign{CampaignSpec: CampaignSpec{ID: "running", RequestedBy: "someone"}, State: CampaignRunning,
		Waves: []Wave{{Shard: "mgmt-1", Clusters: []string{"x"}}}})

	submit := h.submit
	// storeRaw stores a request as is, as a writer that skipped Submit's validation would.
	storeRaw := func(t *testing.T, r *Request) *Request {
		t.Helper()
		r.ID, r.State, r.RequestedBy, r.Created = strings.ReplaceAll(t.Name(), "/", "-"), RequestPending, "alice", time.Now().UTC()
		h.storeSigned(t, r, nil, "")
		return r
	}
	// processOnce runs a fresh consumer once on store s, as a restarted maintenance service would.
	processOnce := func(t *testing.T, s docstore.Store) error {
		t.Helper()
		return NewRequests(s, NewCampaigns(NewTasks(st), f.cs, nil), nil, nil).VerifyWith(pub).Process(ctx)
	}
	outcome := h.outcome
	changesBy := func(t *testing.T, campaign, request string) int {
		t.Helper()
		c, err := campaigns.Get(ctx, campaign)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range c.History {
			if h.Request == request {
				n++
			}
		}
		return n
	}

	t.Run("submit_refuses_an_invalid_request_naming_the_field", func(t *testing.T) {
		wantRefused(t, submitter, []refusal{
			{"an_unknown_action", Request{Action: "delete-campaign", Campaign: "x"}, "action"},
			{"a_create_without_a_spec", Request{Action: ActionCreateCampaign}, "spec"},
			{"a_campaign_id_that_is_no_name", Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "Bad_ID", FromVersion: "4.19.16", ChannelGroup: "stable"}}, "id"},
			{"a_negative_bake", Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "ok", FromVersion: "4.19.16", ChannelGroup: "stable", Bake: -time.Second}}, "bake"},
			{"a_resume_without_a_campaign", Request{Action: ActionResumeCampaign, Campaign: ""}, "campaign"},
		})
	})

	failed := []struct {
		name, reason string
		request      func(t *testing.T) *Request
	}{
		{"resume_of_an_unknown_campaign", "no campaign nosuch", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionResumeCampaign, Campaign: "nosuch"})
		}},
		{"cancel_of_an_unknown_campaign", "no campaign nosuch", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCancelCampaign, Campaign: "nosuch"})
		}},
		{"resume_of_a_running_campaign", "resume campaign running in state Running", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionResumeCampaign, Campaign: "running"})
		}},
		{"a_version_not_in_the_catalogue", "fromVersion: version 4.19.99 is not in channel group stable", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "badversion", FromVersion: "4.19.99", ChannelGroup: "stable"}})
		}},
		{"a_canary_shard_without_clusters", "canaryShard: canary shard mgmt-9 has no cluster", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "badcanary", FromVersion: "4.19.16", ChannelGroup: "stable", CanaryShard: "mgmt-9"}})
		}},
		{"a_campaign_that_exists", "campaign already exists: running", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "running", FromVersion: "4.19.16", ChannelGroup: "stable"}})
		}},
		{"a_wave_spec_that_skipped_validation", "failureThreshold: failureThreshold 2 must be between 0 and 1", func(t *testing.T) *Request {
			two := 2.0
			return storeRaw(t, &Request{Action: ActionCreateCampaign, Campaign: "badwaves", Spec: &CampaignSpec{ID: "badwaves", FromVersion: "4.19.16", ChannelGroup: "stable", FailureThreshold: &two}})
		}},
	}
	for _, c := range failed {
		t.Run("fails_"+c.name+"_with_its_reason", func(t *testing.T) {
			r := c.request(t)
			if err := processOnce(t, st); err != nil {
				t.Fatalf("process: %v", err)
			}
			got := outcome(t, r.ID)
			if got.State != RequestFailed || !strings.Contains(got.Message, c.reason) || got.Finished.IsZero() {
				t.Fatalf("request %s: %s %q; want Failed with %q", r.ID, got.State, got.Message, c.reason)
			}
		})
	}
	for _, name := range []string{"badversion", "badcanary", "badwaves"} {
		if _, err := campaigns.Get(ctx, name); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("campaign %s of a failed request exists: %v", name, err)
		}
	}

	// Each action, carried out by a consumer that stops before recording the outcome, then by a
	// restarted one: the change happens once and the request ends Done.
	crashes := []struct {
		name     string
		request  func(t *testing.T) *Request
		campaign string
		want     CampaignState
	}{
		{"create", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCreateCampaign, Spec: &CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable", CanaryShard: "mgmt-1", Bake: time.Minute}})
		}, "z1", CampaignRunning},
		{"resume", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionResumeCampaign, Campaign: "halted"})
		}, "halted", CampaignRunning},
		{"cancel", func(t *testing.T) *Request {
			return submit(t, &Request{Action: ActionCancelCampaign, Campaign: "z1"})
		}, "z1", CampaignCancelled},
	}
	for _, c := range crashes {
		t.Run(c.name+"_is_carried_out_once_across_a_crash_before_its_record", func(t *testing.T) {
			r := c.request(t)
			h.crashBeforeRecord(t, func(s docstore.Store) error { return processOnce(t, s) }, r.ID)
			if n := changesBy(t, c.campaign, r.ID); n != 1 {
				t.Fatalf("campaign %s has %d changes by request %s after the first run; want 1", c.campaign, n, r.ID)
			}
			if err := processOnce(t, st); err != nil {
				t.Fatalf("restarted consumer: %v", err)
			}
			got := outcome(t, r.ID)
			if got.State != RequestDone || got.CampaignState != c.want {
				t.Fatalf("request after the restart: %s %q (campaign %s); want Done, campaign %s", got.State, got.Message, got.CampaignState, c.want)
			}
			if n := changesBy(t, c.campaign, r.ID); n != 1 {
				t.Fatalf("campaign %s has %d changes by request %s; want exactly 1", c.campaign, n, r.ID)
			}
			cm, err := campaigns.Get(ctx, c.campaign)
			if err != nil || cm.State != c.want {
				t.Fatalf("campaign %s: %v %v; want %s", c.campaign, cm, err, c.want)
			}
		})
	}
	t.Run("a_created_campaign_names_the_sre_and_the_request", func(t *testing.T) {
		c, err := campaigns.Get(ctx, "z1")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(c.RequestedBy, "alice (request ") || c.Request == "" || c.Clusters() != 3 || c.Waves[0].Shard != "mgmt-1" {
			t.Fatalf("campaign z1: requestedBy %q request %q clusters %d waves %+v", c.RequestedBy, c.Request, c.Clusters(), c.Waves)
		}
	})
	t.Run("metrics_count_requests_by_action_and_state", func(t *testing.T) {
		submit(t, &Request{Action: ActionResumeCampaign, Campaign: "z1"}) // not carried out yet
		reg := prometheus.NewRegistry()
		reg.MustRegister(NewCollector(NewTasks(st), campaigns, submitter))
		for _, tc := range []struct {
			labels []string
			want   float64
		}{
			{[]string{"action=create-campaign", "state=Failed"}, 4},
			{[]string{"action=create-campaign", "state=Done"}, 1},
			{[]string{"action=resume-campaign", "state=Failed"}, 2},
			{[]string{"action=resume-campaign", "state=Done"}, 1},
			{[]string{"action=resume-campaign", "state=Pending"}, 1},
			{[]string{"action=cancel-campaign", "state=Failed"}, 1},
			{[]string{"action=cancel-campaign", "state=Done"}, 1},
		} {
			if got := gauge(t, reg, "maintenance_requests", tc.labels...); got != tc.want {
				t.Errorf("maintenance_requests%v = %v, want %v", tc.labels, got, tc.want)
			}
		}
	})
}

// TestHostileRequests: a request document is written by the admin API's store login, so the
// maintenance service reads it as input from outside: one whose body disagrees with its
// document, or whose requester is no person's name, fails without touching the campaign; and
// every request leaves the store some time after it ends, so requests cannot pile up forever.
func TestHostileRequests(t *testing.T) {
	h := newRequestHarness(t, 10)
	ctx := context.Background()
	f, st, pub, key := h.f, h.st, h.pub, h.key
	f.createCluster("a", "4.19.16")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	_, otherKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	consumer := NewRequests(st, NewCampaigns(NewTasks(st), f.cs, nil), func() time.Time { return now }, nil).VerifyWith(pub)

	// storeAsAdminLogin stores body as request document docID, Pending, as the admin login may.
	storeAsAdminLogin := func(t *testing.T, docID string, r *Request, forge func(*Request)) {
		t.Helper()
		r.State = RequestPending
		if r.Created.IsZero() {
			r.Created = now
		}
		h.storeSigned(t, r, forge, docID)
	}
	hostile := []struct {
		name, docID, reason string
		request             Request
		forge               func(*Request) // after the admin API's signature
	}{
		{"an_unsigned_request", "s1", "signature", Request{ID: "s1", Action: ActionResumeCampaign, Campaign: "halted-s1", RequestedBy: "bob"},
			func(r *Request) { r.Signature = nil }},
		{"a_request_signed_by_another_key", "s2", "signature", Request{ID: "s2", Action: ActionResumeCampaign, Campaign: "halted-s2", RequestedBy: "bob"},
			func(r *Request) { sign(t, otherKey, r) }},
		{"a_signed_request_naming_another_sre", "s3", "signature", Request{ID: "s3", Action: ActionResumeCampaign, Campaign: "halted-s3", RequestedBy: "alice"},
			func(r *Request) { r.RequestedBy = "bob" }},
		{"a_signed_request_for_another_campaign", "s4", "signature", Request{ID: "s4", Action: ActionResumeCampaign, Campaign: "halted-s4", RequestedBy: "alice"},
			func(r *Request) { r.Campaign = "halted-s5" }},
		{"a_replay_older_than_the_retention", "s6", "created", Request{ID: "s6", Action: ActionResumeCampaign, Campaign: "halted-s6", RequestedBy: "alice",
			Created: now.Add(-RequestRetention - time.Hour)}, nil},
		{"a_body_naming_another_request", "h1", "id", Request{ID: "someone-elses", Action: ActionResumeCampaign, Campaign: "halted-1", RequestedBy: "alice"}, nil},
		{"a_requester_of_64KiB", "h2", "requestedBy", Request{ID: "h2", Action: ActionResumeCampaign, Campaign: "halted-2", RequestedBy: strings.Repeat("a", 64<<10)}, nil},
		{"a_services_name_as_requester", "h3", "requestedBy", Request{ID: "h3", Action: ActionResumeCampaign, Campaign: "halted-3", RequestedBy: "maintenance"}, nil},
		{"a_requester_that_is_no_persons_name", "h5", "requestedBy", Request{ID: "h5", Action: ActionResumeCampaign, Campaign: "halted-5", RequestedBy: "maintenance."}, nil},
		{"a_reason_of_1MiB", "h4", "reason", Request{ID: "h4", Action: ActionResumeCampaign, Campaign: "halted-4", RequestedBy: "alice", Reason: strings.Repeat("r", 1<<20)}, nil},
	}
	for _, c := range hostile {
		t.Run("fails_"+c.name+"_without_changing_the_campaign", func(t *testing.T) {
			putCampaign(t, st, &Campaign{CampaignSpec: CampaignSpec{ID: c.request.Campaign}, State: CampaignHalted,
				Waves: []Wave{{Shard: "mgmt-1", Clusters: []string{"x", "y"}, Failed: 1}}})
			asked := c.request.Campaign
			storeAsAdminLogin(t, c.docID, &c.request, c.forge)
			halted := []string{asked}
			if forged := c.request.Campaign; forged != asked { // the campaign the forger wants resumed exists too
				putCampaign(t, st, &Campaign{CampaignSpec: CampaignSpec{ID: forged}, State: CampaignHalted,
					Waves: []Wave{{Shard: "mgmt-1", Clusters: []string{"x", "y"}, Failed: 1}}})
				halted = append(halted, forged)
			}
			if err := consumer.Process(ctx); err != nil {
				t.Fatalf("process: %v", err)
			}
			got, err := consumer.Get(ctx, c.docID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != RequestFailed || !strings.Contains(got.Message, c.reason) {
				t.Fatalf("request %s: %s %.200q; want Failed naming %s", c.docID, got.State, got.Message, c.reason)
			}
			for _, id := range halted {
				cm, err := NewCampaigns(NewTasks(st), nil, nil).Get(ctx, id)
				if err != nil || cm.State != CampaignHalted || len(cm.History) != 0 {
					t.Fatalf("campaign %s after the hostile request: %+v %v; want Halted, unchanged", id, cm, err)
				}
			}
		})
	}
	t.Run("a_body_that_does_not_decode_fails_and_blocks_no_other_request", func(t *testing.T) {
		if _, err := st.Create(ctx, &docstore.Document{PartitionKey: RequestPartition, ID: "request/garbled", Type: TypeRequest,
			ResourceID: "request/garbled", Body: []byte(`{"state":"Pending","spec":5,"created":"never"}`)}); err != nil {
			t.Fatal(err)
		}
		good, err := NewRequests(st, nil, func() time.Time { return now }, nil).SignWith(key).Submit(ctx, &Request{Action: ActionCancelCampaign, Campaign: "nosuch", RequestedBy: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if err := consumer.Process(ctx); err != nil {
			t.Fatalf("process: %v", err)
		}
		if got, err := consumer.Get(ctx, "garbled"); err != nil || got.State != RequestFailed || !strings.Contains(got.Message, "body") {
			t.Fatalf("the garbled request: %+v %v; want Failed naming its body", got, err)
		}
		if got, err := consumer.Get(ctx, good.ID); err != nil || got.State != RequestFailed || !strings.Contains(got.Message, "no campaign nosuch") {
			t.Fatalf("the request stored after the garbled one: %+v %v; want carried out (Failed: no campaign nosuch)", got, err)
		}
		if rs, err := consumer.List(ctx); err != nil || len(rs) == 0 {
			t.Fatalf("list after a garbled request: %d requests, %v", len(rs), err)
		}
	})
	t.Run("an_ended_request_expires_after_the_retention", func(t *testing.T) {
		r, err := NewRequests(st, nil, func() time.Time { return now }, nil).SignWith(key).Submit(ctx, &Request{Action: ActionCancelCampaign, Campaign: "nosuch", RequestedBy: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := st.Get(ctx, RequestPartition, "request/"+r.ID); err != nil || !d.ExpiresAt.IsZero() {
			t.Fatalf("pending request: %+v %v; want no expiry until it ends", d, err)
		}
		if err := consumer.Process(ctx); err != nil {
			t.Fatalf("process: %v", err)
		}
		d, err := st.Get(ctx, RequestPartition, "request/"+r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if left := time.Until(d.ExpiresAt); left < RequestRetention-time.Hour || left > RequestRetention+time.Hour {
			t.Fatalf("ended request expires at %s (in %s); want in about %s", d.ExpiresAt, left, RequestRetention)
		}
	})
}

// sign signs r as the admin API's Submit does.
func sign(t *testing.T, key ed25519.PrivateKey, r *Request) {
	t.Helper()
	st, err := r.statement()
	if err != nil {
		t.Fatal(err)
	}
	r.Signature = ed25519.Sign(key, st)
}
