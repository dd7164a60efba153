package e2e

import (
	"path/filepath"
	"time"

	"github.com/openhcp/openhcp/test/internal/procstat"
)

// regionProcs is one reading of every process (procstat.List) with what each is to the region,
// decided here once for every benchmark that counts the region's CPU (regionCPU, databaseCPU,
// regionSched, takeCPU, the cpuset benchmark's placement).
type regionProcs struct {
	// state is the region's state directory: its processes name it in their command lines.
	state string
	// postmaster is the region's PostgreSQL postmaster (postmasterPID); 0 when it was not
	// found (pmErr says why), and PostgreSQL is left out.
	postmaster int
	pmErr      error
	procs      []procstat.Proc
}

// procRole is what one process is to the region.
type procRole int

const (
	notRegion  procRole = iota
	postmaster          // PostgreSQL's postmaster: its own CPU and that of the backends it reaped
	pgBackend           // a live PostgreSQL backend or auxiliary process
	program             // another process of the region, named by programName (PgBouncer among them)
)

// readRegionProcs reads every process once; an unreadable /proc reads as no process (err says
// why).
func readRegionProcs() (regionProcs, error) {
	rp := regionProcs{state: filepath.Dir(region.Info.LogDir)}
	_, rp.postmaster, rp.pmErr = postmasterPID()
	procs, err := procstat.List()
	rp.procs = procs
	return rp, err
}

// role is what p is to the region.
func (rp regionProcs) role(p procstat.Proc) procRole {
	switch {
	case rp.postmaster != 0 && p.PID == rp.postmaster:
		return postmaster
	case rp.postmaster != 0 && p.PPID == rp.postmaster:
		return pgBackend
	case p.Comm != "postgres" && len(p.Args) > 0 && p.Mentions(rp.state):
		return program
	}
	return notRegion
}

// programCPU is regionCPU: the CPU time used so far by each program of the region.
func (rp regionProcs) programCPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range rp.procs {
		if rp.role(p) == program {
			out[programName(p)] += p.Own
		}
	}
	return out
}

// dbCPU is databaseCPU: PostgreSQL's postmaster with the backends it reaped, its live backends,
// and PgBouncer.
func (rp regionProcs) dbCPU() dbCPU {
	var out dbCPU
	for _, p := range rp.procs {
		switch rp.role(p) {
		case postmaster:
			out.postgres += p.Own + p.Children
		case pgBackend:
			out.postgres += p.Own
		case program:
			if p.Comm == "pgbouncer" {
				out.bouncer += p.Own
			}
		}
	}
	return out
}
