package hypershiftsim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestOrphanCheckSparesAnotherUsersProcess: the pid file of a cluster's etcd outlives a killed
// sim (and a reboot), so the PID it names may belong to anyone by the time the sim starts
// again, and its command line says what its owner likes (the marks are in ps). A process of
// another user is never the sim's orphan: it is neither killed nor taken at its word for the
// socket directory to remove. It was both: the sim (root under make run) killed it and removed
// the directory its --listen-client-urls named, which could be the management cluster's etcd's.
func TestOrphanCheckSparesAnotherUsersProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	// A directory of ours named as an etcd socket directory: a running etcd's, say.
	victim, err := os.MkdirTemp("", "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(victim) })
	dir := t.TempDir() // the cluster's directory
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// Another user's process carrying this cluster's etcd mark and a client URL in the victim.
	cmd := exec.Command("/bin/sh", "-c", "sleep 600; :", etcdMark(dir), "--listen-client-urls=unixs://"+filepath.Join(victim, "localhost"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(dir, etcdPIDFile), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	killOrphanEtcd(dir)

	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the directory another user's process named: %v, want it left alone", err)
	}
	select {
	case <-exited:
		t.Errorf("another user's process %d was killed as the sim's orphan", pid)
	default:
	}
}

// TestRemovingAClusterRemovesItsRecordedSocketDirectory: a cluster deleted while no etcd of
// it runs (its sim was killed, or its pod's container restarted, and the cluster went before
// its etcd was started again) leaves no socket directory behind: the one its record names goes
// with the cluster's files. It stayed (only the command line of a running orphan was read), in
// the pod's emptyDir or the host's /tmp, once per such cluster.
func TestRemovingAClusterRemovesItsRecordedSocketDirectory(t *testing.T) {
	parent := t.TempDir()
	sockets, err := os.MkdirTemp(parent, "etcd-")
	if err != nil {
		t.Fatal(err)
	}
	h := newHostedAPIServers(HostedAPIOptions{Max: 1, Dir: t.TempDir(), LogDir: t.TempDir()})
	etcd := filepath.Join(h.o.Dir, "gone", etcdDir)
	if err := os.MkdirAll(etcd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcd, "etcd-socket-dir"), []byte(sockets+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.remove("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sockets); !os.IsNotExist(err) {
		t.Errorf("the removed cluster's socket directory %s: %v, want removed", sockets, err)
	}
}
