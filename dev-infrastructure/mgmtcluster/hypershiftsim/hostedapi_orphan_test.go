package hypershiftsim

import (
	"bufio"
	"bytes"
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

	"github.com/go-logr/logr"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/sockdir"
)

const orphanChildEnv = "HYPERSHIFTSIM_ORPHAN_CHILD"

// TestKilledSimLeavesNoHostedAPIServer SIGKILLs a process that started a hosted kube-apiserver
// and its etcd the way the sim does (the helper below, this test binary run again) and checks
// that neither outlives it: the kernel kills them (Pdeathsig), nothing has to clean up.
func TestKilledSimLeavesNoHostedAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and a kube-apiserver")
	}
	apiserver, etcd, dir := testBinaries(t)
	child := exec.Command(os.Args[0], "-test.run=^TestHostedAPIServerHelperProcess$", "-test.short", "-test.v")
	child.Env = append(os.Environ(), orphanChildEnv+"="+dir, "HELPER_APISERVER="+apiserver, "HELPER_ETCD="+etcd)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var apiserverPID, etcdPID int
		if _, err := fmt.Sscanf(sc.Text(), "HOSTED_PIDS apiserver=%d etcd=%d", &apiserverPID, &etcdPID); err == nil {
			pids["kube-apiserver"], pids["etcd"] = apiserverPID, etcdPID
			break
		}
	}
	if len(pids) == 0 {
		_ = child.Process.Kill()
		t.Fatalf("helper did not report its processes: %v", child.Wait())
	}
	for name, pid := range pids {
		// Should this test fail, the orphan it found does not outlive it.
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		if !processRunning(pid) {
			t.Fatalf("%s %d is not running before the kill", name, pid)
		}
	}
	// A killed sim leaves its etcd's socket directory (a start on the same directory removes
	// it, mgmtcluster's etcdStart.Record, and so does the next sim's sweep, checked below); the
	// test removes it itself should it fail first.
	b, err := os.ReadFile(filepath.Join(dir, "hosted", "orphan", etcdDir, "etcd-socket-dir"))
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatal(err)
	}
	socketDir := strings.TrimSpace(string(b))
	t.Cleanup(func() { mgmtcluster.RemoveEtcdSocketDir("unixs://" + filepath.Join(socketDir, "localhost")) })
	if err := child.Process.Kill(); err != nil { // SIGKILL: no handler runs
		t.Fatal(err)
	}
	_ = child.Wait()
	deadline := time.Now().Add(time.Minute)
	for name, pid := range pids {
		for processRunning(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("%s %d still runs a minute after its sim was killed", name, pid)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The next sim's sweep removes the killed one's etcd socket directory, and not a live one's.
	live, err := sockdir.New("", "etcd-", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	defer sockdir.Remove(live)
	if _, err := os.Lstat(socketDir); err != nil {
		t.Fatalf("the killed sim's etcd socket directory is gone before the sweep: %v", err)
	}
	sweepSocketDirs(logr.Discard(), HostedAPIOptions{})
	if _, err := os.Lstat(socketDir); !os.IsNotExist(err) {
		t.Errorf("the killed sim's etcd socket directory %s is still there after the next sim's sweep (%v)", socketDir, err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the sweep removed %s, of a running process: %v", live, err)
	}
}

// TestHostedAPIServerHelperProcess is not a test: TestKilledSimLeavesNoHostedAPIServer runs it
// in a child process, which starts a hosted kube-apiserver and its etcd as the sim does and then
// waits to be killed.
func TestHostedAPIServerHelperProcess(t *testing.T) {
	dir := os.Getenv(orphanChildEnv)
	if dir == "" {
		t.Skip("helper process of TestKilledSimLeavesNoHostedAPIServer")
	}
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, APIServerPath: os.Getenv("HELPER_APISERVER"), EtcdPath: os.Getenv("HELPER_ETCD"),
		Dir: filepath.Join(dir, "hosted"), LogDir: dir})
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
	fmt.Printf("HOSTED_PIDS apiserver=%d etcd=%d\n", s.proc.PID(), s.etcd.Proc.PID())
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
		// Until the child has exec'd the shell, its command line is this test binary's: wait for
		// the shell's, as a killed sim's child has long had its own.
		deadline := time.Now().Add(time.Minute)
		for {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
			if bytes.Contains(b, []byte(arg+"\x00")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the shell's command line %q never showed %q", b, arg)
			}
			time.Sleep(10 * time.Millisecond)
		}
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
			killOrphan(filepath.Join(dir, pidFile), "--cert-dir="+dir)
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
