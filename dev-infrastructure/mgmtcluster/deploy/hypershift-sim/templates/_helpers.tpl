{{- define "hypershift-sim.labels" -}}
app.kubernetes.io/name: hypershift-sim
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: openhcp
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
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
