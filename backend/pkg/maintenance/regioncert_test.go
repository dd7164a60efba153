package maintenance

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
	"github.com/openhcp/openhcp/internal/pkirotation"
	"github.com/openhcp/openhcp/internal/serverlimits"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// pkiHolder is the PKI holder's side as the launcher runs it, on a real region PKI: the
// rotation API over mutual TLS (pkirotation.Server), and listeners that serve the PKI's
// certificates the way the region's services do (internal/tlsconfig, re-read on each
// handshake). A rotation renews every certificate (pki.Region.RenewAll) or rolls the service CA
// over (pki.Region.RollCA); its holders need no reload, as our own services need none. What is
// not here is the launcher's reload of the servers we did not write (rotate.go), which
// test/e2e TestRegionCertificateRotationTask runs.
type pkiHolder struct {
	pki  *pki.Region
	api  *pkirotation.Client
	name string

	mu        sync.Mutex
	listeners []pkirotation.Listener
	scopes    []pkirotation.Scope // every rotation carried out, in order
	hold      chan struct{}       // when set, a rotation waits for it to close
}

func startPKIHolder(t *testing.T) *pkiHolder {
	t.Helper()
	p, err := pki.Create(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Add(pkirotation.ServerIdentity, pki.Spec{CommonName: pkirotation.ServerIdentity, Usage: pki.Server}, pki.ServiceCA); err != nil {
		t.Fatal(err)
	}
	h := &pkiHolder{pki: p, name: "westus3"}
	srv, err := pkirotation.NewServer(pkirotation.ServerConfig{TrustDomain: p.TrustDomain,
		Rotate: func(ctx context.Context, scope pkirotation.Scope) error {
			h.mu.Lock()
			hold := h.hold
			h.mu.Unlock()
			if hold != nil {
				select {
				case <-hold:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			h.mu.Lock()
			h.scopes = append(h.scopes, scope)
			h.mu.Unlock()
			if scope == pkirotation.ScopeCertificates {
				return p.RenewAll()
			}
			by := map[string]pki.Issuer{"service": pki.ServiceCA, "arm": pki.ARMCA, "person": pki.PersonCA}[scope.CA()]
			return p.RollCA(by, func(string) error { return nil })
		},
		Region: func() pkirotation.Region {
			h.mu.Lock()
			defer h.mu.Unlock()
			return pkirotation.Region{Name: h.name, Listeners: append([]pkirotation.Listener(nil), h.listeners...)}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	apiAddr := h.serve(t, pkirotation.ServerIdentity, srv.Handler(), true)
	h.serve(t, pki.Frontend, http.NotFoundHandler(), true)
	h.serve(t, pki.ClusterService, http.NotFoundHandler(), true)
	f := p.MustFiles(pki.Maintenance)
	if h.api, err = pkirotation.NewClient(apiAddr, tlsconfig.Files{CA: p.CAFile, Cert: f.Cert, Key: f.Key}); err != nil {
		t.Fatal(err)
	}
	return h
}

// serve serves identity's certificate on a new loopback listener the holder lists: reloading
// it on every handshake as the region's services do, or (reload false) loading it once, as a
// server that was never told about a rotation.
func (h *pkiHolder) serve(t *testing.T, name string, handler http.Handler, reload bool) string {
	t.Helper()
	f := h.pki.MustFiles(name)
	var cfg *tls.Config
	if reload {
		var err error
		if cfg, err = (tlsconfig.Files{CA: h.pki.CAFile, Cert: f.Cert, Key: f.Key}).Server("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	} else {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	hs := serverlimits.API().Server("127.0.0.1:0", handler, cfg)
	ln, err := serverlimits.API().Listen(hs)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	l := pkirotation.Listener{Name: name, Address: ln.Addr().String(), ServerName: identity.ServerName(pki.ServiceOf(name)), Protocol: pkirotation.ProtocolTLS}
	if !reload {
		l.Name = name + "-stale"
	}
	h.mu.Lock()
	h.listeners = append(h.listeners, l)
	h.mu.Unlock()
	return l.Address
}

func (h *pkiHolder) rotations() []pkirotation.Scope {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]pkirotation.Scope(nil), h.scopes...)
}

func (h *pkiHolder) setHold(c chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold = c
}

// serials reads what every listener serves now.
func (h *pkiHolder) serials(t *testing.T) map[string]string {
	t.Helper()
	roots, err := pkirotation.ReadCAFile(h.pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	ls := append([]pkirotation.Listener(nil), h.listeners...)
	h.mu.Unlock()
	out := map[string]string{}
	for _, s := range pkirotation.Probe(context.Background(), ls, roots) {
		if s.Cert != nil {
			out[s.Listener.Name] = s.Cert.SerialNumber.String()
		}
	}
	return out
}

func TestRegionCertificateRotation(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	h := startPKIHolder(t)
	tt := RegionCertificateRotation(RegionCertConfig{PKI: h.api, CAFile: h.pki.CAFile, Poll: 50 * time.Millisecond})
	withoutAPI := RegionCertificateRotation(RegionCertConfig{})
	withoutAPI.Name = "region-certificate-rotation-without-api"
	runActuator(t, dsn, []TaskType{tt, withoutAPI}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second})

	create := func(t *testing.T, task *Task) {
		t.Helper()
		if task.Region == "" {
			task.Region = "westus3"
		}
		if task.Type == "" {
			task.Type = TypeRegionCertificateRotation
		}
		task.RequestedBy = "test"
		if _, err := tasks.Create(ctx, task, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	for i, tc := range []struct {
		name        string
		task        Task
		stale       bool // a listener that was never told to reload joins the region
		want        State
		wantMessage string
		wantScopes  []pkirotation.Scope // rotations the holder carries out for the task
		unchanged   bool                // the listeners serve what they served (no CA of theirs rolled)
		firstTry    bool                // the task fails at its first attempt, without retries
	}{
		{name: "every_listener_serves_a_new_certificate", want: StateSucceeded, wantMessage: "all steps done",
			wantScopes: []pkirotation.Scope{pkirotation.ScopeCertificates}},
		{name: "a_service_ca_rollover_ends_with_every_listener_on_the_new_ca", task: Task{Params: map[string]string{ParamScope: "ca:service"}},
			want: StateSucceeded, wantMessage: "all steps done", wantScopes: []pkirotation.Scope{"ca:service"}},
		{name: "a_person_ca_rollover_leaves_the_listeners_certificates_and_succeeds", task: Task{Params: map[string]string{ParamScope: "ca:person"}},
			want: StateSucceeded, wantMessage: "all steps done", wantScopes: []pkirotation.Scope{"ca:person"}, unchanged: true},
		{name: "a_second_person_ca_rollover_within_the_spacing_fails_saying_when_to_retry", task: Task{Params: map[string]string{ParamScope: "ca:person"}},
			want: StateFailed, wantMessage: "retry at or after", firstTry: true},
		{name: "an_unknown_scope_fails_and_nothing_is_rotated", task: Task{Params: map[string]string{ParamScope: "ca:etcd"}},
			want: StateFailed, wantMessage: "params.scope: scope \"ca:etcd\" must be certificates or ca:"},
		{name: "another_region_fails_and_nothing_is_rotated", task: Task{Region: "eastus"},
			want: StateFailed, wantMessage: `the task is for region "eastus", but this maintenance service's PKI holder holds region "westus3"`},
		{name: "no_rotation_api_fails_saying_why_and_nothing_is_rotated", task: Task{Type: withoutAPI.Name},
			want: StateFailed, wantMessage: "offers no rotation API to the maintenance service"},
		{name: "a_listener_still_serving_its_old_serial_fails_the_task_naming_it", stale: true,
			want: StateFailed, wantMessage: "not rotated: frontend-stale (127.0.0.1:", wantScopes: []pkirotation.Scope{pkirotation.ScopeCertificates}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stale {
				h.serve(t, pki.Frontend, http.NotFoundHandler(), false)
				t.Cleanup(func() {
					h.mu.Lock()
					h.listeners = h.listeners[:len(h.listeners)-1]
					h.mu.Unlock()
				})
			}
			before, rotatedBefore := h.serials(t), len(h.rotations())
			caBefore, err := pkirotation.ReadCAFile(h.pki.CAFile)
			if err != nil {
				t.Fatal(err)
			}
			task := tc.task
			task.ID = fmt.Sprintf("region-rotation-%d", i)
			create(t, &task)
			got := waitState(t, tasks, task.ID, tc.want, 2*time.Minute)
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Fatalf("message %q; want it to contain %q", got.Message, tc.wantMessage)
			}
			if tc.firstTry && got.Attempts != 0 {
				t.Fatalf("failed after %d retries; want it failed at once", got.Attempts)
			}
			if scopes := h.rotations()[rotatedBefore:]; fmt.Sprint(scopes) != fmt.Sprint(tc.wantScopes) {
				t.Fatalf("rotations %v; want %v", scopes, tc.wantScopes)
			}
			if tc.want != StateSucceeded {
				return
			}
			after := h.serials(t)
			for name, serial := range before {
				if after[name] == "" || (after[name] == serial) != tc.unchanged {
					t.Errorf("%s serves %q after the task, %q before; unchanged expected: %t", name, after[name], serial, tc.unchanged)
				}
			}
			if got.Data[DataOutcome] != "rotated" || got.Data[DataListenersRotated] != fmt.Sprint(len(before)) {
				t.Fatalf("data %v; want outcome rotated over %d listeners", got.Data, len(before))
			}
			if tc.task.Params[ParamScope] == "ca:service" {
				// Every listener now chains to the new CA only.
				h.mu.Lock()
				ls := append([]pkirotation.Listener(nil), h.listeners...)
				h.mu.Unlock()
				for _, s := range pkirotation.Probe(ctx, ls, caBefore) {
					if s.Err == nil {
						t.Errorf("%s still verifies against the old service CA", s.Listener.Name)
					}
				}
			}
		})
	}

	// An actuator that ran up to a step and died before recording it: the stored task is at
	// the step before, with what the steps before it recorded, and the step's effect done.
	// Resumed, the task asks with the same key and the holder rotates once.
	for _, tc := range []struct {
		name string
		ran  int // steps run before the crash (the last one's record lost)
	}{
		{name: "a_crash_in_check_starts_over", ran: 1},
		{name: "a_crash_after_the_request_resumes_without_a_second_rotation", ran: 2},
		{name: "a_crash_after_the_rotation_was_seen_done_resumes_without_a_second_rotation", ran: 3},
		{name: "a_crash_after_verify_verifies_again_without_a_second_rotation", ran: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "region-crash-" + fmt.Sprint(tc.ran)
			before, rotatedBefore := h.serials(t), len(h.rotations())
			run := &Task{ID: id, Region: "westus3", Type: TypeRegionCertificateRotation}
			var recorded map[string]string
			for k, s := range tt.Steps[:tc.ran] {
				if k == tc.ran-1 {
					recorded = clone(run.Data) // the last step's record is lost
				}
				for {
					res, err := s.Run(ctx, run)
					if err != nil {
						t.Fatalf("step %s: %v", s.Name, err)
					}
					if res.Wait == 0 {
						break
					}
					time.Sleep(res.Wait)
				}
			}
			// Stored out of the actuator's reach until it holds what the crash left.
			create(t, &Task{ID: id, RunAfter: time.Now().Add(time.Hour)})
			stored, err := tasks.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			stored.Step, stored.Data, stored.RunAfter = tc.ran-1, recorded, time.Time{}
			if err := tasks.replace(ctx, stored); err != nil {
				t.Fatal(err)
			}
			got := waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
			if n := len(h.rotations()) - rotatedBefore; n != 1 {
				t.Fatalf("%d rotations for the task; want 1", n)
			}
			after := h.serials(t)
			for name, serial := range before {
				if after[name] == serial {
					t.Errorf("%s still serves %s", name, serial)
				}
			}
			if got.Data[DataOutcome] != "rotated" {
				t.Fatalf("data %v; want outcome rotated", got.Data)
			}
		})
	}

	t.Run("a_rotation_already_running_is_waited_for_then_the_tasks_own_runs", func(t *testing.T) {
		hold := make(chan struct{})
		h.setHold(hold)
		// Someone else's rotation (the launcher's timer would be one) holds the holder.
		if _, err := h.api.Request(ctx, "someone-else", pkirotation.ScopeCertificates); err != nil {
			t.Fatal(err)
		}
		rotatedBefore := len(h.rotations())
		id := "region-busy"
		create(t, &Task{ID: id})
		waitUntil(t, 2*time.Minute, "the task waits for the other rotation", func() error {
			got, err := tasks.Get(ctx, id)
			if err != nil {
				return err
			}
			if got.State != StateRunning || !strings.Contains(got.Message, "waiting for another rotation of the region to end") {
				return fmt.Errorf("state %s step %d: %s", got.State, got.Step, got.Message)
			}
			return nil
		})
		h.setHold(nil)
		close(hold)
		waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
		if n := len(h.rotations()) - rotatedBefore; n != 2 {
			t.Fatalf("%d rotations; want the other one and the task's own", n)
		}
	})

	t.Run("a_task_names_one_target_and_every_region_task_takes_the_one_region_lock", func(t *testing.T) {
		if a, b := (&Task{Region: "westus3"}).Target(), (&Task{Region: "eastus"}).Target(); a != "region" || b != a {
			t.Fatalf("targets %q and %q; want both \"region\"", a, b)
		}
		if _, err := tasks.Create(ctx, &Task{ID: "both", Region: "westus3", Cluster: "c1", Type: TypeRegionCertificateRotation}, time.Now()); err == nil {
			t.Fatal("a task on a region and a cluster was stored")
		}
	})
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestRegionCertificateRotationTaskByRequest: an SRE's create-task of the type names the region
// where a cluster would be named; the task made is a region task, and Cluster Service is not
// asked about the name (this consumer has none: a cluster task's request would stay Pending).
func TestRegionCertificateRotationTaskByRequest(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	st := openStore(t, pgservertest.NewDatabase(t, pg))
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	types := TaskTypes(nil, ZStreamConfig{}, RegionCertConfig{})
	submitter := NewRequests(st, nil, nil, nil).SignWith(key).WithTypes(types)
	consumer := NewRequests(st, NewCampaigns(NewTasks(st), nil, nil), nil, nil).VerifyWith(pub).WithTypes(types)
	r, err := submitter.Submit(ctx, &Request{Action: ActionCreateTask, Cluster: "westus3", RequestedBy: "alice",
		Task: &TaskSpec{Type: TypeRegionCertificateRotation, Params: map[string]string{ParamScope: "ca:person"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := submitter.Submit(ctx, &Request{Action: ActionCreateTask, Cluster: "westus3", RequestedBy: "alice",
		Task: &TaskSpec{Type: TypeRegionCertificateRotation, Params: map[string]string{"force": "yes"}}}); err == nil || !strings.Contains(err.Error(), "params.force") {
		t.Fatalf("a parameter the type does not take: %v; want it refused naming params.force", err)
	}
	if err := consumer.Process(ctx); err != nil {
		t.Fatal(err)
	}
	done, err := submitter.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != RequestDone || !strings.Contains(done.Message, "on region westus3") {
		t.Fatalf("request %s: %s; want Done naming the region", done.State, done.Message)
	}
	task, err := NewTasks(st).Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Region != "westus3" || task.Cluster != "" || task.Target() != "region" || task.Params[ParamScope] != "ca:person" || task.Type != TypeRegionCertificateRotation {
		t.Fatalf("task %+v; want a region task on westus3 with its scope", task)
	}
}
