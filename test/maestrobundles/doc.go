// Package maestrobundles tests the admin API's Maestro REST reader (admin/pkg/server) against
// the real pinned Maestro server: a describe reads its cluster's bundles only.
package maestrobundles
