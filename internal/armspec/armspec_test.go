package armspec

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// wantVersions are the api-versions the RP serves; each must be in the vendored tree, with its
// openapi.json and examples, or this fails (it never skips: a clone tests its own contract).
var wantVersions = []string{"2024-06-10-preview", "2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"}

func TestVendoredSpecIsComplete(t *testing.T) {
	if got := strings.Join(Versions(), " "); got != strings.Join(wantVersions, " ") {
		t.Fatalf("vendored api-versions %q, want %q", got, wantVersions)
	}
	for _, v := range wantVersions {
		s, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Operations()) < 20 {
			t.Errorf("%s: only %d operations", v, len(s.Operations()))
		}
		if _, err := Examples(v, "HcpOpenShiftClusters_CreateOrUpdate"); err != nil {
			t.Error(err)
		}
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(checksums), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		want[name] = sum
	}
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		switch sum, ok := want[p]; {
		case !ok:
			t.Errorf("%s is vendored but not in SHA256SUMS (README.md says how to update it)", p)
		case sum != hex.EncodeToString(h[:]):
			t.Errorf("%s differs from its SHA256SUMS entry: edited by hand?", p)
		}
		delete(want, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		t.Errorf("%s is in SHA256SUMS but missing from spec/", p)
	}
	if _, err := Load("2020-01-01"); err == nil {
		t.Fatal("an api-version the tree does not have loads")
	}
	if err := ValidateCommon("NoSuchDefinition", []byte(`{}`)); err == nil || errors.As(err, new(Violations)) {
		t.Fatalf("a missing definition is %v, want a spec error", err)
	}
}

// exampleDefects are mismatches of the spec's own example responses with its schema: an
// example response's violation at a path ending in path, with msg in it, in an example file
// starting with file. The RP's answers to these operations are validated without exception.
var exampleDefects = []struct{ file, path, msg string }{
	// The generated examples echo a random string as the extensible enum's value.
	{"ExternalAuths_", "claim.mappings.username.prefixPolicy", "is not one of [None Prefix NoPrefix]"},
	// Before 2026-09-01-preview the examples answer {} although kubeconfig is required.
	{"HcpOpenShiftClusters_RequestAdminCredential", "kubeconfig", "required property missing"},
}

// TestSpecExamplesValidate validates every response of every example against its operation:
// the validator must accept what the spec's authors wrote, or it is wrong.
func TestSpecExamplesValidate(t *testing.T) {
	seen := make([]int, len(exampleDefects))
	for _, v := range wantVersions {
		s, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		xs, err := Examples(v, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range xs {
			for code, r := range x.Responses {
				key := v + "/" + x.File + " " + code
				status, err := strconv.Atoi(code)
				if err != nil {
					t.Fatalf("%s: status %q", key, code)
				}
				err = s.ValidateResponse(x.OperationID, status, nil, r.Body)
				if err == nil {
					continue
				}
				var vs Violations
				if !errors.As(err, &vs) {
					t.Fatalf("%s: %v", key, err)
				}
			violations:
				for _, viol := range vs {
					for i, d := range exampleDefects {
						if strings.HasPrefix(x.File, d.file) && strings.HasSuffix(viol.Path, d.path) && strings.Contains(viol.Message, d.msg) {
							seen[i]++
							continue violations
						}
					}
					t.Errorf("%s (%s): %v", key, x.OperationID, viol)
				}
			}
		}
	}
	for i, d := range exampleDefects {
		if seen[i] == 0 {
			t.Errorf("example defect %+v no longer occurs; remove it", d)
		}
	}
}

// TestValidatorRejects checks the validator catches what it claims to, with the JSON path.
func TestValidatorRejects(t *testing.T) {
	s, err := Load("2026-09-01-preview")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"unknown_property":        {`{"location":"x","properties":{"bogus":1}}`, "properties.bogus: property not in the schema"},
		"enum":                    {`{"location":"x","properties":{"cryptoRestrictions":"Weak"}}`, "properties.cryptoRestrictions: Weak is not one of"},
		"required_location":       {`{}`, "location: required property missing"},
		"required_read_only":      {`{"location":"x","properties":{"api":{}}}`, "properties.api.url: required property missing"},
		"pattern":                 {`{"location":"x","properties":{"dns":{"baseDomainPrefix":"Upper"}}}`, "properties.dns.baseDomainPrefix"},
		"maximum":                 {`{"location":"x","properties":{"nodeDrainTimeoutMinutes":10081}}`, "above maximum"},
		"integer":                 {`{"location":"x","properties":{"nodeDrainTimeoutMinutes":1.5}}`, "want an integer"},
		"type_in_map":             {`{"location":"x","tags":{"a":1}}`, "tags{a}: want a string, got a number"},
		"null":                    {`{"location":"x","tags":null}`, "tags: want an object, got null"},
		"common_types_uuid":       {`{"location":"x","identity":{"type":"None","principalId":"nope"}}`, `identity.principalId: "nope" is not a uuid`},
		"arm_id":                  {`{"location":"x","properties":{"platform":{"subnetId":"subnet"}}}`, "properties.platform.subnetId"},
		"uri":                     {`{"location":"x","properties":{"api":{"url":"api.example"}}}`, `properties.api.url: "api.example" is not an absolute URI`},
		"date_time_in_systemdata": {`{"location":"x","systemData":{"createdAt":"yesterday"}}`, "systemData.createdAt"},
		"not_json":                {`{"location":`, "(root): body is not JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.ValidateDefinition("HcpOpenShiftCluster", []byte(tc.body))
			var vs Violations
			if !errors.As(err, &vs) {
				t.Fatalf("want violations, got %v", err)
			}
			if !strings.Contains(vs.Error(), tc.want) {
				t.Fatalf("want a violation containing %q, got:\n%v", tc.want, vs)
			}
		})
	}
}

// TestValidatorAccepts checks what the schemas allow passes: x-nullable values, "" for a
// required value with a format (docs/api.md, Required properties in responses).
func TestValidatorAccepts(t *testing.T) {
	s, err := Load("2026-09-01-preview")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ definition, body string }{
		"nullable_identity_value": {"HcpOpenShiftCluster", `{"location":"x","identity":{"type":"UserAssigned","userAssignedIdentities":{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/a":null}}}`},
		"empty_uri_not_known_yet": {"ApiProfile", `{"url":""}`},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.ValidateDefinition(tc.definition, []byte(tc.body)); err != nil {
				t.Fatalf("want valid, got %v", err)
			}
		})
	}
}

func TestValidateResponseStatusAndHeaders(t *testing.T) {
	s, err := Load("2024-06-10-preview")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		op     string
		status int
		header http.Header
		body   string
		want   string // "" for valid
	}{
		"delete_202_without_location": {"HcpOpenShiftClusters_Delete", 202, http.Header{}, "", "(header Location): declared header missing"},
		"delete_202":                  {"HcpOpenShiftClusters_Delete", 202, http.Header{"Location": {"https://x"}, "Retry-After": {"1"}}, "", ""},
		"delete_204_with_body":        {"HcpOpenShiftClusters_Delete", 204, nil, `{}`, "declares no body"},
		"undeclared_status":           {"HcpOpenShiftClusters_Get", 201, nil, `{}`, "does not declare status 201"},
		"error_uses_default":          {"HcpOpenShiftClusters_Get", 404, nil, `{"error":{"code":"NotFound","message":"m"}}`, ""},
		"error_with_unknown_field":    {"HcpOpenShiftClusters_Get", 400, nil, `{"error":{"code":"X","message":"m","field":"f"}}`, "error.field: property not in the schema"},
	} {
		t.Run(name, func(t *testing.T) {
			err := s.ValidateResponse(tc.op, tc.status, tc.header, []byte(tc.body))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	s, err := Load("2026-09-01-preview")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/providers/Microsoft.RedHatOpenShift/operations", "Operations_List"},
		{"PUT", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c", "HcpOpenShiftClusters_CreateOrUpdate"},
		{"get", "/SUBSCRIPTIONS/s/resourcegroups/rg/providers/microsoft.redhatopenshift/hcpopenshiftclusters/c/nodepools/np", "NodePools_Get"},
		{"GET", "/subscriptions/s/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", "HcpOpenShiftClusters_ListBySubscription"},
		{"POST", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/requestAdminCredential", "HcpOpenShiftClusters_RequestAdminCredential"},
		{"GET", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters//nodePools", ""},
		{"POST", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c", ""},
		{"GET", "/subscriptions/s", ""},
	} {
		o, ok := s.Match(tc.method, tc.path)
		got := ""
		if ok {
			got = o.ID
		}
		if got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestValidateExchange(t *testing.T) {
	const (
		ver     = "?api-version=2026-09-01-preview"
		cluster = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"
		opScope = "/subscriptions/s/providers/Microsoft.RedHatOpenShift/locations/eastus"
	)
	for name, tc := range map[string]struct {
		method, target string
		status         int
		body           string
		validated      bool
		want           string
	}{
		"spec_route_missing_required":   {"GET", cluster + ver, 200, `{"location":"x","properties":{"api":{}}}`, true, "properties.api.url: required property missing"},
		"error_of_unknown_version":      {"GET", cluster + "?api-version=2020-01-01", 400, `{"error":{"code":"InvalidResourceType","message":"m"}}`, true, ""},
		"error_not_arm":                 {"PUT", "/subscriptions/s?api-version=2.0", 400, `{"message":"m"}`, true, "message: property not in the schema"},
		"empty_mux_404":                 {"GET", "/subscriptions/s/nope", 404, ``, true, "body is not JSON"},
		"health_check":                  {"GET", "/healthz", 503, "not ready", false, ""},
		"not_modified":                  {"GET", cluster + ver, 304, ``, false, ""},
		"subscription_put":              {"PUT", "/subscriptions/s?api-version=2.0", 200, `{"state":"Registered"}`, false, ""},
		"operation_status":              {"GET", opScope + "/hcpOperationStatuses/op1" + ver, 200, `{"id":"` + opScope + `/hcpOperationStatuses/op1","name":"op1","status":"Succeeded","startTime":"2026-01-01T00:00:00Z"}`, true, ""},
		"operation_status_without_it":   {"GET", opScope + "/hcpOperationStatuses/op1" + ver, 200, `{"name":"op1"}`, true, "status: required property missing"},
		"operation_result_cluster":      {"GET", opScope + "/hcpOperationResults/op1" + ver, 200, `{"type":"Microsoft.RedHatOpenShift/hcpOpenShiftClusters","location":"x","properties":{"api":{}}}`, true, "properties.api.url: required property missing"},
		"operation_result_credential":   {"GET", opScope + "/hcpOperationResults/op1" + ver, 200, `{}`, true, "neither a resource nor an admin credential"},
		"operation_result_still_runs":   {"GET", opScope + "/hcpOperationResults/op1" + ver, 202, ``, true, ""},
		"operation_result_unknown_type": {"GET", opScope + "/hcpOperationResults/op1" + ver, 200, `{"type":"Microsoft.Foo/bars"}`, true, "unknown resource type"},
	} {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			validated, err := ValidateExchange(tc.method, u, tc.status, nil, []byte(tc.body))
			if validated != tc.validated {
				t.Fatalf("validated %v, want %v", validated, tc.validated)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// TestOperationExamples checks that the x-ms-examples of every operation lead to its own
// examples, and that together they are every file of examples/: a test that discovers the
// examples through the operations misses none.
func TestOperationExamples(t *testing.T) {
	for _, v := range wantVersions {
		s, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		referenced := map[string]bool{}
		for _, o := range s.Operations() {
			xs, err := o.Examples()
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if len(xs) == 0 {
				t.Errorf("%s: %s has no x-ms-examples", v, o.ID)
			}
			for _, x := range xs {
				if x.OperationID != o.ID || x.Title == "" {
					t.Errorf("%s: %s references %s (operationId %s, title %q)", v, o.ID, x.File, x.OperationID, x.Title)
				}
				referenced[x.File] = true
			}
		}
		all, err := Examples(v, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range all {
			if !referenced[x.File] {
				t.Errorf("%s: examples/%s is referenced by no operation", v, x.File)
			}
		}
		if len(referenced) != len(all) {
			t.Errorf("%s: operations reference %d example files, examples/ has %d", v, len(referenced), len(all))
		}
	}
}
