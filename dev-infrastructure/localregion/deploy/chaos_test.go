package deploy

import (
	"encoding/json"
	"math"
	"testing"
)

// testPod is a pod of deployment's ReplicaSet with one container.
func testPod(t *testing.T, name, uid, owner string, ready, deleting bool, restarts int) pod {
	t.Helper()
	del := ""
	if deleting {
		del = `"deletionTimestamp": "2026-11-27T08:00:00Z",`
	}
	var p pod
	doc := `{"metadata": {"name": "` + name + `", "uid": "` + uid + `", ` + del + `
		"ownerReferences": [{"kind": "ReplicaSet", "name": "` + owner + `"}]},
		"spec": {"containers": [{"name": "main"}]},
		"status": {"phase": "Running", "containerStatuses": [{"name": "main", "containerID": "containerd://abc",
			"ready": ` + map[bool]string{true: "true", false: "false"}[ready] + `, "restartCount": ` + string(rune('0'+restarts)) + `}]}}`
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecoveredWaitsForAReadyPodThatIsNotTheVictim(t *testing.T) {
	deleted := Victim{Pod: "frontend-7d-a", UID: "old", Restarts: math.MaxInt}
	killed := Victim{Pod: "frontend-7d-a", UID: "old", Restarts: 1, PID: 42}
	for _, tc := range []struct {
		name string
		pods []pod
		v    Victim
		want bool
	}{
		{"deleted pod still listed, terminating; its replacement Ready", []pod{
			testPod(t, "frontend-7d-a", "old", "frontend-7d", true, true, 0),
			testPod(t, "frontend-7d-b", "new", "frontend-7d", true, false, 0)}, deleted, true},
		{"replacement not Ready yet", []pod{testPod(t, "frontend-7d-b", "new", "frontend-7d", false, false, 0)}, deleted, false},
		{"no pod at all", nil, deleted, false},
		{"the deleted pod, Ready, not yet marked for deletion", []pod{testPod(t, "frontend-7d-a", "old", "frontend-7d", true, false, 0)}, deleted, false},
		{"killed container not yet seen exited: same restarts", []pod{testPod(t, "frontend-7d-a", "old", "frontend-7d", true, false, 1)}, killed, false},
		{"killed container restarted but not Ready", []pod{testPod(t, "frontend-7d-a", "old", "frontend-7d", false, false, 2)}, killed, false},
		{"killed container restarted and Ready", []pod{testPod(t, "frontend-7d-a", "old", "frontend-7d", true, false, 2)}, killed, true},
		{"after a containerd restart: every pod Ready", []pod{testPod(t, "frontend-7d-a", "old", "frontend-7d", true, false, 0)}, Victim{}, true},
		{"after a containerd restart: a pod not Ready", []pod{
			testPod(t, "frontend-7d-a", "old", "frontend-7d", true, false, 0),
			testPod(t, "frontend-7d-b", "new", "frontend-7d", false, false, 0)}, Victim{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recovered(tc.pods, tc.v); got != tc.want {
				t.Errorf("recovered = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOwnedByKeepsOnlyTheDeploymentsPods(t *testing.T) {
	all := []pod{
		testPod(t, "backend-5f-x", "1", "backend-5f", true, false, 0),
		testPod(t, "backend-worker-9c-y", "2", "backend-worker-9c", true, false, 0),
		testPod(t, "monitor-3a-z", "3", "monitor-3a", true, false, 0),
	}
	got := ownedBy(all, "backend")
	if len(got) != 1 || got[0].Metadata.Name != "backend-5f-x" {
		t.Errorf("ownedBy(backend) = %v, want only backend-5f-x", got)
	}
}
