{{/*
One Secret per role, each read only by its own workload (`secrets.existingSecrets.<role>`
replaces the chart's). Named templates, so that each workload's checksum covers its own Secret.
*/}}

{{- define "brain-search.secretMeta" -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "brain-search.secretName" (dict "ctx" .ctx "role" .role) }}
  labels:
    {{- include "brain-search.labels" .ctx | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
type: Opaque
{{- end }}

{{- define "brain-search.secret.api" -}}
{{ include "brain-search.secretMeta" (dict "ctx" . "role" "api" "component" "api") }}
stringData:
  BRAIN_ADMIN_KEY: {{ .Values.secrets.adminKey | quote }}
  BRAIN_OPENSEARCH_USER: api
  BRAIN_OPENSEARCH_PASSWORD: {{ .Values.secrets.engine.apiPassword | quote }}
  BRAIN_REDIS_URL: {{ include "brain-search.redisUrl" . | quote }}
  BRAIN_JOB_SIGNING_KEYS: {{ .Values.secrets.jobSigningKeys | quote }}
{{- end }}

{{/* no admin key, no admin password */}}
{{- define "brain-search.secret.worker" -}}
{{ include "brain-search.secretMeta" (dict "ctx" . "role" "worker" "component" "worker") }}
stringData:
  BRAIN_OPENSEARCH_USER: worker
  BRAIN_OPENSEARCH_PASSWORD: {{ .Values.secrets.engine.workerPassword | quote }}
  BRAIN_REDIS_URL: {{ include "brain-search.redisUrl" . | quote }}
  BRAIN_JOB_SIGNING_KEYS: {{ .Values.secrets.jobSigningKeys | quote }}
{{- end }}

{{/* the roles' passwords (hashed into htpasswd at start), and its own user on a secured upstream */}}
{{- define "brain-search.secret.gateway" -}}
{{ include "brain-search.secretMeta" (dict "ctx" . "role" "gateway" "component" "gateway") }}
stringData:
  {{- with .Values.secrets.engine.adminPassword }}
  BRAIN_GATEWAY_ADMIN_PASSWORD: {{ . | quote }}
  {{- end }}
  BRAIN_GATEWAY_API_PASSWORD: {{ .Values.secrets.engine.apiPassword | quote }}
  BRAIN_GATEWAY_WORKER_PASSWORD: {{ .Values.secrets.engine.workerPassword | quote }}
  {{- with .Values.secrets.opensearchUsername }}
  BRAIN_GATEWAY_UPSTREAM_USER: {{ . | quote }}
  BRAIN_GATEWAY_UPSTREAM_PASSWORD: {{ $.Values.secrets.opensearchPassword | quote }}
  {{- end }}
{{- end }}

{{- define "brain-search.secret.indexSetup" -}}
{{ include "brain-search.secretMeta" (dict "ctx" . "role" "indexSetup" "component" "index-setup") }}
stringData:
  BRAIN_OPENSEARCH_USER: admin
  BRAIN_OPENSEARCH_PASSWORD: {{ .Values.secrets.engine.adminPassword | quote }}
{{- end }}

{{- define "brain-search.secret.redis" -}}
{{ include "brain-search.secretMeta" (dict "ctx" . "role" "redis" "component" "redis") }}
stringData:
  REDIS_PASSWORD: {{ .Values.secrets.redisPassword | quote }}
{{- end }}
