{{/* Names, labels and the values every workload shares. */}}

{{- define "brain-search.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "brain-search.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "brain-search.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "brain-search.labels" -}}
helm.sh/chart: {{ include "brain-search.chart" . }}
app.kubernetes.io/name: {{ include "brain-search.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: brain-search
{{- end }}

{{/* selector labels of one component: include "brain-search.selectorLabels" (dict "ctx" . "component" "api") */}}
{{- define "brain-search.selectorLabels" -}}
app.kubernetes.io/name: {{ include "brain-search.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "brain-search.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "brain-search.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "brain-search.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "brain-search.secretName" -}}
{{- default (printf "%s-secrets" (include "brain-search.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{- define "brain-search.redisHost" -}}
{{- if .Values.redis.enabled }}
{{- printf "%s-redis" (include "brain-search.fullname" .) }}
{{- else }}
{{- required "externalRedis.host is required when redis.enabled is false" .Values.externalRedis.host }}
{{- end }}
{{- end }}

{{/* the OpenSearch URL(s) the app connects to */}}
{{- define "brain-search.opensearchUrl" -}}
{{- if .Values.opensearch.enabled }}
{{- printf "https://%s-%s:9200" .Values.opensearch.clusterName .Values.opensearch.nodeGroup }}
{{- else }}
{{- required "externalOpenSearch.url is required when opensearch.enabled is false" .Values.externalOpenSearch.url }}
{{- end }}
{{- end }}

{{/* fails the render when a secret is missing: there are no default secrets */}}
{{- define "brain-search.requireSecrets" -}}
{{- if not .Values.secrets.existingSecret }}
{{- $_ := required "secrets.adminKey is required (or secrets.existingSecret)" .Values.secrets.adminKey }}
{{- $_ := required "secrets.opensearchUsername is required (or secrets.existingSecret)" .Values.secrets.opensearchUsername }}
{{- $_ := required "secrets.opensearchPassword is required (or secrets.existingSecret)" .Values.secrets.opensearchPassword }}
{{- $_ := required "secrets.redisPassword is required (or secrets.existingSecret)" .Values.secrets.redisPassword }}
{{- $_ := required "secrets.jobSigningKeys is required (or secrets.existingSecret)" .Values.secrets.jobSigningKeys }}
{{- end }}
{{- end }}

{{/* checksums that roll the pods when their configuration changes */}}
{{- define "brain-search.configChecksums" -}}
checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
{{- if not .Values.secrets.existingSecret }}
checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end }}

{{/* the environment, volumes and mounts shared by the API and the workers */}}
{{- define "brain-search.envFrom" -}}
- configMapRef:
    name: {{ include "brain-search.fullname" . }}-config
- secretRef:
    name: {{ include "brain-search.secretName" . }}
{{- end }}

{{- define "brain-search.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .Values.opensearchTLS.caSecret }}
- name: opensearch-ca
  secret:
    secretName: {{ .Values.opensearchTLS.caSecret }}
    items:
      - key: {{ .Values.opensearchTLS.caSecretKey }}
        path: ca.crt
{{- end }}
{{- end }}

{{- define "brain-search.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.opensearchTLS.caSecret }}
- name: opensearch-ca
  mountPath: /etc/brain-search/opensearch-ca
  readOnly: true
{{- end }}
{{- end }}
