// Package tlscost measures what mutual TLS costs on the ARM → frontend and frontend → Cluster
// Service hops: the real frontend and Cluster Service binaries over a real PostgreSQL, once in
// plaintext on loopback and once secured as the local region runs them, in the same run. It has
// only a benchmark (bench_test.go); results go to docs/performance.md.
package tlscost
