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

{{/* The docs of this chart's version, for NOTES.txt: an install from the OCI chart has no
repository at hand. The release tag is v<appVersion> (.github/workflows/release.yml). */}}
{{- define "iga.docs" -}}
{{- printf "%s/blob/v%s/docs" .Chart.Home .Chart.AppVersion }}
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

{{- define "iga.leaseName" -}}
{{- default (include "iga.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/*
The actuators (config.actuators, docs/ACTUATORS.md): "true" when enabled, else empty. Kueue's
is on unless said otherwise; the suspend actuators (KAI, KubeRay) only when asked.
*/}}
{{- define "iga.actuators.kueue" -}}
{{- if dig "actuators" "kueue" "enabled" true .Values.config }}true{{ end }}
{{- end }}
{{/* Where Kueue keeps its Configuration (config.cluster.kueueConfiguration; the defaults are
the settings model's, autoscaler/settings/cluster.py): read by name, never written. */}}
{{- define "iga.kueueConfiguration.namespace" -}}
{{- dig "cluster" "kueueConfiguration" "namespace" "kueue-system" .Values.config }}
{{- end }}
{{- define "iga.kueueConfiguration.name" -}}
{{- dig "cluster" "kueueConfiguration" "name" "kueue-manager-config" .Values.config }}
{{- end }}
{{- define "iga.actuators.kai" -}}
{{- if dig "actuators" "kai" "enabled" false .Values.config }}true{{ end }}
{{- end }}
{{- define "iga.actuators.kuberay" -}}
{{- if dig "actuators" "kuberay" "enabled" false .Values.config }}true{{ end }}
{{- end }}

{{/*
The owner kinds the service knows, as a JSON list of {kind, group, plural, enabled,
podSelector}: files/owner-kinds.yaml, generated from the service's one table
(autoscaler/domain/policy/owners.py), in its order.
*/}}
{{- define "iga.ownerKinds.table" -}}
{{- (.Files.Get "files/owner-kinds.yaml" | fromYaml).ownerKinds | toJson }}
{{- end }}

{{/*
The kinds between an owner and its pods (Jobs, JobSets, ReplicaSets, StatefulSets), read
for their ownerReferences only: a JSON list of {kind, group, plural}.
*/}}
{{- define "iga.ownerKinds.intermediates" -}}
{{- (.Files.Get "files/owner-kinds.yaml" | fromYaml).intermediates | toJson }}
{{- end }}

{{/*
The API groups of the owner kinds, each once, in the table's order (one RBAC rule each).
*/}}
{{- define "iga.ownerKinds.groups" -}}
{{- $groups := list }}
{{- range include "iga.ownerKinds.table" . | fromJsonArray }}{{ $groups = append $groups .group }}{{ end }}
{{- uniq $groups | toJson }}
{{- end }}

{{/*
config.cluster.ownerKinds as the service runs it (a JSON map): the entries given, and each
kind of the table they leave out as its row says (so a kind added to the service's table is
rendered without a chart edit; the service's own default is that same table).
*/}}
{{- define "iga.ownerKinds" -}}
{{- $kinds := deepCopy (default dict (dig "cluster" "ownerKinds" dict .Values.config)) }}
{{- range include "iga.ownerKinds.table" . | fromJsonArray }}
{{- if not (hasKey $kinds .kind) }}
{{- $entry := dict "enabled" .enabled }}
{{- if .podSelector }}{{ $_ := set $entry "podSelector" .podSelector }}{{ end }}
{{- $_ := set $kinds .kind $entry }}
{{- end }}
{{- end }}
{{- toJson $kinds }}
{{- end }}

{{/*
RBAC rules for the writes on workloads: the deactivation and annotation patches on Workloads
(Kueue's actuator only), the patches on the owners of the kinds enabled in
config.cluster.ownerKinds, and their Events. The suspend actuators need no rule of their own:
their rows are RayClusters, patched under ownerKinds.RayCluster (which they require, see
iga.validate), so enabling them never widens the writes. In the ClusterRole, or in a Role per
config.policy.namespaces.include entry.
*/}}
{{- define "iga.rbac.workloadWrites" -}}
{{- $kinds := include "iga.ownerKinds" . | fromJson }}
{{- $table := include "iga.ownerKinds.table" . | fromJsonArray }}
{{- if include "iga.actuators.kueue" . }}
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["patch"]
{{- end }}
# Owners of the enabled kinds marked annotated only (never pods, Jobs, StatefulSets nor
# Deployments: their Workload is annotated instead):
# exemption and audit annotations; a RayCluster's
# spec.suspend when a suspend actuator (KAI, KubeRay) is enabled.
{{- range $group := include "iga.ownerKinds.groups" . | fromJsonArray }}
{{- $enabled := list }}
{{- range $table }}
{{- if and (eq .group $group) .annotated (get $kinds .kind).enabled }}{{ $enabled = append $enabled .plural }}{{ end }}
{{- end }}
{{- if $enabled }}
- apiGroups: [{{ $group | quote }}]
  resources: {{ $enabled | sortAlpha | toJson }}
  verbs: ["patch"]
{{- end }}
{{- end }}
{{- if include "iga.rules.delete" . }}
# Rule action `delete` only (opt-in): a RayCluster inactive for deleteAfter since our own
# deactivation. Without such a rule nothing here may delete.
- apiGroups: ["ray.io"]
  resources: ["rayclusters"]
  verbs: ["delete"]
{{- end }}
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
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
{{- with $p.rangeSemantics }}{{ $_ := set $out "rangeSemantics" . }}{{ end }}
{{- with $p.signals }}{{ $_ := set $out "signals" . }}{{ end }}
{{- with $p.evidence }}{{ $_ := set $out "evidence" . }}{{ end }}
{{- with $p.recordedSeries }}{{ $_ := set $out "recordedSeries" . }}{{ end }}
{{- toYaml $out }}
{{- end }}

{{/*
The container's ports. The settings' api.port and keda.port are pinned to them; users move the
Service ports (service.httpPort, service.grpcPort), which the probes and Service reach by name.
*/}}
{{- define "iga.httpContainerPort" -}}8080{{- end }}
{{- define "iga.grpcContainerPort" -}}9090{{- end }}

{{- define "iga.apiTokensDir" -}}{{ include "iga.configDir" . }}/api-tokens{{- end }}
{{- define "iga.kedaTlsDir" -}}{{ include "iga.configDir" . }}/keda-tls{{- end }}

{{/* Static tokens are mounted only in static mode; the schema requires the Secret there. */}}
{{- define "iga.api.staticTokens" -}}
{{- if eq .Values.api.auth.mode "static" }}true{{ end }}
{{- end }}

{{- define "iga.keda.tls" -}}
{{- if .Values.keda.tls.secretName }}true{{ end }}
{{- end }}

{{- define "iga.keda.clientCa" -}}
{{- if .Values.keda.tls.clientCa.secretName }}
{{- if not .Values.keda.tls.secretName }}
{{- fail "keda.tls.clientCa.secretName (mutual TLS) needs keda.tls.secretName, the server certificate" }}
{{- end }}true
{{- end }}
{{- end }}

{{/* The api section: the values as given, plus where it listens and the mounted token file. */}}
{{- define "iga.settings.api" -}}
{{- $api := .Values.api }}
{{- $auth := dict "mode" $api.auth.mode "audiences" $api.auth.audiences }}
{{- if include "iga.api.staticTokens" . }}
{{- $_ := set $auth "staticTokensFile" (printf "%s/tokens.yaml" (include "iga.apiTokensDir" .)) }}
{{- end }}
{{- $admin := dict "verb" $api.admin.verb "group" $api.admin.group "resource" $api.admin.resource }}
{{- with $api.admin.name }}{{ $_ := set $admin "name" . }}{{ end }}
{{- with $api.admin.namespace }}{{ $_ := set $admin "namespace" . }}{{ end }}
{{- $out := dict "host" "0.0.0.0" "port" (int (include "iga.httpContainerPort" .)) "readsOpen" $api.readsOpen }}
{{- $_ := set $out "auth" $auth }}
{{- $_ := set $out "admin" $admin }}
{{- $_ := set $out "allowIndefiniteExemption" $api.allowIndefiniteExemption }}
{{- $_ := set $out "auditRecordLimit" $api.auditRecordLimit }}
{{- $_ := set $out "writeAttempts" $api.writeAttempts }}
{{- $_ := set $out "headerTimeout" $api.headerTimeout }}
{{- $_ := set $out "idleTimeout" $api.idleTimeout }}
{{- $_ := set $out "maxConnections" $api.maxConnections }}
{{- toYaml $out }}
{{- end }}

{{/*
The names by which ScaledObjects reach this release's Service: short and fully qualified, on
the gRPC port (external, external-push) and the HTTP port (the metrics-api URL host).
*/}}
{{- define "iga.keda.selfAddresses" -}}
{{- $host := printf "%s.%s.svc" (include "iga.fullname" .) .Release.Namespace }}
{{- $addresses := list }}
{{- range $port := list .Values.service.grpcPort .Values.service.httpPort }}
{{- $addresses = append $addresses (printf "%s:%d" $host (int $port)) }}
{{- $addresses = append $addresses (printf "%s.cluster.local:%d" $host (int $port)) }}
{{- end }}
{{- toYaml $addresses }}
{{- end }}

{{/* The keda section: the values as given, plus the port, the mounted TLS files and our names. */}}
{{- define "iga.settings.keda" -}}
{{- $keda := .Values.keda }}
{{- $mutual := include "iga.keda.clientCa" . }}
{{- $tls := dict }}
{{- if include "iga.keda.tls" . }}
{{- $dir := include "iga.kedaTlsDir" . }}
{{- $_ := set $tls "certFile" (printf "%s/tls.crt" $dir) }}
{{- $_ := set $tls "keyFile" (printf "%s/tls.key" $dir) }}
{{- if $mutual }}
{{- $_ := set $tls "clientCaFile" (printf "%s/client-ca.crt" $dir) }}
{{- end }}
{{- end }}
{{- $addresses := $keda.selfAddresses }}
{{- if not $addresses }}
{{- $addresses = include "iga.keda.selfAddresses" . | fromYamlArray }}
{{- end }}
{{- $out := dict "enabled" $keda.enabled "port" (int (include "iga.grpcContainerPort" .)) }}
{{- $_ := set $out "tls" $tls }}
{{- $_ := set $out "selfAddresses" $addresses }}
{{- $_ := set $out "heartbeatInterval" $keda.heartbeatInterval }}
{{- $_ := set $out "metricsApiReaders" ($keda.metricsApiReaders | default list) }}
{{- toYaml $out }}
{{- end }}

{{/* The leaderElection section: the values as given, the Lease named after the release. */}}
{{- define "iga.settings.leaderElection" -}}
{{- $le := .Values.leaderElection }}
{{- $out := dict "enabled" $le.enabled "leaseDuration" $le.leaseDuration "renewDeadline" $le.renewDeadline "retryPeriod" $le.retryPeriod }}
{{- $_ := set $out "leaseName" (include "iga.leaseName" .) }}
{{- toYaml $out }}
{{- end }}

{{/*
Combinations the schema cannot see. More than one acting loop would deactivate twice and
double the per-cycle cap, so several pods (replicas, or a rolling update's overlap) need a
leader; a PDB that no eviction can satisfy would block every node drain.
*/}}
{{- define "iga.validate" -}}
{{- include "iga.validate.actuators" . }}
{{- include "iga.validate.removed" . }}
{{- $le := .Values.leaderElection.enabled }}
{{- if and (gt (int .Values.replicaCount) 1) (not $le) }}
{{- fail (printf "replicaCount %d needs leaderElection.enabled=true: without a leader every replica would deactivate workloads" (int .Values.replicaCount)) }}
{{- end }}
{{- if and (eq .Values.updateStrategy.type "RollingUpdate") (not $le) }}
{{- fail "updateStrategy RollingUpdate runs the old and the new pod side by side: it needs leaderElection.enabled=true" }}
{{- end }}
{{- $pdb := .Values.podDisruptionBudget }}
{{- if and $pdb.enabled (kindIs "invalid" $pdb.maxUnavailable) (not (kindIs "string" $pdb.minAvailable)) }}
{{- if ge (int $pdb.minAvailable) (int .Values.replicaCount) }}
{{- fail (printf "podDisruptionBudget.minAvailable %d with replicaCount %d would block every node drain: raise replicaCount or set podDisruptionBudget.maxUnavailable" (int $pdb.minAvailable) (int .Values.replicaCount)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Values removed at 1.0 (settings/tree.py REMOVED_KEYS): refused naming the replacement. */}}
{{- define "iga.validate.removed" -}}
{{- if hasKey .Values.api "maxExemption" }}
{{- fail "api.maxExemption was removed at 1.0: set exemptions.maxDuration in a rule named default, last in config.rules" }}
{{- end }}
{{- if hasKey .Values.keda "profiles" }}
{{- fail "keda.profiles was removed at 1.0: write a rule per profile in config.rules, of the same name, with its idleWindow and thresholdPercent; a KEDA trigger that names the rule in `profile:` is judged with them" }}
{{- end }}
{{- end }}

{{/*
The service refuses these actuator settings at start-up (settings/actuators.py, check_actuators); the
chart says so at install instead of a crash-looping pod.
*/}}
{{- define "iga.validate.actuators" -}}
{{- $suspending := list }}
{{- if include "iga.actuators.kai" . }}{{ $suspending = append $suspending "kai" }}{{ end }}
{{- if include "iga.actuators.kuberay" . }}{{ $suspending = append $suspending "kuberay" }}{{ end }}
{{- if and (not (include "iga.actuators.kueue" .)) (not $suspending) }}
{{- fail "config.actuators: every actuator is disabled, so the service could never free a GPU: enable at least one of kueue, kai, kuberay" }}
{{- end }}
{{- $ray := dig "cluster" "ownerKinds" "RayCluster" "enabled" false .Values.config }}
{{- if and $suspending (not $ray) }}
{{- fail (printf "config.actuators.%s.enabled: its rows are RayClusters, but config.cluster.ownerKinds.RayCluster.enabled is false, so every one would be protected: enable that owner kind or disable the actuator" (first $suspending)) }}
{{- end }}
{{- end }}

{{/*
The whole settings file: `config` as given, plus what the install decides. A new section that
needs no install-specific key needs only a schema entry and values under `config`.
*/}}
{{- define "iga.settings" -}}
{{- $settings := deepCopy .Values.config }}
{{- $_ := set $settings "prometheus" (include "iga.settings.prometheus" . | fromYaml) }}
{{- $_ := set $settings "api" (include "iga.settings.api" . | fromYaml) }}
{{- $_ := set $settings "keda" (include "iga.settings.keda" . | fromYaml) }}
{{- $_ := set $settings "leaderElection" (include "iga.settings.leaderElection" . | fromYaml) }}
{{- $_ := set $settings "notifications" (include "iga.settings.notifications" . | fromYaml) }}
{{- $policy := deepCopy (default dict .Values.config.policy) }}
{{- $_ := set $policy "dryRun" (eq (include "iga.dryRun" .) "true") }}
{{- $_ := set $settings "policy" $policy }}
{{- $cluster := deepCopy (default dict .Values.config.cluster) }}
{{- $_ := set $cluster "serviceNamespace" .Release.Namespace }}
{{- $_ := set $cluster "runtimeStateConfigMap" (include "iga.stateConfigMapName" .) }}
{{- $_ := set $cluster "ownerKinds" (include "iga.ownerKinds" . | fromJson) }}
{{- $_ := set $settings "cluster" $cluster }}
{{- toYaml $settings }}
{{- end }}
