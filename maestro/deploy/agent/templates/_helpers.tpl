{{- define "maestro-agent.labels" -}}
app.kubernetes.io/name: maestro-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: openhcp
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
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
