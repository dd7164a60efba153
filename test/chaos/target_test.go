package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
)

// target is what a chaos loop kills: the launcher's processes (make run, processes) or the
// pods, containers and containerd of a make deploy region (deployedTarget). The workload, its
// ARM client, the truth it reads and the invariants are the same for both.
type target interface {
	// components are the names the loop may kill.
	components() []string
	// kill kills one component; the victim identifies what it killed.
	kill(ctx context.Context, name string) (victim, error)
	// recover returns once the component runs (and is ready) again after the kill; ctx bounds
	// the wait.
	recover(ctx context.Context, name string, v victim) error
	// downs is the component a kill of name takes down, as the invariants name it: a read that
	// answered 5xx is excused only inside a "frontend" window.
	downs(name string) string
	// restarts are the restarts seen so far, by component, for the kill table.
	restarts(ctx context.Context) (map[string]int, error)
}

// victim is what one kill ended: the PID it killed (0 when none, a pod deleted) and the
// target's own record of it.
type victim struct {
	pid  int
	what any
}

// processes are the launcher's supervised processes (localregion.Region.KillComponent): each
// kill SIGKILLs one's process group, and the supervisor restarts it (PostgreSQL, which it does
// not supervise, RecoverComponent starts again).
type processes struct {
	// postgres: PostgreSQL is killed too (CHAOS_POSTGRES=1).
	postgres bool
}

// components are every component the region lists but the management clusters'
// kube-controller-managers, which the promise does not rest on, and, unless postgres is set,
// PostgreSQL and the PgBouncer the Maestro servers reach it through (a kill of either is a
// restart of Maestro's database: postgresChaos).
func (p processes) components() []string {
	var out []string
	for _, c := range region.Components() {
		database := c == localregion.PostgresComponent || c == localregion.BouncerComponent
		if strings.HasSuffix(c, "-kube-controller-manager") || database && !p.postgres {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (processes) kill(_ context.Context, name string) (victim, error) {
	pid, err := region.KillComponent(name)
	return victim{pid: pid}, err
}

func (processes) recover(ctx context.Context, name string, v victim) error {
	return region.RecoverComponent(ctx, name, v.pid)
}

func (processes) downs(name string) string { return name }

// restarts are region.json's restarts by process name.
func (processes) restarts(context.Context) (map[string]int, error) {
	b, err := os.ReadFile(region.RegionFile())
	if err != nil {
		return nil, fmt.Errorf("read region.json: %w", err)
	}
	var info struct {
		Restarts map[string]int `json:"restarts"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("decode region.json: %w", err)
	}
	return info.Restarts, nil
}
