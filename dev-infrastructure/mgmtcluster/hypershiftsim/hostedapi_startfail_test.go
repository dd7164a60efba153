package hypershiftsim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/hypershiftsim"
)

// TestHostedAPIServerThatCannotStartSaysWhy: a hosted kube-apiserver that exits at once (a bad
// flag, its port taken) or cannot be run at all (its binary missing) turns HostedAPIServer
// False StartFailed with the failure in the message, and the sim keeps trying.
func TestHostedAPIServerThatCannotStartSaysWhy(t *testing.T) {
	bin := t.TempDir()
	// Each run appends one line to runs, then fails as kube-apiserver does on a bad flag.
	runs := filepath.Join(bin, "runs")
	exitsAtOnce := filepath.Join(bin, "kube-apiserver-exits")
	script := "#!/bin/sh\necho run >> " + runs + "\necho 'starting'\necho 'Error: unknown flag: --no-such-flag' >&2\nexit 3\n"
	if err := os.WriteFile(exitsAtOnce, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		path        string
		wantMessage []string
		wantRetries bool
	}{
		{name: "apiserver_exiting_at_once_reports_its_exit_status_and_last_log_line", path: exitsAtOnce,
			wantMessage: []string{"exit status 3", "Error: unknown flag: --no-such-flag"}, wantRetries: true},
		{name: "missing_binary_reports_the_start_error", path: filepath.Join(bin, "no-such-kube-apiserver"),
			wantMessage: []string{"no-such-kube-apiserver", "no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startHostedEnv(t, 1, func(o *hypershiftsim.HostedAPIOptions) { o.APIServerPath = tt.path })
			ctx := context.Background()
			ns := "start-fails"
			if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			key := types.NamespacedName{Namespace: ns, Name: "broken"}
			if err := e.c.Create(ctx, hypershiftsim.ExampleHostedCluster(ns, key.Name, image4197)); err != nil {
				t.Fatal(err)
			}
			hc := e.hostedCluster(t, key, func(hc *hyperv1.HostedCluster) error {
				if err := condIs(hc, hypershiftsim.HostedAPIServerCondition, metav1.ConditionFalse, hypershiftsim.ReasonHostedAPIServerStartFailed); err != nil {
					return err
				}
				c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftsim.HostedAPIServerCondition)
				for _, want := range tt.wantMessage {
					if !strings.Contains(c.Message, want) {
						return fmt.Errorf("HostedAPIServer message %q does not say %q", c.Message, want)
					}
				}
				return nil
			})
			if err := condIs(hc, string(hyperv1.HostedClusterAvailable), metav1.ConditionFalse, ""); err != nil {
				t.Error(err)
			}
			if !tt.wantRetries {
				return
			}
			poll(t, 3*time.Minute, "the kube-apiserver started again", func() error {
				b, err := os.ReadFile(runs)
				if n := strings.Count(string(b), "run\n"); n < 2 {
					return fmt.Errorf("%d runs (%v)", n, err)
				}
				return nil
			})
		})
	}
}
