{{- /* The service-base library's labels (docs/deploy.md#labels). */ -}}
{{- define "maestro-server.labels" -}}
{{ include "service-base.labels" (dict "ctx" . "name" "maestro-server") }}
{{- end }}

{{- define "maestro-server.selector" -}}
app.kubernetes.io/name: maestro-server
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "maestro-server.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ required "image.tag or image.digest is required" .Values.image.tag }}
{{- end }}
{{- end }}

{{- /* Maestro reads its database connection from files: these flags point at them. */ -}}
{{- define "maestro-server.dbFlags" -}}
- --db-host-file=/etc/maestro/db/db.host
- --db-port-file=/etc/maestro/db/db.port
- --db-name-file=/etc/maestro/db/db.name
- --db-user-file=/etc/maestro/db/db.user
- --db-password-file=/etc/maestro/db-secret/db.password
- --db-sslmode={{ .Values.database.sslMode }}
{{- if hasPrefix "verify" .Values.database.sslMode }}
- --db-rootcert=/etc/maestro/db-secret/ca.crt
{{- end }}
{{- end }}

{{- define "maestro-server.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{- define "maestro-server.gateImage" -}}
{{- if .Values.gate.image.digest -}}
{{ .Values.gate.image.repository }}@{{ .Values.gate.image.digest }}
{{- else -}}
{{ .Values.gate.image.repository }}:{{ required "gate.image.tag or gate.image.digest is required" .Values.gate.image.tag }}
{{- end }}
{{- end }}
