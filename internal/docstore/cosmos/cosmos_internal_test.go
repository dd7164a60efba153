package cosmos

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

func TestSessionLSN(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  int64
	}{
		{"0:-1#12", 12},           // single region
		{"0:1#1234#3=1200", 1234}, // multi-region: the global LSN comes first
		{"", 0},                   // emulators that send none
		{"0:-1", 0},               // no LSN part
		{"0:-1#notanumber", 0},    // garbage
	} {
		if got := sessionLSN(tc.token); got != tc.want {
			t.Errorf("sessionLSN(%q) = %d, want %d", tc.token, got, tc.want)
		}
	}
}

func TestCosmosIDEscapingIsReversibleAndCollisionFree(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"a/b", "a%2Fb", `a\b`, "a?b", "a#b", "a%b", "/subscriptions/x/resourcegroups/rg"} {
		c := cosmosID(id)
		for _, bad := range []string{"/", `\`, "?", "#"} {
			if strings.Contains(c, bad) {
				t.Errorf("cosmosID(%q) = %q still holds %q", id, c, bad)
			}
		}
		if other, ok := seen[c]; ok {
			t.Errorf("cosmosID(%q) = cosmosID(%q) = %q", id, other, c)
		}
		seen[c] = id
	}
}

func TestCheckContainer(t *testing.T) {
	on := int32(-1)
	good := azcosmos.ContainerProperties{PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/partitionKey"}}, DefaultTimeToLive: &on}
	if err := checkContainer(&good); err != nil {
		t.Fatalf("good container refused: %v", err)
	}
	wrongKey := good
	wrongKey.PartitionKeyDefinition.Paths = []string{"/id"}
	if checkContainer(&wrongKey) == nil {
		t.Fatal("container partitioned by /id accepted")
	}
	noTTL := good
	noTTL.DefaultTimeToLive = nil
	if checkContainer(&noTTL) == nil {
		t.Fatal("container with TTL off accepted")
	}
}
