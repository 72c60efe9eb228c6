"""Messages of the API groups kubectl's generators write: apps, batch, scheduling, policy, rbac,
authentication. Format: see schema_meta. Read from each group's generated.proto.
"""

GROUPS = {
    "Deployment": "1 metadata ObjectMeta; 2 spec DeploymentSpec; 3 status DeploymentStatus",
    "DeploymentSpec": """1 replicas int?; 2 selector LabelSelector; 3 template PodTemplateSpec;
        4 strategy DeploymentStrategy; 5 minReadySeconds int; 6 revisionHistoryLimit int?; 7 paused bool;
        9 progressDeadlineSeconds int?""",
    "DeploymentStrategy": "1 type str; 2 rollingUpdate RollingUpdateDeployment",
    "RollingUpdateDeployment": "1 maxUnavailable ios; 2 maxSurge ios",
    "DeploymentStatus": """1 observedGeneration int; 2 replicas int; 3 updatedReplicas int; 7 readyReplicas int;
        4 availableReplicas int; 5 unavailableReplicas int; 6 conditions [DeploymentCondition];
        8 collisionCount int?""",
    "DeploymentCondition": """1 type str?; 2 status str?; 6 lastUpdateTime time; 7 lastTransitionTime time;
        4 reason str; 5 message str""",
    "Job": "1 metadata ObjectMeta; 2 spec JobSpec; 3 status JobStatus",
    "JobSpec": """1 parallelism int?; 2 completions int?; 3 activeDeadlineSeconds int?;
        11 podFailurePolicy PodFailurePolicy; 16 successPolicy SuccessPolicy; 7 backoffLimit int?;
        12 backoffLimitPerIndex int?; 13 maxFailedIndexes int?; 4 selector LabelSelector; 5 manualSelector bool?;
        6 template PodTemplateSpec; 8 ttlSecondsAfterFinished int?; 9 completionMode str?; 10 suspend bool?;
        14 podReplacementPolicy str?; 15 managedBy str?""",
    "PodFailurePolicy": "1 rules [PodFailurePolicyRule]",
    "PodFailurePolicyRule": """1 action str?; 2 onExitCodes PodFailurePolicyOnExitCodesRequirement;
        3 onPodConditions [PodFailurePolicyOnPodConditionsPattern]""",
    "PodFailurePolicyOnExitCodesRequirement": "1 containerName str?; 2 operator str?; 3 values [int]",
    "PodFailurePolicyOnPodConditionsPattern": "1 type str?; 2 status str?",
    "SuccessPolicy": "1 rules [SuccessPolicyRule]",
    "SuccessPolicyRule": "1 succeededIndexes str?; 2 succeededCount int?",
    "JobStatus": """1 conditions [JobCondition]; 2 startTime time; 3 completionTime time; 4 active int;
        5 succeeded int; 6 failed int; 11 terminating int?; 7 completedIndexes str; 10 failedIndexes str?;
        8 uncountedTerminatedPods UncountedTerminatedPods; 9 ready int?""",
    "JobCondition": """1 type str?; 2 status str?; 3 lastProbeTime time; 4 lastTransitionTime time;
        5 reason str; 6 message str""",
    "UncountedTerminatedPods": "1 succeeded [str]; 2 failed [str]",
    "CronJob": "1 metadata ObjectMeta; 2 spec CronJobSpec; 3 status CronJobStatus",
    "CronJobSpec": """1 schedule str?; 8 timeZone str?; 2 startingDeadlineSeconds int?; 3 concurrencyPolicy str;
        4 suspend bool?; 5 jobTemplate JobTemplateSpec; 6 successfulJobsHistoryLimit int?;
        7 failedJobsHistoryLimit int?""",
    "JobTemplateSpec": "1 metadata ObjectMeta; 2 spec JobSpec",
    "CronJobStatus": "1 active [ObjectReference]; 4 lastScheduleTime time; 5 lastSuccessfulTime time",
    "PriorityClass": """1 metadata ObjectMeta; 2 value int?; 3 globalDefault bool; 4 description str;
        5 preemptionPolicy str?""",
    "PodDisruptionBudget": "1 metadata ObjectMeta; 2 spec PodDisruptionBudgetSpec; 3 status PodDisruptionBudgetStatus",
    "PodDisruptionBudgetSpec": """1 minAvailable ios; 2 selector LabelSelector; 3 maxUnavailable ios;
        4 unhealthyPodEvictionPolicy str?""",
    "PodDisruptionBudgetStatus": """1 observedGeneration int; 2 disruptedPods {time}; 3 disruptionsAllowed int?;
        4 currentHealthy int?; 5 desiredHealthy int?; 6 expectedPods int?; 7 conditions [Condition]""",
    "Role": "1 metadata ObjectMeta; 2 rules [PolicyRule]",
    "ClusterRole": "1 metadata ObjectMeta; 2 rules [PolicyRule]; 3 aggregationRule AggregationRule",
    "PolicyRule": "1 verbs [str]; 2 apiGroups [str]; 3 resources [str]; 4 resourceNames [str]; 5 nonResourceURLs [str]",
    "AggregationRule": "1 clusterRoleSelectors [LabelSelector]",
    "RoleBinding": "1 metadata ObjectMeta; 2 subjects [Subject]; 3 roleRef RoleRef",
    "ClusterRoleBinding": "1 metadata ObjectMeta; 2 subjects [Subject]; 3 roleRef RoleRef",
    "Subject": "1 kind str?; 2 apiGroup str; 3 name str?; 4 namespace str",
    "RoleRef": "1 apiGroup str?; 2 kind str?; 3 name str?",
    "SelfSubjectReview": "1 metadata ObjectMeta; 2 status SelfSubjectReviewStatus",
    "SelfSubjectReviewStatus": "1 userInfo UserInfo",
    "UserInfo": "1 username str; 2 uid str; 3 groups [str]; 4 extra {strlist}",
    "TokenRequest": "1 metadata ObjectMeta; 2 spec TokenRequestSpec; 3 status TokenRequestStatus",
    "TokenRequestSpec": "1 audiences [str]; 4 expirationSeconds int?; 3 boundObjectRef BoundObjectReference",
    "BoundObjectReference": "1 kind str; 2 apiVersion str; 3 name str; 4 uid str",
    "TokenRequestStatus": "1 token str?; 2 expirationTimestamp time",
    "SelfSubjectAccessReview": """1 metadata ObjectMeta; 2 spec SelfSubjectAccessReviewSpec;
        3 status SubjectAccessReviewStatus""",
    "SelfSubjectAccessReviewSpec": "1 resourceAttributes ResourceAttributes; 2 nonResourceAttributes NonResourceAttributes",
    "ResourceAttributes": """1 namespace str; 2 verb str; 3 group str; 4 version str; 5 resource str;
        6 subresource str; 7 name str""",
    "NonResourceAttributes": "1 path str; 2 verb str",
    "SubjectAccessReviewStatus": "1 allowed bool?; 4 denied bool; 2 reason str; 3 evaluationError str",
    "SubjectAccessReview": """1 metadata ObjectMeta; 2 spec SubjectAccessReviewSpec;
        3 status SubjectAccessReviewStatus""",
    "SubjectAccessReviewSpec": """1 resourceAttributes ResourceAttributes; 2 nonResourceAttributes NonResourceAttributes;
        3 user str; 4 groups [str]; 5 extra {strlist}; 6 uid str""",
    "SelfSubjectRulesReview": """1 metadata ObjectMeta; 2 spec SelfSubjectRulesReviewSpec;
        3 status SubjectRulesReviewStatus""",
    "SubjectRulesReviewStatus": """1 resourceRules [ResourceRule]; 2 nonResourceRules [NonResourceRule];
        3 incomplete bool; 4 evaluationError str""",
    "ResourceRule": "1 verbs [str]; 2 apiGroups [str]; 3 resources [str]; 4 resourceNames [str]",
    "NonResourceRule": "1 verbs [str]; 2 nonResourceURLs [str]",
    "SelfSubjectRulesReviewSpec": "1 namespace str",
}

# (apiVersion, kind) -> the message of the top-level object.
KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "Service"): "Service",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("v1", "Pod"): "Pod",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "ClusterRoleBinding",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "SubjectAccessReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "SubjectAccessReview",
}
