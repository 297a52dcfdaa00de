{{/* Names, labels and the rendered settings file. */}}

{{- define "iga.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* `<release>-<chart>`, or the release name alone when it already contains the chart name. */}}
{{- define "iga.fullname" -}}
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

{{- define "iga.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "iga.selectorLabels" -}}
app.kubernetes.io/name: {{ include "iga.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "iga.labels" -}}
helm.sh/chart: {{ include "iga.chart" . }}
{{ include "iga.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: idle-gpu-autoscaler
{{- end }}

{{- define "iga.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "iga.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "iga.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The runtime-state ConfigMap (pauses, audit). Named here and in RBAC; never rendered. */}}
{{- define "iga.stateConfigMapName" -}}
{{- printf "%s-state" (include "iga.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "iga.configDir" -}}/etc/idle-gpu-autoscaler{{- end }}

{{/* Only an explicit boolean false turns dry-run off; anything else (unset, null) keeps it on. */}}
{{- define "iga.dryRun" -}}
{{- if and (kindIs "bool" .Values.dryRun) (not .Values.dryRun) }}false{{ else }}true{{ end }}
{{- end }}

{{/* Where the bearer token is mounted, or nothing when the source is none. */}}
{{- define "iga.prometheus.tokenFile" -}}
{{- $source := .Values.prometheus.bearerToken.source }}
{{- if eq $source "serviceAccount" }}/var/run/secrets/kubernetes.io/serviceaccount/token
{{- else if eq $source "secret" }}{{ include "iga.configDir" . }}/prometheus-token/token
{{- end }}
{{- end }}

{{/* Where the CA bundle is mounted, or nothing for the image's system CAs. */}}
{{- define "iga.prometheus.caFile" -}}
{{- $source := .Values.prometheus.ca.source }}
{{- if eq $source "openshiftServiceCA" }}{{ include "iga.configDir" . }}/prometheus-ca/service-ca.crt
{{- else if or (eq $source "configMap") (eq $source "secret") }}{{ include "iga.configDir" . }}/prometheus-ca/ca.crt
{{- end }}
{{- end }}

{{- define "iga.prometheus.caConfigMapName" -}}
{{- if eq .Values.prometheus.ca.source "openshiftServiceCA" }}
{{- printf "%s-service-ca" (include "iga.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- .Values.prometheus.ca.name }}
{{- end }}
{{- end }}

{{/* The prometheus section of the settings file, from the chart's prometheus values. */}}
{{- define "iga.settings.prometheus" -}}
{{- $p := .Values.prometheus }}
{{- $out := dict "insecureSkipVerify" $p.insecureSkipVerify "timeout" $p.timeout "retries" $p.retries }}
{{- with $p.url }}{{ $_ := set $out "url" . }}{{ end }}
{{- with include "iga.prometheus.tokenFile" . }}{{ $_ := set $out "bearerTokenFile" . }}{{ end }}
{{- with include "iga.prometheus.caFile" . }}{{ $_ := set $out "caFile" . }}{{ end }}
{{- with $p.tenancyNamespace }}{{ $_ := set $out "tenancyNamespace" . }}{{ end }}
{{- with $p.signals }}{{ $_ := set $out "signals" . }}{{ end }}
{{- toYaml $out }}
{{- end }}

{{/*
The whole settings file: `config` as given, plus what the install decides. New sections
(api, keda, leaderElection) need only a schema entry and values; they pass through as they are.
*/}}
{{- define "iga.settings" -}}
{{- $settings := deepCopy .Values.config }}
{{- $_ := set $settings "prometheus" (include "iga.settings.prometheus" . | fromYaml) }}
{{- $policy := deepCopy (default dict .Values.config.policy) }}
{{- $_ := set $policy "dryRun" (eq (include "iga.dryRun" .) "true") }}
{{- $_ := set $settings "policy" $policy }}
{{- $cluster := deepCopy (default dict .Values.config.cluster) }}
{{- $_ := set $cluster "serviceNamespace" .Release.Namespace }}
{{- $_ := set $cluster "runtimeStateConfigMap" (include "iga.stateConfigMapName" .) }}
{{- $_ := set $settings "cluster" $cluster }}
{{- toYaml $settings }}
{{- end }}
