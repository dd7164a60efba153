package mgmtcluster

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartOnAPortTakenMeanwhileStartsAgain: a port asked of the kernel is free when asked, not
// when the process binds it; a management cluster whose apiserver found its port taken (a busy
// CI machine: "bind: address already in use") is started again on new ports, not failed.
func TestStartOnAPortTakenMeanwhileStartsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real etcd and kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	apiserver, etcd, err := KubeBinaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0") // held for the test: the apiserver cannot bind it
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	asked := 0
	freePorts := func(n int) ([]int, error) {
		asked++
		ports, err := FreePorts(n)
		if err == nil && asked == 1 {
			ports[0] = takenPort // the apiserver's
		}
		return ports, err
	}
	dir := t.TempDir()
	mc, err := startOnFreePorts(ctx, ManagementClusterOptions{Name: "clash", Dir: dir, LogDir: dir,
		APIServerPath: apiserver, EtcdPath: etcd, SkipCRDs: true, ReadyTimeout: 3 * time.Minute}, freePorts)
	if err != nil {
		t.Fatalf("a start whose apiserver port was taken failed: %v", err)
	}
	defer mc.Stop()
	if asked != 2 {
		t.Fatalf("ports asked %d times, want 2 (the taken one, then new ones)", asked)
	}
	if strings.HasSuffix(mc.Host, ":"+strconv.Itoa(takenPort)) {
		t.Fatalf("the cluster serves on the taken port: %s", mc.Host)
	}
}
