package meshpolicy

import (
	"strings"
	"testing"
)

const (
	npDefaultDeny = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny, namespace: ns}
spec: {podSelector: {}, policyTypes: [Ingress]}
`
	npWorkload = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: svc, namespace: ns}
spec:
  podSelector: {matchLabels: {app: svc}}
  policyTypes: [Ingress]
  ingress:
    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}]
      ports: [{protocol: TCP, port: grpc}]
`
)

func TestCheckNetworkPolicies(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, wantErr string
		grants              int
	}{
		{name: "default deny and one caller on one port", yaml: string(docs(npDefaultDeny, npWorkload)), grants: 1},
		{name: "a rule without ports admits every port",
			yaml: strings.Replace(npWorkload, "      ports: [{protocol: TCP, port: grpc}]\n", "", 1), wantErr: "no ports"},
		{name: "a rule without peers admits every source",
			yaml: strings.Replace(npWorkload, "    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}]\n      ports", "    - ports", 1), wantErr: "0 peers"},
		{name: "an empty namespace selector admits every namespace",
			yaml: strings.Replace(npWorkload, "{matchLabels: {kubernetes.io/metadata.name: callers}}", "{}", 1), wantErr: "one namespace by"},
		{name: "an ipBlock of part of the addresses",
			yaml: strings.Replace(npWorkload, "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}", "{ipBlock: {cidr: 10.0.0.0/8}}", 1), wantErr: "one namespace by"},
		{name: "a named port from outside the cluster",
			yaml: strings.Replace(npWorkload, "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}", "{ipBlock: {cidr: 0.0.0.0/0}}", 1), wantErr: "admits only a port range"},
		{name: "a port range from outside the cluster, less the pod network",
			yaml: strings.NewReplacer("{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}", "{ipBlock: {cidr: 0.0.0.0/0, except: [10.244.0.0/24]}}, {ipBlock: {cidr: '::/0'}}",
				"port: grpc", "port: 10000, endPort: 32767").Replace(npWorkload), grants: 1},
		{name: "a port range from a namespace", yaml: strings.Replace(npWorkload, "port: grpc", "port: 10000, endPort: 32767", 1), grants: 1},
		{name: "outside mixed with a namespace",
			yaml: strings.Replace(npWorkload, "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}", "{ipBlock: {cidr: 0.0.0.0/0}}, {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}", 1), wantErr: "only ipBlocks"},
		{name: "a port by number", yaml: strings.Replace(npWorkload, "port: grpc", "port: 8090", 1), wantErr: "TCP container port by name"},
		{name: "an empty range", yaml: strings.Replace(npWorkload, "port: grpc", "port: 10000, endPort: 10000", 1), wantErr: "greater endPort"},
		{name: "egress type", yaml: strings.Replace(npWorkload, "policyTypes: [Ingress]", "policyTypes: [Ingress, Egress]", 1), wantErr: "want [Ingress]"},
		{name: "a default deny that admits",
			yaml: strings.Replace(npWorkload, "name: svc,", "name: default-deny,", 1), wantErr: "default-deny must select every pod"},
		{name: "a workload policy selecting every pod",
			yaml: strings.Replace(npWorkload, "{matchLabels: {app: svc}}", "{}", 1), wantErr: "select its workload"},
		{name: "the same caller and port twice",
			yaml: npWorkload + "    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: callers}}}]\n      ports: [{protocol: TCP, port: grpc}]\n", wantErr: "again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nps, err := DecodeNetworkPolicies([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			grants, errs := CheckNetworkPolicies(nps)
			if tc.wantErr == "" {
				if len(errs) > 0 || len(grants) != tc.grants {
					t.Fatalf("errors %v, %d grants; want none and %d", errs, len(grants), tc.grants)
				}
				return
			}
			if !strings.Contains(strings.Join(errString(errs), "\n"), tc.wantErr) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.wantErr)
			}
		})
	}
}

func TestDecodeNetworkPoliciesRefusesUnknownFields(t *testing.T) {
	_, err := DecodeNetworkPolicies([]byte(strings.Replace(npWorkload, "podSelector:", "podSelectr:", 1)))
	if err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("error %v, want an unknown field", err)
	}
}

func errString(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}
