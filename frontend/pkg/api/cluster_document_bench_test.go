package api_test

import (
	"encoding/json"
	"testing"

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
			for b.Loop() {
				if err := json.Unmarshal(bc.doc, bc.into()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
