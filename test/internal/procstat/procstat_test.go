package procstat

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Stat
		wantErr  bool
	}{
		{name: "plain", in: "42 (etcd) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 3 1 20 0 12 0 100 1000 10 0",
			want: Stat{Comm: "etcd", State: "S", PPID: 7, Own: 3 * time.Second, Children: 40 * time.Millisecond}},
		{name: "name with spaces and a parenthesis", in: "9 (a b) c)) R 1 9 9 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1 0",
			want: Stat{Comm: "a b) c)", State: "R", PPID: 1, Own: 30 * time.Millisecond}},
		{name: "no name", in: "9 etcd S 1", wantErr: true},
		{name: "short", in: "9 (etcd) S 1 9 9", wantErr: true},
		{name: "not a number", in: "42 (etcd) S 7 42 42 0 -1 4194560 100 0 0 0 x 50 3 1 20 0 12 0 100 1000 10 0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse: err %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("Parse = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadSelf reads this test's own process: the kernel's file, not a fixture.
func TestReadSelf(t *testing.T) {
	st, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPID != os.Getppid() {
		t.Errorf("PPID %d, want %d", st.PPID, os.Getppid())
	}
	if _, err := Read(-1); err == nil {
		t.Error("Read(-1): no error")
	}
}

// TestListSelf finds this test's own process, with its command line, among all of them.
func TestListSelf(t *testing.T) {
	procs, err := List()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID != os.Getpid() {
			continue
		}
		if p.PPID != os.Getppid() || len(p.Args) == 0 || p.Args[0] != os.Args[0] {
			t.Errorf("own process %+v, want parent %d and args %q", p, os.Getppid(), os.Args)
		}
		if !p.Mentions("procstat") || p.Mentions("no-such-argument-anywhere") {
			t.Errorf("Mentions: wrong for args %q", p.Args)
		}
		return
	}
	t.Fatalf("own pid %d not among %d processes", os.Getpid(), len(procs))
}

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Sched
		wantErr  bool
	}{
		{name: "three fields", in: "238228763 253496467 569\n", want: Sched{Ran: 238228763, Waited: 253496467}},
		{name: "two fields", in: "5 7", want: Sched{Ran: 5, Waited: 7}},
		{name: "one field", in: "5", wantErr: true},
		{name: "not a number", in: "5 x 1", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSchedstat(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseSchedstat: err %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ParseSchedstat = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestReadSchedSelf reads this process's own threads while one of them spins: a spinning thread
// is always either running or waiting for a CPU, so the two grow by about the spin together,
// however busy the machine is.
func TestReadSchedSelf(t *testing.T) {
	before, err := ReadSched(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 50*time.Millisecond; {
	}
	after, err := ReadSched(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.Sub(before); d.Ran <= 0 || d.Waited < 0 || d.Ran+d.Waited < 45*time.Millisecond {
		t.Errorf("after a 50 ms spin: %+v more, want some run, no negative wait and at least 45 ms of both", d)
	}
	if _, err := ReadSched(-1); err == nil {
		t.Error("ReadSched(-1): no error")
	}
}

// TestDescendantsAndAlive starts a shell that starts a sleep: both are this test's descendants,
// the sleep after the shell, and both are alive until killed; a reaped one is not.
func TestDescendantsAndAlive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 300 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var below []Proc
	deadline := time.Now().Add(30 * time.Second)
	for {
		procs, err := List()
		if err != nil {
			t.Fatal(err)
		}
		below = Descendants(procs, os.Getpid())
		// The shell's child is named sh from its fork until it execs sleep: wait for the exec too.
		if (len(below) >= 2 && below[1].Comm == "sleep") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(below) != 2 || below[0].PID != cmd.Process.Pid || below[1].PPID != cmd.Process.Pid || below[1].Comm != "sleep" {
		t.Fatalf("descendants %+v, want the shell %d then its sleep", below, cmd.Process.Pid)
	}
	for _, p := range below {
		if !Alive(p.PID) {
			t.Errorf("%d (%s) not alive", p.PID, p.Comm)
		}
	}
	sleep := below[1].PID
	_ = syscall.Kill(sleep, syscall.SIGKILL)
	_ = cmd.Wait() // the shell's wait returns once the sleep is gone; the shell then exits
	killed = true
	if Alive(cmd.Process.Pid) {
		t.Errorf("the reaped shell %d is alive", cmd.Process.Pid)
	}
}
