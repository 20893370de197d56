{{/* Release-scoped name of every object, at most 63 characters with room for suffixes. */}}
{{- define "svc.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "svc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "gateway"). */}}
{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The one image all deployables run. */}}
{{- define "svc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
- name: SVC_METRICS_PORT
  value: {{ .Values.metricsPort | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SVC_DATA_DIR
  value: /tmp/svc-data
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

{{/* Restarts pods when the catalogue or the chart's Secret changes. */}}
{{- define "svc.configChecksums" -}}
checksum/catalogue: {{ include (print $.Template.BasePath "/configmap-catalogue.yaml") . | sha256sum }}
{{- end -}}
