package frontend

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRequestPath is the frontend's own cost of a GET and a PUT create of a cluster
// (middleware, documents in PostgreSQL, the call to a fake Cluster Service over loopback gRPC),
// for profiling the request path without a region (BenchmarkCost measures it in one).
func BenchmarkRequestPath(b *testing.B) {
	e := newEnv(b)
	send := func(method, path string, body []byte, want int) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, e.http.URL+path+"?api-version="+testVersion, rd)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
	}
	body := mustJSON(minimalBody())
	get := clusterPath("rg", "bench-get")
	send(http.MethodPut, get, body, http.StatusCreated)
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			send(http.MethodGet, get, nil, http.StatusOK)
		}
	})
	b.Run("put_create", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			send(http.MethodPut, clusterPath("rg", fmt.Sprintf("bench-%d", i)), body, http.StatusCreated)
			i++
		}
	})
}
