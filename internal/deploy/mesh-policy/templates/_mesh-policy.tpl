{{- /*
Istio policy for one workload of the service cluster (docs/deploy.md#mesh-policy).

Use from a chart's template:

  {{ include "mesh-policy.render" (dict "ctx" . "workload" "maestro-server"
       "selector" (include "maestro-server.selector" . | fromYaml)) }}

with these values of the including chart:

  meshPolicy:
    enabled: true
    self: maestro                 # this workload's key in identities
    trustDomain: cluster.local    # from config/ (mesh.trustDomain)
    identities:                   # from config/ (identities): key -> {namespace, serviceAccount}
      clusterService: {namespace: openhcp-cluster-service, serviceAccount: cluster-service}
    namespaceDefaults: true       # render the namespace's PeerAuthentication and default deny
    networkPolicy: true           # render the NetworkPolicies from the same allow list
    allow:                        # one ALLOW per caller identity; ports are names of .Values.ports
      - {caller: clusterService, ports: [https, grpc]}
  ports: {https: 8000, grpc: 8090}

enabled renders the Istio objects; networkPolicy the NetworkPolicies ("mesh-policy.networkPolicy"),
with or without the mesh, so a cluster without Istio is still segmented.

The release must be installed in identities[self].namespace: the other charts' ALLOW policies
name this workload's principal by that namespace, so an install elsewhere would be refused by
every callee. Rendering fails instead.
*/ -}}
{{- define "mesh-policy.render" -}}
{{- $ctx := .ctx -}}
{{- $mp := $ctx.Values.meshPolicy -}}
{{- if or $mp.enabled $mp.networkPolicy -}}
{{- $self := index $mp.identities (required "meshPolicy.self is required" $mp.self) | default dict -}}
{{- $ns := required (printf "meshPolicy.identities.%s.namespace is required (config/: identities)" $mp.self) $self.namespace -}}
{{- if ne $ns $ctx.Release.Namespace -}}
{{- fail (printf "mesh policy: release namespace %q is not %q, the namespace of identity %q in config/ (identities.%s.namespace): install the chart there" $ctx.Release.Namespace $ns $mp.self $mp.self) -}}
{{- end -}}
{{- end -}}
{{- if $mp.enabled -}}
{{- if $mp.namespaceDefaults }}
{{ include "mesh-policy.namespaceDefaults" $ctx }}
{{- end }}
{{- range $mp.allow }}
---
{{ include "mesh-policy.allow" (dict "ctx" $ctx "workload" $.workload "selector" $.selector "caller" .caller "ports" .ports) }}
{{- end }}
{{- end }}
{{- if $mp.networkPolicy }}
---
{{ include "mesh-policy.networkPolicy" (dict "ctx" $ctx "workload" .workload "selector" .selector "policy" $mp) }}
{{- end -}}
{{- end -}}

{{- /*
The NetworkPolicies of one workload (docs/deploy.md#network-policy), from the same caller list as
its Istio ALLOW policies, so the two layers admit the same caller -> callee pairs:

  {{ include "mesh-policy.networkPolicy" (dict "ctx" . "workload" "maestro-agent"
       "selector" (...) "policy" .Values.networkPolicy) }}

policy holds identities (config/: key -> {namespace, serviceAccount}), allow ([{caller, ports}],
ports being the workload's container port names) and namespaceDefaults. Rendered:
- with namespaceDefaults, "default-deny": every pod of the namespace, ingress denied unless a
  policy admits it (the NetworkPolicy form of allow-nothing);
- "<workload>": the workload's pods admit, per caller, connections from the pods of the caller
  identity's namespace to the named ports, and nothing else.
A NetworkPolicy sees addresses, not service accounts: a caller is its identity's namespace
(kubernetes.io/metadata.name, which the apiserver sets on every namespace). Identities sharing a
namespace are told apart by the mesh and by each server's certificate check, not here; so a
port already admitted from a namespace (the backend and the Monitor both call Cluster Service
from openhcp-backend) is admitted once, by the first caller that names it.
Egress is not restricted (docs/deploy.md#network-policy says why).
*/ -}}
{{- define "mesh-policy.networkPolicy" -}}
{{- $ctx := .ctx -}}
{{- $p := .policy -}}
{{- if $p.namespaceDefaults -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: default-deny
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "mesh-policy.networkPolicyLabels" $ctx | nindent 4 }}
spec:
  podSelector: {}
  policyTypes: [Ingress]
---
{{ end -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ .workload }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "mesh-policy.networkPolicyLabels" $ctx | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- toYaml .selector | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    {{- $admitted := dict }}
    {{- range $p.allow }}
    {{- $id := index $p.identities .caller | default dict }}
    {{- $callerNS := required (printf "network policy: identities.%s.namespace is required (config/: identities)" .caller) $id.namespace }}
    {{- if not .ports }}
    {{- fail (printf "network policy: caller %s of %s lists no ports" .caller $.workload) }}
    {{- end }}
    {{- $ports := list }}
    {{- range .ports }}
    {{- $key := printf "%s/%s" $callerNS . }}
    {{- if not (hasKey $admitted $key) }}
    {{- $_ := set $admitted $key true }}
    {{- $ports = append $ports . }}
    {{- end }}
    {{- end }}
    {{- if $ports }}
    # {{ .caller }}
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: {{ $callerNS }}
      ports:
        {{- range $ports }}
        - {protocol: TCP, port: {{ . }}}
        {{- end }}
    {{- end }}
    {{- end }}
{{- end -}}

{{- /*
The namespace's defaults, rendered by exactly one chart per namespace (meshPolicy.namespaceDefaults):
- PeerAuthentication "default" without a selector: every workload in the namespace accepts only
  Istio mutual TLS, on every port (metrics included: Prometheus scrapes with its mesh identity).
- AuthorizationPolicy "allow-nothing": an ALLOW policy with an empty spec matches no request, so
  a request no other ALLOW policy of the workload matches is denied. This is Istio's documented
  default-deny form (istio.io/api security/v1beta1/authorization_policy.proto, "allows nothing
  and effectively denies all requests"; istio.io/latest/docs/ops/best-practices/security/
  "Use default-deny patterns"). A DENY-all would override every ALLOW.
*/ -}}
{{- define "mesh-policy.namespaceDefaults" -}}
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata:
  name: default
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "mesh-policy.labels" . | nindent 4 }}
spec:
  mtls:
    mode: STRICT
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: allow-nothing
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "mesh-policy.labels" . | nindent 4 }}
spec: {}
{{- end -}}

{{- /*
One ALLOW policy: the caller identity's principal may open connections to the selected
workload's ports. Only ports, no HTTP methods or paths: our services terminate their own TLS
(docs/security.md), so to the sidecar the traffic is opaque TCP, and Istio skips HTTP-only
conditions on TCP traffic (a rule holding them would match nothing).
*/ -}}
{{- define "mesh-policy.allow" -}}
{{- $ctx := .ctx -}}
{{- $mp := $ctx.Values.meshPolicy -}}
{{- $id := index $mp.identities .caller | default dict -}}
{{- $callerNS := required (printf "meshPolicy.identities.%s.namespace is required (config/: identities)" .caller) $id.namespace -}}
{{- $callerSA := required (printf "meshPolicy.identities.%s.serviceAccount is required (config/: identities)" .caller) $id.serviceAccount -}}
{{- if not .ports -}}
{{- fail (printf "mesh policy: caller %s of %s lists no ports" .caller .workload) -}}
{{- end -}}
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata:
  name: {{ .workload }}-from-{{ .caller | kebabcase }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "mesh-policy.labels" $ctx | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- toYaml .selector | nindent 6 }}
  action: ALLOW
  rules:
    - from:
        - source:
            principals:
              - {{ include "mesh-policy.principal" (dict "trustDomain" $mp.trustDomain "namespace" $callerNS "serviceAccount" $callerSA) | quote }}
      to:
        - operation:
            ports:
              {{- range .ports }}
              - {{ index $ctx.Values.ports . | required (printf "mesh policy: caller %s names port %q, which is not in ports" $.caller .) | toString | quote }}
              {{- end }}
{{- end -}}

{{- /* The SPIFFE principal Istio gives a workload: <trust domain>/ns/<namespace>/sa/<service account>. */ -}}
{{- define "mesh-policy.principal" -}}
{{ required "meshPolicy.trustDomain is required (config/: mesh.trustDomain)" .trustDomain }}/ns/{{ .namespace }}/sa/{{ .serviceAccount }}
{{- end -}}

{{- /* The service-base library's labels (every including chart also includes service-base). */ -}}
{{- define "mesh-policy.labels" -}}
{{ include "service-base.labels" (dict "ctx" . "component" "mesh-policy") }}
{{- end -}}

{{- define "mesh-policy.networkPolicyLabels" -}}
{{ include "service-base.labels" (dict "ctx" . "component" "network-policy") }}
{{- end -}}
