package pki

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/atomicfile"
	ident "github.com/openhcp/openhcp/internal/identity"
)

// The region's identities. Each is the subject common name of its certificate and the base
// name of its files (<Dir>/<name>.crt, <Dir>/<name>.key). Our servers authorize workloads by
// the SPIFFE ID their certificates carry (internal/identity); the servers we did not write
// (Maestro, mosquitto, PostgreSQL) by the common name under the service CA.
const (
	Frontend       = "frontend"        // ARM API server; Cluster Service client
	ARM            = "arm"             // the client ARM calls the frontend with (ARM CA)
	SRE            = "sre"             // the admin API's and the launcher's calls to Cluster Service (service CA)
	Backend        = "backend"         // Cluster Service client
	ClusterService = "cluster-service" // gRPC server; Maestro client
	MaestroServer  = "maestro-server"  // gRPC and REST server; MQTT client
	Broker         = "broker"          // MQTT server
	Postgres       = "postgres"        // PostgreSQL server
	Prometheus     = "prometheus"      // scrape client of every target; server of its own API (to SRE persons)
	Monitor        = "monitor"         // the fleet Monitor's Cluster Service client
	Maintenance    = "maintenance"     // the maintenance service's Cluster Service client
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
	// TrustDomain of the workloads' SPIFFE IDs (default identity.DefaultTrustDomain).
	TrustDomain string
	// Lifetime of every leaf certificate (default DefaultLifetime).
	Lifetime time.Duration
	// CALifetime of the CAs (default DefaultCALifetime).
	CALifetime time.Duration
	// MaestroConsumers get one maestro-agent identity each.
	MaestroConsumers []string
}

// Region is the local region's PKI on disk. It is safe for concurrent use.
//
// Three CAs issue three kinds of identity, and a server trusts only the kind it serves: the
// service CA issues workloads (each certificate carries its SPIFFE ID), the ARM CA issues ARM's
// client certificate, and the person CA issues SREs. So a person's certificate cannot act as a
// service or as ARM, whatever its names say, and the person CA refuses a service's name anyway.
type Region struct {
	// Dir holds every file.
	Dir string
	// CAFile is the service CA: it signs every workload's certificate, so clients verify servers
	// with it and servers verify the workloads calling them with it.
	CAFile string
	// ARMCAFile is the CA of ARM's client certificate. The frontend's ARM API trusts only it.
	ARMCAFile string
	// PersonCAFile is the CA of the SRE persons' certificates. The admin API trusts only it.
	PersonCAFile string
	// TrustDomain is the workloads' SPIFFE trust domain.
	TrustDomain string

	lifetime   time.Duration
	caLifetime time.Duration
	// cas are the CAs that sign now (RollCA replaces them); caName their subjects.
	cas    map[Issuer]*Authority
	caName map[Issuer]string

	mu         sync.Mutex
	identities map[string]identity
}

// Issuer is one of the region's CAs.
type Issuer int

const (
	// ServiceCA issues the workloads' certificates.
	ServiceCA Issuer = iota
	// ARMCA issues ARM's client certificate.
	ARMCA
	// PersonCA issues SRE persons' client certificates.
	PersonCA
)

func (i Issuer) String() string {
	switch i {
	case ServiceCA:
		return "service CA"
	case ARMCA:
		return "ARM CA"
	case PersonCA:
		return "person CA"
	}
	return fmt.Sprintf("Issuer(%d)", int(i))
}

type identity struct {
	spec   Spec
	issuer Issuer
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
	if o.TrustDomain == "" {
		o.TrustDomain = ident.DefaultTrustDomain
	}
	r := &Region{
		Dir:          dir,
		CAFile:       filepath.Join(dir, "region-ca.crt"),
		ARMCAFile:    filepath.Join(dir, "arm-ca.crt"),
		PersonCAFile: filepath.Join(dir, "person-ca.crt"),
		TrustDomain:  o.TrustDomain,
		lifetime:     o.Lifetime,
		cas:          map[Issuer]*Authority{},
		caName:       map[Issuer]string{},
		caLifetime:   o.CALifetime,
		identities:   map[string]identity{},
	}
	for issuer, c := range map[Issuer]struct{ name, file string }{
		ServiceCA: {"OpenHCP region service CA", r.CAFile},
		ARMCA:     {"OpenHCP ARM client CA", r.ARMCAFile},
		PersonCA:  {"OpenHCP SRE person CA", r.PersonCAFile},
	} {
		ca, err := NewAuthority(c.name, o.CALifetime)
		if err != nil {
			return nil, err
		}
		if err := atomicfile.Write(c.file, ca.PEM, 0o644); err != nil {
			return nil, err
		}
		r.cas[issuer], r.caName[issuer] = ca, c.name
	}
	type id struct {
		name, cn string
		usage    Usage
		issuer   Issuer
	}
	ids := []id{
		{Frontend, Frontend, Server | Client, ServiceCA},
		{ARM, ARM, Client, ARMCA},
		{SRE, SRE, Client, ServiceCA},
		{Backend, Backend, Client, ServiceCA},
		{Monitor, Monitor, Client, ServiceCA},
		{Maintenance, Maintenance, Client, ServiceCA},
		{ClusterService, ClusterService, Server | Client, ServiceCA},
		{MaestroServer, MaestroServer, Server | Client, ServiceCA},
		{Broker, Broker, Server, ServiceCA},
		{Postgres, Postgres, Server, ServiceCA},
		{Prometheus, Prometheus, Server | Client, ServiceCA},
	}
	for _, c := range o.MaestroConsumers {
		ids = append(ids, id{MaestroAgent(c), c, Client, ServiceCA})
	}
	for _, i := range ids {
		if err := r.Add(i.name, Spec{CommonName: i.cn, Usage: i.usage}, i.issuer); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// WorkloadID is the SPIFFE ID a service identity's certificate carries: its workload's (the
// Maestro server's instances and the agents share their workload's), or none for a name that
// is no workload's.
func (r *Region) WorkloadID(name string) (ident.ID, bool) {
	switch {
	case strings.HasPrefix(name, MaestroServer+"-"):
		name = ident.MaestroServer
	case strings.HasPrefix(name, "maestro-agent-"):
		name = ident.MaestroAgent
	case name == "admin":
		name = ident.SRE // the admin API's server certificate: the same workload as its client one
	}
	return ident.Of(name, r.TrustDomain)
}

// ServiceOf is the service whose server an identity's certificate serves: the Maestro
// server's instances serve "maestro-server", an agent's serving identity
// ("maestro-agent-<consumer>-serving") that agent's, any other identity itself.
func ServiceOf(name string) string {
	switch {
	case strings.HasPrefix(name, MaestroServer+"-"):
		return MaestroServer
	case strings.HasPrefix(name, "maestro-agent-") && strings.HasSuffix(name, "-serving"):
		return strings.TrimSuffix(name, "-serving")
	}
	return name
}

// ServerName is the DNS name the server certificate of identity name carries and its clients
// ask for (identity.ServerName of its service).
func ServerName(name string) string { return ident.ServerName(ServiceOf(name)) }

// loopbackServers are the server identities whose certificates also answer to localhost,
// 127.0.0.1 and ::1, each because a client that cannot be told a server name dials it by
// address (docs/security.md, "Clients check the server's identity too"). Every other server
// certificate names its own service only.
var loopbackServers = map[string]string{
	Broker:   "Maestro's MQTT client (servers and agents) verifies the host it dials; mosquitto_sub too",
	Postgres: "libpq and lib/pq (PgBouncer's server TLS, Maestro through PgBouncer, psql) verify the host they dial; pgx of our services reads the same DSNs",
}

// KeepsLoopbackNames reports whether identity name's server certificate also answers to the
// loopback names, and why.
func KeepsLoopbackNames(name string) (bool, string) {
	if strings.HasPrefix(name, "maestro-agent-") && strings.HasSuffix(name, "-serving") {
		return true, "kubelet-style probes of the agent's health port dial it by address"
	}
	why, ok := loopbackServers[name]
	return ok, why
}

// serverNames completes a service-CA server certificate's names: its service's ServerName
// always, the loopback names only for KeepsLoopbackNames, and whatever s names besides.
func serverNames(name string, s Spec) Spec {
	own := ServerName(name)
	if len(s.DNSNames) == 0 && len(s.IPs) == 0 {
		s.DNSNames = []string{own}
		if keep, _ := KeepsLoopbackNames(name); keep {
			s.DNSNames = append(s.DNSNames, "localhost")
			s.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		return s
	}
	if !slices.Contains(s.DNSNames, own) {
		s.DNSNames = append([]string{own}, s.DNSNames...)
	}
	return s
}

// Add issues a new identity (or replaces one of the same name) and writes its files. A
// service identity carries its workload's SPIFFE ID (WorkloadID) unless s names URIs, and a
// service server certificate its service's ServerName (serverNames). A zero
// Spec.Lifetime takes the region's. The person CA issues only a person's name
// (identity.ValidPerson) as the common name, never a reserved (service) one.
func (r *Region) Add(name string, s Spec, by Issuer) error {
	if s.Lifetime <= 0 {
		s.Lifetime = r.lifetime
	}
	if _, ok := r.cas[by]; !ok {
		return fmt.Errorf("identity %q: no %s", name, by)
	}
	switch by {
	case ServiceCA:
		if len(s.URIs) == 0 {
			if id, ok := r.WorkloadID(name); ok {
				s.URIs = []*url.URL{id.URL()}
			}
		}
		if s.Usage&Server != 0 {
			s = serverNames(name, s)
		}
	case PersonCA:
		if err := ident.ValidPerson(s.CommonName); err != nil {
			return fmt.Errorf("identity %q: the person CA issues persons only: %w", name, err)
		}
		if ident.Reserved(name) {
			return fmt.Errorf("identity %q: a person's files may not take a service's name", name)
		}
		if len(s.URIs) > 0 || s.Usage != Client {
			return fmt.Errorf("identity %q: a person's certificate is a client certificate without URIs", name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.write(name, s, r.cas[by]); err != nil {
		return err
	}
	r.identities[name] = identity{spec: s, issuer: by}
	return nil
}

// AddPerson issues an SRE person's client certificate from the person CA: the common name is
// the person, the organisation their SRE group (admin/pkg/access). name is the files' base name.
func (r *Region) AddPerson(name, person, group string) error {
	return r.Add(name, Spec{CommonName: person, Organization: []string{group}, Usage: Client}, PersonCA)
}

// IssueUnchecked signs a certificate with one of the region's CAs without Add's rules, for
// tests that play an attacker who got a CA to sign what it should not have (a person named
// like a service). It writes nothing.
func (r *Region) IssueUnchecked(by Issuer, s Spec) (*Issued, error) {
	if s.Lifetime <= 0 {
		s.Lifetime = r.lifetime
	}
	return r.cas[by].Issue(s)
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
	if err := r.write(name, id.spec, r.cas[id.issuer]); err != nil {
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
	if err := atomicfile.Write(f.Key, iss.KeyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(f.Cert, iss.CertPEM, 0o644)
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

// CAFileOf is the file that publishes issuer's CA (and, during a rollover, the one it replaces).
func (r *Region) CAFileOf(by Issuer) string {
	switch by {
	case ARMCA:
		return r.ARMCAFile
	case PersonCA:
		return r.PersonCAFile
	}
	return r.CAFile
}

// RollCA replaces issuer's CA without breaking a connection, in the order a rollover needs:
//  1. a new CA is made and published beside the old one in the CA file, so every peer trusts
//     both before anything is signed by the new one; reload is called to make the peers that
//     read their CA files only when told (PostgreSQL, mosquitto, …) read it;
//  2. every identity of that issuer is renewed by the new CA, and reload is called again;
//  3. the old CA is dropped from the CA file, and reload is called a last time.
//
// reload must return only once every holder uses the files as they are. The new CA lives as
// long as the first one did (Options.CALifetime).
func (r *Region) RollCA(by Issuer, reload func(step string) error) error {
	next, err := NewAuthority(r.caName[by], r.caLifetime)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.cas[by]
	err = atomicfile.Write(r.CAFileOf(by), append(append([]byte{}, old.PEM...), next.PEM...), 0o644)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("publish the new %s: %w", by, err)
	}
	if err := reload("trust the old and the new " + by.String()); err != nil {
		return err
	}
	r.mu.Lock()
	r.cas[by] = next
	var renewErr error
	for name, id := range r.identities {
		if id.issuer != by {
			continue
		}
		if err := r.write(name, id.spec, next); err != nil && renewErr == nil {
			renewErr = fmt.Errorf("renew %s under the new %s: %w", name, by, err)
		}
	}
	r.mu.Unlock()
	if renewErr != nil {
		return renewErr
	}
	if err := reload("certificates signed by the new " + by.String()); err != nil {
		return err
	}
	r.mu.Lock()
	err = atomicfile.Write(r.CAFileOf(by), next.PEM, 0o644)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("drop the old %s: %w", by, err)
	}
	return reload("trust only the new " + by.String())
}

// IssuerOf is the CA that issues an identity.
func (r *Region) IssuerOf(name string) (Issuer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.identities[name]
	return id.issuer, ok
}
