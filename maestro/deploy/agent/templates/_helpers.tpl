{{- /* The service-base library's labels (docs/deploy.md#labels). */ -}}
{{- define "maestro-agent.labels" -}}
{{ include "service-base.labels" (dict "ctx" . "name" "maestro-agent") }}
{{- end }}

{{- define "maestro-agent.selector" -}}
app.kubernetes.io/name: maestro-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "maestro-agent.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ required "image.tag or image.digest is required" .Values.image.tag }}
{{- end }}
{{- end }}
