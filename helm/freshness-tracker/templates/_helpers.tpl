{{/* Names ------------------------------------------------------------------------------------ */}}

{{- define "freshness-tracker.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "freshness-tracker.fullname" -}}
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

{{- define "freshness-tracker.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "freshness-tracker.labels" -}}
helm.sh/chart: {{ include "freshness-tracker.chart" . }}
{{ include "freshness-tracker.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "freshness-tracker.selectorLabels" -}}
app.kubernetes.io/name: {{ include "freshness-tracker.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "freshness-tracker.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "freshness-tracker.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "freshness-tracker.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "freshness-tracker.sharded" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- end }}

{{/* Copies of each shard (sharding.replicasPerShard > 1): every copy measures the same groups. */}}
{{- define "freshness-tracker.copies" -}}
{{- if gt (int (default 1 .Values.sharding.replicasPerShard)) 1 }}true{{ end }}
{{- end }}

{{/* Pods of the workload: shards (replicas) × copies of each. */}}
{{- define "freshness-tracker.pods" -}}
{{- mul (int .Values.replicas) (int (default 1 .Values.sharding.replicasPerShard)) }}
{{- end }}

{{/* Where the tracker's config lives; the image's CMD reads the same path. */}}
{{- define "freshness-tracker.configDir" -}}/etc/freshness-tracker{{- end }}
{{- define "freshness-tracker.configFile" -}}freshness-tracker.conf{{- end }}

{{/* Burrow's URL as the tracker sees it: localhost in sidecar mode, burrow.url otherwise. */}}
{{- define "freshness-tracker.burrowUrl" -}}
{{- if .Values.burrow.enabled }}
{{- printf "http://127.0.0.1:%d" (int .Values.burrow.port) }}
{{- else }}
{{- required "burrow.url is required when burrow.enabled=false (external Burrow mode)" .Values.burrow.url }}
{{- end }}
{{- end }}

{{/* Environment variable names for secrets: FT_<WHAT>_<cluster index>_<PROPERTY>. Never BURROW_*. */}}
{{- define "freshness-tracker.envName" -}}
{{- regexReplaceAll "[^A-Z0-9_]" (upper .) "_" }}
{{- end }}

{{/* The Secret a cluster's keys live in. Args: (dict "root" $ "cluster" $c) */}}
{{- define "freshness-tracker.clusterSecret" -}}
{{- $name := default .root.Values.existingSecret .cluster.existingSecret }}
{{- required (printf "clusters[%s]: secretKafka or burrow.sasl needs existingSecret (or the cluster's existingSecret)" .cluster.name) $name }}
{{- end }}

{{/* Does the sidecar Burrow need any secret? */}}
{{- define "freshness-tracker.burrowSecrets" -}}
{{- range .Values.clusters }}{{ if and .burrow .burrow.sasl .burrow.sasl.enabled }}true{{ end }}{{ end }}
{{- end }}

{{/* Probe: the value as given, switched to HTTPS when the listener serves TLS. */}}
{{- define "freshness-tracker.probe" -}}
{{- $probe := deepCopy .probe }}
{{- if and $probe.httpGet .root.Values.config.web.tlsSecretName }}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" }}
{{- end }}
{{- if and $probe.httpGet .readiness .root.Values.config.web.basicAuthUsername }}
{{- $_ := set $probe.httpGet "path" "/healthz" }}
{{- end }}
{{- toYaml $probe }}
{{- end }}


{{/* The tracker container's environment: shard index, secrets (never inline), extraEnv. */}}
{{- define "freshness-tracker.trackerEnv" -}}
{{- $sharded := include "freshness-tracker.sharded" . }}
{{- $byHostname := and $sharded (eq .Values.sharding.ordinalSource "hostname") }}
{{- if and $sharded (not $byHostname) }}
{{- /* with copies the index is the ordinal modulo the shard count: the pod's command computes it */}}
- name: {{ ternary "FT_POD_INDEX" "FRESHNESS_TRACKER_SHARD_INDEX" (eq (include "freshness-tracker.copies" .) "true") }}
  valueFrom:
    fieldRef:
      fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
{{- end }}
{{- if .Values.burrow.passwordKey }}
- name: FRESHNESS_TRACKER_BURROW_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "burrow.passwordKey needs existingSecret" .Values.existingSecret }}
      key: {{ .Values.burrow.passwordKey }}
{{- end }}
{{- if .Values.config.web.basicAuthPasswordKey }}
- name: FRESHNESS_TRACKER_WEB_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ required "config.web.basicAuthPasswordKey needs existingSecret" .Values.existingSecret }}
      key: {{ .Values.config.web.basicAuthPasswordKey }}
{{- end }}
{{- range $i, $cl := .Values.clusters }}
{{- range $prop, $key := $cl.secretKafka }}
- name: {{ include "freshness-tracker.envName" (printf "FT_KAFKA_%d_%s" $i $prop) }}
  valueFrom:
    secretKeyRef:
      name: {{ include "freshness-tracker.clusterSecret" (dict "root" $ "cluster" $cl) }}
      key: {{ $key }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end }}
