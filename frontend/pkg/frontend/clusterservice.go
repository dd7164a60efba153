package frontend

import (
	"context"
	"net"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

// csContext carries the ARM correlation IDs to Cluster Service and bounds the call.
func (s *Server) csContext(ctx context.Context, ri *requestInfo) (context.Context, context.CancelFunc) {
	md := metadata.Pairs(arm.MetadataRequestID, ri.requestID)
	if ri.clientRequestID != "" {
		md.Append(arm.MetadataClientRequestID, ri.clientRequestID)
	}
	if ri.correlationID != "" {
		md.Append(arm.MetadataCorrelationRequestID, ri.correlationID)
	}
	ctx = metadata.NewOutgoingContext(ctx, metadata.Join(md))
	return context.WithTimeout(ctx, s.cfg.ClusterServiceTimeout)
}

// modelSpec is the cluster's spec as the internal model states it: the properties the spec
// holds (api.Cluster.CopySpec, authorized CIDRs as given), with the workload identities and the
// customer-managed key added. An update is the difference of two (clusterUpdate).
func modelSpec(c *api.Cluster) *csv1.ClusterSpec {
	spec := c.CopySpec()
	spec.Azure.WorkloadIdentities = workloadIdentities(c)
	de := c.Etcd
	if de.KeyManagementMode == api.KeyManagementCustomer && de.CustomerManaged != nil && de.CustomerManaged.KMS != nil {
		k := de.CustomerManaged.KMS
		spec.EtcdEncryptionKeyId = api.EtcdKeyID(k)
		spec.EtcdEncryptionKeyVaultVisibility = k.Visibility
	}
	return spec
}

// clusterSpec maps the internal model to Cluster Service's spec of a create: modelSpec with the
// envelope and the tenant added, and the values Cluster Service wants in its own form.
func clusterSpec(c *api.Cluster, tenantID string) *csv1.ClusterSpec {
	spec := modelSpec(c)
	spec.Azure.SubscriptionId = c.ID.SubscriptionID
	spec.Azure.ResourceGroup = c.ID.ResourceGroup
	spec.Azure.Location = normalizeLocation(c.Location)
	spec.Azure.TenantId = tenantID
	spec.Autoscaling = csAutoscaling(spec.Autoscaling)
	spec.ApiAuthorizedCidrs = csCIDRs(spec.ApiAuthorizedCidrs)
	return spec
}

// csAutoscaling maps the cluster autoscaler settings: a value not given stays unset (HyperShift's
// default applies), a value given, 0 included, is sent. nil when none is given.
func csAutoscaling(a *csv1.ClusterAutoscaling) *csv1.ClusterAutoscaling {
	if proto.Equal(a, &csv1.ClusterAutoscaling{}) {
		return nil
	}
	return a
}

// csCIDRs maps authorizedCidrs; the ARM API also accepts a single IPv4 address, which is the
// /32 block HyperShift's allowedCIDRBlocks needs.
func csCIDRs(in []string) []string {
	var out []string
	for _, c := range in {
		if ip := net.ParseIP(c); ip != nil && ip.To4() != nil {
			c = ip.To4().String() + "/32"
		}
		out = append(out, c)
	}
	return out
}

// knownFrom reads a Cluster Service Get's error: NotFound is an object it does not know.
func knownFrom(err error) (bool, error) {
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	return err == nil, err
}

// definitive reports whether a Cluster Service error means the call certainly did not take
// effect, so our documents can be rolled back. Timeouts and unavailability are ambiguous: the
// documents stay, and a retry of the request drives the same call again with the same ID.
func definitive(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.AlreadyExists, codes.FailedPrecondition,
		codes.ResourceExhausted, codes.PermissionDenied, codes.Unauthenticated, codes.Unimplemented, codes.NotFound,
		codes.Aborted: // a conditional write refused on its revision (store.ErrConflict)
		return true
	}
	return false
}

// defaultManagedResourceGroup follows the specification: "aro-hcp-" + cluster name (up to 45
// characters) + "-" + a UUID.
func defaultManagedResourceGroup(clusterName string) string {
	if len(clusterName) > 45 {
		clusterName = clusterName[:45]
	}
	return "aro-hcp-" + strings.ToLower(clusterName) + "-" + newUUID()
}

// controlPlaneOperators are the operators whose identities become the cluster's workload
// identities, in the order of AzureWorkloadIdentities.
var controlPlaneOperators = []string{"image-registry", "ingress", "file-csi-driver", "disk-csi-driver",
	"cluster-api-azure", "cloud-controller-manager", "cloud-network-config"}

// workloadIdentities maps the control plane operator identities to the client IDs HyperShift
// wants, one per operator. Cluster Service needs all of them or none (it then uses the region's
// development placeholder), so a partial set is not sent.
func workloadIdentities(c *api.Cluster) *csv1.AzureWorkloadIdentities {
	if c.Identity == nil {
		return nil
	}
	clientID := func(operator string) string {
		rid := c.OperatorIdentities.ControlPlaneOperators[operator]
		if rid == "" {
			return ""
		}
		for k, v := range c.Identity.UserAssignedIdentities {
			if strings.EqualFold(k, rid) && v != nil {
				return v.ClientID
			}
		}
		return ""
	}
	wi := &csv1.AzureWorkloadIdentities{
		ImageRegistry:      clientID("image-registry"),
		Ingress:            clientID("ingress"),
		File:               clientID("file-csi-driver"),
		Disk:               clientID("disk-csi-driver"),
		NodePoolManagement: clientID("cluster-api-azure"),
		CloudProvider:      clientID("cloud-controller-manager"),
		Network:            clientID("cloud-network-config"),
	}
	for _, v := range []string{wi.ImageRegistry, wi.Ingress, wi.File, wi.Disk, wi.NodePoolManagement, wi.CloudProvider, wi.Network} {
		if v == "" {
			return nil
		}
	}
	return wi
}
