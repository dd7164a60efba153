// Package srestatement owns the signed statement through which the admin API tells Cluster
// Service which SRE asked for a break-glass credential: its Ed25519 signing and verification,
// its lifetime rules and its key files. Cluster Service takes an SRE's name from nothing else.
package srestatement

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/atomicfile"
	"github.com/openhcp/openhcp/internal/envelope"
)

// domain separates these signatures from anything else the key might ever sign.
const domain = "openhcp-sre-statement-v1\x00"

// Lifetime is how long a statement is valid after it is made; MaxLifetime is the most a
// verifier accepts (a statement is used at once, by the call that made it). Skew is the clock
// difference between admin API and Cluster Service that is tolerated.
const (
	Lifetime    = 2 * time.Minute
	MaxLifetime = 5 * time.Minute
	Skew        = 30 * time.Second
)

// Sign marks st with its issue and expiry times (now, now+Lifetime) and signs it with key.
func Sign(key ed25519.PrivateKey, st *csv1.SREStatement, now time.Time) (*csv1.SignedSREStatement, error) {
	st = proto.Clone(st).(*csv1.SREStatement)
	st.IssueTime, st.ExpireTime = timestamppb.New(now), timestamppb.New(now.Add(Lifetime))
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode SRE statement: %w", err)
	}
	sig, err := key.Sign(rand.Reader, append([]byte(domain), b...), crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("sign SRE statement: %w", err)
	}
	return &csv1.SignedSREStatement{Statement: b, Signature: sig}, nil
}

// Verify checks signed's signature with pub and its validity at now, and returns the statement.
// It does not compare the statement with a request: the caller does (Matches).
func Verify(pub ed25519.PublicKey, signed *csv1.SignedSREStatement, now time.Time) (*csv1.SREStatement, error) {
	if signed == nil || len(signed.GetStatement()) == 0 {
		return nil, errors.New("no signed SRE statement")
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("no key to verify SRE statements with")
	}
	if !ed25519.Verify(pub, append([]byte(domain), signed.GetStatement()...), signed.GetSignature()) {
		return nil, errors.New("the SRE statement's signature does not verify")
	}
	var st csv1.SREStatement
	if err := proto.Unmarshal(signed.GetStatement(), &st); err != nil {
		return nil, fmt.Errorf("decode SRE statement: %w", err)
	}
	issued, expires := st.GetIssueTime().AsTime(), st.GetExpireTime().AsTime()
	switch {
	case st.GetIssueTime() == nil || st.GetExpireTime() == nil:
		return nil, errors.New("the SRE statement has no issue or expiry time")
	case issued.After(now.Add(Skew)):
		return nil, fmt.Errorf("the SRE statement was issued in the future (%s)", issued.Format(time.RFC3339))
	case !now.Before(expires.Add(Skew)):
		return nil, fmt.Errorf("the SRE statement expired at %s", expires.Format(time.RFC3339))
	case expires.Sub(issued) > MaxLifetime:
		return nil, fmt.Errorf("the SRE statement is valid for %s, more than the %s allowed", expires.Sub(issued), MaxLifetime)
	}
	return &st, nil
}

// Matches reports, as an error naming the first difference, whether st is the statement for a
// request of credential id on cluster for sre.
func Matches(st *csv1.SREStatement, id, cluster string, sre *csv1.SRECredential) error {
	for _, f := range []struct{ name, stated, asked string }{
		{"cluster", st.GetClusterId(), cluster},
		{"credential", st.GetCredentialId(), id},
		{"person", st.GetPerson(), sre.GetPerson()},
		{"access", st.GetAccess().String(), sre.GetAccess().String()},
		{"validity", fmt.Sprint(st.GetValiditySeconds()), fmt.Sprint(sre.GetValiditySeconds())},
		{"reason", st.GetReason(), sre.GetReason()},
		{"approver", st.GetApprover(), sre.GetApprover()},
	} {
		if f.stated != f.asked {
			return fmt.Errorf("the SRE statement is for %s %q, the request names %q", f.name, f.stated, f.asked)
		}
	}
	return nil
}

// WriteKeyPair writes a new Ed25519 key pair: the private key (PKCS#8 PEM, mode 0600) to keyFile
// and the public key (PKIX PEM) to pubFile.
func WriteKeyPair(keyFile, pubFile string) error {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate SRE statement key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode SRE statement key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("encode SRE statement public key: %w", err)
	}
	if err := atomicfile.Write(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return atomicfile.Write(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
}

// ReadKey reads the admin API's signing key: an Ed25519 PKCS#8 PEM file of mode 0600 or
// stricter (or a Secret volume read through the pod's fsGroup: envelope.CheckSecretFileMode).
func ReadKey(path string) (ed25519.PrivateKey, error) {
	if err := envelope.CheckSecretFileMode(path); err != nil {
		return nil, fmt.Errorf("SRE statement key: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SRE statement key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("SRE statement key %s is not a PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("SRE statement key %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("SRE statement key %s is a %T, not Ed25519", path, k)
	}
	return key, nil
}

// ReadPublicKey reads the key that verifies the admin API's statements: an Ed25519 PKIX PEM
// public key.
func ReadPublicKey(path string) (ed25519.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read SRE statement public key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("SRE statement public key %s is not a PEM PUBLIC KEY", path)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("SRE statement public key %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("SRE statement public key %s is a %T, not Ed25519", path, k)
	}
	return pub, nil
}
