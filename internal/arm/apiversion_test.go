package arm

import "testing"

func TestParseAPIVersion(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		preview bool
	}{
		{"2024-06-10-preview", true, true},
		{"2024-06-10", true, false},
		{"2025-12-23-beta", true, false},
		{"2024-13-01", false, false},
		{"2024-02-30", false, false},
		{"2.0", false, false},
		{"", false, false},
		{"2024-06-10-Preview", false, false},
		{"2024-06-10-", false, false},
		{" 2024-06-10", false, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			v, err := ParseAPIVersion(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseAPIVersion(%q) error = %v, want ok=%v", tc.in, err, tc.ok)
			}
			if tc.ok && (v.Preview() != tc.preview || v.String() != tc.in) {
				t.Fatalf("ParseAPIVersion(%q) = %+v", tc.in, v)
			}
		})
	}
}

func TestAPIVersionBefore(t *testing.T) {
	a, _ := ParseAPIVersion("2024-06-10-preview")
	b, _ := ParseAPIVersion("2024-06-10")
	c, _ := ParseAPIVersion("2025-01-01-preview")
	if !a.Before(b) || b.Before(a) || !b.Before(c) || c.Before(a) {
		t.Fatal("Before does not order by date then preview-first")
	}
}

func FuzzParseAPIVersion(f *testing.F) {
	for _, s := range []string{"2024-06-10-preview", "2024-06-10", "2.0", "9999-99-99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseAPIVersion(s)
		if err != nil {
			return
		}
		if v.String() != s || v.Date.Format("2006-01-02") != s[:10] {
			t.Fatalf("ParseAPIVersion(%q) = %+v", s, v)
		}
	})
}
