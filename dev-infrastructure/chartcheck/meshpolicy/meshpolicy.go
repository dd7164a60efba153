// Package meshpolicy reads the Istio policy the service-cluster charts render (library chart
// internal/deploy/mesh-policy) into istio.io/client-go types, strictly, and checks it has the
// shape docs/deploy.md#mesh-policy promises: per namespace one STRICT PeerAuthentication and one
// default deny, and otherwise only single-caller, port-scoped ALLOW policies.
package meshpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/crds"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	apisecurity "istio.io/api/security/v1beta1"
	securityv1 "istio.io/client-go/pkg/apis/security/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Group is the API group of Istio's security objects.
const Group = "security.istio.io"

// Objects are the Istio security objects found in a set of manifests.
type Objects struct {
	PeerAuthentications   []*securityv1.PeerAuthentication
	AuthorizationPolicies []*securityv1.AuthorizationPolicy
}

// Decode reads multi-document YAML and returns its security.istio.io objects; other objects are
// skipped. It is strict where Istio's own JSON decoding is not (istio.io/api's generated
// UnmarshalJSON allows unknown fields): an unknown field anywhere, an unknown enum name, a
// security.istio.io kind other than PeerAuthentication and AuthorizationPolicy, or an
// apiVersion other than security.istio.io/v1 is an error naming the object.
func Decode(manifests []byte) (Objects, error) {
	var out Objects
	for i, doc := range splitDocuments(manifests) {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return Objects{}, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue
		}
		var head struct {
			metav1.TypeMeta
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if err := json.Unmarshal(j, &head); err != nil {
			return Objects{}, fmt.Errorf("document %d: %w", i, err)
		}
		group, _, _ := strings.Cut(head.APIVersion, "/")
		if group != Group {
			continue
		}
		name := head.Kind + " " + head.Metadata.Namespace + "/" + head.Metadata.Name
		if head.APIVersion != Group+"/v1" {
			return Objects{}, fmt.Errorf("%s: apiVersion %s, want %s/v1", name, head.APIVersion, Group)
		}
		switch head.Kind {
		case "PeerAuthentication":
			o := &securityv1.PeerAuthentication{}
			if err := decodeStrict(j, &o.TypeMeta, &o.ObjectMeta, &o.Spec); err != nil {
				return Objects{}, fmt.Errorf("%s: %w", name, err)
			}
			out.PeerAuthentications = append(out.PeerAuthentications, o)
		case "AuthorizationPolicy":
			o := &securityv1.AuthorizationPolicy{}
			if err := decodeStrict(j, &o.TypeMeta, &o.ObjectMeta, &o.Spec); err != nil {
				return Objects{}, fmt.Errorf("%s: %w", name, err)
			}
			out.AuthorizationPolicies = append(out.AuthorizationPolicies, o)
		default:
			return Objects{}, fmt.Errorf("%s: kind %s is not one the mesh policy renders", name, head.Kind)
		}
	}
	return out, nil
}

// decodeStrict fills type and object metadata with unknown fields refused, and the spec with
// protojson, which refuses unknown fields and enum names by default.
func decodeStrict(j []byte, tm *metav1.TypeMeta, om *metav1.ObjectMeta, spec proto.Message) error {
	var outer struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            json.RawMessage   `json:"spec"`
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	if err := d.Decode(&outer); err != nil {
		return err
	}
	*tm, *om = outer.TypeMeta, outer.Metadata
	if len(outer.Spec) == 0 {
		return errors.New("no spec")
	}
	if err := protojson.Unmarshal(outer.Spec, spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// splitDocuments splits multi-document YAML at "---" lines.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if t := bytes.TrimRight(line, " \r\n"); string(t) == "---" {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// Grant is one thing an ALLOW policy permits: the caller Principal may connect to Port of the
// workloads selected by Selector (labels, "k=v,..." sorted) in Namespace.
type Grant struct {
	Namespace, Selector, Principal, Port string
}

// Check verifies the shape docs/deploy.md#mesh-policy promises and returns what the ALLOW
// policies grant. Every violation is reported, each naming its object:
//   - every namespace holding any of the objects has exactly one PeerAuthentication, named
//     default, with no selector, mode STRICT and no port-level override;
//   - exactly one AuthorizationPolicy named allow-nothing with an empty spec (Istio's
//     documented default deny);
//   - every other AuthorizationPolicy has a selector and action ALLOW, and exactly one rule of
//     one source with one principal (nothing else) to one operation with ports only (no
//     methods, paths, hosts, negations or conditions);
//   - no two policies grant the same principal on the same workload.
func Check(objs Objects) ([]Grant, []error) {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	namespaces := map[string]bool{}
	peer := map[string]int{}
	for _, pa := range objs.PeerAuthentications {
		ns := pa.Namespace
		namespaces[ns] = true
		peer[ns]++
		id := "PeerAuthentication " + ns + "/" + pa.Name
		switch {
		case pa.Name != "default":
			fail("%s: want only the namespace-wide PeerAuthentication named default", id)
		case pa.Spec.GetSelector() != nil:
			fail("%s: has a selector; the namespace default must apply to every workload", id)
		case pa.Spec.GetMtls().GetMode() != apisecurity.PeerAuthentication_MutualTLS_STRICT:
			fail("%s: mtls mode %s, want STRICT", id, pa.Spec.GetMtls().GetMode())
		case len(pa.Spec.GetPortLevelMtls()) > 0:
			fail("%s: port-level mTLS overrides; every port stays STRICT", id)
		}
	}
	defaultDeny := map[string]int{}
	granted := map[Grant]string{}
	var grants []Grant
	for _, ap := range objs.AuthorizationPolicies {
		ns := ap.Namespace
		namespaces[ns] = true
		id := "AuthorizationPolicy " + ns + "/" + ap.Name
		s := &ap.Spec
		if s.GetAction() != apisecurity.AuthorizationPolicy_ALLOW {
			fail("%s: action %s; the mesh policy uses only ALLOW", id, s.GetAction())
			continue
		}
		if s.GetSelector() == nil && s.GetTargetRef() == nil && len(s.GetTargetRefs()) == 0 && len(s.GetRules()) == 0 {
			if ap.Name != "allow-nothing" {
				fail("%s: an empty namespace-wide ALLOW is the default deny and must be named allow-nothing", id)
			}
			defaultDeny[ns]++
			continue
		}
		if ap.Name == "allow-nothing" {
			fail("%s: allow-nothing must have an empty spec", id)
			continue
		}
		if len(s.GetSelector().GetMatchLabels()) == 0 || s.GetTargetRef() != nil || len(s.GetTargetRefs()) > 0 {
			fail("%s: an ALLOW must select its workload by labels", id)
			continue
		}
		if s.GetProvider() != nil {
			fail("%s: has a provider (CUSTOM only)", id)
			continue
		}
		rules := s.GetRules()
		if len(rules) != 1 {
			fail("%s: %d rules, want exactly one (one caller per policy)", id, len(rules))
			continue
		}
		r := rules[0]
		if len(r.GetWhen()) > 0 {
			fail("%s: has when conditions", id)
		}
		if len(r.GetFrom()) != 1 || len(r.GetTo()) != 1 {
			fail("%s: want one from and one to, got %d and %d", id, len(r.GetFrom()), len(r.GetTo()))
			continue
		}
		src := r.GetFrom()[0].GetSource()
		if len(src.GetPrincipals()) != 1 || !onlyPrincipals(src) {
			fail("%s: the source must be exactly one principal and nothing else", id)
			continue
		}
		op := r.GetTo()[0].GetOperation()
		if len(op.GetPorts()) == 0 || !onlyPorts(op) {
			fail("%s: the operation must list ports and nothing else (TLS is the application's: HTTP fields would match nothing)", id)
			continue
		}
		principal := src.GetPrincipals()[0]
		if strings.ContainsAny(principal, "*") {
			fail("%s: principal %q is a pattern; name one identity", id, principal)
			continue
		}
		sel := selectorString(s.GetSelector().GetMatchLabels())
		for _, port := range op.GetPorts() {
			g := Grant{Namespace: ns, Selector: sel, Principal: principal, Port: port}
			if prev, dup := granted[g]; dup {
				fail("%s: grants %s port %s again (already by %s)", id, principal, port, prev)
				continue
			}
			granted[g] = ap.Name
			grants = append(grants, g)
		}
	}
	for ns := range namespaces {
		if peer[ns] != 1 {
			fail("namespace %s: %d namespace-wide STRICT PeerAuthentications, want exactly one", ns, peer[ns])
		}
		if defaultDeny[ns] != 1 {
			fail("namespace %s: %d default-deny (allow-nothing) policies, want exactly one", ns, defaultDeny[ns])
		}
	}
	sort.Slice(grants, func(i, j int) bool {
		a, b := grants[i], grants[j]
		return strings.Join([]string{a.Namespace, a.Selector, a.Principal, a.Port}, "\x00") <
			strings.Join([]string{b.Namespace, b.Selector, b.Principal, b.Port}, "\x00")
	})
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return grants, errs
}

func onlyPrincipals(s *apisecurity.Source) bool {
	return len(s.GetNotPrincipals()) == 0 && len(s.GetRequestPrincipals()) == 0 &&
		len(s.GetNotRequestPrincipals()) == 0 && len(s.GetNamespaces()) == 0 &&
		len(s.GetNotNamespaces()) == 0 && len(s.GetIpBlocks()) == 0 && len(s.GetNotIpBlocks()) == 0 &&
		len(s.GetRemoteIpBlocks()) == 0 && len(s.GetNotRemoteIpBlocks()) == 0 &&
		len(s.GetServiceAccounts()) == 0 && len(s.GetNotServiceAccounts()) == 0
}

func onlyPorts(o *apisecurity.Operation) bool {
	return len(o.GetHosts()) == 0 && len(o.GetNotHosts()) == 0 && len(o.GetNotPorts()) == 0 &&
		len(o.GetMethods()) == 0 && len(o.GetNotMethods()) == 0 && len(o.GetPaths()) == 0 &&
		len(o.GetNotPaths()) == 0
}

// selectorString writes match labels as "k=v,..." in key order.
func selectorString(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// Principal is the SPIFFE identity Istio gives a workload: the mesh-policy library writes
// caller principals in this form (internal/deploy/mesh-policy, "mesh-policy.principal").
func Principal(trustDomain, namespace, serviceAccount string) string {
	return trustDomain + "/ns/" + namespace + "/sa/" + serviceAccount
}

// InstallCRDs installs Istio's PeerAuthentication and AuthorizationPolicy CRDs (generated from
// the pinned istio.io/api by tooling/cmd/gen-crds: crds.IstioCRDs) on the cluster cfg points at
// and waits until they are served, so charts with mesh policy install on a cluster without
// Istio: the apiserver of the tests, or the local node of `make deploy`, where the objects are
// stored and schema-checked but nothing enforces them.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	want, err := crds.IstioCRDs()
	if err != nil {
		return err
	}
	return crds.InstallCRDs(ctx, cfg, want)
}
