// Package manifests builds the ManifestWork that Cluster Service sends through Maestro for one
// cluster: its namespace, secrets and HyperShift HostedCluster, with server-side apply and the
// feedback rules that bring the HostedCluster status back. It is pure: same input, same work
// (and the same spec hash), except that Secrets sealed to a management cluster's key
// (Cluster.SealTo) differ at each build.
package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/openshift/hypershift/api/util/ipnet"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/internal/secretseal"
)

const (
	// LabelClusterID marks the work and every object in it with the Cluster Service ID.
	LabelClusterID = "openhcp.io/cluster-id"
	// AnnotationSpecHash on the work is a hash of its spec, so the controller can tell whether
	// what Maestro has is what it would send.
	AnnotationSpecHash = "openhcp.io/spec-hash"
	// FieldManager is the server-side apply field manager on the management cluster. The
	// ManifestWork API requires the work-agent prefix (ServerSideApplyConfig.fieldManager has the
	// pattern ^work-agent), so a hub that validates works would refuse any other name.
	FieldManager = "work-agent-cluster-service"

	workNamePrefix = "cluster-"

	// Feedback value names on the HostedCluster manifest.
	FeedbackConditions           = "conditions"
	FeedbackVersionDesired       = "versionDesired"
	FeedbackVersionHistory       = "versionHistory"
	FeedbackControlPlaneEndpoint = "controlPlaneEndpoint"

	DefaultEnv                    = "dev"
	DefaultReleaseImageRepository = "quay.io/openshift-release-dev/ocp-release"
	// DefaultPullSecret has no credentials; a real region passes its own.
	DefaultPullSecret = `{"auths":{}}`
)

// Config is the region-wide input to every build.
type Config struct {
	// Env is the environment name in namespaces (ocm-<env>-<id>); default "dev".
	Env string
	// ReleaseImageRepository: the release image is <repo>:<version>-multi.
	ReleaseImageRepository string
	// PullSecret is the .dockerconfigjson given to every hosted cluster; default no auths.
	PullSecret []byte
	// EtcdStorageSize for managed etcd; default 8Gi.
	EtcdStorageSize string
	// DevWorkloadIdentityClientID, when set, stands in for every workload identity of a cluster
	// that has none. Only for development regions, which have no Azure to resolve identities.
	DevWorkloadIdentityClientID string
}

func (c Config) withDefaults() Config {
	if c.Env == "" {
		c.Env = DefaultEnv
	}
	if c.ReleaseImageRepository == "" {
		c.ReleaseImageRepository = DefaultReleaseImageRepository
	}
	if len(c.PullSecret) == 0 {
		c.PullSecret = []byte(DefaultPullSecret)
	}
	if c.EtcdStorageSize == "" {
		c.EtcdStorageSize = "8Gi"
	}
	return c
}

// Cluster is what a build needs to know about one cluster.
type Cluster struct {
	ID            string
	ARMResourceID string
	Spec          *csv1.ClusterSpec
	// EtcdEncryptionKey is the 32-byte AES-CBC key, generated once per cluster and stored.
	EtcdEncryptionKey []byte
	// SSHPublicKey in authorized_keys format, generated once per cluster and stored.
	SSHPublicKey string
	// WatchStatus asks the agent to watch the HostedCluster for feedback (see feedbackScrape)
	// instead of re-reading it every status-sync interval: set while a transition is in flight.
	// The cluster's secrets are watched with it (watchSecrets), unless ReadSecretsLive.
	WatchStatus bool
	// SealTo, when set, is the management cluster's sealing key: the work then carries the
	// pull secret and the etcd encryption key sealed to it (sealedSecret), never in clear,
	// and the management side opens them into the Secrets the HostedCluster names.
	SealTo *secretseal.PublicKey
	// ReadSecretsLive keeps the secrets polled while WatchStatus is set: the agent then reads
	// each of them from the kube-apiserver on every status sync of the work, the rule before
	// 2026-11-25, kept as a benchmark's baseline (Cluster Service's --watch-secrets=false).
	ReadSecretsLive bool
}

// watchSecrets: while a transition is in flight the agent syncs a work's status each time
// something in it changes, and reads every manifest it does not watch live from the
// kube-apiserver each time: about nine GETs of each secret per create (docs/performance.md,
// "What a management kube-apiserver serves"). Watched, the secrets are read from one informer
// on the cluster's namespace (the pinned agent keys its informers by resource and namespace),
// a LIST and a WATCH instead. The steady (Poll) form leaves their scrape type unset, so it is
// the same work as before and a rollout republishes nothing.
func watchSecrets(c Cluster) bool { return c.WatchStatus && !c.ReadSecretsLive }

// FeedbackMode is the scrape type the work asks for on its object that reports feedback (the
// HostedCluster or the NodePool: the manifest with feedback rules), or "" if it has none.
func FeedbackMode(w *workv1.ManifestWork) workv1.FeedbackScrapeType {
	for _, mc := range w.Spec.ManifestConfigs {
		if len(mc.FeedbackRules) > 0 {
			return mc.FeedbackScrapeType
		}
	}
	return ""
}

// feedbackScrape is how the Maestro agent reads a HostedCluster's or NodePool's status for
// feedback. Watch registers an informer on the object's type and namespace and pushes every
// change at once; Poll waits for the agent's next --status-sync-interval. Cluster Service asks
// for Watch only while a transition (create, update, upgrade, scale, delete) is in flight, so a
// change reaches ARM in well under a second, and goes back to Poll once the object is steady,
// so a management cluster with thousands of steady clusters holds no idle informers (the agent
// caps them with --max-feedback-watch and polls the rest).
func feedbackScrape(watch bool) workv1.FeedbackScrapeType {
	if watch {
		return workv1.FeedbackWatchType
	}
	return workv1.FeedbackPollType
}

var envRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?$`)

// ValidateEnv checks that env fits in a namespace name.
func ValidateEnv(env string) error {
	if !envRE.MatchString(env) {
		return fmt.Errorf("environment name %q must be 1-16 lowercase alphanumerics or '-'", env)
	}
	return nil
}

// DefaultBaseDomain is the development region's DNS base domain. Each cluster's base domain is
// <namespace>.<region base domain>, which keeps the API host the hypershift-sim has always made
// up (api.<name>.<namespace>.hypershift.local) and so the kubeconfig server names.
const DefaultBaseDomain = "hypershift.local"

// ClusterBaseDomain is the base domain Cluster Service chooses for a new cluster.
func ClusterBaseDomain(regionBaseDomain, namespace string) string {
	if regionBaseDomain == "" {
		regionBaseDomain = DefaultBaseDomain
	}
	return namespace + "." + regionBaseDomain
}

// DefaultOIDCIssuerBaseURL is the development region's OIDC issuer base; a cluster's issuer is
// <base>/<cluster id>, one per cluster as in ARO HCP.
const DefaultOIDCIssuerBaseURL = "https://oidc." + DefaultBaseDomain

// PausedUntil is HyperShift's spec.pausedUntil of the HostedCluster and its NodePools: nil
// unless an SRE paused the cluster.
func PausedUntil(s *csv1.ClusterSpec) *string {
	if p := s.GetPausedUntil(); p != "" {
		return &p
	}
	return nil
}

// IssuerURL is the OIDC issuer Cluster Service chooses for a new cluster.
func IssuerURL(baseURL, id string) string {
	if baseURL == "" {
		baseURL = DefaultOIDCIssuerBaseURL
	}
	return strings.TrimRight(baseURL, "/") + "/" + id
}

// ConsoleURL is the OpenShift console of a HostedCluster: the console route's host under the
// ingress domain apps.<baseDomainPrefix, else name>.<baseDomain>, as HyperShift names it. Empty
// without a base domain or with the Console capability disabled.
func ConsoleURL(hc *hypershiftv1beta1.HostedCluster) string {
	if hc == nil || hc.Spec.DNS.BaseDomain == "" {
		return ""
	}
	if caps := hc.Spec.Capabilities; caps != nil {
		for _, c := range caps.Disabled {
			if c == hypershiftv1beta1.ConsoleCapability {
				return ""
			}
		}
	}
	sub := hc.Name
	if p := hc.Spec.DNS.BaseDomainPrefix; p != nil {
		sub = *p
	}
	domain := hc.Spec.DNS.BaseDomain
	if sub != "" {
		domain = sub + "." + domain
	}
	return "https://console-openshift-console.apps." + domain
}

// Namespace is the management-cluster namespace of a cluster: ocm-<env>-<id>.
func Namespace(env, id string) string {
	if env == "" {
		env = DefaultEnv
	}
	return "ocm-" + env + "-" + id
}

// WorkName is the ManifestWork name for a cluster.
func WorkName(id string) string { return workNamePrefix + id }

// ClusterIDFromWorkName reverses WorkName; ok is false for works that are not ours.
func ClusterIDFromWorkName(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, workNamePrefix)
	return id, ok && id != ""
}

// clusterIDLength is the length of every Cluster Service cluster ID (32 of [0-9a-v]).
const clusterIDLength = 32

// armName is a resource's ARM name, lower-cased.
func armName(armResourceID string) string {
	parts := strings.Split(strings.TrimRight(armResourceID, "/"), "/")
	return strings.ToLower(parts[len(parts)-1])
}

// HostedClusterName is the HostedCluster's name in environment env: the ARM resource name,
// lower-cased, as ARO HCP does — shortened where HyperShift's control-plane namespace,
// <HostedCluster namespace>-<name> (ControlPlaneNamespace), would otherwise outgrow Kubernetes'
// 63 characters (ARM allows cluster names of up to 54; with env "dev" 22 fit). A longer name
// becomes its first characters that fit, a hyphen and six hex digits of a hash of the resource
// ID, so it stays the same for the cluster's life and distinct between clusters.
func HostedClusterName(env, armResourceID string) string {
	name := armName(armResourceID)
	limit := 63 - len(Namespace(env, strings.Repeat("0", clusterIDLength))) - 1
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(strings.ToLower(armResourceID)))
	return strings.TrimRight(name[:limit-7], "-") + "-" + hex.EncodeToString(sum[:])[:6]
}

// ReleaseImage is the release image for an OpenShift version.
func ReleaseImage(repo, version string) string {
	if repo == "" {
		repo = DefaultReleaseImageRepository
	}
	return repo + ":" + version + "-multi"
}

// kmsObjectEncoding is how the KMS identity's credentials are encoded in the Key Vault secret
// that credentialsSecretName names. Cluster Service writes them as JSON text, HyperShift's default.
const kmsObjectEncoding = hypershiftv1beta1.ObjectEncodingFormat("utf-8")

// KMSCredentialsSecretName is the name of the Key Vault secret that holds the credentials of the
// managed identity the KMS plugin authenticates to the customer's Key Vault with. The
// managed-identities Key Vault is shared by the region, so the name carries the Cluster Service
// ID, which is unique; Key Vault allows only alphanumerics and hyphens, 1–127 characters.
func KMSCredentialsSecretName(clusterID string) string {
	name := "kms-" + nonKeyVaultChars.ReplaceAllString(clusterID, "-")
	if len(name) > 127 {
		name = name[:127]
	}
	return name
}

var nonKeyVaultChars = regexp.MustCompile(`[^a-zA-Z0-9-]`)

// kmsIdentity is the managed identity HyperShift's Azure KMS plugin uses.
func kmsIdentity(clusterID string) hypershiftv1beta1.ManagedIdentity {
	return hypershiftv1beta1.ManagedIdentity{ObjectEncoding: kmsObjectEncoding, CredentialsSecretName: KMSCredentialsSecretName(clusterID)}
}

// Secret names inside the cluster namespace.
func PullSecretName(hc string) string           { return hc + "-pull-secret" }
func SSHKeySecretName(hc string) string         { return hc + "-ssh-key" }
func EtcdEncryptionSecretName(hc string) string { return hc + "-etcd-encryption-key" }

// Build returns the ManifestWork for c.
func Build(cfg Config, c Cluster) (*workv1.ManifestWork, error) {
	cfg = cfg.withDefaults()
	if c.Spec == nil {
		return nil, errors.New("build manifests: cluster has no spec")
	}
	if len(c.EtcdEncryptionKey) != 32 {
		return nil, fmt.Errorf("build manifests for %s: etcd encryption key must be 32 bytes, have %d", c.ID, len(c.EtcdEncryptionKey))
	}
	ns := Namespace(cfg.Env, c.ID)
	name := HostedClusterName(cfg.Env, c.ARMResourceID)
	labels := map[string]string{LabelClusterID: c.ID}

	hc, err := hostedCluster(cfg, c, ns, name, labels)
	if err != nil {
		return nil, fmt.Errorf("build HostedCluster for %s: %w", c.ID, err)
	}
	objs := []runtime.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: PullSecretName(name), Namespace: ns, Labels: labels},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg.PullSecret},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: SSHKeySecretName(name), Namespace: ns, Labels: labels},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"id_rsa.pub": []byte(c.SSHPublicKey)},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: EtcdEncryptionSecretName(name), Namespace: ns, Labels: labels},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{hypershiftv1beta1.AESCBCKeySecretKey: c.EtcdEncryptionKey},
		},
		hc,
	}
	work := &workv1.ManifestWork{
		TypeMeta:   metav1.TypeMeta{APIVersion: "work.open-cluster-management.io/v1", Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Name: WorkName(c.ID), Labels: labels},
		Spec: workv1.ManifestWorkSpec{
			// Foreground: deleting the work deletes every object in it, the namespace last.
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground},
		},
	}
	if err := addManifests(work, c, objs); err != nil {
		return nil, err
	}
	// The hash is of the clear form and the key sealed to, so that a rebuild whose seals
	// differ (each seal is fresh) is the same work and is not sent again, while a new key (or
	// the first one) sends it again. It is a SHA-256 over the whole spec, the 256-bit etcd key
	// included, so it confirms no guess of a secret.
	hash, err := SpecHash(work)
	if err != nil {
		return nil, err
	}
	if c.SealTo != nil {
		sum := sha256.Sum256([]byte(hash + " sealed to " + c.SealTo.KeyID()))
		hash = hex.EncodeToString(sum[:])
		// The pull secret and the etcd encryption key; the SSH key Secret holds a public key.
		sealed := map[string]bool{PullSecretName(name): true, EtcdEncryptionSecretName(name): true}
		for i, o := range objs {
			if s, ok := o.(*corev1.Secret); ok && sealed[s.Name] {
				if objs[i], err = sealedSecret(c.SealTo, s); err != nil {
					return nil, fmt.Errorf("build manifests for %s: %w", c.ID, err)
				}
			}
		}
		work.Spec.Workload.Manifests, work.Spec.ManifestConfigs = nil, nil
		if err := addManifests(work, c, objs); err != nil {
			return nil, err
		}
	}
	work.Annotations = map[string]string{AnnotationSpecHash: hash}
	return work, nil
}

// addManifests appends objs to the work with their manifest configs.
func addManifests(work *workv1.ManifestWork, c Cluster, objs []runtime.Object) error {
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("encode manifest for %s: %w", c.ID, err)
		}
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		cfg := manifestConfig(o)
		switch o.(type) {
		case *hypershiftv1beta1.HostedCluster:
			cfg.FeedbackScrapeType = feedbackScrape(c.WatchStatus)
		case *corev1.Secret:
			if watchSecrets(c) {
				cfg.FeedbackScrapeType = workv1.FeedbackWatchType
			}
		}
		work.Spec.ManifestConfigs = append(work.Spec.ManifestConfigs, cfg)
	}
	return nil
}

// SealedSecretName is the name of the sealed Secret the work carries for the Secret name.
func SealedSecretName(name string) string { return name + "-sealed" }

// sealedSecret is s sealed to key: a Secret of type secretseal.Type named
// SealedSecretName(s.Name), whose every value is sealed to the management cluster's key and
// bound to s's namespace, name and data key, and whose annotations say which Secret (name
// and type) the management side writes from it.
func sealedSecret(key *secretseal.PublicKey, s *corev1.Secret) (*corev1.Secret, error) {
	out := &corev1.Secret{
		TypeMeta: s.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: SealedSecretName(s.Name), Namespace: s.Namespace,
			Labels: map[string]string{secretseal.LabelSealed: "true"},
			Annotations: map[string]string{secretseal.TargetAnnotation: s.Name, secretseal.TargetTypeAnnotation: string(s.Type),
				secretseal.KeyIDAnnotation: key.KeyID()}},
		Type: secretseal.Type,
		Data: map[string][]byte{},
	}
	for k, v := range s.Labels {
		out.Labels[k] = v
	}
	for k, v := range s.Data {
		sv, err := key.Seal(s.Namespace, s.Name, k, v)
		if err != nil {
			return nil, err
		}
		out.Data[k] = sv
	}
	return out, nil
}

// SpecHash is the hex SHA-256 of the work's spec.
func SpecHash(w *workv1.ManifestWork) (string, error) {
	b, err := json.Marshal(w.Spec)
	if err != nil {
		return "", fmt.Errorf("hash work spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func manifestConfig(o runtime.Object) workv1.ManifestConfigOption {
	meta := o.(metav1.Object)
	opt := workv1.ManifestConfigOption{
		UpdateStrategy: &workv1.UpdateStrategy{
			Type: workv1.UpdateStrategyTypeServerSideApply,
			// Force: we own these fields; a conflicting manager (a human with kubectl) loses.
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager},
		},
	}
	switch o.(type) {
	case *corev1.Namespace:
		opt.ResourceIdentifier = workv1.ResourceIdentifier{Resource: "namespaces", Name: meta.GetName()}
	case *corev1.Secret:
		opt.ResourceIdentifier = workv1.ResourceIdentifier{Resource: "secrets", Name: meta.GetName(), Namespace: meta.GetNamespace()}
	case *hypershiftv1beta1.HostedCluster:
		opt.ResourceIdentifier = workv1.ResourceIdentifier{Group: hypershiftv1beta1.GroupVersion.Group, Resource: "hostedclusters",
			Name: meta.GetName(), Namespace: meta.GetNamespace()}
		opt.FeedbackRules = []workv1.FeedbackRule{{
			Type: workv1.JSONPathsType,
			JsonPaths: []workv1.JsonPath{
				{Name: FeedbackConditions, Path: ".status.conditions"},
				{Name: FeedbackVersionDesired, Path: ".status.version.desired"},
				{Name: FeedbackVersionHistory, Path: ".status.version.history"},
				{Name: FeedbackControlPlaneEndpoint, Path: ".status.controlPlaneEndpoint"},
			},
		}}
		for _, f := range configFeedback {
			opt.FeedbackRules[0].JsonPaths = append(opt.FeedbackRules[0].JsonPaths, workv1.JsonPath{Name: f.name, Path: f.path})
		}
	}
	return opt
}

func hostedCluster(cfg Config, c Cluster, ns, name string, labels map[string]string) (*hypershiftv1beta1.HostedCluster, error) {
	s := c.Spec
	etcdSize, err := resource.ParseQuantity(cfg.EtcdStorageSize)
	if err != nil {
		return nil, fmt.Errorf("etcd storage size %q: %w", cfg.EtcdStorageSize, err)
	}
	hc := &hypershiftv1beta1.HostedCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: hypershiftv1beta1.GroupVersion.String(), Kind: "HostedCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: hypershiftv1beta1.HostedClusterSpec{
			Release: hypershiftv1beta1.Release{Image: ReleaseImage(cfg.ReleaseImageRepository, s.GetVersionId())},
			Channel: channel(s.GetChannelGroup(), s.GetVersionId()),
			InfraID: c.ID,
			DNS:     hypershiftv1beta1.DNSSpec{BaseDomain: s.GetDnsBaseDomain()},
			// Empty leaves HyperShift's in-cluster default (clusters created before CS chose one).
			IssuerURL: s.GetIssuerUrl(),
			// An SRE's pause (UpdateCluster's paused_until): HyperShift leaves the cluster as it is.
			PausedUntil: PausedUntil(s),
			Etcd: hypershiftv1beta1.EtcdSpec{
				ManagementType: hypershiftv1beta1.Managed,
				Managed: &hypershiftv1beta1.ManagedEtcdSpec{Storage: hypershiftv1beta1.ManagedEtcdStorageSpec{
					Type:             hypershiftv1beta1.PersistentVolumeEtcdStorage,
					PersistentVolume: &hypershiftv1beta1.PersistentVolumeEtcdStorageSpec{Size: &etcdSize},
				}},
			},
			PullSecret:                       corev1.LocalObjectReference{Name: PullSecretName(name)},
			SSHKey:                           corev1.LocalObjectReference{Name: SSHKeySecretName(name)},
			ControllerAvailabilityPolicy:     hypershiftv1beta1.HighlyAvailable,
			InfrastructureAvailabilityPolicy: hypershiftv1beta1.HighlyAvailable,
			Services:                         services(s.GetApiVisibility()),
			Labels:                           labels,
		},
	}
	if err := networking(&hc.Spec.Networking, s.GetNetwork()); err != nil {
		return nil, err
	}
	if az := s.GetAzure(); az != nil {
		subnet, vnet := model.CanonicalSubnet(az.GetSubnetId())
		hc.Spec.Platform = hypershiftv1beta1.PlatformSpec{
			Type: hypershiftv1beta1.AzurePlatform,
			Azure: &hypershiftv1beta1.AzurePlatformSpec{
				Cloud:             "AzurePublicCloud",
				Location:          az.GetLocation(),
				ResourceGroupName: az.GetManagedResourceGroup(),
				VnetID:            vnet,
				SubnetID:          subnet,
				SubscriptionID:    az.GetSubscriptionId(),
				SecurityGroupID:   model.CanonicalNSG(az.GetNetworkSecurityGroupId()),
				TenantID:          az.GetTenantId(),
				AzureAuthenticationConfig: hypershiftv1beta1.AzureAuthenticationConfiguration{
					AzureAuthenticationConfigType: hypershiftv1beta1.AzureAuthenticationTypeWorkloadIdentities,
				},
			},
		}
		wi, err := workloadIdentities(az.GetWorkloadIdentities(), cfg.DevWorkloadIdentityClientID)
		if err != nil {
			return nil, err
		}
		hc.Spec.Platform.Azure.AzureAuthenticationConfig.WorkloadIdentities = wi
	} else {
		hc.Spec.Platform = hypershiftv1beta1.PlatformSpec{Type: hypershiftv1beta1.NonePlatform}
	}
	if keyID := s.GetEtcdEncryptionKeyId(); keyID != "" {
		key, err := kmsKey(keyID)
		if err != nil {
			return nil, err
		}
		azureKMS := &hypershiftv1beta1.AzureKMSSpec{ActiveKey: key, KMS: kmsIdentity(c.ID)}
		if backupID := s.GetEtcdEncryptionBackupKeyId(); backupID != "" {
			// The version active before a rotation, until every secret is re-encrypted.
			backup, err := kmsKey(backupID)
			if err != nil {
				return nil, err
			}
			azureKMS.BackupKey = &backup
		}
		hc.Spec.SecretEncryption = &hypershiftv1beta1.SecretEncryptionSpec{
			Type: hypershiftv1beta1.KMS,
			KMS:  &hypershiftv1beta1.KMSSpec{Provider: hypershiftv1beta1.AZURE, Azure: azureKMS},
			// The platform key stays as the AES-CBC backup so secrets written before stay readable.
			AESCBC: &hypershiftv1beta1.AESCBCSpec{ActiveKey: corev1.LocalObjectReference{Name: EtcdEncryptionSecretName(name)}},
		}
	} else {
		hc.Spec.SecretEncryption = &hypershiftv1beta1.SecretEncryptionSpec{
			Type:   hypershiftv1beta1.AESCBC,
			AESCBC: &hypershiftv1beta1.AESCBCSpec{ActiveKey: corev1.LocalObjectReference{Name: EtcdEncryptionSecretName(name)}},
		}
	}
	if s.GetImageRegistryState() == "Disabled" {
		disable(hc, hypershiftv1beta1.ImageRegistryCapability)
	}
	applyConfig(hc, s)
	return hc, nil
}

// channel is HyperShift's release channel for a stored spec's group and version (the group is
// always set: Cluster Service's validation defaults it).
func channel(group, version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return ""
	}
	return group + "-" + parts[0] + "." + parts[1]
}

func services(visibility string) []hypershiftv1beta1.ServicePublishingStrategyMapping {
	route := hypershiftv1beta1.ServicePublishingStrategy{Type: hypershiftv1beta1.Route}
	api := hypershiftv1beta1.ServicePublishingStrategy{Type: hypershiftv1beta1.LoadBalancer}
	if visibility == "Private" {
		api = route // private clusters reach the API through the private router
	}
	return []hypershiftv1beta1.ServicePublishingStrategyMapping{
		{Service: hypershiftv1beta1.APIServer, ServicePublishingStrategy: api},
		{Service: hypershiftv1beta1.OAuthServer, ServicePublishingStrategy: route},
		{Service: hypershiftv1beta1.Konnectivity, ServicePublishingStrategy: route},
		{Service: hypershiftv1beta1.Ignition, ServicePublishingStrategy: route},
	}
}

func networking(out *hypershiftv1beta1.ClusterNetworking, n *csv1.NetworkSpec) error {
	if n == nil {
		return nil
	}
	out.NetworkType = hypershiftv1beta1.NetworkType(n.GetNetworkType())
	if n.GetPodCidr() != "" {
		cidr, err := ipnet.ParseCIDR(n.GetPodCidr())
		if err != nil {
			return fmt.Errorf("pod CIDR: %w", err)
		}
		out.ClusterNetwork = []hypershiftv1beta1.ClusterNetworkEntry{{CIDR: *cidr, HostPrefix: n.GetHostPrefix()}}
	}
	if n.GetServiceCidr() != "" {
		cidr, err := ipnet.ParseCIDR(n.GetServiceCidr())
		if err != nil {
			return fmt.Errorf("service CIDR: %w", err)
		}
		out.ServiceNetwork = []hypershiftv1beta1.ServiceNetworkEntry{{CIDR: *cidr}}
	}
	if n.GetMachineCidr() != "" {
		cidr, err := ipnet.ParseCIDR(n.GetMachineCidr())
		if err != nil {
			return fmt.Errorf("machine CIDR: %w", err)
		}
		out.MachineNetwork = []hypershiftv1beta1.MachineNetworkEntry{{CIDR: *cidr}}
	}
	return nil
}

// kmsKey is a Key Vault key ID (model.ParseKeyVaultKeyID) as HyperShift names its parts.
func kmsKey(id string) (hypershiftv1beta1.AzureKMSKey, error) {
	k, err := model.ParseKeyVaultKeyID(id)
	if err != nil {
		return hypershiftv1beta1.AzureKMSKey{}, err
	}
	return hypershiftv1beta1.AzureKMSKey{KeyVaultName: k.Vault, KeyName: k.Name, KeyVersion: k.Version}, nil
}

// ErrNoWorkloadIdentities: the cluster has no workload identities and the region has no
// development placeholder; HyperShift's API requires them on Azure.
var ErrNoWorkloadIdentities = errors.New("the cluster has no Azure workload identities (spec.azure.workload_identities)")

func workloadIdentities(in *csv1.AzureWorkloadIdentities, devClientID string) (*hypershiftv1beta1.AzureWorkloadIdentities, error) {
	id := func(v string) hypershiftv1beta1.WorkloadIdentity {
		return hypershiftv1beta1.WorkloadIdentity{ClientID: hypershiftv1beta1.AzureClientID(v)}
	}
	if in == nil {
		if devClientID == "" {
			return nil, ErrNoWorkloadIdentities
		}
		d := id(devClientID)
		return &hypershiftv1beta1.AzureWorkloadIdentities{ImageRegistry: d, Ingress: d, File: d, Disk: d, NodePoolManagement: d, CloudProvider: d, Network: d}, nil
	}
	return &hypershiftv1beta1.AzureWorkloadIdentities{
		ImageRegistry: id(in.GetImageRegistry()), Ingress: id(in.GetIngress()), File: id(in.GetFile()), Disk: id(in.GetDisk()),
		NodePoolManagement: id(in.GetNodePoolManagement()), CloudProvider: id(in.GetCloudProvider()), Network: id(in.GetNetwork()),
	}, nil
}
