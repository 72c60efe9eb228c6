"""Messages of k8s.io/api core/v1 that kubectl sends (and the pod template every workload holds).

Format: see schema_meta. Read from core/v1/generated.proto.
"""

CORE = {
    "Namespace": "1 metadata ObjectMeta; 2 spec NamespaceSpec; 3 status NamespaceStatus",
    "NamespaceSpec": "1 finalizers [str]",
    "NamespaceStatus": "1 phase str; 2 conditions [NamespaceCondition]",
    "NamespaceCondition": "1 type str?; 2 status str?; 4 lastTransitionTime time; 5 reason str; 6 message str",
    "ConfigMap": "1 metadata ObjectMeta; 4 immutable bool?; 2 data {str}; 3 binaryData {bytes}",
    "Secret": "1 metadata ObjectMeta; 5 immutable bool?; 2 data {bytes}; 4 stringData {str}; 3 type str",
    "ServiceAccount": """1 metadata ObjectMeta; 2 secrets [ObjectReference];
        3 imagePullSecrets [LocalObjectReference]; 4 automountServiceAccountToken bool?""",
    "ObjectReference": """1 kind str; 2 namespace str; 3 name str; 4 uid str; 5 apiVersion str;
        6 resourceVersion str; 7 fieldPath str""",
    "LocalObjectReference": "1 name str",
    "Service": "1 metadata ObjectMeta; 2 spec ServiceSpec; 3 status ServiceStatus",
    "ServiceSpec": """1 ports [ServicePort]; 2 selector {str}; 3 clusterIP str; 18 clusterIPs [str]; 4 type str;
        5 externalIPs [str]; 7 sessionAffinity str; 8 loadBalancerIP str; 9 loadBalancerSourceRanges [str];
        10 externalName str; 11 externalTrafficPolicy str; 12 healthCheckNodePort int;
        13 publishNotReadyAddresses bool; 14 sessionAffinityConfig SessionAffinityConfig;
        19 ipFamilies [str]; 17 ipFamilyPolicy str?; 20 allocateLoadBalancerNodePorts bool?;
        21 loadBalancerClass str?; 22 internalTrafficPolicy str?; 23 trafficDistribution str?""",
    "ServicePort": "1 name str; 2 protocol str; 6 appProtocol str?; 3 port int?; 4 targetPort ios; 5 nodePort int",
    "ServiceStatus": "1 loadBalancer LoadBalancerStatus; 2 conditions [Condition]",
    "LoadBalancerStatus": "1 ingress [LoadBalancerIngress]",
    "LoadBalancerIngress": "1 ip str; 2 hostname str; 3 ipMode str?; 4 ports [PortStatus]",
    "PortStatus": "1 port int?; 2 protocol str?; 3 error str?",
    "SessionAffinityConfig": "1 clientIP ClientIPConfig",
    "ClientIPConfig": "1 timeoutSeconds int?",
    "ResourceQuota": "1 metadata ObjectMeta; 2 spec ResourceQuotaSpec; 3 status ResourceQuotaStatus",
    "ResourceQuotaSpec": "1 hard {qty}; 2 scopes [str]; 3 scopeSelector ScopeSelector",
    "ScopeSelector": "1 matchExpressions [ScopedResourceSelectorRequirement]",
    "ScopedResourceSelectorRequirement": "1 scopeName str?; 2 operator str?; 3 values [str]",
    "ResourceQuotaStatus": "1 hard {qty}; 2 used {qty}",
    "Pod": "1 metadata ObjectMeta; 2 spec PodSpec; 3 status PodStatus",
    "PodStatus": """17 observedGeneration int; 1 phase str; 2 conditions [PodCondition]; 3 message str; 4 reason str;
        11 nominatedNodeName str; 5 hostIP str; 6 podIP str; 7 startTime time; 9 qosClass str""",
    "PodCondition": """1 type str?; 7 observedGeneration int; 2 status str?; 3 lastProbeTime time;
        4 lastTransitionTime time; 5 reason str; 6 message str""",
    "PodTemplateSpec": "1 metadata ObjectMeta; 2 spec PodSpec",
    "PodSpec": """1 volumes [Volume]; 20 initContainers [Container]; 2 containers [Container]; 3 restartPolicy str;
        4 terminationGracePeriodSeconds int?; 5 activeDeadlineSeconds int?; 6 dnsPolicy str;
        7 nodeSelector {str}; 8 serviceAccountName str; 9 serviceAccount str;
        21 automountServiceAccountToken bool?; 10 nodeName str; 11 hostNetwork bool; 12 hostPID bool;
        13 hostIPC bool; 27 shareProcessNamespace bool?; 14 securityContext PodSecurityContext;
        15 imagePullSecrets [LocalObjectReference]; 16 hostname str; 17 subdomain str; 18 affinity Affinity;
        19 schedulerName str; 22 tolerations [Toleration]; 23 hostAliases [HostAlias];
        24 priorityClassName str; 25 priority int?; 26 dnsConfig PodDNSConfig;
        28 readinessGates [PodReadinessGate]; 29 runtimeClassName str?; 30 enableServiceLinks bool?;
        31 preemptionPolicy str?; 32 overhead {qty}; 33 topologySpreadConstraints [TopologySpreadConstraint];
        35 setHostnameAsFQDN bool?; 36 os PodOS; 37 hostUsers bool?; 38 schedulingGates [PodSchedulingGate];
        39 resourceClaims [PodResourceClaim]; 40 resources ResourceRequirements""",
    "Container": """1 name str?; 2 image str; 3 command [str]; 4 args [str]; 5 workingDir str;
        6 ports [ContainerPort]; 19 envFrom [EnvFromSource]; 7 env [EnvVar]; 8 resources ResourceRequirements;
        23 resizePolicy [ContainerResizePolicy]; 24 restartPolicy str?; 9 volumeMounts [VolumeMount];
        21 volumeDevices [VolumeDevice]; 10 livenessProbe Probe; 11 readinessProbe Probe; 22 startupProbe Probe;
        12 lifecycle Lifecycle; 13 terminationMessagePath str; 20 terminationMessagePolicy str;
        14 imagePullPolicy str; 15 securityContext SecurityContext; 16 stdin bool; 17 stdinOnce bool; 18 tty bool""",
    "ContainerPort": "1 name str; 2 hostPort int; 3 containerPort int?; 4 protocol str; 5 hostIP str",
    "ContainerResizePolicy": "1 resourceName str?; 2 restartPolicy str?",
    "EnvVar": "1 name str?; 2 value str; 3 valueFrom EnvVarSource",
    "EnvVarSource": """1 fieldRef ObjectFieldSelector; 2 resourceFieldRef ResourceFieldSelector;
        3 configMapKeyRef ConfigMapKeySelector; 4 secretKeyRef SecretKeySelector""",
    "EnvFromSource": "1 prefix str; 2 configMapRef ConfigMapEnvSource; 3 secretRef SecretEnvSource",
    "ObjectFieldSelector": "1 apiVersion str; 2 fieldPath str?",
    "ResourceFieldSelector": "1 containerName str; 2 resource str?; 3 divisor qty",
    "ConfigMapKeySelector": "1 - LocalObjectReference; 2 key str?; 3 optional bool?",
    "SecretKeySelector": "1 - LocalObjectReference; 2 key str?; 3 optional bool?",
    "ConfigMapEnvSource": "1 - LocalObjectReference; 2 optional bool?",
    "SecretEnvSource": "1 - LocalObjectReference; 2 optional bool?",
    "ResourceRequirements": "1 limits {qty}; 2 requests {qty}; 3 claims [ResourceClaim]",
    "ResourceClaim": "1 name str?; 2 request str",
    "VolumeMount": """1 name str?; 2 readOnly bool; 7 recursiveReadOnly str?; 3 mountPath str?; 4 subPath str;
        5 mountPropagation str?; 6 subPathExpr str""",
    "VolumeDevice": "1 name str?; 2 devicePath str?",
    "Volume": "1 name str?; 2 - VolumeSource",
    "VolumeSource": """1 hostPath HostPathVolumeSource; 2 emptyDir EmptyDirVolumeSource; 6 secret SecretVolumeSource;
        10 persistentVolumeClaim PersistentVolumeClaimVolumeSource; 16 downwardAPI DownwardAPIVolumeSource;
        7 nfs NFSVolumeSource; 19 configMap ConfigMapVolumeSource; 26 projected ProjectedVolumeSource;
        28 csi CSIVolumeSource; 30 image ImageVolumeSource""",
    "NFSVolumeSource": "1 server str?; 2 path str?; 3 readOnly bool",
    "CSIVolumeSource": """1 driver str?; 2 readOnly bool?; 3 fsType str?; 4 volumeAttributes {str};
        5 nodePublishSecretRef LocalObjectReference""",
    "ImageVolumeSource": "1 reference str; 2 pullPolicy str",
    "HostPathVolumeSource": "1 path str?; 2 type str?",
    "EmptyDirVolumeSource": "1 medium str; 2 sizeLimit qty",
    "SecretVolumeSource": "1 secretName str; 2 items [KeyToPath]; 3 defaultMode int?; 4 optional bool?",
    "ConfigMapVolumeSource": "1 - LocalObjectReference; 2 items [KeyToPath]; 3 defaultMode int?; 4 optional bool?",
    "PersistentVolumeClaimVolumeSource": "1 claimName str?; 2 readOnly bool",
    "DownwardAPIVolumeSource": "1 items [DownwardAPIVolumeFile]; 2 defaultMode int?",
    "DownwardAPIVolumeFile": """1 path str?; 2 fieldRef ObjectFieldSelector; 3 resourceFieldRef ResourceFieldSelector;
        4 mode int?""",
    "ProjectedVolumeSource": "1 sources [VolumeProjection]; 2 defaultMode int?",
    "VolumeProjection": """1 secret SecretProjection; 2 downwardAPI DownwardAPIProjection;
        3 configMap ConfigMapProjection; 4 serviceAccountToken ServiceAccountTokenProjection""",
    "SecretProjection": "1 - LocalObjectReference; 2 items [KeyToPath]; 4 optional bool?",
    "ConfigMapProjection": "1 - LocalObjectReference; 2 items [KeyToPath]; 4 optional bool?",
    "DownwardAPIProjection": "1 items [DownwardAPIVolumeFile]",
    "ServiceAccountTokenProjection": "1 audience str; 2 expirationSeconds int?; 3 path str?",
    "KeyToPath": "1 key str?; 2 path str?; 3 mode int?",
    "Toleration": "1 key str; 2 operator str; 3 value str; 4 effect str; 5 tolerationSeconds int?",
    "HostAlias": "1 ip str?; 2 hostnames [str]",
    "PodDNSConfig": "1 nameservers [str]; 2 searches [str]; 3 options [PodDNSConfigOption]",
    "PodDNSConfigOption": "1 name str; 2 value str?",
    "PodReadinessGate": "1 conditionType str?",
    "PodOS": "1 name str?",
    "PodSchedulingGate": "1 name str?",
    "PodResourceClaim": "1 name str?; 3 resourceClaimName str?; 4 resourceClaimTemplateName str?",
    "Affinity": "1 nodeAffinity NodeAffinity; 2 podAffinity PodAffinity; 3 podAntiAffinity PodAffinity",
    "NodeAffinity": """1 requiredDuringSchedulingIgnoredDuringExecution NodeSelector;
        2 preferredDuringSchedulingIgnoredDuringExecution [PreferredSchedulingTerm]""",
    "NodeSelector": "1 nodeSelectorTerms [NodeSelectorTerm]",
    "NodeSelectorTerm": "1 matchExpressions [NodeSelectorRequirement]; 2 matchFields [NodeSelectorRequirement]",
    "NodeSelectorRequirement": "1 key str?; 2 operator str?; 3 values [str]",
    "PreferredSchedulingTerm": "1 weight int?; 2 preference NodeSelectorTerm",
    "PodAffinity": """1 requiredDuringSchedulingIgnoredDuringExecution [PodAffinityTerm];
        2 preferredDuringSchedulingIgnoredDuringExecution [WeightedPodAffinityTerm]""",
    "PodAffinityTerm": """1 labelSelector LabelSelector; 2 namespaces [str]; 3 topologyKey str?;
        4 namespaceSelector LabelSelector; 5 matchLabelKeys [str]; 6 mismatchLabelKeys [str]""",
    "WeightedPodAffinityTerm": "1 weight int?; 2 podAffinityTerm PodAffinityTerm",
    "TopologySpreadConstraint": """1 maxSkew int?; 2 topologyKey str?; 3 whenUnsatisfiable str?;
        4 labelSelector LabelSelector; 5 minDomains int?; 6 nodeAffinityPolicy str?; 7 nodeTaintsPolicy str?;
        8 matchLabelKeys [str]""",
    "PodSecurityContext": """1 seLinuxOptions SELinuxOptions; 2 runAsUser int?; 6 runAsGroup int?; 3 runAsNonRoot bool?;
        4 supplementalGroups [int]; 12 supplementalGroupsPolicy str?; 5 fsGroup int?; 7 sysctls [Sysctl];
        9 fsGroupChangePolicy str?; 10 seccompProfile SeccompProfile; 11 appArmorProfile AppArmorProfile;
        8 windowsOptions WindowsSecurityContextOptions; 13 seLinuxChangePolicy str?""",
    "SecurityContext": """1 capabilities Capabilities; 2 privileged bool?; 3 seLinuxOptions SELinuxOptions;
        4 runAsUser int?; 8 runAsGroup int?; 5 runAsNonRoot bool?; 6 readOnlyRootFilesystem bool?;
        7 allowPrivilegeEscalation bool?; 9 procMount str?; 11 seccompProfile SeccompProfile;
        12 appArmorProfile AppArmorProfile; 10 windowsOptions WindowsSecurityContextOptions""",
    "AppArmorProfile": "1 type str?; 2 localhostProfile str?",
    "WindowsSecurityContextOptions": """1 gmsaCredentialSpecName str?; 2 gmsaCredentialSpec str?; 3 runAsUserName str?;
        4 hostProcess bool?""",
    "Capabilities": "1 add [str]; 2 drop [str]",
    "SELinuxOptions": "1 user str; 2 role str; 3 type str; 4 level str",
    "SeccompProfile": "1 type str?; 2 localhostProfile str?",
    "Sysctl": "1 name str?; 2 value str?",
    "Probe": """1 - ProbeHandler; 2 initialDelaySeconds int; 3 timeoutSeconds int; 4 periodSeconds int;
        5 successThreshold int; 6 failureThreshold int; 7 terminationGracePeriodSeconds int?""",
    "ProbeHandler": "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 grpc GRPCAction",
    "LifecycleHandler": "1 exec ExecAction; 2 httpGet HTTPGetAction; 3 tcpSocket TCPSocketAction; 4 sleep SleepAction",
    "Lifecycle": "1 postStart LifecycleHandler; 2 preStop LifecycleHandler; 3 stopSignal str?",
    "ExecAction": "1 command [str]",
    "HTTPGetAction": "1 path str; 2 port ios; 3 host str; 4 scheme str; 5 httpHeaders [HTTPHeader]",
    "HTTPHeader": "1 name str?; 2 value str?",
    "TCPSocketAction": "1 port ios; 2 host str",
    "GRPCAction": "1 port int?; 2 service str?",
    "SleepAction": "1 seconds int?",
}
