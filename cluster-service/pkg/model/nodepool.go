package model

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/validation"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/armspec/bounds"
)

// Defaults of the node pool platform, applied by DefaultNodePool before Cluster Service stores
// a spec; the manifest builder takes them as stored.
const (
	DefaultOSDiskSizeGiB            = 64
	DefaultOSDiskStorageAccountType = "Premium_LRS"
	// DefaultOSDiskPersistence is HyperShift's PersistentDiskPersistence.
	DefaultOSDiskPersistence = "Persistent"
)

// The most nodes a pool may have (replicas, autoscaling.min and max): the ARM specification's
// 200 for a pool without an availability zone, which only its descriptions state (no maximum
// keyword, so package bounds cannot carry it), and Cluster Service's own 500 for a pool in one
// (the specification sets no maximum there).
const (
	MaxPoolNodesWithoutZone = int32(200)
	MaxPoolNodes            = int32(500)
)

// MaxMinorsBehind is how many minor versions a node pool may run behind its control plane.
const MaxMinorsBehind = 2

// The OS disk's size in GiB: the ARM specification's bounds, read from package bounds (the
// newest api-version's: minimum 64 in every api-version, maximum 4095 from 2026-06-30-preview on,
// Azure's largest managed OS disk; the frontend's checks of an older version keep that version's
// rule), narrower than HyperShift's 16 to 65536, so no api-version's body reaches the NodePool
// with a size Azure would refuse.
const (
	MinOSDiskSizeGiB = bounds.OsDiskProfileSizeGiBMinimum
	MaxOSDiskSizeGiB = bounds.OsDiskProfileSizeGiBMaximum
)

// maxTaintKeyLen is the ARM specification's maxLength of a taint key (package bounds); a
// Kubernetes qualified name may have one more character (a 253-character prefix, '/', a
// 63-character name).
const maxTaintKeyLen = bounds.TaintKeyMaxLength

// maxLabelKeyLen is the longest label key Kubernetes takes: a DNS subdomain prefix (253), '/',
// and a name of at most 63.
const maxLabelKeyLen = validation.DNS1123SubdomainMaxLength + 1 + 63

// MaxTaints is the most taints a pool may have: HyperShift's NodePool CRD holds spec.taints to
// 50 items (+kubebuilder:validation:MaxItems=50 on NodePoolSpec.Taints, hypershift/api
// v1beta1/nodepool_types.go); the ARM specification sets no maximum. More would be refused by
// the management cluster only after the pool was accepted.
const MaxTaints = 50

var taintValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

var (
	taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	// The ARM specification's storage account types of an OS disk (HyperShift's CRD allows
	// PremiumV2_LRS and UltraSSD_LRS too, which Azure offers only for data disks).
	osDiskTypes = []string{"Premium_LRS", "StandardSSD_LRS", "Standard_LRS"}
	// HyperShift's NodePool CRD accepts only these zones (availabilityZone: self in ['1', '2', '3']).
	zones              = []string{"1", "2", "3"}
	osDiskPersistences = []string{"Persistent", "Ephemeral"}
)

// Cluster is what a node pool's defaults and rules read of its cluster.
type Cluster struct {
	Spec   *csv1.ClusterSpec
	Status *csv1.ClusterStatus
}

// DefaultNodePool is the one place a node pool spec's defaults are applied (Cluster Service
// stores the result, and the manifest builder takes it as it is): the OS disk's size, storage
// account type and persistence; the cluster's subnet; the channel group (an update that names
// none keeps the pool's, else the cluster's); and the version (an update keeps the pool's, a
// create takes the control plane's — what runs while a control-plane upgrade is under way).
// cur is the stored spec of an update, nil on create. in is not changed.
func DefaultNodePool(in *csv1.NodePoolSpec, cl Cluster, cur *csv1.NodePoolSpec) *csv1.NodePoolSpec {
	spec := proto.Clone(in).(*csv1.NodePoolSpec)
	if spec.Platform == nil {
		spec.Platform = &csv1.NodePoolPlatform{}
	}
	p := spec.Platform
	if p.OsDiskSizeGib == 0 {
		p.OsDiskSizeGib = DefaultOSDiskSizeGiB
	}
	if p.OsDiskStorageAccountType == "" {
		p.OsDiskStorageAccountType = DefaultOSDiskStorageAccountType
	}
	if p.SubnetId == "" {
		p.SubnetId = cl.Spec.GetAzure().GetSubnetId()
	}
	if p.OsDiskPersistence == "" {
		p.OsDiskPersistence = DefaultOSDiskPersistence
	}
	if spec.ChannelGroup == "" {
		spec.ChannelGroup = cur.GetChannelGroup()
	}
	if spec.ChannelGroup == "" {
		spec.ChannelGroup = cl.Spec.GetChannelGroup()
	}
	if spec.VersionId == "" {
		spec.VersionId = cur.GetVersionId()
	}
	if spec.VersionId == "" {
		spec.VersionId = ControlPlaneVersion(cl)
	}
	return spec
}

// ControlPlaneVersion is the version a node pool is measured against: the cluster's, or what
// runs while a control-plane upgrade is under way (the spec is then ahead of what runs).
func ControlPlaneVersion(cl Cluster) string {
	cp := cl.Spec.GetVersionId()
	if running := cl.Status.GetCurrentVersion(); running != "" {
		if c, err := versions.Compare(running, cp); err == nil && c < 0 {
			cp = running
		}
	}
	return cp
}

// ControlPlaneTarget is the version a node pool's minors behind are counted to: the newest the
// control plane runs or is going to. That is the spec's version, or the target of a
// control-plane upgrade recorded but not started yet (status.upgrade; the spec takes its version
// when it starts, so a completed one's is the spec's already, and a failed one goes nowhere).
func ControlPlaneTarget(cl Cluster) string {
	target := cl.Spec.GetVersionId()
	p := cl.Status.GetUpgrade()
	if p.GetType() != csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE || p.GetState() == csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
		return target
	}
	if c, err := versions.Compare(p.GetToVersion(), target); err == nil && c > 0 {
		return p.GetToVersion()
	}
	return target
}

// ValidateNodePoolSpec checks a node pool spec against its cluster (and, for an update, the
// current spec) and returns it with defaults applied and the version resolved.
func ValidateNodePoolSpec(v *Violations, field string, in *csv1.NodePoolSpec, cl Cluster, cur *csv1.NodePoolSpec,
	catalogue *versions.Catalogue, now func() time.Time) *csv1.NodePoolSpec {
	if in == nil {
		v.Add(field, "is required")
		return nil
	}
	spec := DefaultNodePool(in, cl, cur)
	p := spec.Platform
	groupOK := true
	if _, ok := catalogue.Versions(spec.ChannelGroup); !ok {
		groupOK = false
		v.Add(field+".channel_group", "channel group %q does not exist; use one of %s", spec.ChannelGroup, strings.Join(catalogue.Groups(), ", "))
	} else if cur != nil && cmp.Or(cur.GetChannelGroup(), cl.Spec.GetChannelGroup()) != spec.ChannelGroup {
		// Like a cluster's: a pool moves to another group only if that group offers what it
		// runs; upgrades then follow the new group's edges.
		if _, ok := catalogue.Get(spec.ChannelGroup, cur.GetVersionId()); !ok {
			groupOK = false
			v.Add(field+".channel_group", "the node pool runs %s, which channel group %s does not offer", cur.GetVersionId(), spec.ChannelGroup)
		}
	}

	// Version: resolved like the cluster's, never ahead of the control plane, at most two
	// minors behind it and behind the version an upgrade of it goes to (ControlPlaneTarget), and
	// on an update never a downgrade.
	cpVersion := ControlPlaneVersion(cl)
	group := spec.ChannelGroup
	switch {
	case !groupOK:
		// Reported above; resolving in an unknown group would only repeat it.
	case in.GetVersionId() == "":
		// Defaulted (the pool's own, or the control plane's): nothing to resolve.
	case cur == nil && spec.VersionId == cpVersion:
		// A new pool named at the exact version its control plane runs, which is the default
		// (the ARM frontend sends its pools with the defaults filled): nothing to resolve,
		// whatever the catalogue still offers new installs.
	case cur.GetVersionId() != "":
		// An update moves along the catalogue's upgrade edges, like the control plane.
		if resolved, err := catalogue.ResolveUpgrade(group, cur.GetVersionId(), spec.VersionId, now()); err != nil {
			v.Add(field+".version_id", "%v", err)
		} else {
			spec.VersionId = resolved
		}
	default:
		if resolved, err := catalogue.Resolve(group, spec.VersionId, now()); err != nil {
			v.Add(field+".version_id", "%v", err)
		} else {
			spec.VersionId = resolved
		}
	}
	if c, err := versions.Compare(spec.VersionId, cpVersion); err == nil && c > 0 {
		v.Add(field+".version_id", "%s is ahead of the control plane version %s; upgrade the cluster first", spec.VersionId, cpVersion)
	} else if n, ok := versions.MinorsBehind(spec.VersionId, cpVersion); !ok || n > MaxMinorsBehind {
		v.Add(field+".version_id", "%s is more than %d minor versions behind the control plane version %s", spec.VersionId, MaxMinorsBehind, cpVersion)
	} else if target := ControlPlaneTarget(cl); target != cpVersion {
		if n, ok := versions.MinorsBehind(spec.VersionId, target); !ok || n > MaxMinorsBehind {
			v.Add(field+".version_id", "%s would be more than %d minor versions behind %s, the version the control plane is upgrading to", spec.VersionId, MaxMinorsBehind, target)
		}
	}
	if cur != nil && cur.GetVersionId() != "" {
		if c, err := versions.Compare(spec.VersionId, cur.GetVersionId()); err == nil && c < 0 {
			v.Add(field+".version_id", "cannot downgrade the node pool from %s to %s", cur.GetVersionId(), spec.VersionId)
		}
	}

	validateScaling(v, field, spec)
	// Lengths first: Kubernetes' checks match their pattern over the whole string, and the ARM
	// specification bounds neither a key nor a value, so a key of megabytes cost a quarter of a
	// second of CPU inside the write transaction, and quoted ahead of its reason it left no room
	// for the reason in the description (TestOverlongLabelsAreRefusedForTheirLength).
	for k, val := range spec.GetLabels() {
		if len(k) > maxLabelKeyLen {
			v.Add(field+".labels", "a key of %d bytes: a key is at most %d bytes (a DNS subdomain prefix, '/', a name of at most 63)", len(k), maxLabelKeyLen)
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			v.Add(field+".labels", "key %q: %s", k, strings.Join(errs, "; "))
		}
		if len(val) > validation.LabelValueMaxLength {
			v.Add(field+".labels", "value of %q: %d bytes, at most %d", k, len(val), validation.LabelValueMaxLength)
		} else if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
			v.Add(field+".labels", "value of %q: %s", k, strings.Join(errs, "; "))
		}
	}
	if n := len(spec.GetTaints()); n > MaxTaints {
		v.Add(field+".taints", "must have at most %d taints, has %d", MaxTaints, n)
	}
	seen := map[string]bool{}
	for i, t := range spec.GetTaints() {
		f := fmt.Sprintf("%s.taints[%d]", field, i)
		if errs := validation.IsQualifiedName(t.GetKey()); len(errs) > 0 {
			v.Add(f+".key", "%q: %s", t.GetKey(), strings.Join(errs, "; "))
		} else if len(t.GetKey()) > maxTaintKeyLen {
			v.Add(f+".key", "must be at most %d characters long, not %d", maxTaintKeyLen, len(t.GetKey()))
		}
		// The length is the ARM specification's maxLength of a taint value (package bounds),
		// Kubernetes' of a label value.
		if len(t.GetValue()) > bounds.TaintValueMaxLength || !taintValueRE.MatchString(t.GetValue()) {
			v.Add(f+".value", "%q must be at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit", t.GetValue(), bounds.TaintValueMaxLength)
		}
		if t.GetEffect() == "" {
			v.Add(f+".effect", "is required: one of %s", strings.Join(taintEffects, ", "))
		}
		OneOf(v, f+".effect", t.GetEffect(), taintEffects...)
		if k := t.GetKey() + ":" + t.GetEffect(); seen[k] {
			v.Add(f, "duplicates the taint %s", k)
		} else {
			seen[k] = true
		}
	}
	if err := ValidateVMSize(p.GetVmSize()); err != nil {
		v.Add(field+".platform.vm_size", "%v", err)
	}
	if cur == nil {
		// On create only: the OS disk cannot change after (below), and a pool created before
		// these bounds were the specification's (HyperShift's 16-65536 GiB, PremiumV2_LRS,
		// UltraSSD_LRS) is not refused every later update for what it cannot change.
		if n := p.GetOsDiskSizeGib(); n < MinOSDiskSizeGiB || n > MaxOSDiskSizeGiB {
			v.Add(field+".platform.os_disk_size_gib", "must be between %d and %d, not %d", MinOSDiskSizeGiB, MaxOSDiskSizeGiB, n)
		}
		OneOf(v, field+".platform.os_disk_storage_account_type", p.GetOsDiskStorageAccountType(), osDiskTypes...)
	}
	OneOf(v, field+".platform.availability_zone", p.GetAvailabilityZone(), zones...)
	OneOf(v, field+".platform.os_disk_persistence", p.GetOsDiskPersistence(), osDiskPersistences...)
	if id := p.GetOsDiskEncryptionSetId(); id != "" {
		if err := ValidateDiskEncryptionSetID(id); err != nil {
			v.Add(field+".platform.os_disk_encryption_set_id", "%v", err)
		}
	}
	if spec.NodeDrainTimeoutMinutes != nil {
		ValidateDrainTimeout(v, field+".node_drain_timeout_minutes", spec.GetNodeDrainTimeoutMinutes())
	}
	if err := ValidateSubnetID(p.GetSubnetId()); err != nil {
		v.Add(field+".platform.subnet_id", "must be a subnet resource ID: %v", err)
	}
	if c := cur.GetPlatform(); cur != nil {
		for name, pair := range map[string][2]string{
			"vm_size":                      {c.GetVmSize(), p.GetVmSize()},
			"os_disk_size_gib":             {fmt.Sprint(c.GetOsDiskSizeGib()), fmt.Sprint(p.GetOsDiskSizeGib())},
			"os_disk_storage_account_type": {c.GetOsDiskStorageAccountType(), p.GetOsDiskStorageAccountType()},
			"subnet_id":                    {c.GetSubnetId(), p.GetSubnetId()},
			"availability_zone":            {c.GetAvailabilityZone(), p.GetAvailabilityZone()},
			"encryption_at_host":           {fmt.Sprint(c.GetEncryptionAtHost()), fmt.Sprint(p.GetEncryptionAtHost())},
			"os_disk_encryption_set_id":    {c.GetOsDiskEncryptionSetId(), p.GetOsDiskEncryptionSetId()},
			// A pool stored before pools had a persistence has Persistent disks.
			"os_disk_persistence": {cmp.Or(c.GetOsDiskPersistence(), DefaultOSDiskPersistence), p.GetOsDiskPersistence()},
		} {
			if !strings.EqualFold(pair[0], pair[1]) {
				v.Add(field+".platform."+name, "cannot change after create: is %q, asked for %q", pair[0], pair[1])
			}
		}
	}
	return spec
}

// validateScaling is the one rule for a pool's size: replicas and autoscaling exclude each
// other (replicas 0 beside autoscaling is no replicas), replicas is 0 to the pool's maximum, and
// autoscaling runs from min (at least 1: HyperShift's NodePoolAutoScaling has Minimum=1, so a
// pool that scales from zero cannot be expressed) to max (at least min). The frontend checks
// only the specification's structural bound (minimum 0), which this rule implies.
func validateScaling(v *Violations, field string, spec *csv1.NodePoolSpec) {
	limit, where := MaxPoolNodes, ""
	if spec.GetPlatform().GetAvailabilityZone() == "" {
		limit, where = MaxPoolNodesWithoutZone, " for a pool without an availability zone"
	}
	as := spec.GetAutoscaling()
	if as == nil {
		if spec.Replicas < 0 || spec.Replicas > limit {
			v.Add(field+".replicas", "must be between 0 and %d%s, not %d", limit, where, spec.Replicas)
		}
		return
	}
	if spec.Replicas != 0 {
		v.Add(field+".replicas", "must not be set together with autoscaling")
	}
	if as.GetMin() < 1 || as.GetMin() > limit {
		v.Add(field+".autoscaling.min", "must be between 1 and %d%s, not %d", limit, where, as.GetMin())
	}
	if lo := max(as.GetMin(), 0); as.GetMax() < lo || as.GetMax() > limit {
		v.Add(field+".autoscaling.max", "must be between %d and %d%s, and not below min, not %d", lo, limit, where, as.GetMax())
	}
}
