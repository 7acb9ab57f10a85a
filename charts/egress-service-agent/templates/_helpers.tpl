{{/*
Labels of a top-level object: the same as deploy/'s (name, component, part-of), Helm's own, and commonLabels.
Call with (dict "ctx" $ "name" "<app.kubernetes.io/name>" "component" "<optional>").
*/}}
{{- define "esa.labels" -}}
{{- with .name }}
app.kubernetes.io/name: {{ . }}
{{- end }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/part-of: egress-service-agent
{{ include "esa.helmLabels" .ctx }}
{{- end }}

{{/* Helm's own labels (ChartTest ignores exactly these when it compares with deploy/), and commonLabels. */}}
{{- define "esa.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The pod template's labels: only deploy/'s, so that selectors and the PodMonitor match as there. */}}
{{- define "esa.podLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: egress-service-agent
{{- end }}

{{- define "esa.image" -}}
{{- $v := .Values.image -}}
{{- if $v.digest -}}
{{ $v.repository }}@{{ $v.digest }}
{{- else -}}
{{ $v.repository }}:{{ $v.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/*
OVN-Kubernetes' masquerade subnets, one per family, from ovnKubernetes.masqueradePreset (or the custom pair).
Returns "v4 v6".
*/}}
{{- define "esa.masqueradeSubnets" -}}
{{- $o := .Values.ovnKubernetes -}}
{{- if eq $o.masqueradePreset "upstream" -}}
169.254.169.0/29 fd69::/125
{{- else if eq $o.masqueradePreset "custom" -}}
{{- if not (and $o.masqueradeSubnet.v4 $o.masqueradeSubnet.v6) -}}
{{- fail "ovnKubernetes.masqueradePreset=custom needs both ovnKubernetes.masqueradeSubnet.v4 and .v6 (ovnkube-node's --gateway-v4-masquerade-subnet and --gateway-v6-masquerade-subnet)" -}}
{{- end -}}
{{ $o.masqueradeSubnet.v4 }} {{ $o.masqueradeSubnet.v6 }}
{{- else -}}
{{- fail (printf "ovnKubernetes.masqueradePreset %q: one of upstream, custom" $o.masqueradePreset) -}}
{{- end -}}
{{- end }}

{{/*
The ETP=Local masquerade IP of a masquerade subnet, as OVN-Kubernetes derives it (go-controller/pkg/config:
the network address + 1 is OVN's, + 2 the host's, + 3 the host's ETP=Local IP). The subnet must leave room
for its five addresses (IPv4 at most /29, IPv6 at most /125) and name its network address (host bits zero),
as ovnkube-node requires.
*/}}
{{- define "esa.etpLocalIP" -}}
{{- $parts := splitList "/" . -}}
{{- if ne (len $parts) 2 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: not a CIDR (address/prefix)" .) }}{{- end -}}
{{- $ip := index $parts 0 -}}
{{- $len := int (index $parts 1) -}}
{{- if contains ":" $ip -}}
{{- if gt $len 125 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: an IPv6 masquerade subnet is at most /125 (it holds 5 addresses)" .) }}{{- end -}}
{{- if hasSuffix "::" $ip -}}
{{ $ip }}3
{{- else -}}
{{- $groups := splitList ":" $ip -}}
{{- $last := int (printf "0x%s" (last $groups)) -}}
{{- if ne (mod $last 8) 0 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: not its network address" .) }}{{- end -}}
{{ join ":" (initial $groups) }}:{{ printf "%x" (add $last 3) }}
{{- end -}}
{{- else -}}
{{- $octets := splitList "." $ip -}}
{{- if ne (len $octets) 4 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: not an IPv4 or IPv6 CIDR" .) }}{{- end -}}
{{- if gt $len 29 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: an IPv4 masquerade subnet is at most /29 (it holds 5 addresses)" .) }}{{- end -}}
{{- $lastOctet := int (index $octets 3) -}}
{{- if ne (mod $lastOctet 8) 0 -}}{{ fail (printf "OVN-Kubernetes masquerade subnet %q: not its network address" .) }}{{- end -}}
{{ index $octets 0 }}.{{ index $octets 1 }}.{{ index $octets 2 }}.{{ add $lastOctet 3 }}
{{- end -}}
{{- end }}

{{/* Comma-separated --exclude-cidr: the configured ones, then OVN-Kubernetes' masquerade subnets. */}}
{{- define "esa.excludeCIDRs" -}}
{{- $all := .Values.agent.excludeCIDRs -}}
{{- if .Values.ovnKubernetes.enabled -}}
{{- $all = concat $all (splitList " " (include "esa.masqueradeSubnets" .)) -}}
{{- end -}}
{{ join "," $all }}
{{- end }}

{{- define "esa.ovnMasqueradeIPs" -}}
{{- $ips := list -}}
{{- range splitList " " (include "esa.masqueradeSubnets" .) -}}
{{- $ips = append $ips (include "esa.etpLocalIP" .) -}}
{{- end -}}
{{ join "," $ips }}
{{- end }}

{{- define "esa.allocatorEnabled" -}}
{{- if .Values.allocator.enabled -}}true{{- end -}}
{{- end }}

{{/*
The one deployment beside OVN-Kubernetes that works: its own EgressService feature off (one flag for its
allocation, reroutes and node rules), which the admin confirms; never on OpenShift, which always turns it on.
*/}}
{{- define "esa.checkOvnKubernetes" -}}
{{- if .Values.ovnKubernetes.enabled -}}
{{- if .Values.openshift.enabled -}}
{{- fail "ovnKubernetes.enabled with openshift.enabled: OpenShift's network operator always runs OVN-Kubernetes with --enable-egress-service, so OVN-Kubernetes implements EgressServices itself (its node side included) and the agent must not run beside it (docs/deployment-scenarios.md). openshift.enabled alone is for OpenShift with another CNI" -}}
{{- end -}}
{{- if not .Values.ovnKubernetes.egressServiceDisabled -}}
{{- fail "ovnKubernetes.enabled needs ovnKubernetes.egressServiceDisabled=true: the agent works beside OVN-Kubernetes only while OVN-Kubernetes' own EgressService feature is off (no --enable-egress-service; check OVN_EGRESSSERVICE_ENABLE of ovnkube-node and ovnkube-control-plane, docs/install.md). With it on, OVN-Kubernetes implements EgressServices itself: do not install the agent" -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- define "esa.crdsEnabled" -}}
{{- if and .Values.crds.install (not .Values.ovnKubernetes.enabled) -}}true{{- end -}}
{{- end }}

{{/*
The ValidatingAdmissionPolicy API the cluster serves: admissionregistration.k8s.io/v1 (Kubernetes 1.30+), else
v1beta1 (1.28 and 1.29, where it is off unless the ValidatingAdmissionPolicy feature gate and the beta API are
on; both have namespaceObject and parameterNotFoundAction), else "" (no admission policy is rendered; the agents
and the allocator still enforce the EgressServicePolicy). `helm template` without a cluster knows API versions
but no kinds (not even apps/v1/DaemonSet): v1 then, unless --api-versions names the beta's kind.
*/}}
{{- define "esa.vapApiVersion" -}}
{{- $api := .Capabilities.APIVersions -}}
{{- if $api.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" -}}
admissionregistration.k8s.io/v1
{{- else if $api.Has "admissionregistration.k8s.io/v1beta1/ValidatingAdmissionPolicy" -}}
admissionregistration.k8s.io/v1beta1
{{- else if not ($api.Has "apps/v1/DaemonSet") -}}
admissionregistration.k8s.io/v1
{{- end -}}
{{- end }}

{{/*
The admission policies and bindings of a file under files/admission/ (copies of deploy/'s; ChartTest compares
the renderings), with this release's namespace in the ServiceAccount names they match, the served API version
and the chart's labels. Call with (dict "ctx" $ "file" "files/admission/<name>.yaml").
*/}}
{{- define "esa.admissionObjects" -}}
{{- $ctx := .ctx -}}
{{- $apiVersion := include "esa.vapApiVersion" $ctx -}}
{{- $text := $ctx.Files.Get .file | replace "system:serviceaccount:egress-service-agent:" (printf "system:serviceaccount:%s:" $ctx.Release.Namespace) -}}
{{- range $doc := splitList "\n---\n" $text }}
{{- $o := fromYaml $doc }}
{{- $_ := set $o "apiVersion" $apiVersion }}
{{- $_ := set $o.metadata "labels" (merge (default dict $o.metadata.labels) (include "esa.helmLabels" $ctx | fromYaml)) }}
---
{{ toYaml $o }}
{{- end }}
{{- end }}

{{- define "esa.policyEnabled" -}}
{{- if .Values.policy.enabled -}}true{{- end -}}
{{- end }}

{{/* Enforcing the EgressServicePolicy, the agents and the allocator watch it and the Namespaces' labels. */}}
{{- define "esa.policyReadRules" -}}
{{- if include "esa.policyEnabled" . -}}
- apiGroups: ["egressservice.io"]
  resources: ["egressservicepolicies"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["list", "watch"]
{{- end -}}
{{- end }}
