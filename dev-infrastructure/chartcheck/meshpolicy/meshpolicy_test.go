package meshpolicy

import (
	"strings"
	"testing"
)

const (
	peerDefault = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: ns}
spec: {mtls: {mode: STRICT}}
`
	allowNothing = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-nothing, namespace: ns}
spec: {}
`
	allowCaller = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: svc-from-caller, namespace: ns}
spec:
  selector: {matchLabels: {app: svc}}
  action: ALLOW
  rules:
    - from: [{source: {principals: ["cluster.local/ns/c/sa/caller"]}}]
      to: [{operation: {ports: ["8090"]}}]
`
)

func docs(d ...string) []byte { return []byte(strings.Join(d, "---\n")) }

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		aps, pas            int
	}{
		{name: "valid policy set", yaml: string(docs(peerDefault, allowNothing, allowCaller, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")), aps: 2, pas: 1},
		{name: "misspelled spec field", yaml: strings.Replace(allowCaller, "principals:", "principal:", 1), wantErr: "unknown field"},
		{name: "unknown top-level field", yaml: allowNothing + "extra: 1\n", wantErr: "unknown field"},
		{name: "invalid action", yaml: strings.Replace(allowCaller, "action: ALLOW", "action: PERMIT", 1), wantErr: "PERMIT"},
		{name: "invalid mTLS mode", yaml: strings.Replace(peerDefault, "STRICT", "STRICTEST", 1), wantErr: "STRICTEST"},
		{name: "old apiVersion", yaml: strings.Replace(allowNothing, "security.istio.io/v1", "security.istio.io/v1beta1", 1), wantErr: "want security.istio.io/v1"},
		{name: "other security kind", yaml: "apiVersion: security.istio.io/v1\nkind: RequestAuthentication\nmetadata: {name: r, namespace: ns}\nspec: {}\n", wantErr: "kind RequestAuthentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs.AuthorizationPolicies) != tc.aps || len(objs.PeerAuthentications) != tc.pas {
				t.Fatalf("decoded %d AuthorizationPolicies and %d PeerAuthentications, want %d and %d",
					len(objs.AuthorizationPolicies), len(objs.PeerAuthentications), tc.aps, tc.pas)
			}
			if got := objs.AuthorizationPolicies[1].Spec.GetRules()[0].GetFrom()[0].GetSource().GetPrincipals(); len(got) != 1 || got[0] != "cluster.local/ns/c/sa/caller" {
				t.Fatalf("principals %v", got)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    []byte
		wantErr string
		grants  int
	}{
		{name: "defaults and one caller", yaml: docs(peerDefault, allowNothing, allowCaller), grants: 1},
		{name: "no default deny", yaml: docs(peerDefault, allowCaller), wantErr: "0 default-deny"},
		{name: "no PeerAuthentication", yaml: docs(allowNothing, allowCaller), wantErr: "0 namespace-wide STRICT"},
		{name: "permissive", yaml: docs(strings.Replace(peerDefault, "STRICT", "PERMISSIVE", 1), allowNothing), wantErr: "want STRICT"},
		{name: "port-level override", yaml: docs(strings.Replace(peerDefault, "spec: {mtls: {mode: STRICT}}", "spec: {mtls: {mode: STRICT}, portLevelMtls: {8080: {mode: PERMISSIVE}}}", 1), allowNothing), wantErr: "port-level"},
		{name: "two defaults", yaml: docs(peerDefault, allowNothing, allowNothing), wantErr: "2 default-deny"},
		{name: "deny policy", yaml: docs(peerDefault, allowNothing, strings.Replace(allowCaller, "ALLOW", "DENY", 1)), wantErr: "only ALLOW"},
		{name: "namespace source", yaml: docs(peerDefault, allowNothing, strings.Replace(allowCaller, `principals: ["cluster.local/ns/c/sa/caller"]`, `namespaces: ["c"]`, 1)), wantErr: "exactly one principal"},
		{name: "wildcard principal", yaml: docs(peerDefault, allowNothing, strings.Replace(allowCaller, "cluster.local/ns/c/sa/caller", "*", 1)), wantErr: "pattern"},
		{name: "HTTP path", yaml: docs(peerDefault, allowNothing, strings.Replace(allowCaller, `ports: ["8090"]`, `ports: ["8090"], paths: ["/metrics"]`, 1)), wantErr: "ports and nothing else"},
		{name: "no selector on a caller's policy", yaml: docs(peerDefault, allowNothing, strings.Replace(allowCaller, "  selector: {matchLabels: {app: svc}}\n", "", 1)), wantErr: "select its workload"},
		{name: "same grant twice", yaml: docs(peerDefault, allowNothing, allowCaller, strings.Replace(allowCaller, "svc-from-caller", "again", 1)), wantErr: "again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			grants, errs := Check(objs)
			if tc.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected violations %v", errs)
				}
				if len(grants) != tc.grants {
					t.Fatalf("grants %+v, want %d", grants, tc.grants)
				}
				want := Grant{Namespace: "ns", Selector: "app=svc", Principal: "cluster.local/ns/c/sa/caller", Port: "8090"}
				if grants[0] != want {
					t.Fatalf("grant %+v, want %+v", grants[0], want)
				}
				return
			}
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Fatalf("violations %v, want one containing %q", errs, tc.wantErr)
		})
	}
}
