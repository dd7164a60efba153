package model

import "testing"

func TestValidateAzureIDs(t *testing.T) {
	const sub = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network"
	for id, ok := range map[string]bool{
		sub + "/virtualNetworks/vnet/subnets/default":                                                            true,
		sub + "/virtualNetworks/v/subnets/default":                                                               false, // vnet name too short for HyperShift
		sub + "/virtualNetworks/vnet-/subnets/default":                                                           false,
		sub + "/virtualNetworks/vnet/subnets/-x":                                                                 false,
		"/subscriptions/not-a-uuid/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s": false,
		sub + "/virtualNetworks/vnet":                                                                            false,
	} {
		if err := ValidateSubnetID(id); (err == nil) != ok {
			t.Errorf("ValidateSubnetID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
	for id, ok := range map[string]bool{
		sub + "/networkSecurityGroups/nsg":       true,
		sub + "/networkSecurityGroups/nsg/extra": false,
		sub + "/virtualNetworks/vnet":            false,
	} {
		if err := ValidateNSGID(id); (err == nil) != ok {
			t.Errorf("ValidateNSGID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestParseKeyVaultKeyID(t *testing.T) {
	for _, tc := range []struct {
		id    string
		want  KeyVaultKey // what ParseKeyVaultKeyID splits (zero: it refuses)
		valid bool        // what ValidateKeyVaultKeyID says of it as a new spec's key
	}{
		{"https://vault1.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "vault1", Name: "etcd", Version: "0123abcd"}, true},
		{"http://vault1.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{}, false},
		{"https://vault1.vault.azure.net/secrets/etcd/0123abcd", KeyVaultKey{}, false},
		{"https://vault1.vault.azure.net/keys/etcd", KeyVaultKey{}, false},
		// A vault name the frontend was given with a dot would be read as its first label: the
		// key of another vault. A new spec is refused it; a stored one splits as it did.
		{"https://my.vault1.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "my", Name: "etcd", Version: "0123abcd"}, false},
		{"https://vault1.x.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "vault1", Name: "etcd", Version: "0123abcd"}, false},
		{"https://abc.vault.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "abc", Name: "etcd", Version: "0123abcd"}, false},
		// Only Key Vault hosts, as they are.
		{"https://kv1.vault.evil.example/keys/etcd/0123abcd", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, false},
		{"https://kv1.vault.azure.net:8443/keys/etcd/0123abcd", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, false},
		{"https://kv1.vault.azure.net/keys/etcd/0123abcd?x=1", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, false},
		{"https://u@kv1.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, false},
		{"https://kv1.vault.usgovcloudapi.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, true},
		{"https://kv1.VAULT.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "kv1", Name: "etcd", Version: "0123abcd"}, true},
		// Key Vault names: 3-24 letters, digits and '-', a letter first, no '-' last or twice.
		// A new spec is refused another; a stored one still splits, so it builds as it did.
		{"https://a-2.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "a-2", Name: "etcd", Version: "0123abcd"}, true},
		{"https://abcdefghijklmnopqrstuvwx.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "abcdefghijklmnopqrstuvwx", Name: "etcd", Version: "0123abcd"}, true},
		{"https://abcdefghijklmnopqrstuvwxy.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "abcdefghijklmnopqrstuvwxy", Name: "etcd", Version: "0123abcd"}, false},
		{"https://ab.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "ab", Name: "etcd", Version: "0123abcd"}, false},
		{"https://1vault.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "1vault", Name: "etcd", Version: "0123abcd"}, false},
		{"https://vault-.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "vault-", Name: "etcd", Version: "0123abcd"}, false},
		{"https://va--ult.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "va--ult", Name: "etcd", Version: "0123abcd"}, false},
		{"https://va_ult.vault.azure.net/keys/etcd/0123abcd", KeyVaultKey{Vault: "va_ult", Name: "etcd", Version: "0123abcd"}, false},
	} {
		got, err := ParseKeyVaultKeyID(tc.id)
		if (err == nil) != (tc.want != KeyVaultKey{}) || got != tc.want {
			t.Errorf("ParseKeyVaultKeyID(%q) = %+v, %v; want %+v", tc.id, got, err, tc.want)
		}
		if err := ValidateKeyVaultKeyID(tc.id); (err == nil) != tc.valid {
			t.Errorf("ValidateKeyVaultKeyID(%q) = %v; want valid=%v", tc.id, err, tc.valid)
		}
	}
}
