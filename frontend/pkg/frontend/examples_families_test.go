package frontend

import (
	"sort"
	"strconv"
	"strings"
	"testing"
)

// drivenFamilies are the example families (the operationId before "_") and the test that drives
// every example of each; each of those tests fails on an example of its family it does not know.
var drivenFamilies = map[string]string{
	"HcpOpenShiftClusters":        "TestSpecExamplesClusters, TestSpecExamplesCredentials",
	"NodePools":                   "TestSpecExamplesNodePools",
	"ExternalAuths":               "TestSpecExamplesExternalAuths",
	"HcpOpenShiftVersions":        "TestSpecExamplesVersions",
	"HcpOperatorIdentityRoleSets": "TestSpecExamplesRoleSets",
	"Operations":                  "TestSpecExamplesOperations",
}

// TestEveryExampleFamilyIsDriven makes sure no example of the specification falls outside the
// families the conformance tests drive: a new family fails here until a test drives it.
func TestEveryExampleFamilyIsDriven(t *testing.T) {
	seen := map[string]int{}
	for _, ver := range specVersions {
		for _, x := range loadExamples(t, ver, "") {
			f := x.file
			family, _, _ := strings.Cut(f, "_")
			seen[family]++
			if _, ok := drivenFamilies[family]; !ok {
				t.Errorf("%s/%s: example family %s is driven by no test", ver, f, family)
			}
		}
	}
	var names []string
	for f, n := range seen {
		names = append(names, f+"="+strconv.Itoa(n))
	}
	sort.Strings(names)
	t.Logf("example files per family over %d api-versions: %s", len(specVersions), strings.Join(names, " "))
}
