package maintenance

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TypeBreakGlassSignerRotation rotates a hosted cluster's break-glass signers through Cluster
// Service's RevokeCredentials: every break-glass credential the rotated signer issued before
// stops working at the hosted kube-apiserver.
const TypeBreakGlassSignerRotation = "breakglass-signer-rotation"

// signerRotation is what the rotation calls on Cluster Service beyond GetCluster; ClusterService
// embeds it.
type signerRotation interface {
	RevokeCredentials(ctx context.Context, in *csv1.RevokeCredentialsRequest, opts ...grpc.CallOption) (*csv1.Revocation, error)
	GetRevocation(ctx context.Context, in *csv1.GetRevocationRequest, opts ...grpc.CallOption) (*csv1.Revocation, error)
}

// Keys of Task.Params and Task.Data used by the break-glass signer rotation.
const (
	// ParamSigners names the signers to rotate: SignersSRE (the default), SignersCustomer or
	// SignersBoth.
	ParamSigners = "signers"
	// DataSRERevocation and DataCustomerRevocation are the IDs of the revocations the task asks
	// Cluster Service for, chosen and recorded before it asks, so a run after a crash asks
	// again with the same IDs and Cluster Service answers with the revocation already made.
	DataSRERevocation      = "sreRevocation"
	DataCustomerRevocation = "customerRevocation"
	// DataSRERevoked and DataCustomerRevoked count the credentials each revocation revoked.
	DataSRERevoked      = "sreRevokedCredentials"
	DataCustomerRevoked = "customerRevokedCredentials"
)

// The values of ParamSigners.
const (
	SignersSRE      = "sre"
	SignersCustomer = "customer"
	SignersBoth     = "both"
)

// signer is one of a hosted cluster's two break-glass signers, as the rotation handles it.
type signer struct {
	name            string // as in ParamSigners
	sre             bool   // RevokeCredentials.sre
	idKey, countKey string // its Task.Data keys
}

var (
	sreSigner      = signer{name: SignersSRE, sre: true, idKey: DataSRERevocation, countKey: DataSRERevoked}
	customerSigner = signer{name: SignersCustomer, idKey: DataCustomerRevocation, countKey: DataCustomerRevoked}
)

// signersOf returns the signers a task's ParamSigners names. The default is the SRE signer
// alone: an unattended task must not cut the customer off their own cluster unless someone
// asked for it, and the customer can rotate their signer themselves (ARM's revokeCredentials).
func signersOf(p string) ([]signer, error) {
	switch p {
	case "", SignersSRE:
		return []signer{sreSigner}, nil
	case SignersCustomer:
		return []signer{customerSigner}, nil
	case SignersBoth:
		return []signer{sreSigner, customerSigner}, nil
	}
	return nil, fmt.Errorf("params.%s must be %s, %s or %s, not %q", ParamSigners, SignersSRE, SignersCustomer, SignersBoth, p)
}

// requested returns the signers whose revocation ID t records, in the order they are asked for.
func requested(t *Task) []signer {
	var out []signer
	for _, s := range []signer{sreSigner, customerSigner} {
		if t.Data[s.idKey] != "" {
			out = append(out, s)
		}
	}
	return out
}

var revocationIDEncoding = base32.HexEncoding.WithPadding(base32.NoPadding)

// newRevocationID is a Cluster Service revocation ID: 32 characters of [0-9a-v].
func newRevocationID() (string, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("revocation id: %w", err)
	}
	return strings.ToLower(revocationIDEncoding.EncodeToString(b[:])), nil
}

// SignerRotationConfig tunes the break-glass signer rotation task type.
type SignerRotationConfig struct {
	// Poll is how often a rotation under way is looked at (default 2s).
	Poll time.Duration
	// Estimate is how long a rotation is expected to take, for maintenance windows (default
	// 15m; a signer rotates in seconds when the management cluster is well).
	Estimate time.Duration
}

// BreakGlassSignerRotation returns the break-glass signer rotation task type. Its steps:
//
//	check             the cluster exists and is READY; choose and record one revocation ID
//	                  per signer to rotate
//	request-rotation  RevokeCredentials with each recorded ID (idempotent on the ID)
//	wait-for-rotation wait until Cluster Service reports each revocation REVOKED (FAILED fails)
//	verify            the revocations are REVOKED and the cluster is READY
//
// Cluster Service owns what a rotation is and when it is done: a revocation is REVOKED once the
// management cluster reported PreviousCertificatesRevoked=True, and with it every credential of
// that kind issued before. A crash at any step asks again with the IDs recorded at check, which
// Cluster Service answers with the revocation it already made: the signer is rotated once.
func BreakGlassSignerRotation(cs ClusterService, cfg SignerRotationConfig) TaskType {
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Estimate <= 0 {
		cfg.Estimate = 15 * time.Minute
	}
	getCluster := func(ctx context.Context, t *Task) (*csv1.Cluster, error) {
		c, err := cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: t.Cluster})
		switch status.Code(err) {
		case codes.OK:
			return c, nil
		case codes.NotFound, codes.InvalidArgument:
			return nil, Permanent(fmt.Errorf("cluster %q: %w", t.Cluster, err))
		}
		return nil, fmt.Errorf("get cluster %s: %w", t.Cluster, err)
	}
	// settled says whether the cluster is READY; a cluster on its way out or broken fails the
	// task (its control plane cannot be trusted to rotate), one still changing waits.
	settled := func(c *csv1.Cluster) (StepResult, error) {
		switch st := c.GetStatus(); st.GetState() {
		case csv1.ClusterState_CLUSTER_STATE_READY:
			return StepResult{}, nil
		case csv1.ClusterState_CLUSTER_STATE_UNINSTALLING, csv1.ClusterState_CLUSTER_STATE_ERROR:
			return StepResult{}, Permanent(fmt.Errorf("cluster %s is %s (%s): its break-glass signers are not rotated", c.GetId(), st.GetState(), st.GetMessage()))
		default:
			return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("the cluster is %s; waiting for READY", st.GetState())}, nil
		}
	}
	return TaskType{Name: TypeBreakGlassSignerRotation, MaxAttempts: 5, Estimate: cfg.Estimate, Params: []Param{
		{Name: ParamSigners, Doc: "which break-glass signers to rotate: sre (the default), customer or both",
			Check: func(v string) error { _, err := signersOf(v); return err }},
	}, Steps: []Step{
		{Name: "check", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			if len(requested(t)) > 0 {
				return StepResult{}, nil // recorded before a crash
			}
			signers, err := signersOf(t.Params[ParamSigners])
			if err != nil {
				return StepResult{}, Permanent(err)
			}
			c, err := getCluster(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			if res, err := settled(c); err != nil || res.Wait > 0 {
				return res, err
			}
			// The IDs are chosen here and recorded with this step, before anything is asked:
			// the requests after it are the same whatever happens to the actuator.
			for _, s := range signers {
				id, err := newRevocationID()
				if err != nil {
					return StepResult{}, err
				}
				setData(t, s.idKey, id)
			}
			return StepResult{}, nil
		}},
		{Name: "request-rotation", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			for _, s := range requested(t) {
				id := t.Data[s.idKey]
				r, err := cs.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: id, ClusterId: t.Cluster, Sre: s.sre})
				switch status.Code(err) {
				case codes.OK:
					if r.GetSre() != s.sre || r.GetClusterId() != t.Cluster {
						return StepResult{}, Permanent(fmt.Errorf("revocation %s is of cluster %s (sre %t), not of this task's %s signer", id, r.GetClusterId(), r.GetSre(), s.name))
					}
					continue
				case codes.FailedPrecondition:
					// Another revocation of this signer runs (the customer's own, or an SRE
					// revoke), or the cluster is being deleted: look again.
					c, cerr := getCluster(ctx, t)
					if cerr != nil {
						return StepResult{}, cerr
					}
					if c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
						return StepResult{}, Permanent(fmt.Errorf("rotate the %s signer of cluster %s: the cluster is being deleted", s.name, t.Cluster))
					}
					return StepResult{Wait: cfg.Poll, Message: fmt.Sprintf("rotate the %s signer: %s", s.name, status.Convert(err).Message())}, nil
				case codes.NotFound, codes.InvalidArgument, codes.AlreadyExists, codes.PermissionDenied:
					return StepResult{}, Permanent(fmt.Errorf("rotate the %s signer of cluster %s: %w", s.name, t.Cluster, err))
				}
				return StepResult{}, fmt.Errorf("rotate the %s signer of cluster %s: %w", s.name, t.Cluster, err)
			}
			return StepResult{}, nil
		}},
		{Name: "wait-for-rotation", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			var waiting []string
			for _, s := range requested(t) {
				id := t.Data[s.idKey]
				r, err := cs.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: id})
				switch {
				case status.Code(err) == codes.NotFound:
					return StepResult{}, Permanent(fmt.Errorf("revocation %s of the %s signer: %w", id, s.name, err))
				case err != nil:
					return StepResult{}, fmt.Errorf("get revocation %s: %w", id, err)
				}
				switch st := r.GetStatus(); st.GetState() {
				case csv1.RevocationState_REVOCATION_STATE_REVOKED:
					setData(t, s.countKey, strconv.Itoa(int(st.GetRevokedCredentials())))
				case csv1.RevocationState_REVOCATION_STATE_FAILED:
					return StepResult{}, Permanent(fmt.Errorf("the rotation of the %s signer (revocation %s) failed: %s %s", s.name, id, st.GetErrorCode(), st.GetMessage()))
				default:
					waiting = append(waiting, fmt.Sprintf("%s signer: %s", s.name, st.GetMessage()))
				}
			}
			if len(waiting) > 0 {
				return StepResult{Wait: cfg.Poll, Message: "waiting for the rotation of the " + strings.Join(waiting, "; ")}, nil
			}
			return StepResult{}, nil
		}},
		{Name: "verify", Run: func(ctx context.Context, t *Task) (StepResult, error) {
			for _, s := range requested(t) {
				r, err := cs.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: t.Data[s.idKey]})
				if err != nil {
					return StepResult{}, fmt.Errorf("get revocation %s: %w", t.Data[s.idKey], err)
				}
				if st := r.GetStatus().GetState(); st != csv1.RevocationState_REVOCATION_STATE_REVOKED {
					return StepResult{}, Permanent(fmt.Errorf("revocation %s of the %s signer is %s after it was REVOKED", r.GetId(), s.name, st))
				}
			}
			c, err := getCluster(ctx, t)
			if err != nil {
				return StepResult{}, err
			}
			if res, err := settled(c); err != nil || res.Wait > 0 {
				return res, err
			}
			setData(t, DataOutcome, "rotated")
			return StepResult{}, nil
		}},
	}}
}
