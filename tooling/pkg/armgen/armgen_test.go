package armgen

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels above tooling/pkg/armgen.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestCommittedFilesAreCurrent regenerates every version's files and fails when a committed
// one differs: editing a generated file by hand, or a spec without a generator run, fails here
// (and in make verify-generate, which runs the same comparison).
func TestCommittedFilesAreCurrent(t *testing.T) {
	root := repoRoot(t)
	files, err := Generate(filepath.Join(root, "internal/armspec/spec"), filepath.Join(root, FieldcheckDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 9 {
		t.Errorf("generated %d files, want 9 (types and validation for three versions, aliases for 2026-09-01-preview, fieldcheck's checks of the shared types, package bounds)", len(files))
	}
	stale, err := Stale(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("generated files are stale (run make generate and commit):\n  %s", strings.Join(stale, "\n  "))
	}
}

// TestStaleDetectsAHandEdit writes the generated files into a temporary tree, edits one and
// expects Stale to name it.
func TestStaleDetectsAHandEdit(t *testing.T) {
	root := repoRoot(t)
	files, err := Generate(filepath.Join(root, "internal/armspec/spec"), filepath.Join(root, FieldcheckDir))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for _, f := range files {
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(f.Path)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(tmp, files); err != nil {
		t.Fatal(err)
	}
	if stale, err := Stale(tmp, files); err != nil || len(stale) != 0 {
		t.Fatalf("fresh tree: stale %v, err %v", stale, err)
	}
	edited := files[0].Path
	p := filepath.Join(tmp, edited)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(b, []byte("\n// a hand edit\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	stale, err := Stale(tmp, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) != 1 || stale[0] != edited {
		t.Errorf("after editing %s: stale = %v", edited, stale)
	}
}

func TestGoFieldNameKeepsInitialisms(t *testing.T) {
	for in, want := range map[string]string{
		"subnetId": "SubnetID", "vnetIntegrationSubnetId": "VnetIntegrationSubnetID", "issuerUrl": "IssuerURL",
		"kms": "KMS", "vmSize": "VMSize", "osDisk": "OSDisk", "sizeGiB": "SizeGiB", "api": "API", "dns": "DNS",
		"authorizedCidrs": "AuthorizedCIDRs", "nodeDrainTimeoutMinutes": "NodeDrainTimeoutMinutes",
	} {
		if got := goFieldName(in); got != want {
			t.Errorf("goFieldName(%q) = %q, want %q", in, got, want)
		}
	}
}

// specCopy copies the specification into a temporary tree, each version's file through
// edit(apiVersion, content), and returns the tree's root.
func specCopy(t *testing.T, edit func(apiVersion, s string) string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "internal/armspec/spec")
	tmp := t.TempDir()
	copyFile := func(rel string, edit func(string) string) {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if edit != nil {
			s = edit(s)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("common-types/resource-management/v6/types.json", nil)
	copyFile("common-types/resource-management/v6/managedidentity.json", nil)
	for _, v := range Versions {
		copyFile(specFile(v.APIVersion), func(s string) string { return edit(v.APIVersion, s) })
	}
	return tmp
}

// TestSameAsRefusesADifferentSchema: a version declared to repeat another's schema fails to
// generate when one definition it reaches differs.
func TestSameAsRefusesADifferentSchema(t *testing.T) {
	tmp := specCopy(t, func(apiVersion, s string) string {
		if apiVersion != "2026-09-01-preview" {
			return s
		}
		// 2026-09-01-preview's OsDiskProfile.sizeGiB maximum moves.
		return strings.Replace(s, `"maximum": 4095`, `"maximum": 2048`, 1)
	})
	_, err := Generate(tmp, filepath.Join(repoRoot(t), FieldcheckDir))
	if err == nil || !strings.Contains(err.Error(), "OsDiskProfile") {
		t.Fatalf("Generate with a differing 2026-09-01-preview: err = %v, want one naming OsDiskProfile", err)
	}
}

// TestSharedDefinitionsMustAgree: the checks of a shared definition are written once for every
// version, so generating fails when one version's specification bounds a property of it
// differently (or differs in an enum, or in what is required).
func TestSharedDefinitionsMustAgree(t *testing.T) {
	for _, tc := range []struct {
		name, version, old, new, want string
	}{
		{"pattern_length", "2025-12-23-preview", `"maxLength": 15,`, `"maxLength": 16,`, "DnsProfile.baseDomainPrefix"},
		{"list_length", "2024-06-10-preview", `"maxItems": 500,`, `"maxItems": 400,`, "ApiProfile.authorizedCidrs"},
		{"enum", "2025-12-23-preview", `"enum": [
            "Enabled",
            "Disabled"
          ]`, `"enum": [
            "Enabled"
          ]`, "ClusterImageRegistryProfile.state"},
		{"required_of_a_list_entry", "2025-12-23-preview", `"required": [
        "source",
        "mirrors"
      ]`, `"required": [
        "source"
      ]`, "ImageDigestMirror.mirrors"},
		{"length_of_a_list_of_shared_entries", "2025-12-23-preview", `"maxItems": 240,`, `"maxItems": 250,`, "HcpOpenShiftClusterProperties.imageDigestMirrors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := false
			tmp := specCopy(t, func(apiVersion, s string) string {
				if apiVersion != tc.version {
					return s
				}
				if !strings.Contains(s, tc.old) {
					t.Fatalf("%s's specification has no %q", apiVersion, tc.old)
				}
				edited = true
				return strings.Replace(s, tc.old, tc.new, 1)
			})
			if !edited {
				t.Fatalf("no version %s", tc.version)
			}
			_, err := Generate(tmp, filepath.Join(repoRoot(t), FieldcheckDir))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate with %s's %s edited: err = %v, want one naming %s", tc.version, tc.want, err, tc.want)
			}
		})
	}
}

// TestRuleKeysMustNameAProperty: a rule keyed by a property no version has (a typo), or a hook
// at a property the generated checks do not reach, fails generation instead of silently changing
// nothing.
func TestRuleKeysMustNameAProperty(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		add       func() (undo func())
		// hook is a method added to package fieldcheck.
		hook string
	}{
		{name: "at_least", key: "NodePoolAutoScaling.maximum", add: func() func() {
			atLeast["NodePoolAutoScaling.maximum"] = true
			return func() { delete(atLeast, "NodePoolAutoScaling.maximum") }
		}},
		{name: "absent_as_empty", key: "NodePool.property", add: func() func() {
			absentAsEmpty["NodePool.property"] = "a typo"
			return func() { delete(absentAsEmpty, "NodePool.property") }
		}},
		{name: "hook_misspelt", key: "OsDiskProfile.sizeGB", hook: hookSource("X", "OsDiskProfile.sizeGB", "p *int32, path string", "")},
		// Label is a shared definition: the version's generated checks never reach its key.
		{name: "hook_not_reached", key: "Label.key", hook: hookSource("X", "Label.key", "p *string, path string", "")},
		{name: "check_order", key: "NodePoolPlatformProfile.vmSizes", add: func() func() {
			saved := checkOrder["NodePoolPlatformProfile"]
			o := saved
			o.Props = append([]string{"vmSizes"}, saved.Props...)
			checkOrder["NodePoolPlatformProfile"] = o
			return func() { checkOrder["NodePoolPlatformProfile"] = saved }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.add != nil {
				defer tc.add()()
			}
			_, err := Generate(filepath.Join(repoRoot(t), "internal/armspec/spec"), fieldcheckCopy(t, tc.hook))
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Generate with %s: err = %v, want one naming it", tc.key, err)
			}
		})
	}
}

// hookSource is a method of fieldcheck.Checker marked as a hook at key, with a doc comment
// saying why, taking params and returning results.
func hookSource(name, key, params, results string) string {
	return fmt.Sprintf("// %[1]s is a hook of the test's.\n//\n//armgen:hook %[2]s\nfunc (v *Checker) %[1]s(%[3]s) %[4]s {\n\tpanic(\"not run\")\n}\n", name, key, params, results)
}

// fieldcheckCopy copies package fieldcheck's files into a temporary folder, with extra (Go
// declarations, "" for none) in a file of its own, and returns the folder.
func fieldcheckCopy(t *testing.T, extra string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), FieldcheckDir)
	tmp := t.TempDir()
	names, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("fieldcheck's files: %v, %v", names, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, filepath.Base(n)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if extra != "" {
		if err := os.WriteFile(filepath.Join(tmp, "extra.go"), []byte("package fieldcheck\n\n"+extra), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tmp
}

// TestHooksAreTheMarkedMethods: a hand-written check is one edit, a method of fieldcheck.Checker
// whose doc comment marks the property it checks; the generated checks call it there (inside
// its guard when it returns a bool), and a marker that cannot be called at a property fails
// generation.
func TestHooksAreTheMarkedMethods(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		// want is in every node pool's generated checks when generation succeeds; wantErr in the
		// error when it fails.
		want, wantErr string
	}{
		{
			name:  "a_check_after_the_generated_ones",
			extra: hookSource("ReplicasMeaning", "NodePoolProperties.replicas", "p *int32, path string", ""),
			want:  "v.AtLeast(x.Replicas, specPath(path, \"replicas\"), 0)\n\tv.ReplicasMeaning(x.Replicas, specPath(path, \"replicas\"))",
		},
		{
			name:  "a_guard_returns_a_bool",
			extra: hookSource("ReplicasBounded", "NodePoolProperties.replicas", "p *int32, _ string", "bool"),
			want:  "if v.ReplicasBounded(x.Replicas, specPath(path, \"replicas\")) {\n\t\tv.AtLeast(x.Replicas",
		},
		{
			name:    "not_a_method",
			extra:   "// ReplicasMeaning is not a method.\n//\n//armgen:hook NodePoolProperties.replicas\nfunc ReplicasMeaning(p *int32, path string) {}\n",
			wantErr: "is not a method of *Checker",
		},
		{
			name:    "unexported",
			extra:   hookSource("replicasMeaning", "NodePoolProperties.replicas", "p *int32, path string", ""),
			wantErr: "is not exported",
		},
		{
			name:    "no_path",
			extra:   hookSource("ReplicasMeaning", "NodePoolProperties.replicas", "p *int32", ""),
			wantErr: "does not take (value, path string)",
		},
		{
			name:    "returns_an_error",
			extra:   hookSource("ReplicasMeaning", "NodePoolProperties.replicas", "p *int32, path string", "error"),
			wantErr: "returns neither nothing nor a bool",
		},
		{
			name:    "no_reason",
			extra:   "//armgen:hook NodePoolProperties.replicas\nfunc (v *Checker) ReplicasMeaning(p *int32, path string) {}\n",
			wantErr: "has no doc comment saying why",
		},
		{
			name:    "not_in_a_doc_comment",
			extra:   "func (v *Checker) ReplicasMeaning(p *int32, path string) {\n\t//armgen:hook NodePoolProperties.replicas\n}\n",
			wantErr: "is not in the doc comment of a method of *Checker",
		},
		{
			name:    "no_property",
			extra:   hookSource("ReplicasMeaning", "NodePoolProperties", "p *int32, path string", ""),
			wantErr: "not Definition.property",
		},
		{
			name:    "two_at_one_property",
			extra:   hookSource("MoreLabels", "NodePoolProperties.labels", "labels []profiles.Label, path string", ""),
			wantErr: "NodePoolLabels",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Generate(filepath.Join(repoRoot(t), "internal/armspec/spec"), fieldcheckCopy(t, tc.extra))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Generate: err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range files {
				if strings.HasSuffix(f.Path, "/zz_generated_validate.go") {
					n++
					if !strings.Contains(string(f.Content), tc.want) {
						t.Errorf("%s lacks %q", f.Path, tc.want)
					}
				}
			}
			if n != 3 {
				t.Fatalf("%d validate files, want 3", n)
			}
		})
	}
}

// TestResourceIDTypesFollowTheSpecification: a node pool's resource IDs (format arm-id) are
// checked for the type their x-ms-arm-id-details allow, read from the specification, at their
// property; a resource ID of several types, which the check cannot take, fails generation.
func TestResourceIDTypesFollowTheSpecification(t *testing.T) {
	const des = `"type": "Microsoft.Compute/diskEncryptionSets"`
	for _, tc := range []struct {
		name, old, new string
		want           []string
		wantErr        string
	}{
		{
			name: "as_specified",
			want: []string{
				"if x.SubnetID != nil {\n\t\tv.ArmID(*x.SubnetID, specPath(path, \"subnetId\"), \"Microsoft.Network/virtualNetworks/subnets\")\n\t}",
				"if x.EncryptionSetID != nil {\n\t\tv.ArmID(*x.EncryptionSetID, specPath(path, \"encryptionSetId\"), \"Microsoft.Compute/diskEncryptionSets\")\n\t}",
			},
		},
		{
			name: "type_moved", old: des, new: `"type": "Microsoft.Compute/otherSets"`,
			want: []string{"v.ArmID(*x.EncryptionSetID, specPath(path, \"encryptionSetId\"), \"Microsoft.Compute/otherSets\")"},
		},
		{
			name: "two_types", old: des, new: des + `}, {"type": "Microsoft.Compute/otherSets"`,
			wantErr: "OsDiskProfile.encryptionSetId",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := specCopy(t, func(apiVersion, s string) string {
				if tc.old == "" {
					return s
				}
				if strings.Count(s, tc.old) != 1 {
					t.Fatalf("%s's specification has %d of %q, want 1", apiVersion, strings.Count(s, tc.old), tc.old)
				}
				return strings.Replace(s, tc.old, tc.new, 1)
			})
			files, err := Generate(tmp, filepath.Join(repoRoot(t), FieldcheckDir))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Generate: err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range files {
				if !strings.HasSuffix(f.Path, "/zz_generated_validate.go") {
					continue
				}
				n++
				for _, w := range tc.want {
					if !strings.Contains(string(f.Content), w) {
						t.Errorf("%s lacks %q", f.Path, w)
					}
				}
			}
			if n != 3 {
				t.Fatalf("%d validate files, want 3", n)
			}
		})
	}
}

// TestBoundsMustBeInTheSpecification: a listed bound the newest specification does not state (a
// property it lacks, a keyword the property lacks, a keyword the generator does not know) fails
// generation, so a constant a consumer reads cannot silently vanish.
func TestBoundsMustBeInTheSpecification(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"no_such_property", "Taint.colour:maxLength"},
		{"no_such_keyword_on_the_property", "Taint.value:pattern"},
		{"no_maximum", "NodePoolAutoScaling.max:maximum"},
		{"unknown_keyword", "Taint.value:longest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := Bounds
			Bounds = append(append([]string(nil), saved...), tc.key)
			defer func() { Bounds = saved }()
			_, err := Generate(filepath.Join(repoRoot(t), "internal/armspec/spec"), filepath.Join(repoRoot(t), FieldcheckDir))
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("Generate listing %s: err = %v, want one naming it", tc.key, err)
			}
		})
	}
}

// TestBoundsFollowTheNewestSpecification: the constants are the newest api-version's, so a
// bound moved in its specification moves the constant (and everything that reads it).
func TestBoundsFollowTheNewestSpecification(t *testing.T) {
	newest := Versions[len(Versions)-1].APIVersion
	tmp := specCopy(t, func(apiVersion, s string) string {
		if apiVersion != newest {
			return s
		}
		return strings.Replace(s, `"description": "The key of the taint",
          "minLength": 1,
          "maxLength": 316`, `"description": "The key of the taint",
          "minLength": 1,
          "maxLength": 300`, 1)
	})
	bs, err := newestBounds(tmp, []string{"Taint.key:maxLength"})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Name != "TaintKeyMaxLength" || bs[0].Value != "300" {
		t.Fatalf("bounds of an edited %s: %+v, want TaintKeyMaxLength = 300", newest, bs)
	}
}

// TestNodePoolChecksAreEachVersionsOwn: a node pool's version-local bounds are generated from
// each version's own specification (the OS disk's maximum only where it is stated), and the
// generator rules that keep a node pool's answers shape the generated checks: replicas said as
// "at least", a body without properties checked as one with empty ones, vmSize before subnetId,
// and the hand-written checks called at their property (the size's bound inside its guard).
func TestNodePoolChecksAreEachVersionsOwn(t *testing.T) {
	files, err := Generate(filepath.Join(repoRoot(t), "internal/armspec/spec"), filepath.Join(repoRoot(t), FieldcheckDir))
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]string{}
	for _, f := range files {
		if !strings.HasSuffix(f.Path, "/zz_generated_validate.go") {
			continue
		}
		src := string(f.Content)
		_, rest, _ := strings.Cut(src, `v.RangeInt(x.SizeGiB, specPath(path, "sizeGiB"), `)
		size[path.Base(path.Dir(f.Path))], _, _ = strings.Cut(rest, ")")
		for _, want := range []string{
			`v.AtLeast(x.Replicas, specPath(path, "replicas"), 0)`,
			"if x.Properties == nil {\n\t\t(&NodePoolProperties{}).validateSpec(v, specPath(path, \"properties\"))",
			"if v.OSDiskSizeBounded(x.SizeGiB, specPath(path, \"sizeGiB\")) {\n\t\tv.RangeInt(x.SizeGiB",
			"v.Required(x.VMSize != nil && *x.VMSize != \"\", specPath(path, \"vmSize\"))\n\tif x.SubnetID != nil {\n\t\tv.ArmID(*x.SubnetID",
		} {
			if !strings.Contains(src, want) {
				t.Errorf("%s lacks %q", f.Path, want)
			}
		}
	}
	want := map[string]string{"v20240610preview": "64, 2147483647", "v20251223preview": "64, 2147483647", "v20260630preview": "64, 4095"}
	if !maps.Equal(size, want) {
		t.Fatalf("OsDiskProfile.sizeGiB bounds generated per version: %v, want %v", size, want)
	}
}

// TestSharedAuthChecksFollowTheSpecification: the external auth's checks are the specification's,
// so a bound moved in every version moves the check, and a keyword the external auth's checks do
// not write (a pattern) fails generation instead of being left out.
func TestSharedAuthChecksFollowTheSpecification(t *testing.T) {
	claim := `"description": "Claim name of the external profile",
          "minLength": 1,
          "maxLength": 256`
	for _, tc := range []struct {
		name, edit, want string
		fails            bool
	}{
		{"max_length_moved", `"description": "Claim name of the external profile",
          "minLength": 1,
          "maxLength": 300`, "UsernameClaimProfileClaimMaxLength = 300", false},
		{"pattern_added", claim + `,
          "pattern": "^[a-z]+$"`, "UsernameClaimProfile.claim", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := specCopy(t, func(_, s string) string {
				i := strings.Index(s, `"UsernameClaimProfile": {`)
				return s[:i] + strings.Replace(s[i:], claim, tc.edit, 1)
			})
			files, err := Generate(tmp, filepath.Join(repoRoot(t), FieldcheckDir))
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Generate: err = %v, want one naming %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The check reads the bound's constant, which moved.
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = string(f.Content)
			}
			if !strings.Contains(got[boundsPath], tc.want) || !strings.Contains(got["frontend/pkg/api/fieldcheck/zz_generated_shared.go"], "len(*x.Claim) > bounds.UsernameClaimProfileClaimMaxLength") {
				t.Fatalf("generated bounds lack %q, or the shared checks do not read it", tc.want)
			}
		})
	}
}

// TestExternalAuthTypesAreEachVersionsOwn: every api-version decodes an external auth into its
// own generated ExternalAuth, whose properties are fields of their own (the writable ones of the
// shared definitions), as a node pool's are: no hand-written type stands in for a definition of
// the specification that differs between versions (the read-only condition or status).
func TestExternalAuthTypesAreEachVersionsOwn(t *testing.T) {
	for _, v := range Versions {
		if v.SameAs != "" {
			continue
		}
		p, err := Build(filepath.Join(repoRoot(t), "internal/armspec/spec"), v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Aliases {
			if strings.HasPrefix(a.Name, "ExternalAuth") && !strings.HasPrefix(a.Name, "ExternalAuthClient") && a.Name != "ExternalAuthClaimProfile" {
				t.Errorf("%s: %s is an alias of %s, not generated", v.APIVersion, a.Name, a.Target)
			}
		}
		fields := map[string]string{}
		for _, s := range p.Structs {
			if s.Name == "ExternalAuthProperties" {
				for _, f := range s.Fields {
					fields[f.JSON] = f.Type
				}
			}
		}
		want := map[string]string{"issuer": "*TokenIssuerProfile", "clients": "[]ExternalAuthClientProfile", "claim": "*ExternalAuthClaimProfile"}
		for k, typ := range want {
			if fields[k] != typ {
				t.Errorf("%s: ExternalAuthProperties.%s is %q, want %q (fields %v)", v.APIVersion, k, fields[k], typ, fields)
			}
		}
	}
}
