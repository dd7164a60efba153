package localregion

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
)

// documentStoreDB is the document store's database, owned by the group role of the same name.
const documentStoreDB = "resourceprovider"

// storeService is one of the region's services that keeps its state in the document store and
// calls Cluster Service as its own workload, and serves only /metrics and /healthz: the fleet
// Monitor and the maintenance service. Its replicas share the work through leases in the store.
type storeService struct {
	// name is the binary, the database login and the replicas' prefix: each replica's
	// --replica-id is name-1, name-2, ...; so are the processes' (and logs') names when there is
	// more than one replica, while a single replica's process is called name.
	name string
	// identity is the PKI identity it calls Cluster Service as.
	identity string
	replicas int
	// args are the service's own flags, given to every replica after the common ones.
	args []string
}

// processName is the process (and log) name of the i-th replica, from 1.
func (s storeService) processName(i int) string {
	if s.replicas == 1 {
		return s.name
	}
	return s.replicaID(i)
}

func (s storeService) replicaID(i int) string { return s.name + "-" + strconv.Itoa(i) }

// startStoreService gives s its own database login (a member of the document store's owner
// group) and starts its replicas, each on a free metrics port, and waits until each answers
// /healthz. It returns the replicas in order.
func (r *Region) startStoreService(ctx context.Context, pg *pgserver.Server, s storeService) ([]ServiceInfo, error) {
	db, err := r.documentStoreLogin(ctx, pg, s.name)
	if err != nil {
		return nil, err
	}
	var out []ServiceInfo
	for i := 1; i <= s.replicas; i++ {
		port, err := mgmtcluster.FreePort()
		if err != nil {
			return nil, err
		}
		metrics := url127(port)
		args := append([]string{
			"--db-dsn", db.DSN,
			"--cluster-service", r.Info.ClusterService.GRPC,
			"--metrics-listen", "127.0.0.1:" + strconv.Itoa(port),
			"--replica-id", s.replicaID(i),
		}, r.clusterServiceClientArgs(s.identity)...)
		err = r.startService(ctx, mgmtcluster.ProcSpec{
			Name: s.processName(i), Path: filepath.Join(r.binDir, s.name), LogDir: r.logDir, Env: pgEnv(db),
			Args: append(args, s.args...),
		}, mgmtcluster.HTTPReady(nil, metrics+"/healthz"))
		if err != nil {
			return nil, err
		}
		out = append(out, ServiceInfo{MetricsURL: metrics + "/metrics"})
	}
	return out, nil
}

// documentStoreLogin creates role, a login of the document store's owner group, with a new
// password kept as a region secret and written to a pass file, and lists it in region.json.
func (r *Region) documentStoreLogin(ctx context.Context, pg *pgserver.Server, role string) (PostgresRoleInfo, error) {
	password, err := pgserver.NewPassword()
	if err != nil {
		return PostgresRoleInfo{}, err
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, password)
	r.dbPasswords[role] = password
	r.mu.Unlock()
	if err := pg.CreateLoginRole(ctx, role, password, documentStoreDB); err != nil {
		return PostgresRoleInfo{}, fmt.Errorf("%s database login: %w", role, err)
	}
	passFile := filepath.Join(r.secretsDir(), role+".pgpass")
	if err := pg.WritePassFile(passFile, role, documentStoreDB, password); err != nil {
		return PostgresRoleInfo{}, err
	}
	db := PostgresRoleInfo{Service: role, Role: role, Database: documentStoreDB,
		DSN: pg.RoleDSN(role, documentStoreDB, r.pki.CAFile), PassFile: passFile}
	r.Info.Postgres.Roles = append(r.Info.Postgres.Roles, db)
	return db, nil
}
