// Package pkirotation is the rotation API of the region's PKI holder: whoever holds the CA keys
// (the launcher under make run; Key Vault in Azure, whose "rotate now" is the model) serves it on
// loopback with mutual TLS to the maintenance service alone. The maintenance service asks for a
// rotation of every certificate, or for a CA rollover, under an idempotency key, reads its state,
// and probes the region's listeners (Probe) to see what they serve; it never holds a CA key.
// docs/security.md, "Rotation"; docs/maintenance.md, "Task type region-certificate-rotation".
package pkirotation

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ServerIdentity is the PKI identity (and pki.ServerName service) of the rotation API's server
// certificate: a service-CA server certificate that carries no workload ID, like the broker's.
const ServerIdentity = "region-pki"

// Scope is what a rotation renews: ScopeCertificates, or "ca:<name>" for the rollover of one CA
// (CANames).
type Scope string

// ScopeCertificates renews every certificate of the region under the CAs it has now.
const ScopeCertificates Scope = "certificates"

// caPrefix starts a CA rollover's scope.
const caPrefix = "ca:"

// CANames are the region's CAs as a scope names them: "ca:service", "ca:arm", "ca:person".
var CANames = []string{"service", "arm", "person"}

// ParseScope reads a scope as a task's parameter gives it; "" is ScopeCertificates.
func ParseScope(s string) (Scope, error) {
	switch {
	case s == "" || Scope(s) == ScopeCertificates:
		return ScopeCertificates, nil
	case strings.HasPrefix(s, caPrefix):
		for _, n := range CANames {
			if s == caPrefix+n {
				return Scope(s), nil
			}
		}
	}
	return "", fmt.Errorf("scope %.64q must be %s or ca:<%s>", s, ScopeCertificates, strings.Join(CANames, "|"))
}

// CA is the name of the CA a rollover's scope names, "" for ScopeCertificates.
func (s Scope) CA() string { return strings.TrimPrefix(string(s), caPrefix) }

// State is where a rotation is: Running until every holder serves the new files, then Done or
// Failed.
type State string

const (
	StateRunning State = "Running"
	StateDone    State = "Done"
	StateFailed  State = "Failed"
)

// Rotation is one rotation the holder was asked for.
type Rotation struct {
	// Key is the caller's idempotency key (the maintenance task's ID): asking again with it
	// returns this rotation and starts none.
	Key       string    `json:"key"`
	Scope     Scope     `json:"scope"`
	State     State     `json:"state"`
	Message   string    `json:"message,omitempty"`
	Requested time.Time `json:"requested"`
	Finished  time.Time `json:"finished,omitzero"`
}

// Protocols of a listener, for Probe.
const (
	// ProtocolTLS is TLS from the first byte (HTTPS, gRPC, MQTT over TLS).
	ProtocolTLS = "tls"
	// ProtocolPostgres is PostgreSQL's SSLRequest, then TLS (PostgreSQL, PgBouncer).
	ProtocolPostgres = "postgres"
)

// Listener is one listener of the region that serves a certificate of the region's PKI.
type Listener struct {
	// Name says which listener it is ("frontend", "gateway-2", "postgres", ...).
	Name string `json:"name"`
	// Address is host:port.
	Address string `json:"address"`
	// ServerName is the name its certificate must carry (identity.ServerName).
	ServerName string `json:"serverName"`
	Protocol   string `json:"protocol"`
}

// Region is what the holder says about the region it holds the PKI of.
type Region struct {
	// Name is the region's name (its ARM location).
	Name string `json:"name"`
	// Listeners serve the region's certificates now.
	Listeners []Listener `json:"listeners"`
}

// keyRE is what an idempotency key may be: a maintenance task ID.
var keyRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,198}[a-z0-9])?$`)

// ValidKey checks an idempotency key.
func ValidKey(key string) error {
	if !keyRE.MatchString(key) {
		return fmt.Errorf("key %.64q must be lower-case letters, digits and dashes, at most 200", key)
	}
	return nil
}

// Errors of the API, as the client returns them.
var (
	// ErrBusy: another rotation runs; ask again once it is done.
	ErrBusy = errors.New("another rotation runs")
	// ErrNotFound: no rotation under that key.
	ErrNotFound = errors.New("no such rotation")
	// ErrKeyReused: the key names a rotation of another scope.
	ErrKeyReused = errors.New("the key names a rotation of another scope")
	// ErrTooSoon: the same CA was rolled over less than the holder's minimum spacing ago; the
	// error's message says when to retry.
	ErrTooSoon = errors.New("too soon after the previous rollover of that CA")
	// ErrForbidden: the holder refused the caller's identity.
	ErrForbidden = errors.New("the rotation API refused the caller")
)
