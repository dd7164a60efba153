package manifests

import "testing"

// BenchmarkBuild is the CPU of building one cluster's work (every reconcile of a cluster builds
// it, twice while a transition is in flight: the steady and the watched form), and of reading
// its HostedCluster back (HostedClusterOf, once per reconcile).
func BenchmarkBuild(b *testing.B) {
	c := cluster(fullSpec())
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(Config{}, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	w, err := Build(Config{}, c)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hosted_cluster_of", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := HostedClusterOf(w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
