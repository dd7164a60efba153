package localregion

import (
	"context"
	"fmt"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/approval"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/revocation"
	"github.com/openhcp/openhcp/admin/pkg/session"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// AdminInfo is the admin API (docs/sre.md): HTTPS with mutual TLS, verified with CAFile; it
// admits SREs only, by a client certificate from the client CA whose subject names the person
// (CN) and the group (O). SREs lists the region's development SREs: alice (sre-admin), bob
// (sre-readonly) and carol (sre-admin, a second approver).
type AdminInfo struct {
	URL string `json:"url"`
	// ServerName is the name the admin API's certificate carries (it names no address): a
	// client dialing URL asks for it.
	ServerName string        `json:"serverName"`
	CAFile     string        `json:"caFile"`
	SREs       []SREIdentity `json:"sres"`
	// MetricsURL is the admin service's Prometheus endpoint (plaintext, loopback).
	MetricsURL string `json:"metrics"`
}

// SREIdentity is one SRE's client certificate.
type SREIdentity struct {
	Person   string `json:"person"`
	Group    string `json:"group"`
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// SRE returns the region's SRE named by person, or the first of a group (access.GroupAdmin,
// access.GroupReadOnly).
func (a AdminInfo) SRE(group string) (SREIdentity, error) {
	for _, s := range a.SREs {
		if s.Person == group {
			return s, nil
		}
	}
	for _, s := range a.SREs {
		if s.Group == group {
			return s, nil
		}
	}
	return SREIdentity{}, fmt.Errorf("region.json lists no SRE of group %q", group)
}

// ClientTLS is the SRE's identity with the CA that verifies the admin API.
func (s SREIdentity) ClientTLS(caFile string) ClientTLS {
	return ClientTLS{CAFile: caFile, ClientCertFile: s.CertFile, ClientKeyFile: s.KeyFile}
}

// The admin API's own identity, and the region's development SREs (identity name → person
// and group). Real SREs get their certificates from the SRE CA (docs/sre.md).
const adminIdentity = "admin"

var devSREs = []struct{ identity, person, group string }{
	{"sre-admin-alice", "alice", access.GroupAdmin},
	{"sre-readonly-bob", "bob", access.GroupReadOnly},
	// A second sre-admin, so that an admin break-glass request (alice's) can be approved by
	// another person, as the two-person rule needs (docs/sre.md#break-glass).
	{"sre-admin-carol", "carol", access.GroupAdmin},
}

// adminDB is the audit log's database, and adminRole the admin service's login.
const (
	adminDB   = "admin"
	adminRole = "admin"
)

// prepareAdminDatabase makes the admin service's login and its database: the audit table,
// owned by the superuser, on which the login may only insert and read (audit.Install), and
// read-only access to the document store. Run after the frontend, whose migrations create the
// document store's tables.
func (r *Region) prepareAdminDatabase(ctx context.Context, pg *pgserver.Server) (PostgresRoleInfo, error) {
	password, err := pgserver.NewPassword()
	if err != nil {
		return PostgresRoleInfo{}, err
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, password)
	r.dbPasswords["admin"] = password
	r.mu.Unlock()
	if err := pg.CreateLoginRole(ctx, adminRole, password, ""); err != nil {
		return PostgresRoleInfo{}, err
	}
	// The superuser owns the database, so the login owns no schema either: it cannot drop
	// or alter the audit table.
	if err := pg.CreateOwnedDatabase(ctx, adminDB, "postgres"); err != nil {
		return PostgresRoleInfo{}, err
	}
	conn, err := pgx.Connect(ctx, pg.AdminDSN(adminDB))
	if err != nil {
		return PostgresRoleInfo{}, fmt.Errorf("connect to %s as the superuser: %w", adminDB, err)
	}
	err = audit.Install(ctx, conn, adminRole)
	if err == nil {
		err = revocation.Install(ctx, conn, adminRole)
	}
	if err == nil {
		err = approval.Install(ctx, conn, adminRole)
	}
	if err == nil {
		// Break-glass sessions: the admin API opens them, the gateway reads them (its own
		// processes log in as the admin service).
		err = session.Install(ctx, conn, adminRole)
	}
	conn.Close(ctx)
	if err != nil {
		return PostgresRoleInfo{}, err
	}
	docs, err := r.Info.Postgres.Role("frontend")
	if err != nil {
		return PostgresRoleInfo{}, err
	}
	conn, err = pgx.Connect(ctx, pg.AdminDSN(docs.Database))
	if err != nil {
		return PostgresRoleInfo{}, fmt.Errorf("connect to %s as the superuser: %w", docs.Database, err)
	}
	defer conn.Close(ctx)
	// Its document store grants (read, day-2 updates, maintenance requests) have one owner.
	if err := postgres.GrantAdminLogin(ctx, conn, docs.Database, "resourceprovider", adminRole); err != nil {
		return PostgresRoleInfo{}, err
	}
	// One password file for both databases ("*" matches any database in a libpq password file).
	passFile := filepath.Join(r.secretsDir(), adminRole+".pgpass")
	if err := pg.WritePassFile(passFile, adminRole, "*", password); err != nil {
		return PostgresRoleInfo{}, err
	}
	info := PostgresRoleInfo{Service: "admin", Role: adminRole, Database: adminDB, DSN: pg.RoleDSN(adminRole, adminDB, r.pki.CAFile), PassFile: passFile}
	r.Info.Postgres.Roles = append(r.Info.Postgres.Roles, info)
	return info, nil
}

// startAdmin issues the admin API's and the development SREs' certificates, prepares its
// database, starts the break-glass gateway's replicas on it (gateway.go) and starts the admin API.
func (r *Region) startAdmin(ctx context.Context, pg *pgserver.Server) error {
	if err := r.issueAdminIdentities(); err != nil {
		return err
	}
	db, err := r.prepareAdminDatabase(ctx, pg)
	if err != nil {
		return err
	}
	docs, err := r.Info.Postgres.Role("frontend")
	if err != nil {
		return err
	}
	// The gateway replicas read the sessions the admin API opens, in the same database.
	if err := r.startGateways(ctx, db); err != nil {
		return err
	}
	ports, err := mgmtcluster.FreePorts(2)
	if err != nil {
		return err
	}
	port, metricsPort := ports[0], ports[1]
	addr := "127.0.0.1:" + strconv.Itoa(port)
	probe, err := r.probeClient(addr, adminIdentity)
	if err != nil {
		return err
	}
	server := r.pki.MustFiles(adminIdentity)
	sre := r.clientTLS(pki.SRE)
	statementKey, _ := r.sreStatementKeyFiles()
	err = r.startService(ctx, mgmtcluster.ProcSpec{
		Name: "admin", Path: filepath.Join(r.binDir, "admin"), LogDir: r.logDir, Env: pgEnv(db),
		Args: []string{
			"--listen", addr, "--metrics-listen", "127.0.0.1:" + strconv.Itoa(metricsPort), "--pprof-token-file", r.Info.PprofTokenFile,
			"--tls-cert", server.Cert, "--tls-key", server.Key, "--tls-client-ca", r.pki.PersonCAFile,
			"--audit-db-dsn", db.DSN,
			// The same login reads the document store (SELECT, and UPDATE of documents).
			"--db-dsn", pg.RoleDSN(adminRole, docs.Database, r.pki.CAFile),
			"--cluster-service", r.Info.ClusterService.GRPC,
			// Cluster Service knows the admin API as the sre identity (cluster-service/pkg/authz).
			"--cluster-service-ca", sre.CAFile, "--cluster-service-cert", sre.ClientCertFile, "--cluster-service-key", sre.ClientKeyFile,
			// Signs the statements Cluster Service issues SRE credentials for (written with Cluster Service's secrets).
			"--sre-statement-key", statementKey,
			// Break-glass sessions: sealed with the region's session key, which the gateway
			// replicas open; the kubeconfigs hcpctl writes name the first replica (either
			// serves any session).
			"--session-key-file", r.sessionKeyFile(), "--gateway-url", r.Info.Gateway.URLs[0],
			// Maestro's REST gate admits the admin API by its own certificate, for reads only.
			"--maestro-rest", r.Info.Maestro.REST, "--maestro-ca", r.pki.CAFile,
			"--maestro-cert", server.Cert, "--maestro-key", server.Key,
			// must-gather searches the region's logs for a cluster's IDs.
			"--log-dir", r.logDir,
			// Shard health and must-gather read the management clusters as a read-only user.
			"--management-kubeconfigs", r.adminKubeconfigs(),
		},
	}, mgmtcluster.HTTPReady(probe, "https://"+addr+"/healthz"))
	if err != nil {
		return err
	}
	r.Info.Admin.URL = "https://" + addr
	r.Info.Admin.ServerName = pki.ServerName(adminIdentity)
	r.Info.Admin.MetricsURL = url127(metricsPort) + "/metrics"
	return nil
}

// issueAdminIdentities issues the admin API's server certificate and the development SREs'
// client certificates, and lists the SREs in region.json.
func (r *Region) issueAdminIdentities() error {
	// Server for SREs; client for Maestro's REST API (read-only there, maestroRESTClients).
	if err := r.pki.Add(adminIdentity, r.serverSpec(adminIdentity, pki.Server|pki.Client), pki.ServiceCA); err != nil {
		return err
	}
	r.Info.Admin = AdminInfo{CAFile: r.pki.CAFile}
	for _, s := range devSREs {
		if err := r.pki.AddPerson(s.identity, s.person, s.group); err != nil {
			return err
		}
		f := r.pki.MustFiles(s.identity)
		r.Info.Admin.SREs = append(r.Info.Admin.SREs, SREIdentity{Person: s.person, Group: s.group, CertFile: f.Cert, KeyFile: f.Key})
	}
	return nil
}

// adminKubeconfigs is the admin service's --management-kubeconfigs: shard=kubeconfig of every
// management cluster.
func (r *Region) adminKubeconfigs() string {
	var out []string
	for _, mc := range r.Info.ManagementClusters {
		out = append(out, mc.ProvisionShard+"="+mc.AdminKubeconfig)
	}
	return strings.Join(out, ",")
}
