package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

var (
	// ErrRevoking: the cluster's break-glass credentials are being revoked, so no new one can be
	// requested and no second revocation started.
	ErrRevoking = errors.New("the cluster's break-glass credentials are being revoked")
	// ErrClusterNotReady: the cluster has no running control plane to sign a credential.
	ErrClusterNotReady = errors.New("the cluster is not ready")
)

// Credential is a stored break-glass credential.
type Credential struct {
	ID        string
	ClusterID string
	// CSR is the customer's PEM CSR; empty when Cluster Service generated PrivateKey.
	CSR string
	// PrivateKey is the PKCS#8 DER key Cluster Service generated (nil with a customer CSR).
	PrivateKey []byte
	// Certificate and CABundle are PEM; APIURL is the cluster's API at issue time.
	Certificate string
	CABundle    string
	APIURL      string
	Status      *csv1.CredentialStatus
	// SRE is set on a credential an SRE requested through the admin API (nil for a customer's).
	SRE *csv1.SRECredential
	// WorkActive: the credential's ManifestWork may still exist on Shard.
	WorkActive bool
	Shard      string
	Revision   int64
	CreateTime time.Time
	UpdateTime time.Time
}

// GetSRE is c's SRE record, nil for a customer's credential or a nil c.
func (c *Credential) GetSRE() *csv1.SRECredential {
	if c == nil {
		return nil
	}
	return c.SRE
}

// Revocation is a stored revocation of one kind of break-glass credentials of a cluster.
type Revocation struct {
	ID        string
	ClusterID string
	// SRE: the revocation rotates the SRE signer and revokes SRE credentials; else the
	// customer's signer and credentials.
	SRE        bool
	Status     *csv1.RevocationStatus
	WorkActive bool
	Shard      string
	Revision   int64
	CreateTime time.Time
	UpdateTime time.Time
}

// CredentialEvent is one entry of the break-glass event log: exactly one of Credential and
// Revocation is set.
type CredentialEvent struct {
	Revision   int64
	Credential *Credential
	Revocation *Revocation
}

const credentialColumns = `id, cluster_id, csr, private_key, certificate, ca_bundle, api_url, status, work_active, shard,
	revision, create_time, update_time, sre`

func (s *Store) scanCredential(row pgx.Row) (*Credential, error) {
	var c Credential
	var st, sre []byte
	if err := row.Scan(&c.ID, &c.ClusterID, &c.CSR, &c.PrivateKey, &c.Certificate, &c.CABundle, &c.APIURL, &st, &c.WorkActive,
		&c.Shard, &c.Revision, &c.CreateTime, &c.UpdateTime, &sre); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	var err error
	if c.PrivateKey, err = s.openSecret("break_glass_credentials", "private_key", c.ID, c.PrivateKey); err != nil {
		return nil, err
	}
	c.Status = &csv1.CredentialStatus{}
	if err := protojson.Unmarshal(st, c.Status); err != nil {
		return nil, fmt.Errorf("decode status of credential %s: %w", c.ID, err)
	}
	if sre != nil {
		c.SRE = &csv1.SRECredential{}
		if err := protojson.Unmarshal(sre, c.SRE); err != nil {
			return nil, fmt.Errorf("decode SRE record of credential %s: %w", c.ID, err)
		}
	}
	return &c, nil
}

const revocationColumns = `id, cluster_id, status, work_active, shard, revision, create_time, update_time, sre`

func scanRevocation(row pgx.Row) (*Revocation, error) {
	var r Revocation
	var st []byte
	if err := row.Scan(&r.ID, &r.ClusterID, &st, &r.WorkActive, &r.Shard, &r.Revision, &r.CreateTime, &r.UpdateTime, &r.SRE); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	r.Status = &csv1.RevocationStatus{}
	if err := protojson.Unmarshal(st, r.Status); err != nil {
		return nil, fmt.Errorf("decode status of revocation %s: %w", r.ID, err)
	}
	return &r, nil
}

// CredentialProto is the API form of a stored credential, without kubeconfig. An ISSUED
// credential past its expiration reads as EXPIRED.
func CredentialProto(c *Credential, now time.Time) *csv1.Credential {
	st := c.Status
	if st.GetState() == csv1.CredentialState_CREDENTIAL_STATE_ISSUED && st.GetExpirationTime() != nil && !now.Before(st.GetExpirationTime().AsTime()) {
		st = proto.Clone(st).(*csv1.CredentialStatus)
		st.State = csv1.CredentialState_CREDENTIAL_STATE_EXPIRED
		st.Message = "The credential's certificate has expired."
	}
	return &csv1.Credential{Id: c.ID, ClusterId: c.ClusterID, CertificateSigningRequest: c.CSR, Status: st, Revision: c.Revision,
		CreateTime: timestamppb.New(c.CreateTime), UpdateTime: timestamppb.New(c.UpdateTime), Sre: c.SRE}
}

// RevocationProto is the API form of a stored revocation.
func RevocationProto(r *Revocation) *csv1.Revocation {
	return &csv1.Revocation{Id: r.ID, ClusterId: r.ClusterID, Status: r.Status, Revision: r.Revision,
		CreateTime: timestamppb.New(r.CreateTime), UpdateTime: timestamppb.New(r.UpdateTime), Sre: r.SRE}
}

// CredentialAudit is Cluster Service's own record of a credential it accepted to issue
// (table credential_audit, append-only).
type CredentialAudit struct {
	ID           int64
	At           time.Time
	CredentialID string
	ClusterID    string
	// Identity is the caller's verified identity (its certificate's common name).
	Identity string
	// ForWhom is the SRE person (from the admin API's signed statement) or, for a customer's
	// credential, its break-glass user name.
	ForWhom string
	// Kind is AuditKindCustomer, AuditKindSREReadOnly or AuditKindSREAdmin.
	Kind            string
	Username        string
	ValiditySeconds int32
	// ExpireTime is the end of the lifetime asked for, from the request's time.
	ExpireTime time.Time
	Reason     string
	Approver   string
	RequestID  string
}

// The kinds of credential in the audit record.
const (
	AuditKindCustomer    = "customer"
	AuditKindSREReadOnly = "sre-read-only"
	AuditKindSREAdmin    = "sre-admin"
)

// CreateCredential records a new PENDING credential of c.ClusterID and, in the same
// transaction, its audit record a (CredentialID and ClusterID are c's). It is idempotent on c.ID
// (created=false returns the stored one and writes no record). ErrIDInUse if the id belongs to
// another cluster or to a credential of the other kind (customer or SRE), ErrNotFound without the cluster, ErrDeleting while it is deleted,
// ErrClusterNotReady unless it is READY or UPDATING, ErrRevoking while a revocation of the
// cluster runs.
func (s *Store) CreateCredential(ctx context.Context, c *Credential, a CredentialAudit) (_ *Credential, created bool, err error) {
	if a.Identity == "" || a.ForWhom == "" || a.Kind == "" || a.ValiditySeconds <= 0 {
		return nil, false, fmt.Errorf("credential %s: an audit record needs identity, for whom, kind and validity", c.ID)
	}
	sealedKey, err := s.sealSecret("break_glass_credentials", "private_key", c.ID, c.PrivateKey)
	if err != nil {
		return nil, false, err
	}
	var out *Credential
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing, err := s.scanCredential(tx.QueryRow(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials WHERE id = $1`, c.ID))
		if err == nil {
			// The same ID for another cluster or another kind is another credential: its
			// holder's (an SRE's is the admin API's alone) is not told to this caller.
			if existing.ClusterID != c.ClusterID || (existing.SRE != nil) != (c.SRE != nil) {
				return ErrIDInUse
			}
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		shard, err := credentialClusterTx(ctx, tx, c.ClusterID, c.SRE != nil, true)
		if err != nil {
			return err
		}
		st := &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_PENDING, Message: "The certificate signing request is being sent to the cluster's break-glass signer.",
			Username: c.Status.GetUsername()}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		var srej []byte // NULL for a customer's credential
		if c.SRE != nil {
			if srej, err = protojson.Marshal(c.SRE); err != nil {
				return err
			}
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = s.scanCredential(tx.QueryRow(ctx, `INSERT INTO break_glass_credentials (id, cluster_id, csr, private_key, status, state, shard, revision, sre)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+credentialColumns,
			c.ID, c.ClusterID, c.CSR, sealedKey, stj, st.State.String(), shard, rev, srej))
		if err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, `INSERT INTO credential_audit (credential_id, cluster_id, identity, for_whom, kind, username,
			validity_seconds, expire_time, reason, approver, request_id) VALUES ($1, $2, $3, $4, $5, $6, $7, now() + $7::int * interval '1 second', $8, $9, $10)`,
			c.ID, c.ClusterID, a.Identity, a.ForWhom, a.Kind, a.Username, a.ValiditySeconds, a.Reason, a.Approver, a.RequestID); err != nil {
			return fmt.Errorf("audit credential %s: %w", c.ID, err)
		}
		return recordCredentialEvent(ctx, tx, out)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// CredentialAudits returns the audit records of one credential's cluster, oldest first.
func (s *Store) CredentialAudits(ctx context.Context, clusterID string) ([]CredentialAudit, error) {
	rows, err := s.reads.Query(ctx, `SELECT id, at, credential_id, cluster_id, identity, for_whom, kind, username, validity_seconds,
		expire_time, reason, approver, request_id FROM credential_audit WHERE cluster_id = $1 ORDER BY id`, clusterID)
	if err != nil {
		return nil, fmt.Errorf("read credential audit of %s: %w", clusterID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CredentialAudit, error) {
		var a CredentialAudit
		err := r.Scan(&a.ID, &a.At, &a.CredentialID, &a.ClusterID, &a.Identity, &a.ForWhom, &a.Kind, &a.Username, &a.ValiditySeconds,
			&a.ExpireTime, &a.Reason, &a.Approver, &a.RequestID)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("read credential audit of %s: %w", clusterID, err)
	}
	return out, nil
}

// credentialClusterTx checks the cluster a credential or revocation (of SRE credentials when sre)
// is for and returns its shard: no revocation of that kind may be running. needReady also
// requires a running control plane.
func credentialClusterTx(ctx context.Context, tx pgx.Tx, clusterID string, sre, needReady bool) (string, error) {
	var deleting bool
	var state, shard string
	err := tx.QueryRow(ctx, `SELECT deleting, state, coalesce(shard, '') FROM clusters WHERE id = $1 FOR UPDATE`, clusterID).Scan(&deleting, &state, &shard)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", fmt.Errorf("cluster %s: %w", clusterID, ErrNotFound)
	case err != nil:
		return "", err
	case deleting:
		return "", fmt.Errorf("cluster %s: %w", clusterID, ErrDeleting)
	}
	if needReady && state != csv1.ClusterState_CLUSTER_STATE_READY.String() && state != csv1.ClusterState_CLUSTER_STATE_UPDATING.String() {
		return "", fmt.Errorf("cluster %s is %s: %w", clusterID, state, ErrClusterNotReady)
	}
	var running string
	switch err := tx.QueryRow(ctx, `SELECT id FROM break_glass_revocations WHERE cluster_id = $1 AND state = $2 AND sre = $3`, clusterID,
		csv1.RevocationState_REVOCATION_STATE_REVOKING.String(), sre).Scan(&running); {
	case err == nil:
		return "", fmt.Errorf("revocation %s: %w", running, ErrRevoking)
	case !errors.Is(err, pgx.ErrNoRows):
		return "", err
	}
	return shard, nil
}

// GetCredential returns the credential or ErrNotFound.
func (s *Store) GetCredential(ctx context.Context, id string) (*Credential, error) {
	return s.scanCredential(s.reads.QueryRow(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials WHERE id = $1`, id))
}

// ListCredentials returns the credentials of one cluster, oldest first.
func (s *Store) ListCredentials(ctx context.Context, clusterID string) ([]*Credential, error) {
	return s.queryCredentials(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials WHERE cluster_id = $1 ORDER BY create_time, id`, clusterID)
}

// ListSRECredentials returns SRE credentials, oldest first: of one cluster when clusterID is
// set, of one SRE when person is set.
func (s *Store) ListSRECredentials(ctx context.Context, clusterID, person string) ([]*Credential, error) {
	return s.queryCredentials(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials
		WHERE sre IS NOT NULL AND ($1 = '' OR cluster_id = $1) AND ($2 = '' OR sre->>'person' = $2) ORDER BY create_time, id`, clusterID, person)
}

// ListUnsettledCredentials returns the credentials the controller still has work for: PENDING,
// REVOKING, or with a ManifestWork that may still exist.
func (s *Store) ListUnsettledCredentials(ctx context.Context) ([]*Credential, error) {
	return s.queryCredentials(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials WHERE work_active OR state IN ($1, $2) ORDER BY id`,
		csv1.CredentialState_CREDENTIAL_STATE_PENDING.String(), csv1.CredentialState_CREDENTIAL_STATE_REVOKING.String())
}

func (s *Store) queryCredentials(ctx context.Context, q string, args ...any) ([]*Credential, error) {
	out, err := queryAll(ctx, s.reads, s.scanCredential, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	return out, nil
}

// UpdateCredential writes c's status, issued material and work flag if the credential is still
// at c.Revision (ErrConflict otherwise). Nothing changed: no write, same revision.
func (s *Store) UpdateCredential(ctx context.Context, c *Credential) (*Credential, error) {
	var out *Credential
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		cur, err := s.scanCredential(tx.QueryRow(ctx, `SELECT `+credentialColumns+` FROM break_glass_credentials WHERE id = $1 FOR UPDATE`, c.ID))
		if err != nil {
			return err
		}
		if cur.Revision != c.Revision {
			return ErrConflict
		}
		if proto.Equal(cur.Status, c.Status) && cur.Certificate == c.Certificate && cur.CABundle == c.CABundle &&
			cur.APIURL == c.APIURL && cur.WorkActive == c.WorkActive {
			out = cur
			return nil
		}
		stj, err := protojson.Marshal(c.Status)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = s.scanCredential(tx.QueryRow(ctx, `UPDATE break_glass_credentials SET status = $2, state = $3, certificate = $4,
			ca_bundle = $5, api_url = $6, work_active = $7, revision = $8, update_time = now() WHERE id = $1 RETURNING `+credentialColumns,
			c.ID, stj, c.Status.GetState().String(), c.Certificate, c.CABundle, c.APIURL, c.WorkActive, rev))
		if err != nil {
			return err
		}
		return recordCredentialEvent(ctx, tx, out)
	})
	return out, err
}

// CreateRevocation records a new REVOKING revocation of r.ClusterID and marks every PENDING
// or ISSUED credential of the cluster REVOKING in the same transaction, so from this commit on no
// kubeconfig is handed out and no new credential is accepted. Idempotent on r.ID. ErrNotFound,
// ErrDeleting, ErrIDInUse as CreateCredential; ErrRevoking while another revocation runs.
func (s *Store) CreateRevocation(ctx context.Context, r *Revocation) (_ *Revocation, created bool, err error) {
	var out *Revocation
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		existing, err := scanRevocation(tx.QueryRow(ctx, `SELECT `+revocationColumns+` FROM break_glass_revocations WHERE id = $1`, r.ID))
		if err == nil {
			if existing.ClusterID != r.ClusterID {
				return ErrIDInUse
			}
			out = existing
			return nil
		}
		if !errors.Is(err, ErrNotFound) {
			return err
		}
		shard, err := credentialClusterTx(ctx, tx, r.ClusterID, r.SRE, false)
		if err != nil {
			return err
		}
		msg := "The cluster's customer break-glass signer is being rotated."
		if r.SRE {
			msg = "The cluster's SRE break-glass signer is being rotated."
		}
		st := &csv1.RevocationStatus{State: csv1.RevocationState_REVOCATION_STATE_REVOKING, Message: msg}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = scanRevocation(tx.QueryRow(ctx, `INSERT INTO break_glass_revocations (id, cluster_id, status, state, shard, revision, sre)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+revocationColumns, r.ID, r.ClusterID, stj, st.State.String(), shard, rev, r.SRE))
		if err != nil {
			return err
		}
		created = true
		if err := recordRevocationEvent(ctx, tx, out); err != nil {
			return err
		}
		return s.setClusterCredentialsTx(ctx, tx, r.ClusterID, r.SRE, []csv1.CredentialState{csv1.CredentialState_CREDENTIAL_STATE_PENDING, csv1.CredentialState_CREDENTIAL_STATE_ISSUED},
			func(st *csv1.CredentialStatus) {
				st.State, st.RevocationId = csv1.CredentialState_CREDENTIAL_STATE_REVOKING, r.ID
				st.Message = "The credential is being revoked."
			}, nil)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// setClusterCredentialsTx applies mutate to the status of every credential of the cluster of one
// kind (SRE credentials when sre, else the customer's) in one of the states and records their
// events; count, if set, receives how many. It runs under the global write lock, so its cost
// is every other writer's wait: whatever the number of credentials, it is three round trips
// (read them, one UPDATE of all with a revision each, one batch of their events), not three
// per credential (BenchmarkRemoveClusterWithManyCredentials).
func (s *Store) setClusterCredentialsTx(ctx context.Context, tx pgx.Tx, clusterID string, sre bool, states []csv1.CredentialState, mutate func(*csv1.CredentialStatus), count *int) error {
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = st.String()
	}
	creds, err := queryAll(ctx, tx, s.scanCredential,
		`SELECT `+credentialColumns+` FROM break_glass_credentials WHERE cluster_id = $1 AND state = ANY($2) AND (sre IS NOT NULL) = $3 ORDER BY id FOR UPDATE`, clusterID, names, sre)
	if err != nil {
		return fmt.Errorf("credentials of %s: %w", clusterID, err)
	}
	if count != nil {
		*count = len(creds)
	}
	if len(creds) == 0 {
		return nil
	}
	ids, statuses, stateNames := make([]string, len(creds)), make([]string, len(creds)), make([]string, len(creds))
	for i, c := range creds {
		mutate(c.Status)
		stj, err := protojson.Marshal(c.Status)
		if err != nil {
			return err
		}
		ids[i], statuses[i], stateNames[i] = c.ID, string(stj), c.Status.GetState().String()
	}
	// One statement: each row draws its own revision from the global sequence, as one UPDATE
	// per credential did. The unnested columns are named apart from the table's, so RETURNING
	// names the table's.
	updated, err := queryAll(ctx, tx, s.scanCredential, `UPDATE break_glass_credentials
		SET status = u.new_status::jsonb, state = u.new_state, revision = nextval('cluster_revision_seq'), update_time = now()
		FROM unnest($1::text[], $2::text[], $3::text[]) AS u(cred_id, new_status, new_state)
		WHERE id = u.cred_id RETURNING `+credentialColumns, ids, statuses, stateNames)
	if err != nil {
		return fmt.Errorf("update the credentials of %s: %w", clusterID, err)
	}
	if len(updated) != len(creds) {
		return fmt.Errorf("update the credentials of %s: %d of %d updated", clusterID, len(updated), len(creds))
	}
	evIDs, revs, docs := make([]string, len(updated)), make([]int64, len(updated)), make([]string, len(updated))
	for i, c := range updated {
		doc, err := credentialEventDoc(c)
		if err != nil {
			return err
		}
		evIDs[i], revs[i], docs[i] = "c/"+c.ID, c.Revision, string(doc)
	}
	return writeUpsertEvents(ctx, tx, breakGlassEventLog, evIDs, revs, docs)
}

// ErrorCodeClusterDeleted is the error code of a credential that failed because its cluster was
// deleted before it was issued.
const ErrorCodeClusterDeleted = "ClusterDeleted"

// endClusterCredentialsTx ends the break-glass credentials of a cluster that is being removed:
// each ISSUED one (customer's and SRE's) is REVOKED, so its kubeconfig is no longer handed out
// (ARM's credential result is then 409 CredentialNotValid); each PENDING one is FAILED
// ClusterDeleted, so a write the break-glass controller prepared from it before (its check of
// the cluster passed, then the signer answered) is a conflict rather than an ISSUED credential
// of a cluster that is gone; and every private key Cluster Service generated for the cluster
// is erased. The rows stay: they are the record of who could reach the cluster's API, and
// until when. A REVOKING one is its revocation's to end (the controller's, once the cluster is
// gone).
func (s *Store) endClusterCredentialsTx(ctx context.Context, tx pgx.Tx, clusterID string) error {
	now := timestamppb.Now()
	for _, sre := range []bool{false, true} {
		if err := s.setClusterCredentialsTx(ctx, tx, clusterID, sre, []csv1.CredentialState{csv1.CredentialState_CREDENTIAL_STATE_ISSUED},
			func(cs *csv1.CredentialStatus) {
				cs.State, cs.RevokeTime = csv1.CredentialState_CREDENTIAL_STATE_REVOKED, now
				cs.Message = "The credential was revoked: its cluster was deleted."
			}, nil); err != nil {
			return err
		}
		if err := s.setClusterCredentialsTx(ctx, tx, clusterID, sre, []csv1.CredentialState{csv1.CredentialState_CREDENTIAL_STATE_PENDING},
			func(cs *csv1.CredentialStatus) {
				cs.State, cs.ErrorCode = csv1.CredentialState_CREDENTIAL_STATE_FAILED, ErrorCodeClusterDeleted
				cs.Message = "The cluster was deleted before the credential was issued."
			}, nil); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE break_glass_credentials SET private_key = NULL WHERE cluster_id = $1 AND private_key IS NOT NULL`, clusterID); err != nil {
		return fmt.Errorf("erase the break-glass keys of %s: %w", clusterID, err)
	}
	return nil
}

// GetRevocation returns the revocation or ErrNotFound.
func (s *Store) GetRevocation(ctx context.Context, id string) (*Revocation, error) {
	return scanRevocation(s.reads.QueryRow(ctx, `SELECT `+revocationColumns+` FROM break_glass_revocations WHERE id = $1`, id))
}

// ListUnsettledRevocations returns the revocations still REVOKING or with a work that may exist.
func (s *Store) ListUnsettledRevocations(ctx context.Context) ([]*Revocation, error) {
	out, err := queryAll(ctx, s.reads, scanRevocation, `SELECT `+revocationColumns+` FROM break_glass_revocations WHERE work_active OR state = $1 ORDER BY id`,
		csv1.RevocationState_REVOCATION_STATE_REVOKING.String())
	if err != nil {
		return nil, fmt.Errorf("list revocations: %w", err)
	}
	return out, nil
}

// UpdateRevocation writes r's status and work flag if it is still at r.Revision (ErrConflict
// otherwise). When the status turns REVOKED, every credential the revocation marked REVOKING is
// REVOKED in the same transaction and counted in the status.
func (s *Store) UpdateRevocation(ctx context.Context, r *Revocation) (*Revocation, error) {
	var out *Revocation
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		cur, err := scanRevocation(tx.QueryRow(ctx, `SELECT `+revocationColumns+` FROM break_glass_revocations WHERE id = $1 FOR UPDATE`, r.ID))
		if err != nil {
			return err
		}
		if cur.Revision != r.Revision {
			return ErrConflict
		}
		if proto.Equal(cur.Status, r.Status) && cur.WorkActive == r.WorkActive {
			out = cur
			return nil
		}
		st := proto.Clone(r.Status).(*csv1.RevocationStatus)
		if st.GetState() == csv1.RevocationState_REVOCATION_STATE_REVOKED && cur.Status.GetState() != csv1.RevocationState_REVOCATION_STATE_REVOKED {
			now := timestamppb.Now()
			var n int
			if err := s.setClusterCredentialsTx(ctx, tx, r.ClusterID, cur.SRE, []csv1.CredentialState{csv1.CredentialState_CREDENTIAL_STATE_REVOKING},
				func(cs *csv1.CredentialStatus) {
					if cs.GetRevocationId() != r.ID {
						return
					}
					cs.State, cs.RevokeTime = csv1.CredentialState_CREDENTIAL_STATE_REVOKED, now
					cs.Message = "The credential was revoked: its signer was rotated and is no longer trusted."
				}, &n); err != nil {
				return err
			}
			st.RevokedCredentials, st.CompleteTime = int32(n), now
		}
		stj, err := protojson.Marshal(st)
		if err != nil {
			return err
		}
		rev, err := nextRevision(ctx, tx)
		if err != nil {
			return err
		}
		out, err = scanRevocation(tx.QueryRow(ctx, `UPDATE break_glass_revocations SET status = $2, state = $3, work_active = $4, revision = $5,
			update_time = now() WHERE id = $1 RETURNING `+revocationColumns, r.ID, stj, st.GetState().String(), r.WorkActive, rev))
		if err != nil {
			return err
		}
		return recordRevocationEvent(ctx, tx, out)
	})
	return out, err
}

// breakGlassEventDoc is one event: the API form of a credential or a revocation. It never holds
// the private key or a kubeconfig.
type breakGlassEventDoc struct {
	Credential json.RawMessage `json:"credential,omitempty"`
	Revocation json.RawMessage `json:"revocation,omitempty"`
	WorkActive bool            `json:"workActive,omitempty"`
	Shard      string          `json:"shard,omitempty"`
}

func recordCredentialEvent(ctx context.Context, tx pgx.Tx, c *Credential) error {
	doc, err := credentialEventDoc(c)
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, breakGlassEventLog, "c/"+c.ID, c.Revision, csv1.EventType_EVENT_TYPE_UPSERTED, doc)
}

// credentialEventDoc is the event log's document of c.
func credentialEventDoc(c *Credential) ([]byte, error) {
	// The stored status (never EXPIRED): a reader re-derives EXPIRED at its own time.
	raw, err := protojson.Marshal(CredentialProto(c, time.Time{}))
	if err != nil {
		return nil, err
	}
	return json.Marshal(breakGlassEventDoc{Credential: raw, WorkActive: c.WorkActive, Shard: c.Shard})
}

func recordRevocationEvent(ctx context.Context, tx pgx.Tx, r *Revocation) error {
	raw, err := protojson.Marshal(RevocationProto(r))
	if err != nil {
		return err
	}
	doc, err := json.Marshal(breakGlassEventDoc{Revocation: raw, WorkActive: r.WorkActive, Shard: r.Shard})
	if err != nil {
		return err
	}
	return writeEvent(ctx, tx, breakGlassEventLog, "r/"+r.ID, r.Revision, csv1.EventType_EVENT_TYPE_UPSERTED, doc)
}

// CredentialEventsAfter returns up to limit break-glass events with a revision greater than
// after, in order. Credentials in events carry no key, certificate or kubeconfig.
func (s *Store) CredentialEventsAfter(ctx context.Context, after int64, limit int) ([]CredentialEvent, error) {
	return eventsAfter(ctx, s.reads, breakGlassEventLog, after, limit, func(rev int64, _ csv1.EventType, raw []byte) (CredentialEvent, error) {
		var doc breakGlassEventDoc
		if err := json.Unmarshal(raw, &doc); err != nil {
			return CredentialEvent{}, err
		}
		ev := CredentialEvent{Revision: rev}
		switch {
		case doc.Credential != nil:
			var p csv1.Credential
			if err := protojson.Unmarshal(doc.Credential, &p); err != nil {
				return CredentialEvent{}, err
			}
			st := p.GetStatus()
			if st == nil {
				st = &csv1.CredentialStatus{}
			}
			ev.Credential = &Credential{ID: p.Id, ClusterID: p.ClusterId, CSR: p.CertificateSigningRequest, Status: st, SRE: p.Sre, WorkActive: doc.WorkActive,
				Shard: doc.Shard, Revision: p.Revision, CreateTime: p.CreateTime.AsTime(), UpdateTime: p.UpdateTime.AsTime()}
		case doc.Revocation != nil:
			var p csv1.Revocation
			if err := protojson.Unmarshal(doc.Revocation, &p); err != nil {
				return CredentialEvent{}, err
			}
			st := p.GetStatus()
			if st == nil {
				st = &csv1.RevocationStatus{}
			}
			ev.Revocation = &Revocation{ID: p.Id, ClusterID: p.ClusterId, SRE: p.Sre, Status: st, WorkActive: doc.WorkActive, Shard: doc.Shard,
				Revision: p.Revision, CreateTime: p.CreateTime.AsTime(), UpdateTime: p.UpdateTime.AsTime()}
		default:
			return CredentialEvent{}, errors.New("it holds neither a credential nor a revocation")
		}
		return ev, nil
	})
}

// CurrentCredentialRevision is the revision of the latest break-glass event.
func (s *Store) CurrentCredentialRevision(ctx context.Context) (int64, error) {
	return currentRevision(ctx, s.reads, breakGlassEventLog)
}
