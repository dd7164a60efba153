package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// The fleet page lists one page of clusters and links to the next, while its counts cover the
// whole fleet: a region of 20,000 clusters is not one response.
func TestPortalFleetPagesThroughTheClusters(t *testing.T) {
	e := start(t, func(c *Config) { c.PortalPageSize = 2 })
	ctx := context.Background()
	const n = 5
	for i := range n {
		arm := fmt.Sprintf("/subscriptions/%s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/page%d", testSub, i)
		_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{Id: fmt.Sprintf("%031d%d", 0, i), ArmResourceId: arm, Spec: &csv1.ClusterSpec{
			VersionId: "4.19.17",
			Azure: &csv1.AzureSpec{Location: "eastus", SubscriptionId: testSub, ManagedResourceGroup: "mrg",
				SubnetId:               "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s",
				NetworkSecurityGroupId: "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
		}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	row := regexp.MustCompile(`<tr><td><a href="/portal/clusters/[0-9a-f]+">page\d</a>`)
	next := regexp.MustCompile(`<a id="next-page" href="/portal/\?pageToken=([^"]+)">`)
	total := regexp.MustCompile(`<td>` + fmt.Sprint(n) + `</td></tr>`)
	seen, path := 0, "/portal/"
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatalf("more than %d pages for %d clusters", n, n)
		}
		code, _, body := e.call(t, "bob", "GET", path, "")
		if code != 200 {
			t.Fatalf("%s: %d %.300s", path, code, body)
		}
		rows := len(row.FindAllString(string(body), -1))
		if rows > 2 {
			t.Fatalf("%s lists %d clusters, want at most the page size 2", path, rows)
		}
		if !total.Match(body) {
			t.Errorf("%s: the counts do not cover the fleet (no total of %d)", path, n)
		}
		seen += rows
		m := next.FindSubmatch(body)
		if m == nil {
			break
		}
		path = "/portal/?pageToken=" + strings.ReplaceAll(string(m[1]), "&amp;", "&")
	}
	if seen != n {
		t.Fatalf("the pages listed %d clusters in all, want %d", seen, n)
	}
	if code, _, _ := e.call(t, "bob", "GET", "/portal/?colour=red", ""); code != 400 {
		t.Fatalf("an unknown parameter answered %d, want 400", code)
	}
}
