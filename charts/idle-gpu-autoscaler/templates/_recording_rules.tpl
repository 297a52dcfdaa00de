{{/*
The recording rules of docs/RECORDING-RULES.md, written as the service's generator writes them
(autoscaler/adapters/prometheus/recording_rules.py; tests/deploy compares the two).
*/}}

{{/* The utilization signals: prometheus.signals, else the service's defaults. */}}
{{- define "iga.utilizationSignals" -}}
{{- if .Values.prometheus.signals }}
{{- toYaml .Values.prometheus.signals }}
{{- else }}
- metric: DCGM_FI_PROF_GR_ENGINE_ACTIVE
  scale: 1
  validOnMig: true
- metric: DCGM_FI_DEV_GPU_UTIL
  scale: 100
  validOnMig: false
{{- end }}
{{- end }}

{{/* A settings duration (90s, 1m, 1h30m, or seconds) as PromQL writes it: 90s, 60s, 5400s. */}}
{{- define "iga.promDuration" -}}
{{- $text := toString . }}
{{- $ms := 0 }}
{{- $units := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 "d" 86400000 }}
{{- if regexMatch "^[0-9]+$" $text }}
{{- $ms = mul (atoi $text) 1000 }}
{{- else }}
{{- range regexFindAll "[0-9]+(ms|s|m|h|d)" $text -1 }}
{{- $ms = add $ms (mul (atoi (regexFind "^[0-9]+" .)) (get $units (regexReplaceAll "^[0-9]+" . ""))) }}
{{- end }}
{{- end }}
{{- if mod $ms 1000 }}{{ $ms }}ms{{ else }}{{ div $ms 1000 }}s{{ end }}
{{- end }}

{{/*
One signal's per-GPU slot peak: the raw slot at the last slot end (an aligned subquery),
relabelled to our labels (both label styles), merged per GPU, divided by the scale. The slot
holds the samples of (t - slot, t] on Prometheus 2.x and 3 alike: written one millisecond
shorter for a server whose ranges are left-closed, as-is for a left-open one, each kept where
the server's own answer to the probe (pinned to a whole second by @) says it is that one.
.slot is iga.promDuration's output, whole seconds or milliseconds, the only units read here.
The probe and its counts are recording_rules.either_server's (range_semantics.SELF_PROBE);
tests/deploy/test_chart_recording_rules.py keeps the two alike.
*/}}
{{- define "iga.slotPeakExpr" -}}
{{- $signal := .signal }}
{{- $selector := $signal.metric }}
{{- if not $signal.validOnMig }}{{ $selector = printf "%s{GPU_I_ID=\"\"}" $signal.metric }}{{ end }}
{{- $ms := atoi (regexFind "^[0-9]+" .slot) }}
{{- if not (hasSuffix "ms" .slot) }}{{ $ms = mul $ms 1000 }}{{ end }}
{{- $less := sub $ms 1 }}
{{- $closedSlot := printf "%ds" (div $less 1000) }}
{{- if mod $less 1000 }}{{ $closedSlot = printf "%dms" $less }}{{ end }}
{{- $probe := "count_over_time(vector(1)[2s:1s] @ 1000)" }}
{{- $closed := printf "((max_over_time(%s[%s])) and on () (%s == 3))" $selector $closedSlot $probe }}
{{- $opened := printf "((max_over_time(%s[%s])) and on () (%s == 2))" $selector .slot $probe }}
{{- $expr := printf "last_over_time((%s or %s)[%s:%s])" $closed $opened .slot .slot }}
{{- range list (list "workload_namespace" "namespace") (list "workload_namespace" "exported_namespace") (list "workload_pod" "pod") (list "workload_pod" "exported_pod") }}
{{- $expr = printf "label_replace(%s, \"%s\", \"$1\", \"%s\", \"(.+)\")" $expr (index . 0) (index . 1) }}
{{- end }}
{{- $expr = printf "max by (workload_namespace, workload_pod, UUID, GPU_I_ID) (%s)" $expr }}
{{- if ne (float64 $signal.scale) 1.0 }}{{ $expr = printf "%s / %v" $expr $signal.scale }}{{ end }}
{{- $expr }}
{{- end }}
