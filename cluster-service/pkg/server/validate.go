package server

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

var (
	clusterIDRE = regexp.MustCompile(`^[0-9a-v]{32}$`)
	// /subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}
	armClusterRE = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f-]{36})/resourcegroups/([-\w._()]{1,90})/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/([a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)$`)
	uuidRE       = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	dnsNameRE    = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	shardNameRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	locationRE   = regexp.MustCompile(`^[a-z0-9]{1,40}$`)
)

// violations collects field errors and turns them into one InvalidArgument with BadRequest
// details, so a caller sees every problem at once with its field path.
type violations []*errdetails.BadRequest_FieldViolation

func (v *violations) add(field, format string, args ...any) {
	*v = append(*v, &errdetails.BadRequest_FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

func (v violations) err() error {
	if len(v) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(v))
	for _, f := range v {
		msgs = append(msgs, f.Field+": "+f.Description)
	}
	st := status.New(codes.InvalidArgument, "invalid request: "+strings.Join(msgs, "; "))
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: v}); err == nil {
		st = d
	}
	return st.Err()
}

func oneOf(v *violations, field, val string, allowed ...string) {
	if val == "" {
		return
	}
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.add(field, "must be one of %s, not %q", strings.Join(allowed, ", "), val)
}

func validateClusterID(v *violations, field, id string) {
	if !clusterIDRE.MatchString(id) {
		v.add(field, "must be 32 characters of [0-9a-v], not %q", id)
	}
}

// validateCreate checks a create request and returns the spec with defaults applied and the
// version resolved through the catalogue ("4.19" becomes the newest enabled 4.19.z).
func validateCreate(req *csv1.CreateClusterRequest, catalogue *versions.Catalogue, now time.Time) (*csv1.ClusterSpec, error) {
	var v violations
	c := req.GetCluster()
	if c == nil {
		v.add("cluster", "is required")
		return nil, v.err()
	}
	validateClusterID(&v, "cluster.id", c.GetId())
	if !armClusterRE.MatchString(c.GetArmResourceId()) {
		v.add("cluster.arm_resource_id", "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{name}, not %q", c.GetArmResourceId())
	}
	if c.GetSpec() == nil {
		v.add("cluster.spec", "is required")
		return nil, v.err()
	}
	spec := proto.Clone(c.GetSpec()).(*csv1.ClusterSpec)
	applyDefaults(spec)
	applyConfigDefaults(spec)

	if resolved, err := catalogue.Resolve(spec.GetChannelGroup(), spec.GetVersionId(), now); err != nil {
		v.add("cluster.spec.version_id", "%v", err)
	} else {
		spec.VersionId = resolved
	}
	oneOf(&v, "cluster.spec.channel_group", spec.GetChannelGroup(), channelGroups...)
	oneOf(&v, "cluster.spec.api_visibility", spec.GetApiVisibility(), "Public", "Private")
	oneOf(&v, "cluster.spec.image_registry_state", spec.GetImageRegistryState(), "Enabled", "Disabled")
	if d := spec.GetDnsBaseDomain(); d != "" && !dnsNameRE.MatchString(d) {
		v.add("cluster.spec.dns_base_domain", "must be a lowercase DNS name, not %q", d)
	}
	if k := spec.GetEtcdEncryptionKeyId(); k != "" {
		if err := manifests.ValidateKeyVaultKeyID(k); err != nil {
			v.add("cluster.spec.etcd_encryption_key_id", "%v", err)
		}
	}

	validateConfig(&v, "cluster.spec", spec)

	n := spec.GetNetwork()
	oneOf(&v, "cluster.spec.network.network_type", n.GetNetworkType(), "OVNKubernetes", "Other")
	nets := map[string]*net.IPNet{}
	for field, cidr := range map[string]string{"pod_cidr": n.GetPodCidr(), "service_cidr": n.GetServiceCidr(), "machine_cidr": n.GetMachineCidr()} {
		ip, ipn, err := net.ParseCIDR(cidr)
		if err != nil || ip.To4() == nil || !ip.Equal(ipn.IP) {
			v.add("cluster.spec.network."+field, "must be an IPv4 network in CIDR form, not %q", cidr)
			continue
		}
		nets[field] = ipn
	}
	// Descriptions name no fields (the frontend puts the ARM path in the target).
	networkNames := map[string]string{"pod_cidr": "the pod network", "service_cidr": "the service network"}
	for _, pair := range [][2]string{{"pod_cidr", "service_cidr"}, {"pod_cidr", "machine_cidr"}, {"service_cidr", "machine_cidr"}} {
		a, b := nets[pair[0]], nets[pair[1]]
		if a != nil && b != nil && (a.Contains(b.IP) || b.Contains(a.IP)) {
			v.add("cluster.spec.network."+pair[1], "overlaps %s %s", networkNames[pair[0]], a)
		}
	}
	if hp := n.GetHostPrefix(); hp < 23 || hp > 26 {
		v.add("cluster.spec.network.host_prefix", "must be between 23 and 26, not %d", hp)
	} else if pod := nets["pod_cidr"]; pod != nil {
		if ones, _ := pod.Mask.Size(); int32(ones) > hp {
			v.add("cluster.spec.network.host_prefix", "/%d is larger than the pod network /%d", hp, ones)
		}
	}

	az := spec.GetAzure()
	if az == nil {
		v.add("cluster.spec.azure", "is required")
	} else {
		if !locationRE.MatchString(az.GetLocation()) {
			v.add("cluster.spec.azure.location", "must be an Azure location name like eastus, not %q", az.GetLocation())
		}
		if s := az.GetSubscriptionId(); s != "" && !uuidRE.MatchString(s) {
			v.add("cluster.spec.azure.subscription_id", "must be a UUID, not %q", s)
		}
		if t := az.GetTenantId(); t != "" && !uuidRE.MatchString(t) {
			v.add("cluster.spec.azure.tenant_id", "must be a UUID, not %q", t)
		}
		// HyperShift requires both on Azure.
		if err := manifests.ValidateSubnetID(az.GetSubnetId()); err != nil {
			v.add("cluster.spec.azure.subnet_id", "must be a subnet resource ID: %v", err)
		}
		if err := manifests.ValidateNSGID(az.GetNetworkSecurityGroupId()); err != nil {
			v.add("cluster.spec.azure.network_security_group_id", "must be a network security group resource ID: %v", err)
		}

		oneOf(&v, "cluster.spec.azure.outbound_type", az.GetOutboundType(), "LoadBalancer")
		if wi := az.GetWorkloadIdentities(); wi != nil {
			for field, val := range manifests.WorkloadIdentityFields(wi) {
				if !uuidRE.MatchString(val) {
					v.add("cluster.spec.azure.workload_identities."+field, "must be a managed identity client ID (UUID), not %q", val)
				}
			}
		}
	}
	return spec, v.err()
}

// applyDefaults fills what the caller left empty with the documented defaults, so the stored
// spec says exactly what was built.
func applyDefaults(s *csv1.ClusterSpec) {
	if s.ChannelGroup == "" {
		s.ChannelGroup = defaultChannelGroup
	}
	if s.ApiVisibility == "" {
		s.ApiVisibility = "Public"
	}
	if s.ImageRegistryState == "" {
		s.ImageRegistryState = "Enabled"
	}
	if s.Network == nil {
		s.Network = &csv1.NetworkSpec{}
	}
	n := s.Network
	if n.NetworkType == "" {
		n.NetworkType = "OVNKubernetes"
	}
	if n.PodCidr == "" {
		n.PodCidr = "10.128.0.0/14"
	}
	if n.ServiceCidr == "" {
		n.ServiceCidr = "172.30.0.0/16"
	}
	if n.MachineCidr == "" {
		n.MachineCidr = "10.0.0.0/16"
	}
	if n.HostPrefix == 0 {
		n.HostPrefix = 23
	}
	if s.Azure != nil && s.Azure.OutboundType == "" {
		s.Azure.OutboundType = "LoadBalancer"
	}
}

func validateShard(sh *csv1.ProvisionShard) error {
	var v violations
	if sh == nil {
		v.add("shard", "is required")
		return v.err()
	}
	if !shardNameRE.MatchString(sh.GetName()) {
		v.add("shard.name", "must be a DNS label (the Maestro consumer name), not %q", sh.GetName())
	}
	if sh.GetMaxClusters() < 0 {
		v.add("shard.max_clusters", "must not be negative")
	}
	if _, ok := csv1.ShardStatus_name[int32(sh.GetStatus())]; !ok {
		v.add("shard.status", "unknown status %d", sh.GetStatus())
	}
	for k := range sh.GetLabels() {
		if k == "" || len(k) > 63 {
			v.add("shard.labels", "keys must be 1-63 characters")
		}
	}
	return v.err()
}
