package cosmos

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Credential kinds for Config.Credential.
const (
	// CredentialKey authenticates with the account key (Config.Key).
	CredentialKey = "key"
	// CredentialEntra authenticates with Microsoft Entra ID through azidentity's default chain:
	// workload identity in AKS, managed identity on Azure compute, the az CLI on a laptop.
	CredentialEntra = "entra"
)

// Config says how to reach an account.
type Config struct {
	// Endpoint is the account's document endpoint, https://<account>.documents.azure.com:443/.
	Endpoint string
	// Credential is CredentialKey or CredentialEntra; empty means key when Key is set, Entra
	// otherwise.
	Credential string
	Key        string
	Database   string
	Options    Options
	// HTTPClient replaces the SDK's transport; tests use it for emulators with their own CA.
	HTTPClient *http.Client
}

// Open builds a client from cfg and returns a store on it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("cosmos endpoint is empty")
	}
	if cfg.Database == "" {
		return nil, errors.New("cosmos database is empty")
	}
	kind := cfg.Credential
	if kind == "" {
		kind = CredentialEntra
		if cfg.Key != "" {
			kind = CredentialKey
		}
	}
	var opts azcosmos.ClientOptions
	if cfg.HTTPClient != nil {
		opts.ClientOptions = policy.ClientOptions{Transport: cfg.HTTPClient}
	}
	var client *azcosmos.Client
	switch kind {
	case CredentialKey:
		if cfg.Key == "" {
			return nil, errors.New("cosmos credential is key but no key is set")
		}
		cred, err := azcosmos.NewKeyCredential(cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("cosmos key: %w", err)
		}
		client, err = azcosmos.NewClientWithKey(cfg.Endpoint, cred, &opts)
		if err != nil {
			return nil, fmt.Errorf("cosmos client for %s: %w", cfg.Endpoint, err)
		}
	case CredentialEntra:
		var tc azcore.TokenCredential
		tc, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("entra credential: %w", err)
		}
		client, err = azcosmos.NewClient(cfg.Endpoint, tc, &opts)
		if err != nil {
			return nil, fmt.Errorf("cosmos client for %s: %w", cfg.Endpoint, err)
		}
	default:
		return nil, fmt.Errorf("cosmos credential %q: use %q or %q", kind, CredentialKey, CredentialEntra)
	}
	return New(ctx, client, cfg.Database, cfg.Options)
}
