package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// fakeSigners is a fake of the management cluster rotating break-glass signers and of Maestro
// carrying the CertificateRevocationRequest's conditions back (run for real in Cluster Service's
// TestBreakGlassAgainstMaestro and the e2e TestBreakGlassSignerRotationTask): every REVOKING
// revocation is reported REVOKED through the store's UpdateRevocation, as Cluster Service's
// controller does on PreviousCertificatesRevoked=True, or FAILED for the clusters in fail. The
// clusters in hold are left REVOKING until released. It records every revocation it sees.
type fakeSigners struct {
	f    *fleet
	mu   sync.Mutex
	fail map[string]bool
	hold map[string]bool
	// seen holds the revocation IDs per cluster and kind ("<cluster>/sre", "<cluster>/customer").
	seen map[string]map[string]bool
}

func (f *fleet) runFakeSigners(t *testing.T) *fakeSigners {
	s := &fakeSigners{f: f, fail: map[string]bool{}, hold: map[string]bool{}, seen: map[string]map[string]bool{}}
	runFakeLoop(t, "fake signers", s.advance)
	return s
}

func (s *fakeSigners) advance(ctx context.Context) error {
	revs, err := s.f.db.ListUnsettledRevocations(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range revs {
		kind := r.ClusterID + "/" + map[bool]string{true: "sre", false: "customer"}[r.SRE]
		if s.seen[kind] == nil {
			s.seen[kind] = map[string]bool{}
		}
		s.seen[kind][r.ID] = true
		if s.hold[r.ClusterID] || r.Status.GetState() != csv1.RevocationState_REVOCATION_STATE_REVOKING {
			continue
		}
		next := *r
		next.Status = proto.Clone(r.Status).(*csv1.RevocationStatus)
		if s.fail[r.ClusterID] {
			next.Status.State, next.Status.ErrorCode, next.Status.Message = csv1.RevocationState_REVOCATION_STATE_FAILED, "InvalidSignerType",
				"The signer class is not valid: the management cluster's signer refused the rotation."
		} else {
			next.Status.State, next.Status.Message = csv1.RevocationState_REVOCATION_STATE_REVOKED, "Every credential the signer issued before is revoked."
		}
		if _, err := s.f.db.UpdateRevocation(ctx, &next); err != nil && !errors.Is(err, csstore.ErrConflict) {
			return err
		}
	}
	return nil
}

// revocations returns the IDs of the revocations of cluster's kind ("sre" or "customer") seen.
func (s *fakeSigners) revocations(cluster, kind string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.seen[cluster+"/"+kind] {
		out = append(out, id)
	}
	return out
}

func (s *fakeSigners) set(m map[string]bool, cluster string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m[cluster] = v
}

func TestBreakGlassSignerRotation(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	f.registerShard("mgmt-1", 20)
	signers := f.runFakeSigners(t)

	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	tt := BreakGlassSignerRotation(f.cs, SignerRotationConfig{Poll: 50 * time.Millisecond})
	runActuator(t, dsn, []TaskType{tt}, ActuatorConfig{Holder: "a", LeaseDuration: 10 * time.Second})

	credentials := f.cs.(clients).CredentialsClient
	// customerCredential asks for a customer break-glass credential of cluster, as the frontend
	// does for ARM's requestAdminCredential.
	customerCredential := func(t *testing.T, cluster string) string {
		t.Helper()
		id, err := newRevocationID() // credential IDs have the same shape
		if err != nil {
			t.Fatal(err)
		}
		if _, err := credentials.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id, ClusterId: cluster}); err != nil {
			t.Fatalf("request a customer credential: %v", err)
		}
		return id
	}
	credentialState := func(t *testing.T, id string) csv1.CredentialState {
		t.Helper()
		c, err := credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		return c.GetStatus().GetState()
	}

	for i, tc := range []struct {
		name, signers string
		missing       bool // the task names a cluster Cluster Service does not know
		failRotation  bool
		want          State
		wantMessage   string
		// wantSRE and wantCustomer are how many revocations of each kind the cluster gets.
		wantSRE, wantCustomer int
		wantCredential        csv1.CredentialState
	}{
		{name: "both_signers_rotate_and_the_customer_credential_issued_before_is_revoked", signers: SignersBoth,
			want: StateSucceeded, wantMessage: "all steps done", wantSRE: 1, wantCustomer: 1, wantCredential: csv1.CredentialState_CREDENTIAL_STATE_REVOKED},
		{name: "the_default_rotates_the_sre_signer_only_and_leaves_the_customer_credential",
			want: StateSucceeded, wantMessage: "all steps done", wantSRE: 1, wantCredential: csv1.CredentialState_CREDENTIAL_STATE_PENDING},
		{name: "the_customer_signer_alone_rotates_when_asked", signers: SignersCustomer,
			want: StateSucceeded, wantMessage: "all steps done", wantCustomer: 1, wantCredential: csv1.CredentialState_CREDENTIAL_STATE_REVOKED},
		{name: "an_unknown_signer_fails_and_nothing_is_revoked", signers: "all",
			want: StateFailed, wantMessage: "params.signers must be sre, customer or both", wantCredential: csv1.CredentialState_CREDENTIAL_STATE_PENDING},
		{name: "an_unknown_cluster_fails_and_nothing_is_revoked", signers: SignersBoth, missing: true,
			want: StateFailed, wantMessage: "NotFound"},
		{name: "a_rotation_the_management_cluster_refuses_fails_the_task_with_its_message", signers: SignersCustomer, failRotation: true,
			want: StateFailed, wantMessage: "InvalidSignerType The signer class is not valid", wantCustomer: 1, wantCredential: csv1.CredentialState_CREDENTIAL_STATE_REVOKING},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := f.createCluster(fmt.Sprintf("rotate-%d", i), "4.19.16")
			cred := customerCredential(t, cluster)
			target := cluster
			if tc.missing {
				target = strings.Repeat("0", 31) + "v"
			}
			signers.set(signers.fail, cluster, tc.failRotation)
			id := "rotate-" + cluster
			params := map[string]string{}
			if tc.signers != "" {
				params[ParamSigners] = tc.signers
			}
			if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: target, Type: TypeBreakGlassSignerRotation, RequestedBy: "test", Params: params}, time.Now()); err != nil {
				t.Fatal(err)
			}
			got := waitState(t, tasks, id, tc.want, 2*time.Minute)
			if !strings.Contains(got.Message, tc.wantMessage) {
				t.Fatalf("message %q; want it to contain %q", got.Message, tc.wantMessage)
			}
			if n, m := len(signers.revocations(cluster, "sre")), len(signers.revocations(cluster, "customer")); n != tc.wantSRE || m != tc.wantCustomer {
				t.Fatalf("%d SRE and %d customer revocations; want %d and %d", n, m, tc.wantSRE, tc.wantCustomer)
			}
			if !tc.missing {
				if got := credentialState(t, cred); got != tc.wantCredential {
					t.Fatalf("the customer credential issued before is %s; want %s", got, tc.wantCredential)
				}
			}
			if tc.want == StateSucceeded {
				if got.Data[DataOutcome] != "rotated" || (tc.wantCustomer == 1 && got.Data[DataCustomerRevoked] != "1") {
					t.Fatalf("data %v; want outcome rotated and the customer credential counted", got.Data)
				}
			}
		})
	}

	t.Run("a_crash_after_the_rotation_request_resumes_without_a_second_rotation", func(t *testing.T) {
		cluster := f.createCluster("crash", "4.19.16")
		cred := customerCredential(t, cluster)
		// An actuator ran check and request-rotation, then died before recording the step
		// reached: the stored task is back before request-rotation with check's findings.
		task := &Task{ID: "rotate-crash", Cluster: cluster, Type: TypeBreakGlassSignerRotation, RequestedBy: "test",
			Params: map[string]string{ParamSigners: SignersBoth}}
		runSteps(t, tt.Steps[:2], task)
		first := map[string]string{"sre": task.Data[DataSRERevocation], "customer": task.Data[DataCustomerRevocation]}
		if _, err := tasks.Create(ctx, task, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := waitState(t, tasks, task.ID, StateSucceeded, 2*time.Minute)
		for kind, id := range first {
			if revs := signers.revocations(cluster, kind); len(revs) != 1 || revs[0] != id {
				t.Fatalf("%s revocations %v; want only %s, asked before the crash", kind, revs, id)
			}
		}
		if got.Data[DataOutcome] != "rotated" || credentialState(t, cred) != csv1.CredentialState_CREDENTIAL_STATE_REVOKED {
			t.Fatalf("outcome %q, credential %s; want rotated and REVOKED", got.Data[DataOutcome], credentialState(t, cred))
		}
	})

	t.Run("a_rotation_waits_for_a_revocation_of_the_same_signer_already_running_then_rotates", func(t *testing.T) {
		cluster := f.createCluster("busy", "4.19.16")
		signers.set(signers.hold, cluster, true)
		customers, err := newRevocationID()
		if err != nil {
			t.Fatal(err)
		}
		// The customer's own revokeCredentials runs.
		if _, err := credentials.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: customers, ClusterId: cluster}); err != nil {
			t.Fatal(err)
		}
		id := "rotate-busy"
		if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: cluster, Type: TypeBreakGlassSignerRotation, RequestedBy: "test",
			Params: map[string]string{ParamSigners: SignersCustomer}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, tasks, id, "the task waits for the running revocation", "rotate the customer signer", customers)
		signers.set(signers.hold, cluster, false)
		got := waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
		if revs := signers.revocations(cluster, "customer"); len(revs) != 2 {
			t.Fatalf("customer revocations %v; want the customer's and the task's own", revs)
		}
		if got.Data[DataCustomerRevocation] == customers {
			t.Fatalf("the task took the customer's revocation %s as its own", customers)
		}
	})

	t.Run("a_cluster_not_ready_is_waited_for_and_nothing_is_asked_meanwhile", func(t *testing.T) {
		cluster := f.createCluster("updating", "4.19.16")
		f.report(cluster, func(st *csv1.ClusterStatus) { st.State = csv1.ClusterState_CLUSTER_STATE_UPDATING })
		id := "rotate-updating"
		if _, err := tasks.Create(ctx, &Task{ID: id, Cluster: cluster, Type: TypeBreakGlassSignerRotation, RequestedBy: "test"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		waitRunning(t, tasks, id, "the task waits for READY", "CLUSTER_STATE_UPDATING; waiting for READY")
		if revs := signers.revocations(cluster, "sre"); len(revs) != 0 {
			t.Fatalf("revocations %v while the cluster is UPDATING; want none", revs)
		}
		f.report(cluster, func(st *csv1.ClusterStatus) { st.State = csv1.ClusterState_CLUSTER_STATE_READY })
		waitState(t, tasks, id, StateSucceeded, 2*time.Minute)
		if revs := signers.revocations(cluster, "sre"); len(revs) != 1 {
			t.Fatalf("SRE revocations %v; want one", revs)
		}
	})
}
