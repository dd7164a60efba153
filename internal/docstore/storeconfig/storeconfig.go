// Package storeconfig turns command-line flags into a document store, so the frontend and the
// backend choose between PostgreSQL (the default) and Cosmos DB the same way.
package storeconfig

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/cosmos"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/tlsconfig"
)

// Backends.
const (
	Postgres = "postgres"
	Cosmos   = "cosmos"
)

// Flags are the store's flags. Register binds them; each falls back to <PREFIX>_<NAME> in the
// environment (FRONTEND_STORE, BACKEND_COSMOS_ENDPOINT, ...).
type Flags struct {
	Backend          string
	DSN              string
	CosmosEndpoint   string
	CosmosCredential string
	CosmosKey        string
	CosmosDatabase   string
	CosmosContainer  string

	prefix string
}

// Register adds the flags to fs, with defaults from getenv.
func (f *Flags) Register(fs *flag.FlagSet, envPrefix string, getenv func(string) string) {
	f.prefix = envPrefix
	str := func(p *string, name, env, def, usage string) {
		env = envPrefix + "_" + env
		if v := getenv(env); v != "" {
			def = v
		}
		fs.StringVar(p, name, def, usage+" (env "+env+")")
	}
	str(&f.Backend, "store", "STORE", Postgres, "document store: postgres or cosmos")
	str(&f.DSN, "db-dsn", "DB_DSN", "", "PostgreSQL DSN of the document store (required with --store=postgres)")
	str(&f.CosmosEndpoint, "cosmos-endpoint", "COSMOS_ENDPOINT", "", "Cosmos DB account endpoint, https://<account>.documents.azure.com:443/ (required with --store=cosmos)")
	str(&f.CosmosCredential, "cosmos-credential", "COSMOS_CREDENTIAL", "", "how to authenticate to Cosmos DB: key or entra (default: key when --cosmos-key is set, else entra)")
	str(&f.CosmosKey, "cosmos-key", "COSMOS_KEY", "", "Cosmos DB account key; prefer the environment variable to the flag")
	str(&f.CosmosDatabase, "cosmos-database", "COSMOS_DATABASE", "openhcp", "Cosmos DB database")
	str(&f.CosmosContainer, "cosmos-container", "COSMOS_CONTAINER", cosmos.DefaultContainer, "Cosmos DB container, partitioned by /partitionKey")
}

func (f *Flags) env(name string) string { return f.prefix + "_" + name }

// Validate checks the flags without connecting. Errors name the flag at fault.
func (f *Flags) Validate() error {
	switch f.Backend {
	case Postgres:
		if f.DSN == "" {
			return fmt.Errorf("--db-dsn is required (or set %s)", f.env("DB_DSN"))
		}
		if err := tlsconfig.RequireDatabaseTLS(f.DSN); err != nil {
			return fmt.Errorf("--db-dsn: %w", err)
		}
	case Cosmos:
		if f.CosmosEndpoint == "" {
			return fmt.Errorf("--cosmos-endpoint is required with --store=cosmos (or set %s)", f.env("COSMOS_ENDPOINT"))
		}
		if f.CosmosDatabase == "" {
			return fmt.Errorf("--cosmos-database must not be empty")
		}
		switch f.CosmosCredential {
		case "", cosmos.CredentialEntra:
		case cosmos.CredentialKey:
			if f.CosmosKey == "" {
				return fmt.Errorf("--cosmos-credential=key needs --cosmos-key (or set %s)", f.env("COSMOS_KEY"))
			}
		default:
			return fmt.Errorf("invalid value %q for --cosmos-credential: use key or entra", f.CosmosCredential)
		}
	default:
		return fmt.Errorf("invalid value %q for --store: use postgres or cosmos", f.Backend)
	}
	return nil
}

// Opened is an open store and a readiness check for /healthz. It unwraps to the store, so
// docstore.HeadsOf finds a PostgreSQL store's HeadQuerier through it.
type Opened struct {
	docstore.Store
	Ping func(context.Context) error
}

// Unwrap implements docstore.Unwrapper.
func (o *Opened) Unwrap() docstore.Store { return o.Store }

// Open validates the flags and opens the chosen store. Errors name the flag at fault.
func (f *Flags) Open(ctx context.Context, log *slog.Logger) (*Opened, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	switch f.Backend {
	case Cosmos:
		s, err := cosmos.Open(ctx, cosmos.Config{
			Endpoint:   f.CosmosEndpoint,
			Credential: f.CosmosCredential,
			Key:        f.CosmosKey,
			Database:   f.CosmosDatabase,
			Options:    cosmos.Options{Container: f.CosmosContainer},
		})
		if err != nil {
			return nil, fmt.Errorf("--store=cosmos --cosmos-endpoint %s: %w", f.CosmosEndpoint, err)
		}
		return &Opened{Store: s, Ping: s.Ping}, nil
	case Postgres:
		s, err := postgres.Open(ctx, f.DSN, postgres.Options{Logger: log})
		if err != nil {
			return nil, fmt.Errorf("--db-dsn: %w", err)
		}
		return &Opened{Store: s, Ping: func(ctx context.Context) error { return s.Pool().Ping(ctx) }}, nil
	}
	return nil, errors.New("unreachable")
}
