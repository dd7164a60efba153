package upgrade

import "github.com/openhcp/openhcp/dev-infrastructure/localregion"

// previousRelease is the commit whose frontend, backend and Cluster Service the region starts
// with: the previous release (47c3556), whose clients already ask for each service's name, as
// today's certificates name only their service. A release from before the certificates named
// only services (22a4ead and earlier) cannot verify them (docs/architecture.md, Rolling upgrades).
// OPENHCP_UPGRADE_FROM overrides it.
const previousRelease = "47c35563ca98afe371e2209df910d94d12200685"

// upgradedServices are the services a rolling upgrade replaces, in the order it replaces them
// (localregion.BuildRelease builds them).
var upgradedServices = localregion.ReleaseServices()
