package localregion

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
)

// PostgresComponent is the name KillComponent and RecoverComponent give the region's
// PostgreSQL, the one component the launcher does not restart by itself.
const PostgresComponent = "postgres"

// Components names every process of the region that KillComponent can crash, sorted: our
// services ("frontend", "backend", "cluster-service", a backend replica a test started,
// "mgmt-N-hypershift-sim"), "maestro-server", "maestro-agent-mgmt-N", "mosquitto",
// "mgmt-N-etcd", "mgmt-N-kube-apiserver", "pgbouncer" and "postgres".
func (r *Region) Components() []string {
	procs := r.componentProcesses()
	names := make([]string, 0, len(procs)+2)
	for name := range procs {
		names = append(names, name)
	}
	if r.postgres != nil {
		names = append(names, PostgresComponent)
	}
	if r.bouncer != nil {
		names = append(names, BouncerComponent)
	}
	sort.Strings(names)
	return names
}

// componentProcesses are the supervised processes of the region by name (each restarts by
// itself after a crash).
func (r *Region) componentProcesses() map[string]*mgmtcluster.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*mgmtcluster.Process{}
	for name, s := range r.services {
		out[name] = s.proc
	}
	if r.maestro != nil {
		out[r.maestro.Process().Spec.Name] = r.maestro.Process()
	}
	for _, a := range r.holders.agents {
		out[a.Proc.Spec.Name] = a.Proc
	}
	if r.holders.broker != nil {
		out[r.holders.broker.Proc.Spec.Name] = r.holders.broker.Proc
	}
	for _, mc := range r.mgmt {
		for _, p := range []*mgmtcluster.Process{mc.Etcd, mc.APIServer} {
			if p != nil {
				out[p.Spec.Name] = p
			}
		}
	}
	return out
}

// ComponentPID is the current PID of a component (Components).
func (r *Region) ComponentPID(name string) (int, error) {
	if err := r.errIfAttached("the PID of " + name); err != nil {
		return 0, err
	}
	if name == PostgresComponent && r.postgres != nil {
		return r.postgres.PID(), nil
	}
	if name == BouncerComponent && r.bouncer != nil {
		return r.bouncer.PID(), nil
	}
	p, ok := r.componentProcesses()[name]
	if !ok {
		return 0, fmt.Errorf("no component %q in this region (have %v)", name, r.Components())
	}
	return p.PID(), nil
}

// KillComponent crashes a component: SIGKILL to its whole process group, as the OOM killer or a
// node failure would, and behind the supervisor's back, so the launcher restarts it as after any
// crash (backoff from 1 s; counted in region.json's restarts). PostgreSQL is not supervised: it
// stays down until RecoverComponent. It returns the PID it killed.
func (r *Region) KillComponent(name string) (int, error) {
	if err := r.errIfAttached("kill " + name); err != nil {
		return 0, err
	}
	if name == PostgresComponent && r.postgres != nil {
		return r.postgres.Kill(), nil
	}
	if name == BouncerComponent && r.bouncer != nil {
		return killBouncer(r.bouncer)
	}
	p, ok := r.componentProcesses()[name]
	if !ok {
		return 0, fmt.Errorf("kill %s: no such component in this region (have %v)", name, r.Components())
	}
	if exited, _ := p.Exited(); exited {
		return 0, fmt.Errorf("kill %s: it was stopped for good", name)
	}
	pid := p.PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	return pid, nil
}

// RecoverComponent returns once a component KillComponent crashed (killedPID) runs again:
// PostgreSQL it starts again itself (same port and data); any other it waits for the supervisor
// to have restarted, and for our services also for their readiness check. ctx bounds the wait.
func (r *Region) RecoverComponent(ctx context.Context, name string, killedPID int) error {
	if name == PostgresComponent && r.postgres != nil {
		if err := r.postgres.Restart(ctx); err != nil {
			return fmt.Errorf("recover %s: %w", name, err)
		}
		return nil
	}
	if name == BouncerComponent && r.bouncer != nil {
		return recoverBouncer(ctx, r.bouncer, killedPID)
	}
	p, ok := r.componentProcesses()[name]
	if !ok {
		return fmt.Errorf("recover %s: no such component in this region", name)
	}
	r.mu.Lock()
	var ready func(context.Context) error
	if s, ok := r.services[name]; ok {
		ready = s.ready
	}
	r.mu.Unlock()
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("recover %s: it is down for good (%v)", name, err)
		}
		if pid := p.PID(); pid != killedPID && syscall.Kill(pid, 0) == nil {
			if ready == nil || ready(ctx) == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("recover %s (killed pid %d): %w", name, killedPID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Outage takes a component away for good until the returned restore starts it again: an
// outage of a dependency rather than a crash (which the supervisor would heal in a second).
// It serves the broker ("mosquitto"), the Maestro server ("maestro-server"), a Maestro agent
// ("maestro-agent-mgmt-N"; restore starts it with an empty work store: the agent keeps its
// works in memory and rebuilds them from the server when it connects), a management cluster's
// kube-apiserver ("mgmt-N-kube-apiserver") and "postgres" (killed, as a crash of its host).
func (r *Region) Outage(name string) (restore func(context.Context) error, err error) {
	switch {
	case name == PostgresComponent && r.postgres != nil:
		r.postgres.Kill()
		return func(ctx context.Context) error { return r.RecoverComponent(ctx, name, 0) }, nil
	case r.holders.broker != nil && name == r.holders.broker.Proc.Spec.Name:
		b := r.holders.broker
		// The broker's process only: its forward and socket directory stay, as a host's would
		// (Stop removes both, for good, and Restart starts only the process again).
		b.Proc.Stop(5 * time.Second)
		return func(ctx context.Context) error {
			if err := b.Restart(ctx); err != nil {
				return err
			}
			r.supervise(b.Proc)
			return nil
		}, nil
	case r.maestro != nil && name == r.maestro.Process().Spec.Name:
		ms := r.maestro
		ms.Stop()
		return func(ctx context.Context) error {
			if err := ms.Restart(ctx); err != nil {
				return err
			}
			r.supervise(ms.Process())
			return nil
		}, nil
	}
	for mcName := range r.mgmt {
		if name == mcName+"-kube-apiserver" {
			if err := r.StopManagementAPIServer(mcName); err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { return r.RestartManagementAPIServer(ctx, mcName) }, nil
		}
	}
	r.mu.Lock()
	agents := append([]*mgmtcluster.MaestroAgent(nil), r.holders.agents...)
	r.mu.Unlock()
	for _, a := range agents {
		if name == a.Proc.Spec.Name {
			a.Stop()
			return func(ctx context.Context) error {
				if err := a.Restart(ctx); err != nil {
					return err
				}
				r.supervise(a.Proc)
				return nil
			}, nil
		}
	}
	return nil, fmt.Errorf("outage of %s: not a component this region can take away (have %v)", name, r.Components())
}
