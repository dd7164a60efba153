package arm

import (
	"fmt"
	"regexp"
	"time"
)

// APIVersion is a parsed api-version: a date with an optional suffix such as "preview".
type APIVersion struct {
	Date   time.Time
	Suffix string
	raw    string
}

var apiVersionRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:-([a-z][a-z0-9]{0,31}))?$`)

// ParseAPIVersion parses YYYY-MM-DD or YYYY-MM-DD-<suffix> (lowercase suffix, e.g. preview).
// Whether the version is served is the router's business; this only checks the form.
func ParseAPIVersion(s string) (APIVersion, error) {
	m := apiVersionRE.FindStringSubmatch(s)
	if m == nil {
		return APIVersion{}, fmt.Errorf("api-version %q is not of the form YYYY-MM-DD[-suffix]", s)
	}
	d, err := time.Parse(time.DateOnly, m[1])
	if err != nil {
		return APIVersion{}, fmt.Errorf("api-version %q has an invalid date: %w", s, err)
	}
	return APIVersion{Date: d, Suffix: m[2], raw: s}, nil
}

func (v APIVersion) String() string { return v.raw }

// Preview reports whether the version is a preview.
func (v APIVersion) Preview() bool { return v.Suffix == "preview" }

// Before orders versions by date, then a suffixed version before the plain one of the same date.
func (v APIVersion) Before(o APIVersion) bool {
	if !v.Date.Equal(o.Date) {
		return v.Date.Before(o.Date)
	}
	return v.Suffix != "" && o.Suffix == ""
}
