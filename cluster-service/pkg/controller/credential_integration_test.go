package controller_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/controller"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/server"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestBreakGlassAgainstMaestro issues break-glass credentials through the real Maestro to a real
// kube-apiserver where hypershift-sim signs them with the hosted cluster's break-glass signer,
// checks the certificates with crypto/x509 against the client CA bundle the management cluster
// publishes, revokes them, and checks that they no longer chain while a new one does.
func TestBreakGlassAgainstMaestro(t *testing.T) {
	ctx, r, log := startAgainstMaestro(t, 10*time.Minute, hypershiftsim.Options{AvailableDelay: time.Second, DeleteDelay: time.Second,
		BreakGlass: hypershiftsim.BreakGlassOptions{SignDelay: 500 * time.Millisecond, RevokeDelay: 3 * time.Second}}, defaultStatusSync)
	cs := startClusterService(t, ctx, r, log)
	statementPub, statementKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	creds := startCredentials(t, ctx, r, cs, log, statementPub)

	cl := newCluster(11, "breakglass")
	if _, err := cs.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: cl}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, cs, cl.Id, "READY", 3*time.Minute, state(csv1.ClusterState_CLUSTER_STATE_READY))
	hcpNS := manifests.ControlPlaneNamespace("dev", cl.Id, cl.ArmResourceId)
	clientBundle := func(t *testing.T) *x509.CertPool {
		t.Helper()
		var cm corev1.ConfigMap
		if err := r.kube.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.ClientCABundleConfigMap}, &cm); err != nil {
			t.Fatalf("client CA bundle: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cm.Data[hypershiftsim.CABundleKey])) {
			t.Fatalf("client CA bundle holds no certificate: %q", cm.Data)
		}
		return pool
	}

	var first *x509.Certificate
	must(t, t.Run("request_is_issued_and_its_certificate_chains_to_the_client_ca", func(t *testing.T) {
		kc := issue(t, ctx, creds, credID(1), cl.Id, "")
		first = checkKubeconfig(t, ctx, r, hcpNS, kc, clientBundle(t))
		// The work is transient: the CSR leaves the management cluster once the certificate is in.
		waitUntil(t, "the CSR removed from the management cluster", time.Minute, func() bool {
			err := r.kube.Get(ctx, types.NamespacedName{Name: manifests.CSRName(credID(1))}, &certificatesv1.CertificateSigningRequest{})
			return apierrors.IsNotFound(err)
		})
	}))

	// An SRE's credential goes to the cluster's separate SRE signer, as the admin API asks for it.
	leafOf := func(t *testing.T, kubeconfig string) *x509.Certificate {
		t.Helper()
		cfg, err := clientcmd.Load([]byte(kubeconfig))
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo].ClientCertificateData)
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return leaf
	}
	chains := func(t *testing.T, leaf *x509.Certificate) bool {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: clientBundle(t), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return err == nil
	}
	var sreLeaf *x509.Certificate
	must(t, t.Run("sre_credential_is_signed_by_the_separate_sre_signer", func(t *testing.T) {
		id := credID(50)
		sre := &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY, ValiditySeconds: 1800, Reason: "look"}
		signed, err := srestatement.Sign(statementKey, &csv1.SREStatement{Person: "alice", Group: "sre-readonly", ClusterId: cl.Id, CredentialId: id,
			Access: sre.Access, ValiditySeconds: sre.ValiditySeconds, Reason: sre.Reason}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := creds.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id, ClusterId: cl.Id, Sre: sre, SreStatement: signed}); err != nil {
			t.Fatal(err)
		}
		waitCredential(t, ctx, creds, id, csv1.CredentialState_CREDENTIAL_STATE_ISSUED)
		got, err := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: id, IncludeKubeconfig: true, SreStatement: signed})
		if err != nil {
			t.Fatal(err)
		}
		sreLeaf = leafOf(t, got.GetKubeconfig())
		if sreLeaf.Subject.CommonName != "system:sre-break-glass:alice" || !chains(t, sreLeaf) {
			t.Fatalf("SRE certificate %s chains: %t", sreLeaf.Subject, chains(t, sreLeaf))
		}
		if sreLeaf.Issuer.String() == first.Issuer.String() {
			t.Fatalf("the SRE and the customer certificates have the same issuer %s", first.Issuer)
		}
	}))

	must(t, t.Run("customer_csr_with_a_foreign_subject_is_refused_by_the_signer", func(t *testing.T) {
		csr := customerCSR(t, "test.example.com")
		if _, err := creds.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID(2), ClusterId: cl.Id, CertificateSigningRequest: string(csr)}); err != nil {
			t.Fatal(err)
		}
		c := waitCredential(t, ctx, creds, credID(2), csv1.CredentialState_CREDENTIAL_STATE_FAILED)
		if c.GetStatus().GetErrorCode() != controller.ErrorCodeSignerRefused {
			t.Fatalf("status = %v", c.GetStatus())
		}
	}))

	must(t, t.Run("revoke_rotates_the_signer_and_old_certificates_stop_chaining", func(t *testing.T) {
		before := clientBundle(t)
		if _, err := first.Verify(x509.VerifyOptions{Roots: before, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("before revoking, the certificate does not chain: %v", err)
		}
		rv, err := creds.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: credID(100), ClusterId: cl.Id})
		if err != nil || rv.GetStatus().GetState() != csv1.RevocationState_REVOCATION_STATE_REVOKING {
			t.Fatalf("revoke: %v %v", rv, err)
		}
		// While it runs: no new credential, no second revocation, no kubeconfig of the old one.
		if _, err := creds.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: credID(3), ClusterId: cl.Id}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("request during a revocation: %v, want FailedPrecondition", err)
		}
		if _, err := creds.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: credID(101), ClusterId: cl.Id}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("second revocation: %v, want FailedPrecondition", err)
		}
		got, err := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: credID(1), IncludeKubeconfig: true})
		if err != nil || got.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKING || got.GetKubeconfig() != "" {
			t.Fatalf("credential during the revocation: state %v, kubeconfig %d bytes, err %v", got.GetStatus().GetState(), len(got.GetKubeconfig()), err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			rv, err = creds.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: credID(100)})
			if err != nil {
				t.Fatal(err)
			}
			if rv.GetStatus().GetState() == csv1.RevocationState_REVOCATION_STATE_REVOKED {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("revocation not REVOKED: %v", rv.GetStatus())
			}
			time.Sleep(200 * time.Millisecond)
		}
		if rv.GetStatus().GetRevokedCredentials() != 1 {
			t.Fatalf("revoked %d credentials, want 1 (the issued one; the failed one stays failed)", rv.GetStatus().GetRevokedCredentials())
		}
		if got, _ := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: credID(1)}); got.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKED {
			t.Fatalf("credential after the revocation: %v", got.GetStatus())
		}
		_, err = first.Verify(x509.VerifyOptions{Roots: clientBundle(t), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		if err == nil {
			t.Fatal("the revoked certificate still chains to the client CA bundle")
		}
		t.Logf("revoked certificate no longer chains: %v", err)
		// The SRE signer was not rotated: the SRE's credential still works.
		if !chains(t, sreLeaf) {
			t.Fatal("revoking the customer's credentials revoked the SRE's too")
		}
		if got, _ := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: credID(50)}); got.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED {
			t.Fatalf("SRE credential after the customer's revocation: %v", got.GetStatus())
		}
	}))

	var second *x509.Certificate
	must(t, t.Run("a_new_credential_after_revocation_chains_to_the_new_signer", func(t *testing.T) {
		kc := issue(t, ctx, creds, credID(4), cl.Id, "")
		second = checkKubeconfig(t, ctx, r, hcpNS, kc, clientBundle(t))
		if second.Issuer.String() == first.Issuer.String() && string(second.AuthorityKeyId) == string(first.AuthorityKeyId) {
			t.Fatal("the new certificate has the revoked signer as issuer")
		}
	}))

	must(t, t.Run("revoking_sre_credentials_keeps_the_customers", func(t *testing.T) {
		if _, err := creds.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: credID(102), ClusterId: cl.Id, Sre: true}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the SRE revocation REVOKED", 2*time.Minute, func() bool {
			rv, err := creds.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: credID(102)})
			return err == nil && rv.GetStatus().GetState() == csv1.RevocationState_REVOCATION_STATE_REVOKED
		})
		if chains(t, sreLeaf) {
			t.Fatal("the revoked SRE certificate still chains to the client CA bundle")
		}
		if !chains(t, second) {
			t.Fatal("revoking the SRE credentials revoked the customer's too")
		}
		if got, _ := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: credID(4)}); got.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED {
			t.Fatalf("customer credential after the SRE revocation: %v", got.GetStatus())
		}
	}))
}

func credID(n int) string { return "c" + padded(n) }

func padded(n int) string {
	s := make([]byte, 31)
	for i := range s {
		s[i] = '0'
	}
	for i := 30; n > 0 && i >= 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}

func startCredentials(t *testing.T, ctx context.Context, r *region, cs *clusterService, log *slog.Logger, statementKey ed25519.PublicKey) csv1.CredentialsClient {
	t.Helper()
	srv := server.New(cs.st, server.Config{Log: log, SREStatementKey: statementKey})
	g := grpc.NewServer(srv.ServerOptions()...)
	csv1.RegisterCredentialsServer(g, srv.CredentialsServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	mc, err := maestro.New(ctx, maestro.Config{GRPCAddr: r.maestro.GRPCAddr, RESTURL: r.maestro.RESTURL}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })
	cctx, stop := context.WithCancel(ctx)
	c := controller.NewCredentials(cs.st, mc, controller.CredentialsConfig{PollPeriod: 300 * time.Millisecond, Validity: 30 * time.Minute}, log)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(cctx) }()
	t.Cleanup(func() { stop(); <-done })
	return csv1.NewCredentialsClient(conn)
}

func issue(t *testing.T, ctx context.Context, creds csv1.CredentialsClient, id, clusterID, csr string) string {
	t.Helper()
	c, err := creds.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id, ClusterId: clusterID, CertificateSigningRequest: csr})
	if err != nil {
		t.Fatal(err)
	}
	if c.GetStatus().GetState() != csv1.CredentialState_CREDENTIAL_STATE_PENDING {
		t.Fatalf("new credential: %v", c.GetStatus())
	}
	waitCredential(t, ctx, creds, id, csv1.CredentialState_CREDENTIAL_STATE_ISSUED)
	got, err := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: id, IncludeKubeconfig: true})
	if err != nil || got.GetKubeconfig() == "" {
		t.Fatalf("kubeconfig: %v (%d bytes)", err, len(got.GetKubeconfig()))
	}
	return got.GetKubeconfig()
}

func waitCredential(t *testing.T, ctx context.Context, creds csv1.CredentialsClient, id string, want csv1.CredentialState) *csv1.Credential {
	t.Helper()
	var last *csv1.Credential
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		c, err := creds.GetCredential(ctx, &csv1.GetCredentialRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		last = c
		if c.GetStatus().GetState() == want {
			return c
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("credential %s not %v: %v", id, want, last.GetStatus())
	return nil
}

// checkKubeconfig checks a kubeconfig's client certificate and key belong together, that the
// certificate chains to the client CA bundle for client authentication, expires as configured,
// and that the server CA is the control plane's root CA. It returns the leaf.
func checkKubeconfig(t *testing.T, ctx context.Context, r *region, hcpNS, kubeconfig string, clientCAs *x509.CertPool) *x509.Certificate {
	t.Helper()
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		t.Fatalf("kubeconfig does not parse: %v", err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	auth, cluster := cfg.AuthInfos[cur.AuthInfo], cfg.Clusters[cur.Cluster]
	pair, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatalf("client certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate does not chain to the hosted cluster's client CA bundle: %v", err)
	}
	if life := leaf.NotAfter.Sub(time.Now()); life > 31*time.Minute || life < 25*time.Minute {
		t.Fatalf("certificate expires in %s, want the configured 30m", life)
	}
	if leaf.Subject.CommonName[:len("system:customer-break-glass:")] != "system:customer-break-glass:" {
		t.Fatalf("CN = %q", leaf.Subject.CommonName)
	}
	var root corev1.ConfigMap
	if err := r.kube.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: hypershiftsim.RootCAConfigMap}, &root); err != nil {
		t.Fatal(err)
	}
	if string(cluster.CertificateAuthorityData) != root.Data["ca.crt"] || cluster.Server == "" {
		t.Fatalf("kubeconfig cluster = server %q, CA %d bytes; want the root CA", cluster.Server, len(cluster.CertificateAuthorityData))
	}
	return leaf
}

func customerCSR(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
