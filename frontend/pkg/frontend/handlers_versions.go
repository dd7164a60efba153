package frontend

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
)

const versionsPath = operationsScope + "/hcpopenshiftversions"

// versionRoutes serves hcpOpenShiftVersions from Cluster Service's version catalogue
// (Versions.ListVersions). It is registered only when Config.Versions is set.
func (s *Server) versionRoutes() {
	if s.cfg.Versions == nil {
		return
	}
	s.handle("GET "+versionsPath, s.listVersions, resourceRoute)
	s.handle("GET "+versionsPath+"/{versionName}", s.getVersion, resourceRoute)
}

// groupPreference orders channel groups when a version is in several: ARM names a version
// once, under its most conservative group.
var groupPreference = map[string]int{"stable": 0, "eus": 1, "fast": 2, "candidate": 3, "nightly": 4}

type versionProperties struct {
	ChannelGroup       string `json:"channelGroup"`
	Enabled            bool   `json:"enabled"`
	EndOfLifeTimestamp string `json:"endOfLifeTimestamp"`
}

type versionResource struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Properties versionProperties `json:"properties"`
}

// catalogue lists the region's versions, one per version ID, ordered by ID (numerically).
func (s *Server) catalogue(r *http.Request) ([]*csv1.Version, error) {
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	resp, err := s.cfg.Versions.ListVersions(ctx, &csv1.ListVersionsRequest{})
	if err != nil {
		return nil, err
	}
	byID := map[string]*csv1.Version{}
	for _, v := range resp.GetVersions() {
		cur, ok := byID[v.GetId()]
		if !ok || rank(v.GetChannelGroup()) < rank(cur.GetChannelGroup()) {
			byID[v.GetId()] = v
		}
	}
	out := make([]*csv1.Version, 0, len(byID))
	for _, v := range byID {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return versionLess(out[i].GetId(), out[j].GetId()) })
	return out, nil
}

func rank(group string) int {
	if n, ok := groupPreference[group]; ok {
		return n
	}
	return len(groupPreference)
}

// versionLess orders "4.9.1" before "4.10.0".
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		if len(pa[i]) != len(pb[i]) {
			return len(pa[i]) < len(pb[i])
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

func (s *Server) checkVersionLocation(r *http.Request) error {
	if l := r.PathValue("location"); normalizeLocation(l) != s.cfg.Location {
		return cloudError(http.StatusNotFound, arm.CodeNotFound, "",
			"The location '%s' is not served by this endpoint, which serves '%s'.", l, s.cfg.Location)
	}
	return nil
}

func (s *Server) versionResource(r *http.Request, v *csv1.Version) versionResource {
	id := locationScope(r) + "/hcpOpenShiftVersions/" + v.GetId() // as the client spelled the path
	return versionResource{ID: id, Name: v.GetId(), Type: "Microsoft.RedHatOpenShift/hcpOpenShiftVersions", Properties: versionProperties{
		ChannelGroup: v.GetChannelGroup(), Enabled: v.GetEnabled(),
		EndOfLifeTimestamp: v.GetEndOfLife().AsTime().UTC().Format(time.RFC3339),
	}}
}

// listVersions answers HcpOpenShiftVersions_List: every version of the catalogue in one page.
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkVersionLocation(r); err != nil {
		return err
	}
	vs, err := s.catalogue(r)
	if err != nil {
		return err
	}
	out := struct {
		Value []versionResource `json:"value"`
	}{Value: []versionResource{}}
	for _, v := range vs {
		out.Value = append(out.Value, s.versionResource(r, v))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// getVersion answers HcpOpenShiftVersions_Get.
func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkVersionLocation(r); err != nil {
		return err
	}
	name := r.PathValue("versionName")
	vs, err := s.catalogue(r)
	if err != nil {
		return err
	}
	for _, v := range vs {
		if v.GetId() == name {
			b, err := json.Marshal(s.versionResource(r, v))
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, b)
			return nil
		}
	}
	return cloudError(http.StatusNotFound, arm.CodeResourceNotFound, "",
		"The OpenShift version '%s' is not offered in location '%s'.", name, s.cfg.Location)
}
