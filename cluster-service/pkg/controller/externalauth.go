package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	configv1 "github.com/openshift/api/config/v1"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// An external auth has no work of its own: it is part of its cluster's HostedCluster. The
// cluster's reconcile builds the work with it (clusterWork) and, after reading the work
// back, derives the external auth's status from the same feedback (reconcileExternalAuth).

// reconcileExternalAuth writes the external auth's status derived from the cluster's work (got,
// nil when Maestro has none yet) and removes a deleting one once the management cluster reports
// its provider gone.
func (c *Controller) reconcileExternalAuth(ctx context.Context, log *slog.Logger, cl *store.Cluster, ea *store.ExternalAuth, got *workv1.ManifestWork) error {
	if ea == nil {
		return nil
	}
	st, gone, err := DeriveExternalAuthStatus(c.cfg.Manifests.Env, cl, ea, got)
	if err != nil {
		return err
	}
	log = log.With("externalAuthID", ea.ID)
	if gone {
		if err := c.st.ExternalAuths().Remove(ctx, ea.ID, ea.Revision); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("remove external auth %s: %w", ea.ID, err)
		}
		log.Info("external auth removed")
		return nil
	}
	if proto.Equal(ea.Status, st) {
		return nil
	}
	out, err := c.st.ExternalAuths().UpdateStatus(ctx, ea.ID, ea.Revision, st)
	if err != nil {
		return fmt.Errorf("write status of external auth %s: %w", ea.ID, err)
	}
	log.Info("external auth status changed", "state", st.State.String(), "from", ea.Status.GetState().String(), "revision", out.Revision)
	return nil
}

// followExternalAuths enqueues the cluster of every external auth changed after rev and returns
// the last revision seen. Our own status writes enqueue the cluster once more, which is cheap:
// the work's hash is unchanged, so nothing is re-applied.
func (c *Controller) followExternalAuths(ctx context.Context, rev int64) int64 {
	return followEvents(ctx, c.log, "external auth", rev, c.st.ExternalAuths().EventsAfter, func(ev store.ExternalAuthEvent) int64 { return ev.Revision }, func(ev store.ExternalAuthEvent) {
		if ev.Type == csv1.EventType_EVENT_TYPE_UPSERTED {
			c.queue.Add(ev.Object.ClusterID)
		}
	})
}

// authFeedback is the HostedCluster's authentication as reported through the work's feedback.
type authFeedback struct {
	found      bool // any HostedCluster feedback at all
	generation int64
	spec       configv1.AuthenticationSpec
	status     configv1.AuthenticationStatus
	conditions []metav1.Condition
}

func parseAuthFeedback(w *workv1.ManifestWork) (authFeedback, error) {
	var fb authFeedback
	for _, v := range feedbackOf(w, "HostedCluster", "hostedclusters") {
		var err error
		switch {
		case v.Name == manifests.FeedbackGeneration && v.Value.Integer != nil:
			fb.generation = *v.Value.Integer
		case v.Value.JsonRaw == nil:
		case v.Name == manifests.FeedbackConditions:
			fb.found = true
			err = json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.conditions)
		case v.Name == manifests.FeedbackAuthenticationSpec:
			err = json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.spec)
		case v.Name == manifests.FeedbackAuthenticationStatus:
			err = json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.status)
		}
		if err != nil {
			return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
		}
	}
	return fb, nil
}

// DeriveExternalAuthStatus computes an external auth's status from its cluster's work (in
// environment env, which names the HostedCluster), and nothing else; gone means a deleting external auth can be removed. The rules, in order:
//   - deleting: gone once the reported HostedCluster has no provider of this name (or nothing
//     was ever sent), UNINSTALLING until then;
//   - no feedback: PENDING while the cluster's work is not applied, else INSTALLING;
//   - the reported provider differs from what we send: INSTALLING (UPDATING after a change);
//   - ValidConfiguration not yet observed at the reported generation: the same, applied;
//   - ValidConfiguration=False: ERROR InvalidConfiguration with HyperShift's message;
//   - every OIDC client reported in use with this provider, issuer and client ID: READY.
func DeriveExternalAuthStatus(env string, cl *store.Cluster, ea *store.ExternalAuth, w *workv1.ManifestWork) (*csv1.ExternalAuthStatus, bool, error) {
	fb, err := parseAuthFeedback(w)
	if err != nil {
		return nil, false, err
	}
	hcName := manifests.HostedClusterName(env, cl.ARMResourceID)
	want := manifests.OIDCProvider(hcName, manifests.ExternalAuth{ARMResourceID: ea.ARMResourceID, Spec: ea.Spec})
	var live *configv1.OIDCProvider
	for i := range fb.spec.OIDCProviders {
		if fb.spec.OIDCProviders[i].Name == want.Name {
			live = &fb.spec.OIDCProviders[i]
		}
	}
	st := &csv1.ExternalAuthStatus{}
	valid := find(fb.conditions, "ValidConfiguration")
	if valid != nil {
		st.Conditions = reportedConditions(*valid)
	}
	if ea.Deleting {
		neverSent := ea.Status.GetState() == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING && !ea.Status.GetApplied()
		if (fb.found && live == nil) || neverSent || (w == nil && !cl.Status.GetApplied()) {
			return nil, true, nil
		}
		st.State, st.Message = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING, "Waiting for the management cluster to remove the OIDC provider."
		st.Applied = live != nil
		return st, false, nil
	}
	waiting := csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_INSTALLING
	if ea.Status.GetState() == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING || ea.Status.GetState() == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY {
		waiting = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING
	}
	switch {
	case !fb.found && !cl.Status.GetApplied():
		st.State, st.Message = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, "Waiting for the cluster's manifests to be applied."
		return st, false, nil
	case !fb.found:
		st.State, st.Message = waiting, "Waiting for the management cluster to report the HostedCluster."
		return st, false, nil
	case live == nil || !equality.Semantic.DeepEqual(*live, want):
		st.State, st.Message = waiting, "Waiting for the management cluster to apply the OIDC provider."
		return st, false, nil
	}
	st.Applied = true
	switch {
	case valid == nil || valid.ObservedGeneration != fb.generation:
		st.State, st.Message = waiting, "Waiting for HyperShift to validate the authentication configuration."
		return st, false, nil
	case valid.Status == metav1.ConditionFalse:
		st.State, st.ErrorCode, st.Message = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, "InvalidConfiguration", conditionMessage(valid)
		return st, false, nil
	}
	missing := 0
	for _, c := range want.OIDCClients {
		if !clientInUse(fb.status, c, want) {
			missing++
		}
	}
	if missing > 0 {
		st.State, st.Message = waiting, fmt.Sprintf("Waiting for %d of %d OIDC clients to be reported in use.", missing, len(want.OIDCClients))
		return st, false, nil
	}
	st.State, st.Message = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, "The external auth is applied."
	return st, false, nil
}

func clientInUse(s configv1.AuthenticationStatus, c configv1.OIDCClientConfig, p configv1.OIDCProvider) bool {
	for _, cs := range s.OIDCClients {
		if cs.ComponentName != c.ComponentName || cs.ComponentNamespace != c.ComponentNamespace {
			continue
		}
		for _, ref := range cs.CurrentOIDCClients {
			if ref.OIDCProviderName == p.Name && ref.IssuerURL == p.Issuer.URL && ref.ClientID == c.ClientID {
				return true
			}
		}
	}
	return false
}
