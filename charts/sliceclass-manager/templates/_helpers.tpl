{{/* The release's base name: the release name, prefixed unless it holds the chart's name. */}}
{{- define "sliceclass-manager.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "sliceclass-manager.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "sliceclass-manager.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels the Deployment and the metrics Service select pods by. */}}
{{- define "sliceclass-manager.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sliceclass-manager.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sliceclass-manager.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Where the class Leases live. */}}
{{- define "sliceclass-manager.classLeaseNamespace" -}}
{{- default .Release.Namespace .Values.classLease.namespace -}}
{{- end -}}

{{/* The classes file's content: values.yaml "classes", verbatim. */}}
{{- define "sliceclass-manager.classesFile" -}}
{{- toYaml .Values.classes }}
{{- end -}}

{{/* The mounted classes file (a directory mount: see deployment.yaml). */}}
{{- define "sliceclass-manager.classesDir" -}}/etc/sliceclass{{- end -}}

{{/*
The rbac.ownedTypes rules split by verb, as a YAML list: with "reads" true,
each rule's get, list and watch (all three for "*"); else its other verbs.
A rule left with no verb is dropped.
*/}}
{{- define "sliceclass-manager.ownedRules" -}}
{{- $readVerbs := list "get" "list" "watch" }}
{{- $out := list }}
{{- range .rules }}
{{- $verbs := list }}
{{- range .verbs }}
{{- if $.reads }}
{{- if eq . "*" }}{{ $verbs = concat $verbs $readVerbs }}{{ else if has . $readVerbs }}{{ $verbs = append $verbs . }}{{ end }}
{{- else if not (has . $readVerbs) }}
{{- $verbs = append $verbs . }}
{{- end }}
{{- end }}
{{- if $verbs }}
{{- $out = append $out (set (omit . "verbs") "verbs" (uniq $verbs)) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}
