package maestro_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
)

// TestSpecUpdateWhileAgentWritesStatus reproduces the pinned agent's lost spec update
// (docs/maestro.md, "A spec update the agent loses") and shows the remedy bring it through.
//
// Each round sends two spec updates back to back: the second reaches the agent while it is
// applying the first and writing its status (the work's feedback is watched, so every change
// of the config map is one more status write). In most rounds the config map on the
// management cluster shows the second value within ~100 ms. When the agent's store race hits,
// it never does on its own (the agent keeps applying the older spec it holds); a round that has
// not converged after lostAfter counts as lost, is republished (Client.Republish, what Cluster
// Service's controller does) and must then converge within repairWithin.
//
// The race is rare (about 1 update in 600 here, see docs/maestro.md), so by default four
// writers run only 5 rounds each (seconds) after the republish itself is checked;
// OPENHCP_SPEC_RACE_ROUNDS=<n> per writer is the hunt (150 takes ~2.5 min).
// OPENHCP_SPEC_RACE_NO_REPAIR=1 does not republish and waits up to 7 minutes instead, to
// measure how long the unaided agent takes.
func TestSpecUpdateWhileAgentWritesStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts postgres, mosquitto, maestro server and agent and a kube-apiserver")
	}
	rounds := 5
	if v := os.Getenv("OPENHCP_SPEC_RACE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OPENHCP_SPEC_RACE_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	noRepair := os.Getenv("OPENHCP_SPEC_RACE_NO_REPAIR") == "1"
	const writers = 4
	const lostAfter, repairWithin = 5 * time.Second, 10 * time.Second

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	r := startRegion(t, ctx, regionOptions{})
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := maestro.New(ctx, maestro.Config{GRPCAddr: r.server.GRPCAddr, RESTURL: r.server.RESTURL}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// Each writer has its own work: a config map in "default" with a padded payload (as large
	// as a cluster's work, which widens the agent's race window) and watched feedback.
	work := func(name, answer string) *workv1.ManifestWork {
		ssa := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: "work-agent-cluster-service", Force: true}}
		return &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: workv1.ManifestWorkSpec{
				Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
					manifest(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
						ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
						Data:       map[string]string{"answer": answer, "padding": strings.Repeat("x", 30_000)}}),
				}},
				ManifestConfigs: []workv1.ManifestConfigOption{{
					ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: name, Namespace: "default"},
					UpdateStrategy:     ssa,
					FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType,
						JsonPaths: []workv1.JsonPath{{Name: "answer", Path: ".data.answer"}}}},
					FeedbackScrapeType: workv1.FeedbackWatchType,
				}},
			},
		}
	}
	answer := func(name string) string {
		cm, err := r.kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return cm.Data["answer"]
	}
	// until polls the config map until it holds want or d has passed.
	until := func(name, want string, d time.Duration) (time.Duration, bool) {
		start := time.Now()
		for time.Since(start) < d {
			if answer(name) == want {
				return time.Since(start), true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start), false
	}

	// republish is the controller's remedy in small: republish the work and wait for done; a
	// republish is itself a spec update, which the same race can lose (the subtest below met
	// that in CI: a republish right after the agent's first status, while it was still writing
	// watched feedback), so it republishes again as the controller does, up to three times.
	// It returns the generation the last republish was sent from.
	republish := func(name string, done func() bool) (int64, error) {
		const attempts = 3
		for attempt := 1; ; attempt++ {
			from, err := client.Republish(ctx, consumer, name)
			if err != nil {
				return 0, err
			}
			if done() {
				return from, nil
			}
			if attempt == attempts {
				return from, fmt.Errorf("not done %s after each of %d republishes (the last from generation %d)", repairWithin, attempts, from)
			}
			t.Logf("%s: the republish of generation %d was lost too; republishing again (attempt %d)", name, from, attempt+1)
		}
	}

	type result struct {
		lost, repaired int
		worst          time.Duration
		err            error
	}
	writer := func(name string, rounds int) (res result) {
		if err := client.Apply(ctx, consumer, work(name, "start")); err != nil {
			return result{err: err}
		}
		if _, ok := until(name, "start", 2*time.Minute); !ok {
			return result{err: fmt.Errorf("%s: first spec never applied", name)}
		}
		for i := range rounds {
			first, second := fmt.Sprintf("r%d-a", i), fmt.Sprintf("r%d-b", i)
			if err := client.Apply(ctx, consumer, work(name, first)); err != nil {
				return result{err: err}
			}
			// Let the agent apply the first and start writing its status.
			time.Sleep(time.Duration(i%5) * 15 * time.Millisecond)
			sentAt := time.Now()
			if err := client.Apply(ctx, consumer, work(name, second)); err != nil {
				return result{err: err}
			}
			took, ok := until(name, second, lostAfter)
			if !ok {
				res.lost++
				got, _ := client.Get(ctx, consumer, name)
				t.Logf("%s round %d: %q not applied after %s (config map has %q; work generation %d, status written for generation %d)",
					name, i, second, lostAfter, answer(name), got.GetGeneration(), maestro.StatusGeneration(got))
				if noRepair {
					took, ok = until(name, second, 7*time.Minute)
					t.Logf("%s round %d: unaided agent: converged=%v after %s more", name, i, ok, took.Round(time.Second))
					continue
				}
				gen, err := republish(name, func() bool { _, ok := until(name, second, repairWithin); return ok })
				if err != nil {
					return result{err: fmt.Errorf("%s round %d: %q: %w", name, i, second, err)}
				}
				res.repaired++
				took = time.Since(sentAt)
				t.Logf("%s round %d: republished generation %d; applied %s after it was sent", name, i, gen, took.Round(time.Millisecond))
			}
			res.worst = max(res.worst, took)
		}
		return res
	}

	t.Run("a_republish_is_applied_and_reported_and_not_repeated", func(t *testing.T) {
		const name = "republish"
		if err := client.Apply(ctx, consumer, work(name, "v1")); err != nil {
			t.Fatal(err)
		}
		if _, ok := until(name, "v1", 2*time.Minute); !ok {
			t.Fatal("work never applied")
		}
		// reported waits until Maestro holds a status written for the work's current generation.
		reported := func() (generation, status int64, ok bool) {
			deadline := time.Now().Add(repairWithin)
			for {
				got, err := client.Get(ctx, consumer, name)
				if err != nil {
					t.Fatal(err)
				}
				generation, status = got.Generation, maestro.StatusGeneration(got)
				if generation == status {
					return generation, status, true
				}
				if time.Now().After(deadline) {
					return generation, status, false
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		before, err := client.Get(ctx, consumer, name)
		if err != nil {
			t.Fatal(err)
		}
		if gen, status, ok := reported(); !ok || gen != before.Generation {
			t.Fatalf("before republishing: generation %d, status for %d; want both %d", gen, status, before.Generation)
		}
		start := time.Now()
		from, err := republish(name, func() bool { _, _, ok := reported(); return ok })
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := client.Get(ctx, consumer, name); got.Generation != from+1 || from < before.Generation {
			t.Fatalf("after republishing from generation %d: generation %d; want %d, not before %d", from, got.Generation, from+1, before.Generation)
		}
		t.Logf("republish of generation %d: the agent reported on generation %d %s later", from, from+1, time.Since(start).Round(time.Millisecond))
		got, _ := client.Get(ctx, consumer, name)
		if got.Annotations[maestro.AnnotationRepublishedFrom] != strconv.FormatInt(from, 10) || !reflect.DeepEqual(got.Spec, before.Spec) {
			t.Errorf("republished work: annotations %v, spec changed %v", got.Annotations, !reflect.DeepEqual(got.Spec, before.Spec))
		}
		// Cluster Service restarted: it applies the unchanged spec once more, which sends nothing.
		if err := client.Apply(ctx, consumer, work(name, "v1")); err != nil {
			t.Fatal(err)
		}
		if got, _ := client.Get(ctx, consumer, name); got.Generation != from+1 {
			t.Errorf("Apply of the unchanged spec after a republish: generation %d, want %d", got.Generation, from+1)
		}
		// A new spec ends the episode: the mark goes with the old annotations.
		if err := client.Apply(ctx, consumer, work(name, "v2")); err != nil {
			t.Fatal(err)
		}
		if got, _ := client.Get(ctx, consumer, name); got.Generation != from+2 || got.Annotations[maestro.AnnotationRepublishedFrom] != "" {
			t.Errorf("Apply of a new spec: generation %d, annotations %v; want %d without %s", got.Generation, got.Annotations, from+2, maestro.AnnotationRepublishedFrom)
		}
		if _, ok := until(name, "v2", repairWithin); !ok {
			// The race again (a new spec while the agent writes status): the remedy repairs it.
			t.Logf("v2 not applied after %s; republishing", repairWithin)
			if _, err := republish(name, func() bool { _, ok := until(name, "v2", repairWithin); return ok }); err != nil {
				t.Errorf("v2: %v", err)
			}
		}
	})

	results := make(chan result, writers)
	for w := range writers {
		go func() { results <- writer(fmt.Sprintf("race-%d", w), rounds) }()
	}
	var total result
	for range writers {
		res := <-results
		if res.err != nil {
			t.Fatal(res.err)
		}
		total.lost += res.lost
		total.repaired += res.repaired
		total.worst = max(total.worst, res.worst)
	}
	t.Logf("%d writers × %d rounds: %d updates lost by the agent (%d repaired by a republish); slowest round converged in %s",
		writers, rounds, total.lost, total.repaired, total.worst.Round(time.Millisecond))
	agentConflicts(t, r)
}

// agentConflicts logs the agent's versionCompare conflicts (the line CI showed) and the
// statuses Maestro's server disregarded as written for an older generation (what a lost update
// leaves behind).
func agentConflicts(t *testing.T, r region) {
	t.Helper()
	for pattern, line := range map[string]string{
		"maestro-agent*.log":  "the resource version of the work is outdated",
		"maestro-server*.log": "Updating status for stale resource",
	} {
		matches, _ := filepath.Glob(filepath.Join(r.logDir, pattern))
		for _, m := range matches {
			b, err := os.ReadFile(m)
			if err != nil {
				continue
			}
			t.Logf("%s: %d %q lines", filepath.Base(m), strings.Count(string(b), line), line)
		}
	}
}
