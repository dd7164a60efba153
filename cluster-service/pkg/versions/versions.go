// Package versions owns the OpenShift version catalogue of Cluster Service: which versions each
// channel group offers, whether they are enabled, and when they reach end of life. It resolves
// what a customer asks for ("4.19" or "4.19.7") to one release.
package versions

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Version is one OpenShift release in the catalogue.
type Version struct {
	// ID is the full version, e.g. "4.19.7".
	ID      string `json:"id"`
	Enabled bool   `json:"enabled"`
	// EndOfLife is when the version stops being offered for new clusters.
	EndOfLife time.Time `json:"endOfLife"`
}

// Catalogue is the versions of every channel group.
type Catalogue struct {
	ChannelGroups map[string][]Version `json:"channelGroups"`
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
	return Parse(b)
}

// Parse decodes and checks a catalogue.
func Parse(b []byte) (*Catalogue, error) {
	var c Catalogue
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode version catalogue: %w", err)
	}
	if len(c.ChannelGroups) == 0 {
		return nil, fmt.Errorf("version catalogue has no channel groups")
	}
	for group, vs := range c.ChannelGroups {
		seen := map[string]bool{}
		for _, v := range vs {
			if _, err := parse(v.ID, 3); err != nil {
				return nil, fmt.Errorf("channel group %s: %w", group, err)
			}
			if seen[v.ID] {
				return nil, fmt.Errorf("channel group %s lists %s twice", group, v.ID)
			}
			seen[v.ID] = true
		}
	}
	return &c, nil
}

// Resolve returns the release for id in channelGroup at time now: id itself if it is a full
// version that is enabled and not past end of life, or for "X.Y" the newest such X.Y.z. The
// error says what is available, so the customer can correct the request.
func (c *Catalogue) Resolve(channelGroup, id string, now time.Time) (string, error) {
	vs, ok := c.ChannelGroups[channelGroup]
	if !ok {
		return "", fmt.Errorf("channel group %q does not exist; use one of %s", channelGroup, strings.Join(c.groups(), ", "))
	}
	want, err := parse(id, 0)
	if err != nil {
		return "", err
	}
	var best []int
	var bestID string
	for _, v := range vs {
		if !v.Enabled || (!v.EndOfLife.IsZero() && !now.Before(v.EndOfLife)) {
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
	for _, v := range c.ChannelGroups[group] {
		if v.Enabled && (v.EndOfLife.IsZero() || now.Before(v.EndOfLife)) {
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
