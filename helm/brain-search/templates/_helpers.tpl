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

{{/*
The Secret of one role: the chart's "<fullname>-<suffix>", or secrets.existingSecrets.<role>.
  include "brain-search.secretName" (dict "ctx" . "role" "indexSetup")
*/}}
{{- define "brain-search.secretName" -}}
{{- $suffix := dict "api" "api" "worker" "worker" "gateway" "gateway" "indexSetup" "index-setup" "redis" "redis" }}
{{- $existing := index .ctx.Values.secrets.existingSecrets .role }}
{{- default (printf "%s-%s" (include "brain-search.fullname" .ctx) (index $suffix .role)) $existing }}
{{- end }}

{{/* REDIS_PASSWORD is read by the in-chart Redis and by KEDA's TriggerAuthentication only */}}
{{- define "brain-search.redisSecretNeeded" -}}
{{- if or .Values.redis.enabled (eq .Values.worker.autoscaling.mode "keda") }}true{{ end }}
{{- end }}

{{- define "brain-search.redisHost" -}}
{{- if .Values.redis.enabled }}
{{- printf "%s-redis" (include "brain-search.fullname" .) }}
{{- else }}
{{- required "externalRedis.host is required when redis.enabled is false" .Values.externalRedis.host }}
{{- end }}
{{- end }}

{{- define "brain-search.redisUrl" -}}
{{- $r := .Values.externalRedis }}
{{- $scheme := ternary "rediss" "redis" (and (not .Values.redis.enabled) $r.tls) }}
{{- $port := ternary 6379 $r.port .Values.redis.enabled }}
{{- $db := ternary 0 $r.db .Values.redis.enabled }}
{{- printf "%s://:%s@%s:%v/%v" $scheme (.Values.secrets.redisPassword | urlquery) (include "brain-search.redisHost" .) $port $db }}
{{- end }}

{{/* --- the engine gateway ------------------------------------------------------------------ */}}

{{- define "brain-search.gatewayName" -}}
{{- printf "%s-gateway" (include "brain-search.fullname" .) }}
{{- end }}

{{/* what the app's pods connect to: the gateway Service, never OpenSearch itself */}}
{{- define "brain-search.gatewayUrl" -}}
{{- printf "https://%s:%v" (include "brain-search.gatewayName" .) .Values.gateway.port }}
{{- end }}

{{/* the Secret with the gateway's tls.crt, tls.key and ca.crt (cert-manager's layout) */}}
{{- define "brain-search.gatewayTLSSecret" -}}
{{- $tls := .Values.gateway.tls }}
{{- if and $tls.secretName $tls.certManager.enabled }}
{{- fail "gateway.tls: set either secretName or certManager.enabled, not both" }}
{{- else if $tls.secretName }}
{{- $tls.secretName }}
{{- else if $tls.certManager.enabled }}
{{- printf "%s-tls" (include "brain-search.gatewayName" .) }}
{{- else }}
{{- fail "gateway.tls is required: gateway.tls.secretName (a Secret with tls.crt, tls.key and ca.crt) or gateway.tls.certManager.enabled with an issuerRef" }}
{{- end }}
{{- end }}

{{/* the bundled OpenSearch's HTTP Service (the official chart's naming) */}}
{{- define "brain-search.bundledOpenSearchHost" -}}
{{- $os := .Values.opensearch }}
{{- if and (eq $os.nodeGroup "master") $os.masterService }}
{{- $os.masterService }}
{{- else }}
{{- printf "%s-%s" $os.clusterName $os.nodeGroup }}
{{- end }}
{{- end }}

{{- define "brain-search.bundledOpenSearchPort" -}}
{{- .Values.opensearch.httpPort | default 9200 }}
{{- end }}

{{/* the OpenSearch nodes behind the gateway (BRAIN_GATEWAY_UPSTREAM) */}}
{{- define "brain-search.gatewayUpstream" -}}
{{- if .Values.opensearch.enabled }}
{{- printf "http://%s:%s" (include "brain-search.bundledOpenSearchHost" .) (include "brain-search.bundledOpenSearchPort" .) }}
{{- else }}
{{- required "externalOpenSearch.url is required when opensearch.enabled is false" .Values.externalOpenSearch.url }}
{{- end }}
{{- end }}

{{/* --- secrets ----------------------------------------------------------------------------- */}}

{{/* fails the render when a secret is missing: there are no default secrets */}}
{{- define "brain-search.requireSecrets" -}}
{{- $s := .Values.secrets }}
{{- $e := $s.existingSecrets }}
{{- if not $e.api }}
{{- $_ := required "secrets.adminKey is required (or secrets.existingSecrets.api)" $s.adminKey }}
{{- $_ := required "secrets.engine.apiPassword is required (or secrets.existingSecrets.api)" $s.engine.apiPassword }}
{{- $_ := required "secrets.redisPassword is required (or secrets.existingSecrets.api)" $s.redisPassword }}
{{- $_ := required "secrets.jobSigningKeys is required (or secrets.existingSecrets.api)" $s.jobSigningKeys }}
{{- end }}
{{- if not $e.worker }}
{{- $_ := required "secrets.engine.workerPassword is required (or secrets.existingSecrets.worker)" $s.engine.workerPassword }}
{{- $_ := required "secrets.redisPassword is required (or secrets.existingSecrets.worker)" $s.redisPassword }}
{{- $_ := required "secrets.jobSigningKeys is required (or secrets.existingSecrets.worker)" $s.jobSigningKeys }}
{{- end }}
{{- if not $e.gateway }}
{{- $_ := required "secrets.engine.adminPassword is required (or secrets.existingSecrets.gateway)" $s.engine.adminPassword }}
{{- $_ := required "secrets.engine.apiPassword is required (or secrets.existingSecrets.gateway)" $s.engine.apiPassword }}
{{- $_ := required "secrets.engine.workerPassword is required (or secrets.existingSecrets.gateway)" $s.engine.workerPassword }}
{{- if and $s.opensearchUsername (not $s.opensearchPassword) }}
{{- fail "secrets.opensearchPassword is required with secrets.opensearchUsername" }}
{{- end }}
{{- if and $s.opensearchUsername .Values.opensearch.enabled }}
{{- fail "secrets.opensearchUsername/opensearchPassword are for an external OpenSearch with its own security plugin; the bundled one runs without it" }}
{{- end }}
{{- end }}
{{- if not $e.indexSetup }}
{{- $_ := required "secrets.engine.adminPassword is required (or secrets.existingSecrets.indexSetup)" $s.engine.adminPassword }}
{{- end }}
{{- if and (not $e.redis) (include "brain-search.redisSecretNeeded" .) }}
{{- $_ := required "secrets.redisPassword is required (or secrets.existingSecrets.redis)" $s.redisPassword }}
{{- end }}
{{- end }}

{{/*
Checksums that roll a workload's pods when its configuration changes: the ConfigMap (unless
"config" is false) and the workload's own Secret when the chart makes it.
  include "brain-search.configChecksums" (dict "ctx" . "role" "redis" "config" false)
*/}}
{{- define "brain-search.configChecksums" -}}
{{- $out := list }}
{{- if dig "config" true . }}
{{- $out = append $out (printf "checksum/config: %s" (include (print .ctx.Template.BasePath "/configmap.yaml") .ctx | sha256sum)) }}
{{- end }}
{{- if not (index .ctx.Values.secrets.existingSecrets .role) }}
{{- $out = append $out (printf "checksum/secret: %s" (include (printf "brain-search.secret.%s" .role) .ctx | sha256sum)) }}
{{- end }}
{{- join "\n" $out }}
{{- end }}

{{/* --- what the API, the workers and the index set-up Job share --------------------------- */}}

{{/* include "brain-search.envFrom" (dict "ctx" . "role" "worker") */}}
{{- define "brain-search.envFrom" -}}
- configMapRef:
    name: {{ include "brain-search.fullname" .ctx }}-config
- secretRef:
    name: {{ include "brain-search.secretName" (dict "ctx" .ctx "role" .role) }}
{{- end }}

{{/* only the CA certificate of the gateway's TLS Secret, never its key */}}
{{- define "brain-search.volumes" -}}
- name: tmp
  emptyDir: {}
- name: gateway-ca
  secret:
    secretName: {{ include "brain-search.gatewayTLSSecret" . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}

{{- define "brain-search.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: gateway-ca
  mountPath: /etc/brain-search/gateway-ca
  readOnly: true
{{- end }}

{{/*
Waits until the index set-up Job has installed the indices (first install: the Job is a
post-install hook, so the pods start before it has run).
  include "brain-search.waitForIndices" (dict "ctx" . "role" "api" "resources" .Values.api.resources)
*/}}
{{- define "brain-search.waitForIndices" -}}
- name: wait-for-indices
  image: {{ include "brain-search.image" .ctx }}
  imagePullPolicy: {{ .ctx.Values.image.pullPolicy }}
  command: ["sh", "-c", "until brain-search indices verify; do sleep 5; done"]
  envFrom:
    {{- include "brain-search.envFrom" (dict "ctx" .ctx "role" .role) | nindent 4 }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- toYaml .ctx.Values.securityContext | nindent 4 }}
  volumeMounts:
    {{- include "brain-search.volumeMounts" .ctx | nindent 4 }}
{{- end }}

{{/* --- safe defaults ----------------------------------------------------------------------- */}}

{{/*
Fails the render when the gateway's upstream would be an open engine, unless `insecure: true`:
the bundled OpenSearch (no security plugin, plain HTTP), an external URL over http://, or an
external one without the gateway's own engine user (secrets.opensearchUsername; an existing
gateway Secret is taken to hold BRAIN_GATEWAY_UPSTREAM_USER).
*/}}
{{- define "brain-search.refuseOpenEngine" -}}
{{- if not .Values.insecure }}
{{- $why := "" }}
{{- if .Values.opensearch.enabled }}
{{- $why = "the bundled OpenSearch runs without its security plugin, over plain HTTP" }}
{{- else if contains "http://" (.Values.externalOpenSearch.url | lower) }}
{{- $why = "externalOpenSearch.url is plain HTTP" }}
{{- else if not (or .Values.secrets.opensearchUsername .Values.secrets.existingSecrets.gateway) }}
{{- $why = "the gateway has no engine user of its own (secrets.opensearchUsername): the nodes run without security" }}
{{- end }}
{{- if $why }}
{{- fail (printf "an open engine: %s. Anyone who reaches its port reads and deletes every tenant's memories. Use an OpenSearch with its security plugin over https:// (externalOpenSearch.url, secrets.opensearchUsername), or set insecure: true to accept it (then keep networkPolicy.enabled: only the gateway reaches the nodes)" $why) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The Ingress's paths (api.ingress.paths): a path that routes /metrics (cross-tenant totals),
/docs, /redoc or /openapi.json fails the render. Those stay in the cluster: Prometheus scrapes
/metrics from the Service, /docs is reached by a port-forward.
*/}}
{{- define "brain-search.ingressPaths" -}}
{{- $private := list "/metrics" "/docs" "/redoc" "/openapi.json" }}
{{- range .Values.api.ingress.paths }}
{{- $p := .path }}
{{- $type := .pathType | default "Prefix" }}
{{- range $private }}
{{- $hit := eq $p . }}
{{- if ne $type "Exact" }}
{{- $hit = or $hit (eq $p "/") (eq (trimSuffix "/" $p) .) (hasPrefix (printf "%s/" (trimSuffix "/" $p)) (printf "%s/" .)) }}
{{- end }}
{{- if and (eq $type "ImplementationSpecific") (regexMatch "[*+?()|\\[\\]\\\\^$]" $p) }}
{{- $hit = true }}
{{- end }}
{{- if $hit }}
{{- fail (printf "api.ingress.paths: %s (%s) routes %s, which must not be public" $p $type .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
