{{- /*
Shared templates of the service charts (docs/deploy.md#service-cluster-charts). Each takes a dict
with "ctx" (the including chart's root context) and "name" (the workload: the Deployment's,
Service's and app.kubernetes.io/name's), and reads the including chart's values:

  image: {repository, tag, digest, pullPolicy}
  replicas: N
  serviceAccount: {name}
  serviceMonitor: {enabled, tlsConfig}       ports: {metrics: N}
  prometheusRule: {enabled}                  alerts/<name>.rules.yaml in the chart
  database: {host, port, user, sslMode}      (service-base.dsn)
*/ -}}

{{- /*
The labels of every object of every chart (docs/deploy.md#labels), this chart's one definition:
  app.kubernetes.io/version    the including chart's appVersion (what the object runs);
  app.kubernetes.io/component  .component if given (the mesh-policy library's objects name
                               themselves), else the chart's annotation openhcp.io/component.
.name (the workload) may be empty for objects of no one workload (a namespace's defaults).
*/ -}}
{{- define "service-base.labels" -}}
{{- with .name -}}
app.kubernetes.io/name: {{ . }}
{{ end -}}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ required (printf "%s: Chart.yaml appVersion is required (app.kubernetes.io/version)" .ctx.Chart.Name) .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .component | default (index (.ctx.Chart.Annotations | default dict) "openhcp.io/component") | required (printf "%s: Chart.yaml annotation openhcp.io/component is required (app.kubernetes.io/component)" .ctx.Chart.Name) }}
app.kubernetes.io/part-of: openhcp
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
helm.sh/chart: {{ .ctx.Chart.Name }}-{{ .ctx.Chart.Version }}
{{- end }}

{{- define "service-base.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end }}

{{- /* The image naming scheme is dev-infrastructure/images' (docs/deploy.md#images); a digest wins over the tag. */ -}}
{{- define "service-base.image" -}}
{{- $i := .ctx.Values.image -}}
{{- if $i.digest -}}
{{ $i.repository }}@{{ $i.digest }}
{{- else -}}
{{ $i.repository }}:{{ required "image.tag or image.digest is required" $i.tag }}
{{- end }}
{{- end }}

{{- /* The images' user (65532); fsGroup makes Secret files root:65532 0440, readable by it. */ -}}
{{- define "service-base.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "service-base.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{- /*
A PostgreSQL DSN for database "dbname" with .ctx.Values.database's host, port, user and sslMode.
It names no password (pgx reads PGPASSWORD, which the Deployment takes from the database
Secret); verify-* modes check the server against /etc/openhcp/db/ca.crt.
*/ -}}
{{- define "service-base.dsn" -}}
{{- $db := .ctx.Values.database -}}
postgres://{{ $db.user }}@{{ required "database.host is required" $db.host }}:{{ $db.port }}/{{ .dbname }}?sslmode={{ $db.sslMode }}
{{- if hasPrefix "verify" $db.sslMode }}&sslrootcert=/etc/openhcp/db/ca.crt{{ end }}
{{- end }}

{{- /*
With several replicas, spread them over zones and nodes (ScheduleAnyway: a region with one zone,
or this machine's one node, still schedules them), so one zone or node lost keeps the
PodDisruptionBudget's minAvailable. Nothing with one replica. Indent: the pod spec's.
*/ -}}
{{- define "service-base.topologySpread" -}}
{{- if gt (int .ctx.Values.replicas) 1 -}}
topologySpreadConstraints:
  {{- range list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - maxSkew: 1
    topologyKey: {{ . }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "service-base.selector" $ | nindent 8 }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "service-base.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .ctx.Values.serviceAccount.name }}
  labels:
    {{- include "service-base.labels" . | nindent 4 }}
# None of our services calls the Kubernetes API.
automountServiceAccountToken: false
{{- end }}

{{- define "service-base.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "service-base.labels" . | nindent 4 }}
spec:
  {{- if gt (int .ctx.Values.replicas) 1 }}
  minAvailable: 1
  {{- else }}
  # One replica: allow its eviction so node drains are never blocked.
  maxUnavailable: 1
  {{- end }}
  selector:
    matchLabels:
      {{- include "service-base.selector" . | nindent 6 }}
{{- end }}

{{- /*
Scrapes the metrics port of the Service named .name, so every target gets job=".name", which the
alert rules select (up{job="<name>"}). Our metrics listeners speak TLS off loopback; Prometheus
scrapes pod addresses, which the serving certificate does not name, so the default tlsConfig
skips verification (in a mesh the scrape runs over Istio mutual TLS as well).
*/ -}}
{{- define "service-base.serviceMonitor" -}}
{{- if .ctx.Values.serviceMonitor.enabled -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  labels:
    {{- include "service-base.labels" . | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "service-base.selector" . | nindent 6 }}
  endpoints:
    - port: metrics
      path: /metrics
      scheme: https
      # Verified as the service's own callers verify it: the CA that issued its serving
      # certificate (a Secret with ca.crt in this namespace) and the Service name the
      # certificate holds, not the pod address Prometheus dials.
      tlsConfig:
        ca:
          secret:
            name: {{ .ctx.Values.serviceMonitor.caSecret | default (printf "%s-metrics-ca" .name) }}
            key: ca.crt
        serverName: {{ .ctx.Values.serviceMonitor.serverName | default (printf "%s.%s.svc" .name .ctx.Release.Namespace) }}
{{- end }}
{{- end }}

{{- /* The chart's plain rule file alerts/<name>.rules.yaml (tested by promtool in make test; docs/deploy.md#alerts) as a PrometheusRule. */ -}}
{{- define "service-base.prometheusRule" -}}
{{- if .ctx.Values.prometheusRule.enabled -}}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ .name }}
  labels:
    {{- include "service-base.labels" . | nindent 4 }}
spec:
  {{- $file := printf "alerts/%s.rules.yaml" .name }}
  {{- .ctx.Files.Get $file | required (printf "%s is missing" $file) | fromYaml | toYaml | nindent 2 }}
{{- end }}
{{- end }}
