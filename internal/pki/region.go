package pki

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// The region's identities. Each is the subject common name of its certificate and the base
// name of its files (<Dir>/<name>.crt, <Dir>/<name>.key). Services authorize callers by it.
const (
	Frontend       = "frontend"        // ARM API server; Cluster Service client
	ARM            = "arm"             // the client ARM calls the frontend with (client CA)
	SRE            = "sre"             // SREs and the launcher's admin calls (client CA)
	Backend        = "backend"         // Cluster Service client
	ClusterService = "cluster-service" // gRPC server; Maestro client
	MaestroServer  = "maestro-server"  // gRPC and REST server; MQTT client
	Broker         = "broker"          // MQTT server
	Postgres       = "postgres"        // PostgreSQL server
)

// MaestroAgent is the identity name (and file base name) of the Maestro agent of one consumer
// (management cluster); its certificate's common name is the consumer name itself, which the
// broker uses as the MQTT username for the topic ACL.
func MaestroAgent(consumer string) string { return "maestro-agent-" + consumer }

// Default lifetimes: hours, so that rotation is routine rather than a yearly surprise.
const (
	DefaultLifetime   = 8 * time.Hour
	DefaultCALifetime = 48 * time.Hour
)

// Options tunes Create. Zero values take the defaults.
type Options struct {
	// Lifetime of every leaf certificate (default DefaultLifetime).
	Lifetime time.Duration
	// CALifetime of both CAs (default DefaultCALifetime).
	CALifetime time.Duration
	// MaestroConsumers get one maestro-agent identity each.
	MaestroConsumers []string
}

// Region is the local region's PKI on disk. It is safe for concurrent use.
type Region struct {
	// Dir holds every file.
	Dir string
	// CAFile is the region CA: it signs every service's certificate, so clients verify servers
	// with it and servers verify the services calling them with it.
	CAFile string
	// ClientCAFile is the CA of the callers from outside the region (ARM, SREs). The frontend's
	// ARM API trusts only it.
	ClientCAFile string
	// BundleFile holds both CAs, for a server that admits services and SREs (Cluster Service).
	BundleFile string

	lifetime time.Duration
	regionCA *Authority
	clientCA *Authority

	mu         sync.Mutex
	identities map[string]identity
}

type identity struct {
	spec Spec
	ca   *Authority
}

// Files are the PEM files of one identity.
type Files struct {
	Cert string
	Key  string
}

// Create makes both CAs and every identity of the region under dir (created 0700). Keys are
// written 0600; the CA keys stay in memory only.
func Create(dir string, o Options) (*Region, error) {
	if o.Lifetime <= 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.CALifetime <= 0 {
		o.CALifetime = DefaultCALifetime
	}
	if o.Lifetime > o.CALifetime {
		return nil, fmt.Errorf("certificate lifetime %s exceeds the CA lifetime %s", o.Lifetime, o.CALifetime)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create PKI directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create PKI directory: %w", err)
	}
	r := &Region{
		Dir:          dir,
		CAFile:       filepath.Join(dir, "region-ca.crt"),
		ClientCAFile: filepath.Join(dir, "client-ca.crt"),
		BundleFile:   filepath.Join(dir, "ca-bundle.crt"),
		lifetime:     o.Lifetime,
		identities:   map[string]identity{},
	}
	var err error
	if r.regionCA, err = NewAuthority("OpenHCP region CA", o.CALifetime); err != nil {
		return nil, err
	}
	if r.clientCA, err = NewAuthority("OpenHCP ARM and SRE client CA", o.CALifetime); err != nil {
		return nil, err
	}
	for path, data := range map[string][]byte{
		r.CAFile:       r.regionCA.PEM,
		r.ClientCAFile: r.clientCA.PEM,
		r.BundleFile:   append(append([]byte{}, r.regionCA.PEM...), r.clientCA.PEM...),
	} {
		if err := writeFile(path, data, 0o644); err != nil {
			return nil, err
		}
	}
	type id struct {
		name, cn string
		usage    Usage
		external bool
	}
	ids := []id{
		{Frontend, Frontend, Server | Client, false},
		{ARM, ARM, Client, true},
		{SRE, SRE, Client, true},
		{Backend, Backend, Client, false},
		{ClusterService, ClusterService, Server | Client, false},
		{MaestroServer, MaestroServer, Server | Client, false},
		{Broker, Broker, Server, false},
		{Postgres, Postgres, Server, false},
	}
	for _, c := range o.MaestroConsumers {
		ids = append(ids, id{MaestroAgent(c), c, Client, false})
	}
	for _, i := range ids {
		if err := r.Add(i.name, Spec{CommonName: i.cn, Usage: i.usage}, i.external); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add issues a new identity (or replaces one of the same name) and writes its files. external
// identities are signed by the client CA, all others by the region CA. A zero Spec.Lifetime
// takes the region's.
func (r *Region) Add(name string, s Spec, external bool) error {
	if s.Lifetime <= 0 {
		s.Lifetime = r.lifetime
	}
	ca := r.regionCA
	if external {
		ca = r.clientCA
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.write(name, s, ca); err != nil {
		return err
	}
	r.identities[name] = identity{spec: s, ca: ca}
	return nil
}

// Files returns the files of an identity.
func (r *Region) Files(name string) (Files, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.identities[name]; !ok {
		return Files{}, fmt.Errorf("no identity %q in the region PKI", name)
	}
	return r.files(name), nil
}

// MustFiles is Files for the identities Create always makes; it panics on an unknown name.
func (r *Region) MustFiles(name string) Files {
	f, err := r.Files(name)
	if err != nil {
		panic(err)
	}
	return f
}

// Names lists the identities, sorted.
func (r *Region) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.identities))
	for n := range r.identities {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Renew issues a new key and certificate for an identity and replaces its files, as a
// rotation does. Services pick the new files up on their next handshake.
func (r *Region) Renew(name string) (*x509.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.identities[name]
	if !ok {
		return nil, fmt.Errorf("renew: no identity %q in the region PKI", name)
	}
	if err := r.write(name, id.spec, id.ca); err != nil {
		return nil, err
	}
	return ReadCertificate(r.files(name).Cert)
}

// RenewAll renews every identity.
func (r *Region) RenewAll() error {
	for _, n := range r.Names() {
		if _, err := r.Renew(n); err != nil {
			return err
		}
	}
	return nil
}

func (r *Region) files(name string) Files {
	return Files{Cert: filepath.Join(r.Dir, name+".crt"), Key: filepath.Join(r.Dir, name+".key")}
}

// write issues and writes one identity's files: the key first, then the certificate, each
// atomically. A reader between the two sees a new key with the old certificate, which does not
// load; reloaders keep their previous pair until both match.
func (r *Region) write(name string, s Spec, ca *Authority) error {
	if name == "" || filepath.Base(name) != name {
		return fmt.Errorf("invalid identity name %q", name)
	}
	iss, err := ca.Issue(s)
	if err != nil {
		return err
	}
	f := r.files(name)
	if err := writeFile(f.Key, iss.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(f.Cert, iss.CertPEM, 0o644)
}

// ReadCertificate parses the first certificate of a PEM file.
func ReadCertificate(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate in %s", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate %s: %w", path, err)
	}
	return c, nil
}
