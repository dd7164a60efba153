package hypershiftsim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

const orphanChildEnv = "HYPERSHIFTSIM_ORPHAN_CHILD"

// TestKilledSimLeavesNoHostedAPIServer SIGKILLs a process that started a hosted kube-apiserver
// the way the sim does (the helper below, this test binary run again) and checks that the
// apiserver does not outlive it: the kernel kills it (Pdeathsig), nothing has to clean up.
func TestKilledSimLeavesNoHostedAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver")
	}
	apiserver, dir, e := startTestHostedEtcd(t, "orphan-etcd")
	child := exec.Command(os.Args[0], "-test.run=^TestHostedAPIServerHelperProcess$", "-test.short", "-test.v")
	child.Env = append(os.Environ(), orphanChildEnv+"="+dir, "HELPER_APISERVER="+apiserver,
		"HELPER_ETCD="+strings.Join([]string{e.Endpoint, e.CAFile, e.CertFile, e.KeyFile}, ","))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "HOSTED_APISERVER_PID="); ok {
			pid, _ = strconv.Atoi(v)
			break
		}
	}
	if pid == 0 {
		_ = child.Process.Kill()
		t.Fatalf("helper did not report a kube-apiserver: %v", child.Wait())
	}
	// Should this test fail, the orphan it found does not outlive it.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !processRunning(pid) {
		t.Fatalf("kube-apiserver %d is not running before the kill", pid)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: no handler runs
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(time.Minute)
	for processRunning(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver %d still runs a minute after its sim was killed", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHostedAPIServerHelperProcess is not a test: TestKilledSimLeavesNoHostedAPIServer runs it
// in a child process, which starts a hosted kube-apiserver as the sim does and then waits to be
// killed.
func TestHostedAPIServerHelperProcess(t *testing.T) {
	dir := os.Getenv(orphanChildEnv)
	if dir == "" {
		t.Skip("helper process of TestKilledSimLeavesNoHostedAPIServer")
	}
	etcd := strings.Split(os.Getenv("HELPER_ETCD"), ",")
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, APIServerPath: os.Getenv("HELPER_APISERVER"), Dir: filepath.Join(dir, "hosted"), LogDir: dir,
		Etcd: EtcdClient{Endpoint: etcd[0], CAFile: etcd[1], CertFile: etcd[2], KeyFile: etcd[3]}})
	rootCert, rootKey, err := newCA("root-ca.orphan", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	port, err := mgmtcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := h.server("orphan", port)
	if err := s.writeFiles(hostedPKI{rootCert: rootCert, rootKey: rootKey, clientCABundle: rootCert}); err != nil {
		t.Fatal(err)
	}
	if err := s.start(context.Background(), h.o); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("HOSTED_APISERVER_PID=%d\n", s.proc.PID())
	select {}
}

// A pid file left by a killed sim names a process: the next start ends it only if it runs a
// kube-apiserver of this very directory (the pid may have been reused by anything else).
func TestKillOrphanEndsOnlyAnApiserverOfItsDirectory(t *testing.T) {
	dir := t.TempDir()
	start := func(t *testing.T, arg string) *exec.Cmd {
		t.Helper()
		// "; true" keeps the shell from exec'ing sleep, so its command line keeps arg.
		cmd := exec.Command("sh", "-c", "sleep 300; true", arg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	tests := []struct {
		name       string
		arg        string
		wantKilled bool
	}{
		{name: "apiserver_of_this_directory_is_ended", arg: "--cert-dir=" + dir, wantKilled: true},
		{name: "another_directory_is_left_alone", arg: "--cert-dir=" + dir + "-other"},
		{name: "an_unrelated_process_is_left_alone", arg: "unrelated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := start(t, tt.arg)
			pid := cmd.Process.Pid
			// killOrphan returns once the process it ended no longer runs, so what it left
			// alone is still running when it returns: no wait is needed to tell them apart.
			killOrphan(filepath.Join(dir, pidFile), dir)
			if !tt.wantKilled {
				if !processRunning(pid) {
					t.Errorf("process %q was ended", tt.arg)
				}
				return
			}
			// Its exit is reaped here (cmd.Wait): wait for that against a generous deadline.
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Errorf("process %q still runs a minute after killOrphan", tt.arg)
			}
		})
	}
}
