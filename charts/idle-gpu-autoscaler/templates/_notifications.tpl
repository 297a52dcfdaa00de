{{/*
Notifications (docs/NOTIFICATIONS.md): the settings section, the Secrets its files come from,
and the RBAC of rule action `delete`. The service reads every secret from a mounted file, so
the rendered ConfigMap holds paths, never a URL of Slack's or a key.
*/}}

{{- define "iga.notifyDir" -}}{{ include "iga.configDir" . }}/notify{{- end }}
{{- define "iga.linkKeyDir" -}}{{ include "iga.configDir" . }}/link-signing-key{{- end }}
{{- define "iga.linkKeyFile" -}}signing-key{{- end }}

{{/* Links are on when they have an address; the signing key is mounted only then. */}}
{{- define "iga.links.enabled" -}}
{{- if .Values.notifications.links.baseUrl }}true{{ end }}
{{- end }}

{{- define "iga.links.secretName" -}}
{{- $generated := printf "%s-link-signing-key" (include "iga.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- default $generated .Values.notifications.links.signingKey.existingSecret }}
{{- end }}

{{/* The keys of notifications.secretName the targets name (urlKey, secretKey), once each. */}}
{{- define "iga.notify.secretKeys" -}}
{{- $keys := dict }}
{{- range $name, $target := .Values.notifications.targets }}
{{- range $field := list "urlKey" "secretKey" }}
{{- with get $target $field }}{{ $_ := set $keys . true }}{{ end }}
{{- end }}
{{- end }}
{{- if $keys }}{{ keys $keys | sortAlpha | toJson }}{{ end }}
{{- end }}

{{/* The notifications section: targets with the mounted files' paths, the links' key file. */}}
{{- define "iga.settings.notifications" -}}
{{- $n := .Values.notifications }}
{{- $dir := include "iga.notifyDir" . }}
{{- $targets := dict }}
{{- range $name, $target := $n.targets }}
{{- $out := dict "type" $target.type }}
{{- with $target.url }}{{ $_ := set $out "url" . }}{{ end }}
{{- with $target.urlKey }}{{ $_ := set $out "urlFile" (printf "%s/%s" $dir .) }}{{ end }}
{{- with $target.secretKey }}{{ $_ := set $out "secretFile" (printf "%s/%s" $dir .) }}{{ end }}
{{- with $target.timeout }}{{ $_ := set $out "timeout" . }}{{ end }}
{{- $_ := set $targets $name $out }}
{{- end }}
{{- $links := dict "ttl" $n.links.ttl "choices" $n.links.choices }}
{{- if include "iga.links.enabled" . }}
{{- $_ := set $links "baseUrl" $n.links.baseUrl }}
{{- $_ := set $links "signingKeyFile" (printf "%s/%s" (include "iga.linkKeyDir" .) (include "iga.linkKeyFile" .)) }}
{{- end }}
{{- $out := dict "targets" $targets "defaultTargets" $n.defaultTargets "links" $links }}
{{- $_ := set $out "retry" $n.retry }}
{{- $_ := set $out "queueLimit" $n.queueLimit }}
{{- toYaml $out }}
{{- end }}

{{/* Some rule deletes (action `delete`, opt-in): only then may the service delete RayClusters. */}}
{{- define "iga.rules.delete" -}}
{{- range .Values.config.rules }}{{ if eq (toString .action) "delete" }}true{{ end }}{{ end }}
{{- end }}

{{/* Combinations the schema cannot see. */}}
{{- define "iga.notifications.validate" -}}
{{- $n := .Values.notifications }}
{{- if and (include "iga.notify.secretKeys" .) (not $n.secretName) }}
{{- fail "notifications.targets name a urlKey or secretKey: set notifications.secretName, the Secret holding them" }}
{{- end }}
{{- $ingress := $n.links.ingress }}
{{- if $ingress.enabled }}
{{- if not (include "iga.links.enabled" .) }}
{{- fail "notifications.links.ingress.enabled needs notifications.links.baseUrl, the address the links use" }}
{{- end }}
{{- $host := (urlParse $n.links.baseUrl).hostname }}
{{- if ne $host $ingress.host }}
{{- fail (printf "notifications.links.ingress.host %q is not the host of notifications.links.baseUrl (%q): the links would not reach it" $ingress.host $host) }}
{{- end }}
{{- end }}
{{- end }}
