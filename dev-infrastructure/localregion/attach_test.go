package localregion

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/pki"
)

// attachInfo is a region.json as make run or make deploy writes it, its files under dir.
func attachInfo(t *testing.T, dir string) Info {
	t.Helper()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := file("ca.crt")
	return Info{
		Location: "westus3",
		Frontend: FrontendInfo{URL: "https://127.0.0.1:1", ClientTLS: ClientTLS{CAFile: ca, ClientCertFile: file("arm.crt"), ClientKeyFile: file("arm.key"), ServerName: "frontend"}},
		ClusterService: ServiceInfo{GRPC: "127.0.0.1:2",
			ClientTLS: ClientTLS{CAFile: ca, ClientCertFile: file("sre.crt"), ClientKeyFile: file("sre.key"), ServerName: "cluster-service"}},
		ManagementClusters: []ManagementClusterInfo{
			{Name: "mgmt-1", Kubeconfig: file("mgmt-1.kubeconfig"), ProvisionShard: "mgmt-1"},
			{Name: "mgmt-2", Kubeconfig: file("mgmt-2.kubeconfig"), ProvisionShard: "mgmt-2"},
		},
		LogDir: dir,
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAttachReadsRegionFileOrSaysWhatItLacks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(*Info)
		raw     string // the file as written, instead of the changed Info
		after   func(t *testing.T, dir, path string)
		wantErr []string
	}{
		{name: "complete"},
		{name: "no frontend", change: func(i *Info) { i.Frontend.URL = "" }, wantErr: []string{"no frontend.url"}},
		{name: "ARM's key gone", change: func(i *Info) { i.Frontend.ClientKeyFile += ".gone" }, wantErr: []string{"frontend.clientKeyFile", "no such file"}},
		{name: "no cluster service identity", change: func(i *Info) { i.ClusterService.ClientTLS = ClientTLS{} },
			wantErr: []string{"no clusterService.caFile", "no clusterService.clientCertFile", "no clusterService.clientKeyFile"}},
		{name: "no management clusters", change: func(i *Info) { i.ManagementClusters = nil }, wantErr: []string{"no managementClusters"}},
		{name: "a kubeconfig gone", change: func(i *Info) { i.ManagementClusters[1].Kubeconfig = "/nonexistent/kubeconfig" },
			wantErr: []string{"managementClusters[mgmt-2].kubeconfig", "no such file"}},
		{name: "unknown field", raw: `{"location":"westus3","frontDoor":{}}`, wantErr: []string{`unknown field "frontDoor"`}},
		{name: "not JSON", raw: `location: westus3`, wantErr: []string{"decode"}},
		// Another local user could have written these: the tests would trust their files, and
		// client-go runs a kubeconfig's exec plugin.
		{name: "region file writable by others", after: func(t *testing.T, _, path string) { chmod(t, path, 0o666) },
			wantErr: []string{"writable by others"}},
		{name: "region file in a directory writable by others", after: func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777) },
			wantErr: []string{"writable by others"}},
		{name: "a kubeconfig writable by others", after: func(t *testing.T, dir, _ string) { chmod(t, filepath.Join(dir, "mgmt-2.kubeconfig"), 0o646) },
			wantErr: []string{"managementClusters[mgmt-2].kubeconfig", "writable by others"}},
		{name: "a directory with the sticky bit, as /tmp", after: func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777|os.ModeSticky) }},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := t.TempDir()
			info := attachInfo(t, dir)
			if tc.change != nil {
				tc.change(&info)
			}
			path := filepath.Join(dir, "region.json")
			if tc.raw != "" {
				if err := os.WriteFile(path, []byte(tc.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				writeJSON(t, path, info)
			}
			if tc.after != nil {
				tc.after(t, dir, path)
			}
			r, err := Attach(path)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Attach succeeded, want an error naming %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !r.Attached() {
				t.Error("Attached() = false")
			}
			if r.Info.Frontend != info.Frontend || r.Info.ClusterService != info.ClusterService || len(r.Info.ManagementClusters) != 2 {
				t.Errorf("Info = %+v, want the file's %+v", r.Info, info)
			}
			if r.RegionFile() != path {
				t.Errorf("RegionFile() = %q, want %q", r.RegionFile(), path)
			}
		})
	}
}

// An attached region owns nothing: Stop leaves the region and its file alone, and what needs
// the launcher's processes or PKI says so (ErrAttached) instead of acting or panicking.
func TestAttachedRegionOwnsNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "region.json")
	writeJSON(t, path, attachInfo(t, dir))
	r, err := Attach(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"Process":            func() error { _, err := r.Process("backend"); return err },
		"Kill":               func() error { return r.Kill("cluster-service") },
		"Restart":            func() error { return r.Restart(ctx, "cluster-service") },
		"RestartWith":        func() error { return r.RestartWith(ctx, "backend", "--x") },
		"ComponentPID":       func() error { _, err := r.ComponentPID("maestro-server"); return err },
		"KillComponent":      func() error { _, err := r.KillComponent("maestro-server"); return err },
		"RotateCertificates": func() error { return r.RotateCertificates(ctx) },
		"RollCA":             func() error { return r.RollCA(ctx, pki.ServiceCA) },
		// Only the identity region.json names for Cluster Service, or one whose files lie
		// beside it in the PKI's layout.
		"DialClusterServiceAs(backend)": func() error { _, err := r.DialClusterServiceAs(pki.Backend); return err },
	} {
		if err := f(); !errors.Is(err, ErrAttached) {
			t.Errorf("%s on an attached region: %v, want ErrAttached", name, err)
		}
	}
	if r.PKI() != nil {
		t.Error("PKI() of an attached region is not nil")
	}
	// The identities region.json names dial without the PKI (the connection is lazy).
	for _, id := range []string{pki.SRE, "frontend-beside"} {
		if id != pki.SRE {
			for _, ext := range []string{".crt", ".key"} {
				if err := os.WriteFile(filepath.Join(dir, id+ext), []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The files are not PEM: the dial reads them and fails, but not for want of a PKI.
		if _, err := r.DialClusterServiceAs(id); errors.Is(err, ErrAttached) {
			t.Errorf("DialClusterServiceAs(%s): %v, want its files used", id, err)
		}
	}
	r.Stop()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Stop of an attached region removed its region.json: %v", err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
