package model

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// Azure resource IDs and names as HyperShift's API checks them. The manifest builder parses
// what these accept (Canonical*, ParseKeyVaultKeyID), so a spec that passes here builds.

var (
	subnetIDRE = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/resourcegroups/([-\w.()]{1,90})/providers/microsoft\.network/virtualnetworks/([-\w.]{2,64})/subnets/([a-zA-Z0-9][-\w.]{0,79})$`)
	nsgIDRE    = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/resourcegroups/([-\w.()]{1,90})/providers/microsoft\.network/networksecuritygroups/([-\w.]{1,80})$`)
	desIDRE    = regexp.MustCompile(`(?i)^/subscriptions/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/resourcegroups/([-\w.()]{1,90})/providers/microsoft\.compute/diskencryptionsets/([-\w]{1,80})$`)
	// A Key Vault's name: 3-24 letters, digits and '-', a letter first, not '-' last (nor "--",
	// checked apart).
	vaultNameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$`)
	vmSizeRE    = regexp.MustCompile(`^(Standard_|Basic_)?[A-Z]+[0-9]+(-[0-9]+)?[abdilmptsCNP]*(_[A-Z]*[0-9]+[A-Z]*)?(_v[0-9]+)?$`)
)

// ValidateSubnetID checks an Azure subnet resource ID the way HyperShift's API does.
func ValidateSubnetID(id string) error {
	m := subnetIDRE.FindStringSubmatch(id)
	if m == nil || strings.HasSuffix(m[2], ".") || strings.HasSuffix(m[3], ".") || strings.HasSuffix(m[3], "-") ||
		strings.HasSuffix(m[4], ".") || strings.HasSuffix(m[4], "-") {
		return fmt.Errorf("%q is not /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.Network/virtualNetworks/{vnet}/subnets/{subnet}", id)
	}
	return nil
}

// ValidateNSGID checks an Azure network security group resource ID.
func ValidateNSGID(id string) error {
	if m := nsgIDRE.FindStringSubmatch(id); m == nil || strings.HasSuffix(m[2], ".") {
		return fmt.Errorf("%q is not /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.Network/networkSecurityGroups/{nsg}", id)
	}
	return nil
}

// CanonicalSubnet returns the subnet and virtual network IDs with ARM's canonical casing of the
// fixed segments: ARM IDs compare case-insensitively, HyperShift's validation does not.
func CanonicalSubnet(id string) (subnet, vnet string) {
	m := subnetIDRE.FindStringSubmatch(id)
	if m == nil {
		return id, ""
	}
	vnet = fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s", m[1], m[2], m[3])
	return vnet + "/subnets/" + m[4], vnet
}

// CanonicalNSG spells a network security group ID with ARM's canonical casing.
func CanonicalNSG(id string) string {
	m := nsgIDRE.FindStringSubmatch(id)
	if m == nil {
		return id
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkSecurityGroups/%s", m[1], m[2], m[3])
}

// KeyVaultKey is an etcd encryption key ID split into its parts.
type KeyVaultKey struct{ Vault, Name, Version string }

// ParseKeyVaultKeyID splits https://<vault>.vault.azure.net/keys/<name>/<version>.
func ParseKeyVaultKeyID(id string) (KeyVaultKey, error) {
	_, k, err := parseKeyVaultKeyURL(id)
	return k, err
}

// parseKeyVaultKeyURL is ParseKeyVaultKeyID with the parsed URL, for ValidateKeyVaultKeyID.
func parseKeyVaultKeyURL(id string) (*url.URL, KeyVaultKey, error) {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, KeyVaultKey{}, fmt.Errorf("etcd encryption key ID %q is not a Key Vault key URL", id)
	}
	// The vault is the host's first label. Which hosts are Key Vaults is ValidateKeyVaultKeyID's
	// rule, where a spec is written; this split is what the manifest builder runs on stored
	// specs, so one stored before that rule builds as it did.
	vault, _, _ := strings.Cut(u.Host, ".")
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "keys" || vault == "" {
		return nil, KeyVaultKey{}, fmt.Errorf("etcd encryption key ID %q must look like https://<vault>.vault.azure.net/keys/<name>/<version>", id)
	}
	return u, KeyVaultKey{Vault: vault, Name: parts[1], Version: parts[2]}, nil
}

// keyVaultDNSSuffixes are the Key Vault DNS suffixes of Azure's clouds (public, China, US
// Government, Germany).
var keyVaultDNSSuffixes = []string{"vault.azure.net", "vault.azure.cn", "vault.usgovcloudapi.net", "vault.microsoftazure.de"}

// ValidateKeyVaultKeyID reports whether id is usable as etcd_encryption_key_id: a key URL
// ParseKeyVaultKeyID splits, of a vault whose name Azure allows. The name's rule is checked
// here, where a spec is written, not in ParseKeyVaultKeyID, which the manifest builder uses on
// stored specs: a cluster stored before the rule keeps building as it did.
func ValidateKeyVaultKeyID(id string) error {
	u, k, err := parseKeyVaultKeyURL(id)
	if err != nil {
		return err
	}
	// The host is the vault's name and a Key Vault DNS suffix, nothing more: a vault name with
	// a dot ("abc.vault" → abc.vault.vault.azure.net) would be read as another vault, its first
	// label; another host, a port, credentials, a query or a fragment is no Key Vault key.
	_, suffix, _ := strings.Cut(u.Host, ".")
	if !slices.Contains(keyVaultDNSSuffixes, strings.ToLower(suffix)) || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Opaque != "" || u.ForceQuery {
		return fmt.Errorf("etcd encryption key ID %q must be https://<vault>.%s/keys/<name>/<version> (or another Azure cloud's Key Vault suffix)", id, keyVaultDNSSuffixes[0])
	}
	if !vaultNameRE.MatchString(k.Vault) || strings.Contains(k.Vault, "--") {
		return fmt.Errorf("etcd encryption key ID %q: the key vault name %q must be 3-24 letters, digits and '-', starting with a letter, not ending with '-' and without \"--\"", id, k.Vault)
	}
	return nil
}

// WorkloadIdentityFields lists the identities by proto field name with their values, for validation.
func WorkloadIdentityFields(in *csv1.AzureWorkloadIdentities) map[string]string {
	return map[string]string{
		"image_registry": in.GetImageRegistry(), "ingress": in.GetIngress(), "file": in.GetFile(), "disk": in.GetDisk(),
		"node_pool_management": in.GetNodePoolManagement(), "cloud_provider": in.GetCloudProvider(), "network": in.GetNetwork(),
	}
}

// ValidateVMSize checks a VM size the way the NodePool CRD does.
func ValidateVMSize(s string) error {
	if len(s) > 255 || !vmSizeRE.MatchString(s) {
		return fmt.Errorf("%q is not an Azure VM size like Standard_D8s_v3", s)
	}
	return nil
}

// ValidateDiskEncryptionSetID checks a disk encryption set resource ID the way HyperShift's
// NodePool CRD checks osDisk.encryptionSetID.
func ValidateDiskEncryptionSetID(id string) error {
	if m := desIDRE.FindStringSubmatch(id); m == nil || strings.HasSuffix(m[2], ".") {
		return fmt.Errorf("%q is not /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.Compute/diskEncryptionSets/{name}", id)
	}
	return nil
}

// CanonicalDiskEncryptionSet spells a disk encryption set ID as HyperShift's CRD pattern
// wants it (its segment names are case-sensitive there, ARM IDs are not).
func CanonicalDiskEncryptionSet(id string) string {
	m := desIDRE.FindStringSubmatch(id)
	if m == nil {
		return id
	}
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/diskEncryptionSets/%s", m[1], m[2], m[3])
}
