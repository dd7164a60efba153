{{- /* The service-base library's labels (docs/deploy.md#labels). */ -}}
{{- define "hypershift-sim.labels" -}}
{{ include "service-base.labels" (dict "ctx" . "name" "hypershift-sim") }}
{{- end }}

{{- define "hypershift-sim.selector" -}}
app.kubernetes.io/name: hypershift-sim
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "hypershift-sim.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ required "image.tag or image.digest is required" .Values.image.tag }}
{{- end }}
{{- end }}
