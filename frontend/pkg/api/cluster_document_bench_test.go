package api_test

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// BenchmarkStoredDocumentRead is the read of a stored cluster's and a stored node pool's
// document (every read of a stored resource does one).
func BenchmarkStoredDocumentRead(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  []byte
		into func() any
	}{
		{"cluster", []byte(storedClusterDocuments[1].doc), func() any { return &api.Cluster{} }},
		{"node_pool", []byte(storedNodePoolDocuments[0].doc), func() any { return &api.NodePool{} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.doc)))
			cpu := processCPU(b)
			for b.Loop() {
				if err := json.Unmarshal(bc.doc, bc.into()); err != nil {
					b.Fatal(err)
				}
			}
			reportCPUPerOp(b, cpu)
		})
	}
}

// BenchmarkStoredDocumentRender is the rendering of a stored cluster's and a stored node pool's
// properties through their arm_path options (every GET, list item and write answer does one).
func BenchmarkStoredDocumentRender(b *testing.B) {
	var c api.Cluster
	if err := json.Unmarshal([]byte(storedClusterDocuments[1].doc), &c); err != nil {
		b.Fatal(err)
	}
	var np api.NodePool
	if err := json.Unmarshal([]byte(storedNodePoolDocuments[0].doc), &np); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		render func() map[string]any
	}{
		{"cluster", c.RenderedProperties},
		{"node_pool", np.RenderedProperties},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU(b)
			for b.Loop() {
				if len(bc.render()) == 0 {
					b.Fatal("rendered no properties")
				}
			}
			reportCPUPerOp(b, cpu)
		})
	}
}

// processCPU is the CPU time the process has used so far (user and system, the garbage
// collector's included).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPUPerOp reports the process's CPU time per operation since since (processCPU), as
// cpu-ns/op: on a shared machine ns/op counts the time spent waiting for a CPU too, this does not.
func reportCPUPerOp(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(processCPU(b)-since)/float64(b.N), "cpu-ns/op")
}

// BenchmarkClusterBodyDecode is the decode of a valid cluster PUT body in the newest
// api-version: strict decode into the version's type, its checks, and the spec filled from
// that type through the arm_path options (every cluster PUT does one).
func BenchmarkClusterBodyDecode(b *testing.B) {
	v, _ := api.Lookup(api.Versions()[len(api.Versions())-1])
	body := []byte(clusterBodyFor(v.String()))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := processCPU(b)
	for b.Loop() {
		if _, err := v.DecodeCluster(body); err != nil {
			b.Fatal(err)
		}
	}
	reportCPUPerOp(b, cpu)
}
