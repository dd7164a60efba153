package frontend

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRequestPath is the frontend's own cost of a GET, a list of 100 and a PUT create of a
// cluster (middleware, documents in PostgreSQL, the calls to a fake Cluster Service over loopback
// gRPC), for profiling the request path without a region (BenchmarkCost measures it in one).
// cpu-ms/op is this process's CPU time (the frontend, the fake and the client; not PostgreSQL).
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
		cpu := processCPU()
		for b.Loop() {
			send(http.MethodGet, get, nil, http.StatusOK)
		}
		reportCPU(b, cpu)
	})
	// A list page of 100 clusters, each with Cluster Service's status (URLs, conditions).
	for i := range 100 {
		p := clusterPath("rg-list", fmt.Sprintf("list-%03d", i))
		send(http.MethodPut, p, body, http.StatusCreated)
		rd, _ := e.resource(p)
		e.cs.setClusterURLs(rd.InternalID, "https://api.list.example:443", "https://console.list.example")
	}
	b.Run("list_100", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			send(http.MethodGet, "/subscriptions/"+testSub+"/resourceGroups/rg-list/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, http.StatusOK)
		}
		reportCPU(b, cpu)
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

// processCPU is the CPU time this process has used (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU per iteration since start as cpu-ms/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
