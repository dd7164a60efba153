package localregion

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's maintenance service (backend/cmd/maintenance, docs/maintenance.md): one replica,
// which holds the campaign lease and runs the actuator.
const (
	maintenanceName = "maintenance"
	maintenanceRole = "maintenance"
	// The local region looks at tasks, campaigns and upgrades often, so that a campaign over a
	// few clusters finishes within minutes; production keeps the binary's defaults (1s, 5s, 5s).
	maintenancePoll        = 500 * time.Millisecond
	maintenanceUpgradePoll = 2 * time.Second
)

// startMaintenance gives the maintenance service its database login (a member of the document
// store's owner group: its tasks, campaigns and locks live there) and starts it.
func (r *Region) startMaintenance(ctx context.Context, pg *pgserver.Server) error {
	password, err := pgserver.NewPassword()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.secrets = append(r.secrets, password)
	r.dbPasswords[maintenanceRole] = password
	r.mu.Unlock()
	if err := pg.CreateLoginRole(ctx, maintenanceRole, password, "resourceprovider"); err != nil {
		return fmt.Errorf("maintenance database login: %w", err)
	}
	passFile := filepath.Join(r.secretsDir(), maintenanceRole+".pgpass")
	if err := pg.WritePassFile(passFile, maintenanceRole, "resourceprovider", password); err != nil {
		return err
	}
	db := PostgresRoleInfo{Service: maintenanceName, Role: maintenanceRole, Database: "resourceprovider",
		DSN: pg.RoleDSN(maintenanceRole, "resourceprovider", r.pki.CAFile), PassFile: passFile}
	r.Info.Postgres.Roles = append(r.Info.Postgres.Roles, db)

	port, err := mgmtcluster.FreePort()
	if err != nil {
		return err
	}
	metrics := url127(port)
	args := append([]string{
		"--db-dsn", db.DSN,
		"--cluster-service", r.Info.ClusterService.GRPC,
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(port),
		"--replica-id", maintenanceName + "-1",
		"--poll", maintenancePoll.String(),
		"--campaign-poll", maintenancePoll.String(),
		"--upgrade-poll", maintenanceUpgradePoll.String(),
	}, r.clusterServiceClientArgs(pki.Maintenance)...)
	if err := r.startService(ctx, mgmtcluster.ProcSpec{
		Name: maintenanceName, Path: filepath.Join(r.binDir, "maintenance"), LogDir: r.logDir, Env: pgEnv(db), Args: args,
	}, mgmtcluster.HTTPReady(nil, metrics+"/healthz")); err != nil {
		return err
	}
	r.Info.Maintenance = ServiceInfo{MetricsURL: metrics + "/metrics"}
	return nil
}
