{{/* The chart's name, or `nameOverride`. */}}
{{- define "calls-connector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' base name: `fullnameOverride`, else the release name with the chart's name appended unless it
     already holds it. */}}
{{- define "calls-connector.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "calls-connector.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "calls-connector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "calls-connector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels: the selector labels, the chart's, and `commonLabels`. */}}
{{- define "calls-connector.labels" -}}
{{ include "calls-connector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* A pod's labels: the selector labels, `commonLabels` and `podLabels`; the component is the caller's. */}}
{{- define "calls-connector.podLabels" -}}
{{ include "calls-connector.selectorLabels" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- with .Values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "calls-connector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "calls-connector.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image: `global.imageRegistry` (a parent chart's), else `image.registry`, then the repository, pinned by
     digest or tagged. */}}
{{- define "calls-connector.image" -}}
{{- $registry := default .Values.image.registry (dig "imageRegistry" "" (default dict .Values.global)) -}}
{{- $repository := ternary (printf "%s/%s" (trimSuffix "/" $registry) .Values.image.repository) .Values.image.repository (ne $registry "") -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* How many pods the Deployment runs: distributed mode's `replicas`; single mode one, two with a standby. */}}
{{- define "calls-connector.replicas" -}}
{{- if eq .Values.mode "distributed" -}}
{{- .Values.replicas -}}
{{- else -}}
{{- ternary 2 1 .Values.standby -}}
{{- end -}}
{{- end -}}

{{/* The container's memory limit in MiB (values.schema.json admits Mi and Gi only). */}}
{{- define "calls-connector.memoryLimitMiB" -}}
{{- $limit := toString .Values.resources.limits.memory -}}
{{- if hasSuffix "Gi" $limit -}}
{{- mul (trimSuffix "Gi" $limit | atoi) 1024 -}}
{{- else -}}
{{- trimSuffix "Mi" $limit | atoi -}}
{{- end -}}
{{- end -}}

{{/* The V8 heap bound: half the memory limit, as the image's 256 MiB in 512 MiB (Dockerfile, docs/docker.md). */}}
{{- define "calls-connector.heapMiB" -}}
{{- div (include "calls-connector.memoryLimitMiB" . | atoi) 2 -}}
{{- end -}}

{{/* Past poll.shutdownTimeoutMs for the pages in flight, the Kafka session's close is bounded by it again
     (src/runtime/steps/ownership.ts); 15 s more for leaving the group and closing the clients. */}}
{{- define "calls-connector.terminationGracePeriodSeconds" -}}
{{- add (mul .Values.shutdownTimeoutSeconds 2) 15 -}}
{{- end -}}

{{/* Refusals the schema cannot express: combinations of values. */}}
{{- define "calls-connector.checks" -}}
{{- $config := .Values.config -}}
{{- if not .Values.secrets.clientSecret.name -}}
{{- fail "secrets.clientSecret.name: name the existing Secret holding the OAuth client secret (docs/kubernetes.md, Install)" -}}
{{- end -}}
{{- if not .Values.secrets.tokenStoreKey.name -}}
{{- fail "secrets.tokenStoreKey.name: name the existing Secret holding the token store's key (docs/kubernetes.md, Install)" -}}
{{- end -}}
{{- if and (eq .Values.tokenStore.type "file") (not .Values.tokenStore.file.existingClaim) -}}
{{- fail "tokenStore.type file needs a volume: set tokenStore.file.existingClaim to a PersistentVolumeClaim (or use the default, tokenStore.type kafka)" -}}
{{- end -}}
{{- if and (eq .Values.tokenStore.type "file") (or (eq .Values.mode "distributed") .Values.standby) -}}
{{- fail "tokenStore.type file holds one pod's tokens: distributed mode and a standby share a grant and need tokenStore.type kafka (a rotated refresh token must reach every pod)" -}}
{{- end -}}
{{- if and (eq .Values.mode "distributed") .Values.standby -}}
{{- fail "standby applies to single mode; in distributed mode every replica works (set replicas)" -}}
{{- end -}}
{{- $owned := list
  (list "connector" "mode" "mode")
  (list "metrics" "enabled" "(always on: the probes use it)")
  (list "metrics" "host" "(0.0.0.0 in a pod)")
  (list "metrics" "port" "metrics.port")
  (list "poll" "shutdownTimeoutMs" "shutdownTimeoutSeconds")
  (list "oauth" "clientSecret" "secrets.clientSecret")
  (list "oauth" "clientSecretFile" "secrets.clientSecret")
  (list "oauth" "keyEnv" "secrets.tokenStoreKey")
  (list "oauth" "keyFile" "secrets.tokenStoreKey")
  (list "oauth" "store" "tokenStore")
  (list "schemaRegistry" "username" "secrets.schemaRegistry")
  (list "schemaRegistry" "password" "secrets.schemaRegistry")
  (list "webhooks" "enabled" "webhooks.enabled")
  (list "webhooks" "host" "(0.0.0.0 in a pod)")
  (list "webhooks" "port" "webhooks.port")
  (list "webhooks" "path" "webhooks.path") -}}
{{- range $owned -}}
{{- $section := get $config (index . 0) -}}
{{- if and (kindIs "map" $section) (hasKey $section (index . 1)) -}}
{{- fail (printf "config.%s.%s is set by the chart: use %s in the values instead" (index . 0) (index . 1) (index . 2)) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $config "auth" -}}
{{- fail "config.auth (a static token) is a secret and has no place in values: use oauth with secrets.clientSecret" -}}
{{- end -}}
{{- $sasl := dig "kafka" "sasl" dict $config -}}
{{- range list "password" "clientSecret" "clientSecretFile" -}}
{{- if hasKey $sasl . -}}
{{- fail (printf "config.kafka.sasl.%s is a secret: use secrets.kafkaSasl instead" .) -}}
{{- end -}}
{{- end -}}
{{- $webhooks := default dict $config.webhooks -}}
{{- $signature := default dict $webhooks.signature -}}
{{- range list "secretEnv" "secretFiles" -}}
{{- if hasKey $signature . -}}
{{- fail (printf "config.webhooks.signature.%s is set by the chart: use webhooks.existingSecret and webhooks.secretKeys" .) -}}
{{- end -}}
{{- end -}}
{{- if hasKey $webhooks "tls" -}}
{{- fail "config.webhooks.tls: terminate TLS at the Ingress (webhooks.ingress.tlsSecretName); the connector refuses a key file that its group may read, and a Secret volume under the pod's fsGroup is one" -}}
{{- end -}}
{{- if and .Values.webhooks.ingress.enabled (not .Values.webhooks.enabled) -}}
{{- fail "webhooks.ingress.enabled needs webhooks.enabled: the Ingress routes to the webhook receiver" -}}
{{- end -}}
{{- if .Values.webhooks.enabled -}}
{{- if and (not .Values.webhooks.existingSecret) (not $webhooks.allowUnsigned) -}}
{{- fail "webhooks.existingSecret: name the existing Secret holding the webhook signing secrets (docs/kubernetes.md, Webhooks)" -}}
{{- end -}}
{{- if and .Values.webhooks.existingSecret (not .Values.webhooks.secretKeys) -}}
{{- fail "webhooks.secretKeys: name the key(s) of webhooks.existingSecret holding the signing secrets" -}}
{{- end -}}
{{- if eq (int .Values.webhooks.port) (int .Values.metrics.port) -}}
{{- fail "webhooks.port equals metrics.port: the receiver faces the internet and needs a port of its own" -}}
{{- end -}}
{{- if and .Values.webhooks.ingress.enabled (not .Values.webhooks.ingress.host) -}}
{{- fail "webhooks.ingress.host: the public host name the API delivers to (the endpoint registered in its developer portal)" -}}
{{- end -}}
{{- end -}}
{{- $kafka := default dict $config.kafka -}}
{{- if and $kafka.sasl (not .Values.secrets.kafkaSasl.name) -}}
{{- fail "config.kafka.sasl needs secrets.kafkaSasl.name: the Secret holding its password (or oauthbearer client secret)" -}}
{{- end -}}
{{- if and .Values.secrets.kafkaSasl.name (not $kafka.sasl) -}}
{{- fail "secrets.kafkaSasl is set but config.kafka.sasl is not: set config.kafka.sasl.mechanism (and username or clientId)" -}}
{{- end -}}
{{- end -}}

{{/* The connector's configuration: the values' `config` with the keys the chart owns set over it. */}}
{{- define "calls-connector.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $connector := dict "mode" .Values.mode -}}
{{- $metrics := dict "enabled" true "host" "0.0.0.0" "port" (int .Values.metrics.port) -}}
{{- $poll := dict "shutdownTimeoutMs" (mul .Values.shutdownTimeoutSeconds 1000) -}}
{{- $store := dict "type" .Values.tokenStore.type -}}
{{- if eq .Values.tokenStore.type "kafka" -}}
{{- $_ := set $store "topic" (default (printf "%s-tokens" .Values.config.connector.name) .Values.tokenStore.topic) -}}
{{- else -}}
{{- $_ := set $store "path" (printf "%s/tokens.enc" .Values.tokenStore.file.mountPath) -}}
{{- end -}}
{{- $oauth := dict "clientSecret" "${CALLS_CONNECTOR_CLIENT_SECRET}" "keyEnv" "CALLS_CONNECTOR_TOKEN_KEY" "store" $store -}}
{{- $owned := dict "connector" $connector "metrics" $metrics "poll" $poll "oauth" $oauth -}}
{{- with .Values.secrets.kafkaSasl.name -}}
{{- $mechanism := lower (toString $config.kafka.sasl.mechanism) -}}
{{- $field := ternary "clientSecret" "password" (eq $mechanism "oauthbearer") -}}
{{- $_ := set $owned "kafka" (dict "sasl" (dict $field "${CALLS_CONNECTOR_KAFKA_SASL_SECRET}")) -}}
{{- end -}}
{{- with .Values.secrets.schemaRegistry.name -}}
{{- $_ := set $owned "schemaRegistry" (dict "username" "${CALLS_CONNECTOR_REGISTRY_USERNAME}" "password" "${CALLS_CONNECTOR_REGISTRY_PASSWORD}") -}}
{{- end -}}
{{- if .Values.webhooks.enabled -}}
{{- $secretEnv := list -}}
{{- if .Values.webhooks.existingSecret -}}
{{- range $i, $_ := .Values.webhooks.secretKeys -}}
{{- $secretEnv = append $secretEnv (printf "CALLS_CONNECTOR_WEBHOOK_SECRET_%d" $i) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $owned "webhooks" (dict "enabled" true "host" "0.0.0.0" "port" (int .Values.webhooks.port) "path" .Values.webhooks.path "signature" (dict "secretEnv" $secretEnv)) -}}
{{- end -}}
{{- toYaml (mergeOverwrite $config $owned) -}}
{{- end -}}

{{/* The Secrets, as environment variables the rendered config names. */}}
{{- define "calls-connector.secretEnv" -}}
- name: CALLS_CONNECTOR_CLIENT_SECRET
  valueFrom:
    secretKeyRef: { name: {{ .Values.secrets.clientSecret.name | quote }}, key: {{ .Values.secrets.clientSecret.key | quote }} }
- name: CALLS_CONNECTOR_TOKEN_KEY
  valueFrom:
    secretKeyRef: { name: {{ .Values.secrets.tokenStoreKey.name | quote }}, key: {{ .Values.secrets.tokenStoreKey.key | quote }} }
{{- with .Values.secrets.kafkaSasl.name }}
- name: CALLS_CONNECTOR_KAFKA_SASL_SECRET
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: {{ $.Values.secrets.kafkaSasl.key | quote }} }
{{- end }}
{{- with .Values.secrets.schemaRegistry.name }}
- name: CALLS_CONNECTOR_REGISTRY_USERNAME
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: {{ $.Values.secrets.schemaRegistry.usernameKey | quote }} }
- name: CALLS_CONNECTOR_REGISTRY_PASSWORD
  valueFrom:
    secretKeyRef: { name: {{ . | quote }}, key: {{ $.Values.secrets.schemaRegistry.passwordKey | quote }} }
{{- end }}
{{- if and .Values.webhooks.enabled .Values.webhooks.existingSecret }}
{{- range $i, $key := .Values.webhooks.secretKeys }}
- name: {{ printf "CALLS_CONNECTOR_WEBHOOK_SECRET_%d" $i }}
  valueFrom:
    secretKeyRef: { name: {{ $.Values.webhooks.existingSecret | quote }}, key: {{ $key | quote }} }
{{- end }}
{{- end }}
- name: NODE_OPTIONS
  value: {{ printf "--max-old-space-size=%s" (include "calls-connector.heapMiB" .) | quote }}
{{- end -}}

{{/* The pod's and the containers' security contexts: `podSecurityContext` and `securityContext`, whose defaults
     are the hardened ones (docs/kubernetes.md, Hardening): the image's `node` user. */}}
{{- define "calls-connector.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{- define "calls-connector.containerSecurityContext" -}}
{{- toYaml .Values.securityContext -}}
{{- end -}}

{{/* Mounts every connector container has: the config, a writable /tmp, Secret files (the helm test's pod too). */}}
{{- define "calls-connector.configMounts" -}}
- name: config
  mountPath: /etc/calls-connector
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- range $i, $file := .Values.secrets.files }}
- name: {{ printf "secret-file-%d" $i }}
  mountPath: {{ $file.mountPath }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The connector's and the auth-login Job's mounts: those above, the token file's volume, `extraVolumeMounts`. */}}
{{- define "calls-connector.volumeMounts" -}}
{{ include "calls-connector.configMounts" . }}
{{- if eq .Values.tokenStore.type "file" }}
- name: tokens
  mountPath: {{ .Values.tokenStore.file.mountPath }}
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "calls-connector.configVolumes" -}}
- name: config
  configMap:
    name: {{ include "calls-connector.fullname" . }}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- range $i, $file := .Values.secrets.files }}
- name: {{ printf "secret-file-%d" $i }}
  secret:
    secretName: {{ $file.name }}
    # 0440: the node user reads them through fsGroup (decimal: YAML 1.1 and 1.2 read 0440 differently).
    defaultMode: 288
{{- end }}
{{- end -}}

{{- define "calls-connector.volumes" -}}
{{ include "calls-connector.configVolumes" . }}
{{- if eq .Values.tokenStore.type "file" }}
- name: tokens
  persistentVolumeClaim:
    claimName: {{ .Values.tokenStore.file.existingClaim }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The connector's environment: the Secrets the rendered config names, then `extraEnv`. */}}
{{- define "calls-connector.env" -}}
{{ include "calls-connector.secretEnv" . }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}
