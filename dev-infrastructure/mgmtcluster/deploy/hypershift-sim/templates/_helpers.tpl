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

{{- /*
The hosted emptyDir's sizeLimit, in Mi: hostedAPIServers × (2 × the etcd quota + 512Mi). Per
served cluster: its etcd's database up to the quota (--hosted-etcd-quota, the sim's default
256Mi when empty), and as much again while a defragmentation writes its copy beside it (what an
operator runs once a customer filled the quota); 512Mi for what the quota does not count: etcd's
WAL (the sim keeps two 64 MB segments past a snapshot every 100 entries, plus up to 30 s
of writes between etcd's purges: mgmtcluster hostedEtcdSnapshotCount, TestHostedEtcdWALIsBounded), the apiserver's audit log
(20 MB and one backup: about 40Mi) and the two process logs (the sim bounds each at 16 MiB
and one predecessor, DefaultHostedLogMaxBytes: 64Mi). With the defaults: 2 × (512Mi +
512Mi) = 2048Mi. Past it the kubelet evicts the pod (docs/hypershift-sim.md, "under make deploy").
*/ -}}
{{- define "hypershift-sim.hostedSizeLimit" -}}
{{- $q := .Values.hostedEtcdQuota | default "256Mi" -}}
{{- $mi := 0 -}}
{{- if regexMatch "^[1-9][0-9]*Mi$" $q -}}
{{- $mi = trimSuffix "Mi" $q | atoi -}}
{{- else if regexMatch "^[1-9][0-9]*Gi$" $q -}}
{{- $mi = mul (trimSuffix "Gi" $q | atoi) 1024 -}}
{{- else -}}
{{- fail (printf "hostedEtcdQuota %q: give it in Mi or Gi (the hosted emptyDir's sizeLimit is derived from it)" $q) -}}
{{- end -}}
{{- mul (int .Values.hostedAPIServers) (add (mul 2 $mi) 512) }}Mi
{{- end }}
