{{/* The chart's name in labels and object names (nameOverride). */}}
{{- define "svc.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped name of every object, at most 63 characters with room for suffixes. */}}
{{- define "svc.fullname" -}}
{{- $name := include "svc.name" . -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "svc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "gateway"). */}}
{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The one image all deployables run. */}}
{{- define "svc.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* Secret with DATABASE_URL, REDIS_URL, SVC_KEY_PEPPER and SVC_ADMIN_KEY. */}}
{{- define "svc.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "svc.fullname" .) -}}
{{- end -}}

{{/* Pod-level security: the image's non-root "node" user. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* Environment every deployable reads (docs/configuration.md). */}}
{{- define "svc.commonEnv" -}}
- name: SVC_CATALOG
  value: /etc/svc/catalog.yaml
- name: SVC_CATALOG_SOURCE
  value: {{ .Values.catalogueSource | default "database" | quote }}
- name: SVC_METRICS_PORT
  value: {{ .Values.metricsPort | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SVC_DATA_DIR
  value: /tmp/svc-data
{{- if and .Values.redis.bundled .Values.redis.cluster }}{{ fail "redis.cluster=true needs redis.bundled=false and secrets.redisUrl naming the cluster: the bundled Redis is one server" }}{{ end }}
- name: SVC_REDIS_CLUSTER
  value: {{ ternary "true" "false" (eq .Values.redis.cluster true) | quote }}
{{- /* One value for every deployable: a database is bound to one prefix and refuses others (docs/reliability.md). */}}
- name: SVC_STORE_PREFIX
  value: {{ .Values.redis.prefix | default "svc:" | quote }}
{{- end -}}

{{- define "svc.commonEnvFrom" -}}
- secretRef:
    name: {{ include "svc.secretName" . }}
{{- end -}}

{{/* Catalogue and scratch volumes of every deployable. */}}
{{- define "svc.volumes" -}}
- name: catalogue
  configMap:
    name: {{ include "svc.fullname" . }}-catalogue
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "svc.volumeMounts" -}}
- name: catalogue
  mountPath: /etc/svc
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/*
  The data of the chart's Secret, as YAML. Each value comes from, in order: the values file, the
  Secret already in the cluster (lookup), a new random one when secrets.generate allows it. So
  the pepper and admin key are generated on the first `helm install` and kept by every upgrade.
  Renderers without a cluster (helm template, Argo CD) find nothing and would generate new ones
  on every render: there secrets.existingSecret is the way (docs/deploy.md, GitOps), and
  secrets.generate=false turns a missing value into a render error instead. Computed once per
  render (cached in a dict on .Values) so the Secret and the pods' checksum agree.
*/}}
{{- define "svc.secretData" -}}
{{- if not (hasKey .Values "__svcSecretData") }}
{{- $name := include "svc.fullname" . }}
{{- $found := (lookup "v1" "Secret" .Release.Namespace $name).data | default dict }}
{{- $stored := dict }}
{{- range $key, $value := $found }}{{ $_ := set $stored $key (b64dec $value) }}{{ end }}
{{- $generate := .Values.secrets.generate }}
{{- $missing := "secrets.generate is false and %s is neither given nor in the cluster's Secret %s: set secrets.existingSecret (the GitOps path, docs/deploy.md) or give %s" }}
{{- $data := dict }}
{{- range $key, $given := dict "SVC_KEY_PEPPER" .Values.secrets.keyPepper "SVC_ADMIN_KEY" .Values.secrets.adminKey }}
{{- $value := $given | default (get $stored $key) }}
{{- if and (not $value) (not $generate) }}{{ fail (printf $missing $key $name (ternary "secrets.keyPepper" "secrets.adminKey" (eq $key "SVC_KEY_PEPPER"))) }}{{ end }}
{{- $_ := set $data $key ($value | default (randAlphaNum 48)) }}
{{- end }}
{{- $databaseUrl := .Values.secrets.databaseUrl }}
{{- if .Values.postgresql.bundled }}
{{- $password := get $stored "POSTGRES_PASSWORD" }}
{{- if and (not $password) (not $generate) }}{{ fail (printf $missing "POSTGRES_PASSWORD" $name "an existing Secret (or postgresql.bundled=false with secrets.databaseUrl)") }}{{ end }}
{{- $password = $password | default (randAlphaNum 32) }}
{{- $_ := set $data "POSTGRES_PASSWORD" $password }}
{{- $databaseUrl = printf "postgres://svc:%s@%s-postgresql:5432/svc" $password $name }}
{{- end }}
{{- $redisUrl := .Values.secrets.redisUrl }}
{{- if .Values.redis.bundled }}
{{- $password := get $stored "REDIS_PASSWORD" }}
{{- if and (not $password) (not $generate) }}{{ fail (printf $missing "REDIS_PASSWORD" $name "an existing Secret (or redis.bundled=false with secrets.redisUrl)") }}{{ end }}
{{- $password = $password | default (randAlphaNum 32) }}
{{- $_ := set $data "REDIS_PASSWORD" $password }}
{{- $redisUrl = printf "redis://:%s@%s-redis:6379" $password $name }}
{{- end }}
{{- $_ := set $data "DATABASE_URL" (required "secrets.databaseUrl is required when postgresql.bundled is false" $databaseUrl) }}
{{- $_ := set $data "REDIS_URL" (required "secrets.redisUrl is required when redis.bundled is false" $redisUrl) }}
{{- range $key, $value := .Values.secrets.extraData }}
{{- if hasKey $data $key }}{{ fail (printf "secrets.extraData.%s: the chart sets %s itself (see values.yaml, secrets)" $key $key) }}{{ end }}
{{- $_ := set $data $key $value }}
{{- end }}
{{- $_ := set .Values "__svcSecretData" $data }}
{{- end }}
{{- toYaml (get .Values "__svcSecretData") }}
{{- end -}}

{{/*
  Restarts pods when the catalogue or the Secret changes: the chart's own Secret by its data, an
  existing Secret by what the cluster holds at render time (nothing under helm template; there
  a tool such as Reloader or a renamed Secret rolls the pods).
*/}}
{{- define "svc.configChecksums" -}}
checksum/catalogue: {{ include (print $.Template.BasePath "/configmap-catalogue.yaml") . | sha256sum }}
{{- if .Values.secrets.existingSecret }}
checksum/secret: {{ (lookup "v1" "Secret" .Release.Namespace .Values.secrets.existingSecret).data | default dict | toJson | sha256sum }}
{{- else }}
checksum/secret: {{ include "svc.secretData" . | sha256sum }}
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
  The operator's grants where it reconciles ManagedKeys: read, finalizer patch and status of the
  ManagedKeys; update of managedkeys/finalizers because its Secrets' ownerReferences set
  blockOwnerDeletion; the key Secrets it reads, creates and replaces (never lists or deletes:
  garbage collection removes them with their ManagedKey); Events about the ManagedKeys.
*/}}
{{- define "svc.operatorKeyRules" -}}
- apiGroups: [gateway.svc.dev]
  resources: [managedkeys]
  verbs: [get, patch]
- apiGroups: [gateway.svc.dev]
  resources: [managedkeys/status]
  verbs: [patch]
- apiGroups: [gateway.svc.dev]
  resources: [managedkeys/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [secrets]
  {{- /* list and watch: the operator's own key Secrets (by label), so a deleted one is recreated at once. */}}
  verbs: [get, list, watch, create, update]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end -}}
