// Package versions owns the OpenShift version catalogue of Cluster Service: which versions each
// channel group offers, whether they are enabled, when they reach end of life, and which upgrade
// edges connect them. It resolves what a customer asks for ("4.19" or "4.19.7") to one release,
// and an upgrade request to one allowed edge.
package versions

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is one OpenShift release in a channel group.
type Version struct {
	// ID is the full version, e.g. "4.19.7".
	ID string `json:"id"`
	// Enabled: the version may be chosen for new clusters, node pools and upgrades.
	Enabled bool `json:"enabled"`
	// EndOfLife is when the version stops being offered; required.
	EndOfLife time.Time `json:"endOfLife"`
	// Upgrades are the versions of the same channel group a cluster on this version may upgrade
	// to directly (the upgrade edges). Each must be newer, and at most one minor ahead unless
	// the group allows minor skips.
	Upgrades []string `json:"upgrades,omitempty"`
}

// ChannelGroup is one channel group's versions.
type ChannelGroup struct {
	// AllowMinorSkips lets edges go more than one minor version ahead (e.g. EUS-to-EUS).
	AllowMinorSkips bool      `json:"allowMinorSkips,omitempty"`
	Versions        []Version `json:"versions"`
}

// Catalogue is the versions of every channel group.
type Catalogue struct {
	ChannelGroups map[string]*ChannelGroup `json:"channelGroups"`
}

//go:embed default.json
var defaultCatalogue []byte

// Default returns the catalogue that ships with Cluster Service.
func Default() (*Catalogue, error) { return Parse(defaultCatalogue) }

// Load reads a catalogue file (JSON); an empty path means Default.
func Load(path string) (*Catalogue, error) {
	if path == "" {
		return Default()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read version catalogue: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

var groupNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Parse decodes and checks a catalogue: every problem names the group and version it is in.
func Parse(b []byte) (*Catalogue, error) {
	var c Catalogue
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode version catalogue: %w", err)
	}
	if len(c.ChannelGroups) == 0 {
		return nil, fmt.Errorf("version catalogue has no channel groups")
	}
	for _, group := range c.groups() {
		g := c.ChannelGroups[group]
		if !groupNameRE.MatchString(group) {
			return nil, fmt.Errorf("channel group name %q must be lowercase letters, digits and '-'", group)
		}
		if g == nil || len(g.Versions) == 0 {
			return nil, fmt.Errorf("channel group %s has no versions", group)
		}
		ids := map[string]bool{}
		for _, v := range g.Versions {
			if _, err := parse(v.ID, 3); err != nil {
				return nil, fmt.Errorf("channel group %s: %w", group, err)
			}
			if ids[v.ID] {
				return nil, fmt.Errorf("channel group %s lists %s twice", group, v.ID)
			}
			if v.EndOfLife.IsZero() {
				return nil, fmt.Errorf("channel group %s: version %s has no endOfLife", group, v.ID)
			}
			ids[v.ID] = true
		}
		for _, v := range g.Versions {
			seen := map[string]bool{}
			for _, to := range v.Upgrades {
				if err := checkEdge(group, g, ids, v.ID, to); err != nil {
					return nil, err
				}
				if seen[to] {
					return nil, fmt.Errorf("channel group %s: upgrade edge %s → %s is listed twice", group, v.ID, to)
				}
				seen[to] = true
			}
		}
	}
	return &c, nil
}

func checkEdge(group string, g *ChannelGroup, ids map[string]bool, from, to string) error {
	if !ids[to] {
		return fmt.Errorf("channel group %s: upgrade edge %s → %s leads to a version the group does not list", group, from, to)
	}
	if c, _ := Compare(to, from); c <= 0 {
		return fmt.Errorf("channel group %s: upgrade edge %s → %s is not an upgrade (a downgrade or the same version)", group, from, to)
	}
	n, ok := MinorsBehind(from, to)
	if !ok {
		return fmt.Errorf("channel group %s: upgrade edge %s → %s changes the major version", group, from, to)
	}
	if n > 1 && !g.AllowMinorSkips {
		return fmt.Errorf("channel group %s: upgrade edge %s → %s skips %d minor versions; set allowMinorSkips on the group to allow that", group, from, to, n-1)
	}
	return nil
}

// usable reports whether v may be chosen at time now.
func usable(v Version, now time.Time) bool {
	return v.Enabled && now.Before(v.EndOfLife)
}

// Groups returns the channel group names, sorted.
func (c *Catalogue) Groups() []string { return c.groups() }

// Versions returns a channel group's versions, oldest first; ok is false for an unknown group.
func (c *Catalogue) Versions(group string) (_ []Version, ok bool) {
	g, ok := c.ChannelGroups[group]
	if !ok {
		return nil, false
	}
	out := slices.Clone(g.Versions)
	sort.Slice(out, func(i, j int) bool { r, _ := Compare(out[i].ID, out[j].ID); return r < 0 })
	return out, true
}

// Get returns one version of a channel group.
func (c *Catalogue) Get(group, id string) (Version, bool) {
	g, ok := c.ChannelGroups[group]
	if !ok {
		return Version{}, false
	}
	for _, v := range g.Versions {
		if v.ID == id {
			return v, true
		}
	}
	return Version{}, false
}

// Resolve returns the release for id in channelGroup at time now: id itself if it is a full
// version that is enabled and not past end of life, or for "X.Y" the newest such X.Y.z. The
// error says what is available, so the customer can correct the request.
func (c *Catalogue) Resolve(channelGroup, id string, now time.Time) (string, error) {
	g, ok := c.ChannelGroups[channelGroup]
	if !ok {
		return "", fmt.Errorf("channel group %q does not exist; use one of %s", channelGroup, strings.Join(c.groups(), ", "))
	}
	want, err := parse(id, 0)
	if err != nil {
		return "", err
	}
	var best []int
	var bestID string
	for _, v := range g.Versions {
		if !usable(v, now) {
			continue
		}
		got, _ := parse(v.ID, 3)
		if !prefix(want, got) {
			continue
		}
		if best == nil || less(best, got) {
			best, bestID = got, v.ID
		}
	}
	if bestID == "" {
		return "", fmt.Errorf("version %s is not available in channel group %s; available: %s", id, channelGroup, strings.Join(c.available(channelGroup, now), ", "))
	}
	return bestID, nil
}

// ResolveUpgrade returns the release an object running from should move to when asked for to
// ("4.20" or "4.20.3") in channelGroup: the newest usable version matching to that an upgrade
// edge of from leads to. It returns from itself when to already names it ("4.19" or "4.19.16"
// on 4.19.16: nothing to do). The
// error is written for the customer: a downgrade, a skipped minor, or no edge, with the
// versions from can upgrade to.
func (c *Catalogue) ResolveUpgrade(channelGroup, from, to string, now time.Time) (string, error) {
	g, ok := c.ChannelGroups[channelGroup]
	if !ok {
		return "", fmt.Errorf("channel group %q does not exist; use one of %s", channelGroup, strings.Join(c.groups(), ", "))
	}
	want, err := parse(to, 0)
	if err != nil {
		return "", err
	}
	cur, err := parse(from, 3)
	if err != nil {
		return "", fmt.Errorf("current version: %w", err)
	}
	if prefix(want, cur) {
		// "4.19" on 4.19.16 is no change: a body that repeats the minor must not start a
		// z-stream upgrade. A patch upgrade names the full version.
		return from, nil
	}
	// Compare what was asked for with the current version at the precision asked.
	if less(want, cur[:len(want)]) {
		return "", fmt.Errorf("cannot downgrade from %s to %s: downgrades are not supported", from, to)
	}
	var edges []string
	if v, ok := c.Get(channelGroup, from); ok {
		edges = v.Upgrades
	}
	var best []int
	var bestID string
	var reachable []string
	for _, e := range edges {
		v, ok := c.Get(channelGroup, e)
		if !ok || !usable(v, now) {
			continue
		}
		reachable = append(reachable, e)
		got, _ := parse(e, 3)
		if prefix(want, got) && (best == nil || less(best, got)) {
			best, bestID = got, e
		}
	}
	if bestID != "" {
		return bestID, nil
	}
	if _, err := c.Resolve(channelGroup, to, now); err != nil {
		return "", err
	}
	if n, ok := MinorsBehind(from, to); ok && n > 1 && !g.AllowMinorSkips {
		return "", fmt.Errorf("cannot upgrade from %s to %s: it skips minor version %d.%d; upgrade to %d.%d first (channel group %s allows %s)",
			from, to, cur[0], cur[1]+1, cur[0], cur[1]+1, channelGroup, orNone(reachable))
	}
	return "", fmt.Errorf("cannot upgrade from %s to %s: channel group %s has no upgrade edge from %s to it; %s can be upgraded to %s",
		from, to, channelGroup, from, from, orNone(reachable))
}

func orNone(vs []string) string {
	if len(vs) == 0 {
		return "no version"
	}
	return strings.Join(vs, ", ")
}

func (c *Catalogue) groups() []string {
	out := make([]string, 0, len(c.ChannelGroups))
	for g := range c.ChannelGroups {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}

func (c *Catalogue) available(group string, now time.Time) []string {
	var out []string
	for _, v := range c.ChannelGroups[group].Versions {
		if usable(v, now) {
			out = append(out, v.ID)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// parse splits "X.Y" or "X.Y.Z" into numbers; parts, when non-zero, is the exact count needed.
func parse(id string, parts int) ([]int, error) {
	fields := strings.Split(id, ".")
	if len(fields) < 2 || len(fields) > 3 || (parts != 0 && len(fields) != parts) {
		return nil, fmt.Errorf("version %q must look like 4.19 or 4.19.7", id)
	}
	out := make([]int, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || f != strconv.Itoa(n) {
			return nil, fmt.Errorf("version %q must look like 4.19 or 4.19.7", id)
		}
		out[i] = n
	}
	return out, nil
}

func prefix(want, got []int) bool {
	for i := range want {
		if want[i] != got[i] {
			return false
		}
	}
	return true
}

func less(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Compare orders two full versions ("4.19.7"): -1, 0 or 1.
func Compare(a, b string) (int, error) {
	pa, err := parse(a, 3)
	if err != nil {
		return 0, err
	}
	pb, err := parse(b, 3)
	if err != nil {
		return 0, err
	}
	switch {
	case less(pa, pb):
		return -1, nil
	case less(pb, pa):
		return 1, nil
	}
	return 0, nil
}

// Minor is the minor version ("4.19") of a version ID in either form a caller may give ("4.19"
// or "4.19.7"); false when id has neither form. It says nothing of whether the version exists.
func Minor(id string) (string, bool) {
	p, err := parse(id, 0)
	if err != nil {
		return "", false
	}
	return strconv.Itoa(p[0]) + "." + strconv.Itoa(p[1]), true
}

// MinorsBehind is how many minor versions a is behind b (negative when ahead); both must share
// the major version, else ok is false.
func MinorsBehind(a, b string) (n int, ok bool) {
	pa, err := parse(a, 0)
	if err != nil {
		return 0, false
	}
	pb, err := parse(b, 0)
	if err != nil || pa[0] != pb[0] {
		return 0, false
	}
	return pb[1] - pa[1], true
}
