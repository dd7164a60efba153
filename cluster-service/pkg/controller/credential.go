package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/reconcile"
)

// Condition types of HyperShift's CertificateRevocationRequest that the revocation follows.
const (
	condPreviousCertificatesRevoked = "PreviousCertificatesRevoked"
	condSignerClassValid            = "SignerClassValid"

	// Error codes of failed credentials and revocations.
	ErrorCodeSignerRefused     = "SignerRefused"
	ErrorCodeSigningTimedOut   = "SigningTimedOut"
	ErrorCodeClusterDeleted    = store.ErrorCodeClusterDeleted
	ErrorCodeInvalidIssued     = "InvalidIssuedCertificate"
	ErrorCodeInvalidSignerType = "InvalidSignerClass"
)

// CredentialsConfig tunes the break-glass controller; zero values take the defaults.
type CredentialsConfig struct {
	Manifests manifests.Config
	// Validity is the lifetime asked of the signer for each certificate; default
	// DefaultCredentialValidity. Kubernetes refuses less than 10 minutes.
	Validity time.Duration
	// PollPeriod: how often a credential or revocation in flight looks at its work; default 1s.
	// Break-glass works are few and short-lived, so they are polled instead of watched.
	PollPeriod time.Duration
	// IssueTimeout: a credential still PENDING after this ends FAILED SigningTimedOut; default 10m.
	IssueTimeout time.Duration
	// ResyncPeriod: every unsettled credential and revocation is reconciled this often; default 1m.
	ResyncPeriod time.Duration
	// Workers reconcile in parallel; default 2.
	Workers int
	// Registerer for the metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// DefaultCredentialValidity is how long a break-glass kubeconfig works: long enough for an
// emergency session, short enough that a leaked file is soon worthless. A new one can always be
// requested.
const DefaultCredentialValidity = time.Hour

// Credentials is the reconciler of break-glass credentials and revocations. It is separate from
// the cluster controller: its objects are short-lived, its works transient, and it never
// blocks a cluster's reconcile.
type Credentials struct {
	st    *store.Store
	works WorkClient
	cfg   CredentialsConfig
	log   *slog.Logger
	queue *reconcile.Queue[string]

	mu      sync.Mutex
	applied map[string]string
	written map[string]int64

	reconciles *prometheus.CounterVec
}

const (
	credentialKeyPrefix = "c/"
	revocationKeyPrefix = "r/"
)

// NewCredentials makes the break-glass controller; Run starts it.
func NewCredentials(st *store.Store, works WorkClient, cfg CredentialsConfig, log *slog.Logger) *Credentials {
	if cfg.Validity <= 0 {
		cfg.Validity = DefaultCredentialValidity
	}
	if cfg.PollPeriod <= 0 {
		cfg.PollPeriod = time.Second
	}
	if cfg.IssueTimeout <= 0 {
		cfg.IssueTimeout = 10 * time.Minute
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = time.Minute
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	c := &Credentials{
		st: st, works: works, cfg: cfg, log: log.With("component", "break-glass-controller"),
		queue:   reconcile.NewQueue[string](retryBackoff()),
		applied: map[string]string{},
		written: map[string]int64{},
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cluster_service_break_glass_reconciles_total", Help: "Break-glass reconciles by kind (credential, revocation) and outcome (ok, requeue, error).",
		}, []string{"kind", "outcome"}),
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(c.reconciles)
	}
	return c
}

// Run reconciles until ctx ends: everything unsettled at start, then the break-glass event log
// (new requests and revocations, other replicas' writes) and the resync timer.
func (c *Credentials) Run(ctx context.Context) error {
	defer startWorkers(ctx, c.cfg.Workers, c.processNext, c.queue.ShutDown)()

	rev, err := c.st.CurrentCredentialRevision(ctx)
	if err != nil {
		return fmt.Errorf("break-glass controller: read current revision: %w", err)
	}
	changes, stop := c.st.CredentialChanges()
	defer stop()
	c.resync(ctx)
	ticker := time.NewTicker(c.cfg.ResyncPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			c.resync(ctx)
		case <-changes:
			rev = c.follow(ctx, rev)
		}
	}
}

func (c *Credentials) resync(ctx context.Context) {
	creds, err := c.st.ListUnsettledCredentials(ctx)
	if err != nil {
		c.log.Error("resync: list credentials", "error", err)
	}
	for _, cr := range creds {
		c.queue.Add(credentialKeyPrefix + cr.ID)
	}
	revs, err := c.st.ListUnsettledRevocations(ctx)
	if err != nil {
		c.log.Error("resync: list revocations", "error", err)
	}
	for _, r := range revs {
		c.queue.Add(revocationKeyPrefix + r.ID)
	}
}

func (c *Credentials) follow(ctx context.Context, rev int64) int64 {
	return followEvents(ctx, c.log, "break-glass", rev, c.st.CredentialEventsAfter, func(ev store.CredentialEvent) int64 { return ev.Revision }, func(ev store.CredentialEvent) {
		key := revocationKeyPrefix
		if ev.Credential != nil {
			key = credentialKeyPrefix + ev.Credential.ID
		} else {
			key += ev.Revocation.ID
		}
		c.mu.Lock()
		own := c.written[key] == ev.Revision
		c.mu.Unlock()
		if !own {
			c.queue.Add(key)
		}
	})
}

// processNext reconciles the next queued credential or revocation (reconcile.Process settles
// the result on the queue); it reports false once the queue is shut down.
func (c *Credentials) processNext(ctx context.Context) bool {
	return reconcile.Process(ctx, c.queue, func(ctx context.Context, key string) (time.Duration, error) {
		if id, ok := strings.CutPrefix(key, credentialKeyPrefix); ok {
			return c.ReconcileCredential(ctx, id)
		}
		return c.ReconcileRevocation(ctx, strings.TrimPrefix(key, revocationKeyPrefix))
	}, func(r reconcile.Result[string]) {
		kind := "revocation"
		if strings.HasPrefix(r.Key, credentialKeyPrefix) {
			kind = "credential"
		}
		if r.Outcome == reconcile.OutcomeError {
			c.log.Warn("break-glass reconcile failed; backing off", "key", r.Key, "error", r.Err, "retries", r.Retries)
		}
		c.reconciles.WithLabelValues(kind, string(r.Outcome)).Inc()
	})
}

// ReconcileCredential moves one credential one step: a PENDING one sends its CSR work and, once
// the certificate and the root CA are reported, records them (ISSUED); a refusal is FAILED. Any
// settled credential whose work may still exist gets the work deleted.
func (c *Credentials) ReconcileCredential(ctx context.Context, id string) (time.Duration, error) {
	key := credentialKeyPrefix + id
	cr, err := c.st.GetCredential(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get credential %s: %w", id, err)
	}
	log := c.log.With("credentialID", id, "clusterID", cr.ClusterID, "shard", cr.Shard, "revision", cr.Revision)
	if cr.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_PENDING {
		return c.settleWork(ctx, log, key, cr.Shard, manifests.CredentialWorkName(id), cr.WorkActive, func(active bool) error {
			next := *cr
			next.WorkActive = active
			_, err := c.writeCredential(ctx, &next)
			return err
		})
	}
	now := c.cfg.Now()
	fail := func(code, msg string) (time.Duration, error) {
		next := *cr
		next.Status = proto.Clone(cr.Status).(*csv1.CredentialStatus)
		next.Status.State, next.Status.ErrorCode, next.Status.Message = csv1.CredentialState_CREDENTIAL_STATE_FAILED, code, msg
		log.Warn("break-glass credential failed", "error_code", code, "message", msg)
		_, err := c.writeCredential(ctx, &next)
		return c.cfg.PollPeriod, err // and then its work is deleted
	}
	cl, err := c.st.GetCluster(ctx, cr.ClusterID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && cl.Deleting):
		return fail(ErrorCodeClusterDeleted, "The cluster was deleted before the credential was issued.")
	case err != nil:
		return 0, fmt.Errorf("get cluster %s of credential %s: %w", cr.ClusterID, id, err)
	}
	if now.Sub(cr.CreateTime) > c.cfg.IssueTimeout {
		return fail(ErrorCodeSigningTimedOut, fmt.Sprintf("The cluster's break-glass signer did not issue the certificate within %s.", c.cfg.IssueTimeout))
	}
	validity := int32(c.cfg.Validity / time.Second)
	if v := cr.SRE.GetValiditySeconds(); v > 0 {
		validity = v // an SRE's credential lives as long as the admin API allowed
	}
	work, err := manifests.BuildCredential(c.cfg.Manifests, manifests.CredentialWork{ID: id, CSR: []byte(cr.CSR),
		Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID}, ExpirationSeconds: validity, SignerClass: manifests.SignerClass(cr.SRE != nil)})
	if err != nil {
		return fail("InvalidCredential", err.Error())
	}
	if !cr.WorkActive {
		// Recorded before the apply, so a crash right after it never leaks the work.
		next := *cr
		next.WorkActive = true
		if cr, err = c.writeCredential(ctx, &next); err != nil {
			return 0, err
		}
	}
	got, err := c.applyAndGet(ctx, key, cr.Shard, work)
	if err != nil || got == nil {
		return c.cfg.PollPeriod, err
	}
	fb, err := manifests.ParseCredentialFeedback(got)
	if err != nil {
		return 0, err
	}
	next := *cr
	next.Status = proto.Clone(cr.Status).(*csv1.CredentialStatus)
	next.Status.Conditions = csrConditions(fb.Conditions)
	for _, cond := range fb.Conditions {
		if (cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed) && cond.Status == "True" {
			return fail(ErrorCodeSignerRefused, fmt.Sprintf("The break-glass signer refused the request (%s %s): %s", cond.Type, cond.Reason, cond.Message))
		}
	}
	if len(fb.Certificate) == 0 || fb.RootCA == "" {
		next.Status.Message = signingMessage(fb)
		_, err := c.writeCredential(ctx, &next)
		return c.cfg.PollPeriod, err
	}
	leaf, err := breakglass.CheckIssued([]byte(cr.CSR), fb.Certificate)
	if err != nil {
		return fail(ErrorCodeInvalidIssued, err.Error())
	}
	next.Certificate, next.CABundle, next.APIURL = string(fb.Certificate), fb.RootCA, cl.Status.GetApiUrl()
	next.Status.State, next.Status.Message, next.Status.ErrorCode = csv1.CredentialState_CREDENTIAL_STATE_ISSUED, "The credential is issued.", ""
	next.Status.Username = leaf.Subject.CommonName
	next.Status.IssueTime, next.Status.ExpirationTime = timestamppb.New(leaf.NotBefore), timestamppb.New(leaf.NotAfter)
	if _, err := c.writeCredential(ctx, &next); err != nil {
		return 0, err
	}
	log.Info("break-glass credential issued", "username", leaf.Subject.CommonName, "expires", leaf.NotAfter, "serial", leaf.SerialNumber.String())
	return c.cfg.PollPeriod, nil // the next reconcile deletes the work
}

func signingMessage(fb manifests.CredentialFeedback) string {
	switch {
	case len(fb.Conditions) == 0 && len(fb.Certificate) == 0:
		return "Waiting for the cluster's break-glass signer to approve the request."
	case len(fb.Certificate) == 0:
		return "The request is approved; waiting for the break-glass signer to issue the certificate."
	default:
		return "Waiting for the management cluster to report the hosted cluster's root CA."
	}
}

func csrConditions(in []certificatesv1.CertificateSigningRequestCondition) []*csv1.Condition {
	var out []*csv1.Condition
	for _, c := range in {
		out = append(out, &csv1.Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: timestamppb.New(c.LastTransitionTime.Time)})
	}
	return out
}

// ReconcileRevocation moves one revocation one step: a REVOKING one sends its
// CertificateRevocationRequest and, once the management cluster reports
// PreviousCertificatesRevoked=True, becomes REVOKED together with the credentials it revoked.
func (c *Credentials) ReconcileRevocation(ctx context.Context, id string) (time.Duration, error) {
	key := revocationKeyPrefix + id
	r, err := c.st.GetRevocation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get revocation %s: %w", id, err)
	}
	log := c.log.With("revocationID", id, "clusterID", r.ClusterID, "shard", r.Shard, "revision", r.Revision)
	if r.Status.GetState() != csv1.RevocationState_REVOCATION_STATE_REVOKING {
		return c.settleWork(ctx, log, key, r.Shard, manifests.RevocationWorkName(id), r.WorkActive, func(active bool) error {
			next := *r
			next.WorkActive = active
			_, err := c.writeRevocation(ctx, &next)
			return err
		})
	}
	next := *r
	next.Status = proto.Clone(r.Status).(*csv1.RevocationStatus)
	cl, err := c.st.GetCluster(ctx, r.ClusterID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Its control plane, and with it the signer, is gone: nothing it signed works any more.
		next.Status.State, next.Status.Message = csv1.RevocationState_REVOCATION_STATE_REVOKED, "The cluster was deleted; its break-glass signer is gone."
		_, err := c.writeRevocation(ctx, &next)
		return c.cfg.PollPeriod, err
	case err != nil:
		return 0, fmt.Errorf("get cluster %s of revocation %s: %w", r.ClusterID, id, err)
	}
	work, err := manifests.BuildRevocation(c.cfg.Manifests, manifests.RevocationWork{ID: id,
		Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID}, SignerClass: manifests.SignerClass(r.SRE)})
	if err != nil {
		return 0, err
	}
	if !r.WorkActive {
		next.WorkActive = true
		if r, err = c.writeRevocation(ctx, &next); err != nil {
			return 0, err
		}
		next = *r
		next.Status = proto.Clone(r.Status).(*csv1.RevocationStatus)
	}
	got, err := c.applyAndGet(ctx, key, r.Shard, work)
	if err != nil || got == nil {
		return c.cfg.PollPeriod, err
	}
	conds, err := manifests.ParseRevocationFeedback(got)
	if err != nil {
		return 0, err
	}
	next.Status.Conditions = metaConditions(conds)
	switch {
	case conditionTrue(conds, condPreviousCertificatesRevoked):
		next.Status.State, next.Status.Message = csv1.RevocationState_REVOCATION_STATE_REVOKED,
			"The break-glass signer was rotated; certificates it issued before are no longer trusted."
	case conditionFalse(conds, condSignerClassValid):
		next.Status.State, next.Status.ErrorCode, next.Status.Message = csv1.RevocationState_REVOCATION_STATE_FAILED, ErrorCodeInvalidSignerType,
			"The management cluster does not know the customer break-glass signer class."
	default:
		next.Status.Message = revocationMessage(conds)
	}
	out, err := c.writeRevocation(ctx, &next)
	if err != nil {
		return 0, err
	}
	if out.Status.GetState() == csv1.RevocationState_REVOCATION_STATE_REVOKED {
		log.Info("break-glass credentials revoked", "revoked_credentials", out.Status.GetRevokedCredentials())
	}
	return c.cfg.PollPeriod, nil
}

func revocationMessage(conds []metav1.Condition) string {
	for _, t := range []string{"NewCertificatesTrusted", "LeafCertificatesRegenerated", "RootCertificatesRegenerated"} {
		if conditionTrue(conds, t) {
			return "The signer is rotated (" + t + "); waiting for the previous certificates to be revoked."
		}
	}
	return "Waiting for the management cluster to rotate the break-glass signer."
}

func metaConditions(in []metav1.Condition) []*csv1.Condition {
	var out []*csv1.Condition
	for _, c := range in {
		out = append(out, &csv1.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			LastTransitionTime: timestamppb.New(c.LastTransitionTime.Time)})
	}
	return out
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func conditionFalse(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionFalse
		}
	}
	return false
}

// applyAndGet applies work unless this process already sent the same spec, and reads it back;
// nil (no error) when Maestro does not have it yet.
func (c *Credentials) applyAndGet(ctx context.Context, key, shard string, work *workv1.ManifestWork) (*workv1.ManifestWork, error) {
	hash := work.Annotations[manifests.AnnotationSpecHash]
	c.mu.Lock()
	sent := c.applied[key] == hash
	c.mu.Unlock()
	if !sent {
		if err := c.works.Apply(ctx, shard, work); err != nil {
			return nil, fmt.Errorf("apply work %s to %s: %w", work.Name, shard, err)
		}
		c.mu.Lock()
		c.applied[key] = hash
		c.mu.Unlock()
	}
	got, err := c.works.Get(ctx, shard, work.Name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.applied, key)
		c.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get work %s from %s: %w", work.Name, shard, err)
	}
	return got, nil
}

// settleWork deletes the work of a settled credential or revocation and records it gone.
func (c *Credentials) settleWork(ctx context.Context, log *slog.Logger, key, shard, name string, active bool, record func(bool) error) (time.Duration, error) {
	if !active {
		c.forget(key)
		return 0, nil
	}
	if err := c.works.Delete(ctx, shard, name); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("delete work %s on %s: %w", name, shard, err)
	}
	_, err := c.works.Get(ctx, shard, name)
	switch {
	case apierrors.IsNotFound(err):
		if err := record(false); err != nil {
			return 0, err
		}
		log.Info("break-glass work deleted", "work", name)
		c.forget(key)
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("get work %s on %s: %w", name, shard, err)
	}
	return c.cfg.PollPeriod, nil
}

func (c *Credentials) writeCredential(ctx context.Context, cr *store.Credential) (*store.Credential, error) {
	out, err := c.st.UpdateCredential(ctx, cr)
	if err != nil {
		return nil, fmt.Errorf("write credential %s: %w", cr.ID, err)
	}
	if out.Revision != cr.Revision {
		c.mu.Lock()
		c.written[credentialKeyPrefix+cr.ID] = out.Revision
		c.mu.Unlock()
		c.log.Info("credential status changed", "credentialID", cr.ID, "clusterID", cr.ClusterID, "state", out.Status.GetState().String(),
			"message", out.Status.GetMessage(), "work_active", out.WorkActive, "revision", out.Revision)
	}
	return out, nil
}

func (c *Credentials) writeRevocation(ctx context.Context, r *store.Revocation) (*store.Revocation, error) {
	out, err := c.st.UpdateRevocation(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("write revocation %s: %w", r.ID, err)
	}
	if out.Revision != r.Revision {
		c.mu.Lock()
		c.written[revocationKeyPrefix+r.ID] = out.Revision
		c.mu.Unlock()
		c.log.Info("revocation status changed", "revocationID", r.ID, "clusterID", r.ClusterID, "state", out.Status.GetState().String(),
			"message", out.Status.GetMessage(), "work_active", out.WorkActive, "revision", out.Revision)
	}
	return out, nil
}

func (c *Credentials) forget(key string) {
	c.mu.Lock()
	delete(c.applied, key)
	delete(c.written, key)
	c.mu.Unlock()
}
