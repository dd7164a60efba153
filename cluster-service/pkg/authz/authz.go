// Package authz decides which caller may call which Cluster Service method. A caller is the
// workload named by the SPIFFE ID (internal/identity) of the client certificate the TLS
// handshake verified against the service CA, in the region's trust domain; the common name
// counts for nothing. Table is the one place that lists, per gRPC method, the workloads allowed
// to call it. Unlisted methods and unknown identities are refused with PermissionDenied.
package authz

import (
	"context"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/identity"
)

// The workloads that call Cluster Service (internal/identity names them).
const (
	Frontend = identity.Frontend // serves ARM: creates, reads, watches, updates and deletes what ARM asks for
	Backend  = identity.Backend  // reads and watches to report ARM operations; sends again a delete Cluster Service never received; the subscription cascade deletes clusters
	Monitor  = identity.Monitor  // the fleet Monitor: lists clusters, node pools and shards to check their health, nothing else
	// Maintenance is the maintenance service: reads clusters, node pools (and lists them for a
	// campaign over node pools), versions and upgrade policies, and asks for control-plane and node pool upgrades (UpdateCluster,
	// UpdateNodePool); backend/pkg/maintenance.ClusterService.
	Maintenance = identity.Maintenance
	SRE         = identity.SRE // operators (the admin API) and the region launcher: provision shards, reads everything, day-2 changes (scale, upgrade)
)

// Table lists, for every method Cluster Service serves, who may call it. Change it here only;
// docs/security.md shows it as a table and TestTableCoversEveryMethod keeps it complete.
var Table = map[string][]string{
	csv1.Clusters_CreateCluster_FullMethodName: {Frontend},
	csv1.Clusters_GetCluster_FullMethodName:    {Frontend, Backend, Maintenance, SRE},
	csv1.Clusters_ListClusters_FullMethodName:  {Frontend, Monitor, Maintenance, SRE},
	// The admin API upgrades a control plane for an SRE (docs/sre.md, Day-2 changes); the
	// maintenance service asks for z-stream upgrades (docs/maintenance.md).
	csv1.Clusters_UpdateCluster_FullMethodName: {Frontend, Maintenance, SRE},
	// The backend deletes the clusters of a deleted subscription (the subscription cascade),
	// and sends again an ARM delete that never reached Cluster Service (here and for the
	// children below).
	csv1.Clusters_DeleteCluster_FullMethodName: {Frontend, Backend},
	// The frontend keeps every cluster's status from the watch, to answer ARM GETs and lists
	// without a call each (frontend/pkg/clusterstatus).
	csv1.Clusters_WatchClusters_FullMethodName: {Frontend, Backend, SRE},

	csv1.NodePools_CreateNodePool_FullMethodName: {Frontend},
	csv1.NodePools_GetNodePool_FullMethodName:    {Frontend, Backend, Maintenance, SRE},
	// The maintenance service selects the node pools of a campaign over node pools.
	csv1.NodePools_ListNodePools_FullMethodName: {Frontend, Monitor, Maintenance, SRE},
	// The admin API scales and upgrades node pools for an SRE; the maintenance service asks for
	// node pool z-stream upgrades (docs/maintenance.md).
	csv1.NodePools_UpdateNodePool_FullMethodName: {Frontend, Maintenance, SRE},
	csv1.NodePools_DeleteNodePool_FullMethodName: {Frontend, Backend},
	csv1.NodePools_WatchNodePools_FullMethodName: {Backend, SRE},

	csv1.ExternalAuths_CreateExternalAuth_FullMethodName: {Frontend},
	csv1.ExternalAuths_GetExternalAuth_FullMethodName:    {Frontend, Backend, SRE},
	csv1.ExternalAuths_ListExternalAuths_FullMethodName:  {Frontend, SRE},
	csv1.ExternalAuths_UpdateExternalAuth_FullMethodName: {Frontend},
	csv1.ExternalAuths_DeleteExternalAuth_FullMethodName: {Frontend, Backend},
	csv1.ExternalAuths_WatchExternalAuths_FullMethodName: {Backend, SRE},

	// Break-glass credentials are asked for through ARM only; the backend follows their state.
	// The admin API requests, lists and revokes SRE break-glass credentials; only the sre
	// identity may ask for an SRE credential, and only an SRE one (server/credentials.go). The
	// maintenance service rotates signers (its breakglass-signer-rotation task) and follows
	// its revocations; it reads and asks for no credential.
	csv1.Credentials_RequestCredential_FullMethodName: {Frontend, SRE},
	csv1.Credentials_GetCredential_FullMethodName:     {Frontend, Backend, SRE},
	csv1.Credentials_ListCredentials_FullMethodName:   {Frontend, SRE},
	csv1.Credentials_RevokeCredentials_FullMethodName: {Frontend, Maintenance, SRE},
	csv1.Credentials_GetRevocation_FullMethodName:     {Frontend, Backend, Maintenance, SRE},
	csv1.Credentials_WatchCredentials_FullMethodName:  {Backend},

	csv1.Versions_ListVersions_FullMethodName: {Frontend, Maintenance, SRE},
	csv1.Versions_GetVersion_FullMethodName:   {Frontend, SRE},

	// Upgrade policies are written by Cluster Service itself on UpdateCluster; no caller
	// creates them.
	csv1.UpgradePolicies_CreateUpgradePolicy_FullMethodName: {},
	csv1.UpgradePolicies_GetUpgradePolicy_FullMethodName:    {Frontend, Maintenance, SRE},
	// The admin API cancels an upgrade that has not started, for an SRE.
	csv1.UpgradePolicies_CancelUpgradePolicy_FullMethodName: {SRE},
	csv1.UpgradePolicies_ListUpgradePolicies_FullMethodName: {Frontend, Maintenance, SRE},

	csv1.ProvisionShards_RegisterShard_FullMethodName:  {SRE},
	csv1.ProvisionShards_ListShards_FullMethodName:     {Monitor, SRE},
	csv1.ProvisionShards_SetShardStatus_FullMethodName: {SRE},

	// Health checks: any caller the CA verified.
	"/grpc.health.v1.Health/Check": {Frontend, Backend, Monitor, Maintenance, SRE},
	"/grpc.health.v1.Health/Watch": {Frontend, Backend, Monitor, Maintenance, SRE},
	"/grpc.health.v1.Health/List":  {Frontend, Backend, Monitor, Maintenance, SRE},
}

// CredentialKind is a kind of break-glass credential.
type CredentialKind string

// The kinds of break-glass credential.
const (
	CustomerCredentials CredentialKind = "customer" // asked for through ARM's requestAdminCredential
	SRECredentials      CredentialKind = "sre"      // asked for by an SRE through the admin API
)

// CredentialKinds lists, per identity, the break-glass credentials it is answered for by
// GetCredential and ListCredentials, and the kinds whose signer it may rotate
// (RevokeCredentials, GetRevocation): a credential of another kind is NotFound to it, as an
// unknown one (its existence is not told). Table decides first which of those methods an
// identity may call at all: the maintenance service may rotate both signers but call neither
// GetCredential nor ListCredentials. docs/security.md shows it; TestDocsTableMatchesCode keeps
// them equal.
var CredentialKinds = map[string][]CredentialKind{
	Frontend:    {CustomerCredentials},
	Backend:     {CustomerCredentials},
	Maintenance: {CustomerCredentials, SRECredentials},
	SRE:         {SRECredentials},
}

// MaySeeCredential reports whether identity is answered for a credential (sre: an SRE's).
func MaySeeCredential(identity string, sre bool) bool {
	kind := CustomerCredentials
	if sre {
		kind = SRECredentials
	}
	return slices.Contains(CredentialKinds[identity], kind)
}

type callerKey struct{}

// Caller returns the workload the interceptors of ServerOptions identified for ctx's call.
func Caller(ctx context.Context) (string, bool) {
	who, ok := ctx.Value(callerKey{}).(string)
	return who, ok
}

// withCaller is ctx carrying an identified caller.
func withCaller(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, callerKey{}, who)
}

// Identify names the workload of ctx's connection: the SPIFFE ID of its verified client
// certificate, which must be in trustDomain and one of identity.Workloads, and which must still
// be within its validity (Unauthenticated otherwise, as without a certificate).
func Identify(ctx context.Context, trustDomain string) (string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.AuthInfo == nil {
		return "", status.Error(codes.Unauthenticated, "no verified client certificate")
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 {
		return "", status.Error(codes.Unauthenticated, "no verified client certificate")
	}
	// The handshake verified the chain once; a connection is kept for the life of a process, so
	// the chain must still be valid at this call.
	if err := identity.CheckValidAt(ti.State.VerifiedChains, time.Now()); err != nil {
		return "", status.Errorf(codes.Unauthenticated, "no valid client certificate: %v", err)
	}
	id, err := identity.FromVerifiedChains(ti.State.VerifiedChains)
	if err != nil {
		return "", status.Errorf(codes.PermissionDenied, "client certificate of %q: %v", ti.State.VerifiedChains[0][0].Subject.CommonName, err)
	}
	who, ok := identity.NameOf(id, trustDomain)
	if !ok {
		return "", status.Errorf(codes.PermissionDenied, "%s is no workload of trust domain %s", id, trustDomain)
	}
	return who, nil
}

// Check identifies ctx's caller and returns the context carrying it if the caller may call
// method, else PermissionDenied (Unauthenticated without a verified certificate, which the
// TLS handshake makes impossible on a mutual-TLS port).
func Check(ctx context.Context, trustDomain, method string) (context.Context, error) {
	who, err := Identify(ctx, trustDomain)
	if err != nil {
		return ctx, err
	}
	if !slices.Contains(Table[method], who) {
		return ctx, status.Errorf(codes.PermissionDenied, "identity %q may not call %s", who, method)
	}
	return withCaller(ctx, who), nil
}

// ServerOptions returns the interceptors that enforce Table for callers of trustDomain. Chain
// them after the logging interceptors so refusals are logged and counted.
func ServerOptions(trustDomain string) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, err := Check(ctx, trustDomain, info.FullMethod)
			if err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			ctx, err := Check(ss.Context(), trustDomain, info.FullMethod)
			if err != nil {
				return err
			}
			return handler(srv, &callerStream{ServerStream: ss, ctx: ctx})
		}),
	}
}

// callerStream is a stream whose context carries the identified caller.
type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *callerStream) Context() context.Context { return s.ctx }
