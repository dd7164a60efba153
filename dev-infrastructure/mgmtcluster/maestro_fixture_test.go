package mgmtcluster

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/maestrogate"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
	"github.com/openhcp/openhcp/internal/pki"
)

// secureMaestro is the real Maestro server started as the region starts it (mutual TLS on gRPC,
// the gRPC authorizer, its own namespace behind the host's forwards), for tests that probe its
// doors: region is the region's PKI (Cluster Service's certificate is the launcher's REST
// identity), stranger a PKI of another CA.
type secureMaestro struct {
	region, stranger *pki.Region
	srv              *MaestroServer
}

// secureMaestroOptions: rest is who may call the REST API and how; grpcMaxConns caps the gRPC
// forward (0: the region's); consumers and admin are passed to the region's PKI (admin adds an
// "admin" service certificate).
type secureMaestroOptions struct {
	rest         map[string]maestrogate.Access
	grpcMaxConns int
	consumers    []string
	admin        bool
}

// startSecureMaestro starts postgres, mosquitto, the authorizer apiserver and Maestro with o,
// each stopped when the test ends. It skips under -short.
func startSecureMaestro(ctx context.Context, t *testing.T, o secureMaestroOptions) secureMaestro {
	t.Helper()
	if testing.Short() {
		t.Skip("starts postgres, mosquitto, an apiserver and maestro")
	}
	bin, err := MaestroBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	region, err := pki.Create(filepath.Join(dir, "pki"), pki.Options{MaestroConsumers: o.consumers})
	if err != nil {
		t.Fatal(err)
	}
	if o.admin {
		if err := region.Add("admin", pki.Spec{CommonName: "admin", Usage: pki.Server | pki.Client}, pki.ServiceCA); err != nil {
			t.Fatal(err)
		}
	}
	stranger, err := pki.Create(filepath.Join(dir, "stranger-pki"), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	mq, err := StartMosquitto(ctx, MosquittoOptions{Dir: filepath.Join(dir, "mosquitto"), LogDir: logs})
	if err != nil {
		t.Fatalf("start mosquitto: %v", err)
	}
	t.Cleanup(mq.Stop)
	server := region.MustFiles(pki.MaestroServer)
	authz, err := StartMaestroAuthorizer(ctx, MaestroAuthorizerOptions{
		Cluster:    ManagementClusterOptions{Name: "svc", Dir: filepath.Join(dir, "svc"), LogDir: logs, APIServerPath: apiserver, EtcdPath: etcd, ExtraClientCAFile: region.CAFile},
		ServerUser: pki.MaestroServer, ServerCertFile: server.Cert, ServerKeyFile: server.Key,
		Sources: map[string]string{"cluster-service": pki.ClusterService},
	})
	if err != nil {
		t.Fatalf("start authorizer: %v", err)
	}
	t.Cleanup(authz.Stop)
	cs := region.MustFiles(pki.ClusterService)
	restClients, err := maestrogate.WorkloadRules(region.TrustDomain, o.rest)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartMaestroServer(ctx, MaestroServerOptions{Binary: bin, DSN: dsn, MQTTAddr: mq.Addr,
		Dir: filepath.Join(dir, "maestro"), LogDir: logs, GRPCMaxConns: o.grpcMaxConns,
		TLS: &MaestroServerTLS{CertFile: server.Cert, KeyFile: server.Key, CAFile: region.CAFile, ClientCAFile: region.CAFile,
			AuthorizerKubeconfig: authz.Kubeconfig, RESTClients: restClients, ClientCertFile: cs.Cert, ClientKeyFile: cs.Key},
	})
	if err != nil {
		t.Fatalf("start maestro server: %v", err)
	}
	t.Cleanup(srv.Close)
	return secureMaestro{region: region, stranger: stranger, srv: srv}
}

// clusterServiceREST is the REST identity the launcher uses (Cluster Service's, read-write).
var clusterServiceREST = map[string]maestrogate.Access{identity.ClusterService: maestrogate.ReadWrite}
