// Package chaos drives a mixed ARM workload through a local region while components crash, and
// takes whole dependencies away for a minute at a time, then proves the promise: no lost and no
// duplicated cluster or node pool, and every operation ends correctly (package invariant). See
// docs/reliability.md.
package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/localregion"
	"github.com/openhcp/openhcp/dev-infrastructure/localregion/deploy"
)

// region is shared by the tests of this package, one at a time: bringing it up takes tens of
// seconds and the machine has room for one region.
var (
	region *localregion.Region
	// seed drives every random choice of the run: CHAOS_SEED=<n> replays one.
	seed uint64
	// logDir keeps the region's logs; a failed run leaves them there, and so does any run with
	// CHAOS_KEEP_LOGS=1 (to build a timeline from a passing run).
	logDir string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "CHAOS_SEED=%q: want an unsigned integer\n", v)
			return 1
		}
		seed = n
	}
	fmt.Fprintf(os.Stderr, "chaos seed %d (replay with CHAOS_SEED=%d)\n", seed, seed)
	dir, err := os.MkdirTemp("", "openhcp-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Under root, PostgreSQL runs as the postgres user and must traverse this directory.
	_ = os.Chmod(dir, 0o755)
	if deployMode() {
		return runDeployed(m, dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	start := time.Now()
	region, err = localregion.Up(ctx, localregion.Config{
		StateDir:           dir,
		ManagementClusters: 2,
		// Status only: a real kube-apiserver per hosted cluster is not what this run proves,
		// and hundreds of creates would each start one.
		Sim:           localregion.SimConfig{AvailableDelay: 2 * time.Second, DeleteDelay: time.Second, HostedAPIServers: -1},
		BackendResync: 5 * time.Second,
		Progress:      os.Stderr,
	})
	logDir = dir + "/logs"
	if err != nil {
		fmt.Fprintf(os.Stderr, "bring up the region: %v\nlogs kept in %s\n", err, logDir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "region up in %s; logs in %s\n", time.Since(start).Round(time.Millisecond), logDir)
	code := m.Run()
	region.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "chaos: FAILED with seed %d; every log is kept in %s\n", seed, logDir)
		return code
	}
	if os.Getenv("CHAOS_KEEP_LOGS") == "1" {
		fmt.Fprintf(os.Stderr, "chaos: passed with seed %d; CHAOS_KEEP_LOGS=1 keeps every log in %s\n", seed, logDir)
		return code
	}
	_ = os.RemoveAll(dir)
	return code
}

// runDeployed runs the tests against a make deploy region (CHAOS_DEPLOY=1) and tears it down
// after them, or on SIGINT or SIGTERM: the node must not outlive the run.
func runDeployed(m *testing.M, dir string) int {
	// The image builds alone have taken 17 minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	up := make(chan *deploy.Region, 1)
	var upErr error
	start := time.Now()
	go func() {
		d, err := upDeployed(ctx, dir)
		upErr = err
		up <- d
	}()
	select {
	case deployed = <-up:
	case s := <-sig:
		// Up stops what it started when its context ends.
		fmt.Fprintf(os.Stderr, "chaos: %v while bringing up the region; stopping it\n", s)
		cancel()
		<-up
		return 1
	}
	logDir = dir + "/logs"
	if upErr != nil {
		fmt.Fprintf(os.Stderr, "bring up the deployed region: %v\nlogs kept in %s\n", upErr, logDir)
		return 1
	}
	region = deployed.Region
	fmt.Fprintf(os.Stderr, "deployed region up in %s; logs in %s\n", time.Since(start).Round(time.Millisecond), logDir)
	go func() {
		s, ok := <-sig
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "chaos: %v; tearing the deployed region down (seed %d)\n", s, seed)
		deployed.Stop()
		os.Exit(1)
	}()
	code := m.Run()
	signal.Stop(sig)
	// The pods' logs go with the node: keep them beside the host processes' ones.
	if err := deployed.SaveLogs(context.Background(), logDir); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: save the pods' logs: %v\n", err)
	}
	deployed.Stop()
	if code != 0 || os.Getenv("CHAOS_KEEP_LOGS") == "1" {
		fmt.Fprintf(os.Stderr, "chaos: deployed region torn down; seed %d; every log is kept in %s\n", seed, logDir)
		return code
	}
	fmt.Fprintf(os.Stderr, "chaos: deployed region torn down; seed %d\n", seed)
	_ = os.RemoveAll(dir)
	return code
}

// rng is a test's own random source, derived from the run's seed and the test's name, so a
// replay makes the same choices in each test whatever ran before it.
func rng(t *testing.T) *rand.Rand {
	var h uint64 = 14695981039346656037
	for _, c := range t.Name() {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(seed, h))
}
