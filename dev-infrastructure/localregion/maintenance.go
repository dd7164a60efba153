package localregion

import (
	"context"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pki"
)

// The region's maintenance service (backend/cmd/maintenance, docs/maintenance.md): one replica,
// which holds the campaign lease and runs the actuator.
const (
	maintenanceName = "maintenance"
	// The local region looks at tasks, campaigns and upgrades often, so that a campaign over a
	// few clusters finishes within minutes; production keeps the binary's defaults (1s, 5s, 5s).
	maintenancePoll        = 500 * time.Millisecond
	maintenanceUpgradePoll = 2 * time.Second
)

// startMaintenance starts the maintenance service (startStoreService).
func (r *Region) startMaintenance(ctx context.Context, pg *pgserver.Server) error {
	// The admin API's statement public key (written with Cluster Service's secrets, which start
	// first): the service carries out only the maintenance requests the admin API signed.
	_, statementPub := r.sreStatementKeyFiles()
	// The launcher holds the CA keys; the service asks it for rotations (region-certificate-
	// rotation tasks) through the rotation API, as its own identity.
	regionPKI, err := r.startRotationAPI()
	if err != nil {
		return err
	}
	replicas, err := r.startStoreService(ctx, pg, storeService{name: maintenanceName, identity: pki.Maintenance, replicas: 1, args: []string{
		"--sre-statement-public-key", statementPub,
		"--region-pki", regionPKI,
		"--poll", maintenancePoll.String(),
		"--campaign-poll", maintenancePoll.String(),
		"--upgrade-poll", maintenanceUpgradePoll.String(),
	}})
	if err != nil {
		return err
	}
	r.Info.Maintenance = replicas[0]
	return nil
}
