"""Every label, annotation, finalizer, condition type and reason string users can see.

One place, so a grep answers "who sets this key" and names never drift between the gateway,
the controller and the manifests.
"""

from typing import Final

# --- API groups and versions -------------------------------------------------------------
KUEUE_GROUP: Final = "kueue.x-k8s.io"
KUEUE_VERSION: Final = "v1beta1"
KUEUE_API_VERSION: Final = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
PODGROUP_GROUP: Final = "scheduling.x-k8s.io"
PODGROUP_API_VERSION: Final = f"{PODGROUP_GROUP}/v1alpha1"

# --- Kueue ---------------------------------------------------------------------------------
QUEUE_NAME_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL: Final = "kueue.x-k8s.io/job-uid"

# Workload condition types.
COND_QUOTA_RESERVED: Final = "QuotaReserved"
COND_ADMITTED: Final = "Admitted"
COND_EVICTED: Final = "Evicted"
COND_PREEMPTED: Final = "Preempted"
COND_REQUEUED: Final = "Requeued"
COND_FINISHED: Final = "Finished"
COND_PODS_READY: Final = "PodsReady"
COND_ACTIVE: Final = "Active"

# Eviction and preemption reasons (Kueue's Evicted / Preempted condition reasons).
EVICTED_BY_PREEMPTION: Final = "Preempted"
EVICTED_BY_CLUSTER_QUEUE_STOPPED: Final = "ClusterQueueStopped"
EVICTED_BY_LOCAL_QUEUE_STOPPED: Final = "LocalQueueStopped"
EVICTED_BY_DEACTIVATION: Final = "InactiveWorkload"
PREEMPTED_IN_CLUSTER_QUEUE: Final = "InClusterQueue"
PREEMPTED_IN_COHORT_RECLAMATION: Final = "InCohortReclamation"
PREEMPTED_IN_COHORT_FAIR_SHARING: Final = "InCohortFairSharing"
PREEMPTED_IN_COHORT_RECLAIM_WHILE_BORROWING: Final = "InCohortReclaimWhileBorrowing"

# --- AppWrapper ----------------------------------------------------------------------------
USER_LABEL: Final = "workload.codeflare.dev/user"
USERID_LABEL: Final = "workload.codeflare.dev/userid"
APPWRAPPER_LABEL: Final = "workload.codeflare.dev/appwrapper"
APPWRAPPER_FINALIZER: Final = "workload.codeflare.dev/finalizer"
APPWRAPPER_CONTROLLER_NAME: Final = "workload.codeflare.dev/appwrapper-controller"

_AW_ANNOTATION_PREFIX: Final = "workload.codeflare.dev.appwrapper/"
ADMISSION_GRACE_PERIOD_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "admissionGracePeriodDuration"
WARMUP_GRACE_PERIOD_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "warmupGracePeriodDuration"
FAILURE_GRACE_PERIOD_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "failureGracePeriodDuration"
RETRY_PAUSE_PERIOD_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "retryPausePeriodDuration"
RETRY_LIMIT_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "retryLimit"
FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: Final = (
    _AW_ANNOTATION_PREFIX + "forcefulDeletionGracePeriodDuration"
)
DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: Final = (
    _AW_ANNOTATION_PREFIX + "deletionOnFailureGracePeriodDuration"
)
SUCCESS_TTL_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "successTTLDuration"
TERMINAL_EXIT_CODES_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "terminalExitCodes"
RETRYABLE_EXIT_CODES_ANNOTATION: Final = _AW_ANNOTATION_PREFIX + "retryableExitCodes"

DURATION_ANNOTATIONS: Final = (
    ADMISSION_GRACE_PERIOD_ANNOTATION,
    WARMUP_GRACE_PERIOD_ANNOTATION,
    FAILURE_GRACE_PERIOD_ANNOTATION,
    RETRY_PAUSE_PERIOD_ANNOTATION,
    FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION,
    DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION,
    SUCCESS_TTL_ANNOTATION,
)
EXIT_CODE_LIST_ANNOTATIONS: Final = (TERMINAL_EXIT_CODES_ANNOTATION, RETRYABLE_EXIT_CODES_ANNOTATION)

PYTORCH_GENERATOR_VERSION_ANNOTATION: Final = "workload.codeflare.dev.mlbatch/pytorchGeneratorVersion"
"""On AppWrappers from MLBatch's pytorchjob-generator (and `batchgate generate pytorchjob`): its chart version."""

# AppWrapper condition types.
COND_RESOURCES_DEPLOYED: Final = "ResourcesDeployed"
COND_UNHEALTHY: Final = "Unhealthy"
COND_DELETING_RESOURCES: Final = "DeletingResources"

# AppWrapper phases (status.phase); "" is the phase of a new AppWrapper.
PHASE_EMPTY: Final = ""
PHASE_SUSPENDED: Final = "Suspended"
PHASE_RESUMING: Final = "Resuming"
PHASE_RUNNING: Final = "Running"
PHASE_RESETTING: Final = "Resetting"
PHASE_SUSPENDING: Final = "Suspending"
PHASE_SUCCEEDED: Final = "Succeeded"
PHASE_FAILED: Final = "Failed"
PHASE_TERMINATING: Final = "Terminating"

# AppWrapper lifecycle reasons beyond the phase names (conditions and Events, as upstream).
REASON_MISSING_COMPONENT: Final = "MissingComponent"
REASON_FOUND_NO_FAILED_PODS: Final = "FoundNoFailedPods"
REASON_SUFFICIENT_PODS_READY: Final = "SufficientPodsReady"
REASON_DELETION_INITIATED: Final = "DeletionInitiated"
REASON_DELETION_COMPLETE: Final = "DeletionComplete"
REASON_DELETION_PAUSED: Final = "DeletionPaused"
EVENT_UNHEALTHY: Final = "Unhealthy"
EVENT_SUSPENDING: Final = "Suspending"
# componentStatus[i] condition ResourcesDeployed reasons; "CompononetDeleted" is upstream's spelling.
REASON_COMPONENT_CREATION_INITIATED: Final = "ComponentCreationInitiated"
REASON_COMPONENT_CREATED: Final = "ComponentCreatedSuccessfully"
REASON_COMPONENT_CREATION_ERRORED: Final = "ComponentCreationErrored"
REASON_COMPONENT_DELETED: Final = "CompononetDeleted"

# Unhealthy reasons (also the failure-policy `onReasons` vocabulary).
REASON_FAILED_COMPONENT: Final = "FailedComponent"
REASON_FOUND_FAILED_PODS: Final = "FoundFailedPods"
REASON_INSUFFICIENT_PODS_READY: Final = "InsufficientPodsReady"
REASON_AUTOPILOT_NO_EXECUTE: Final = "AutopilotNoExecute"
REASON_CREATE_FAILED: Final = "CreateFailed"
UNHEALTHY_REASONS: Final = (
    REASON_FAILED_COMPONENT,
    REASON_FOUND_FAILED_PODS,
    REASON_INSUFFICIENT_PODS_READY,
    REASON_AUTOPILOT_NO_EXECUTE,
    REASON_CREATE_FAILED,
)
# Wrapped Job failure reasons (batch/v1 Job condition Failed).
JOB_FAILURE_REASONS: Final = (
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "PodFailurePolicy",
    "MaxFailedIndexesExceeded",
)

# --- Gang scheduling -----------------------------------------------------------------------
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"

# --- batchgate's own keys ------------------------------------------------------------------
PREFIX: Final = "batchgate.dev/"
FRAMEWORK_LABEL: Final = PREFIX + "framework"
BREAK_GLASS_ANNOTATION: Final = PREFIX + "break-glass"
"""On the policy ConfigMap or a ClusterQueue, written by a cluster admin: the webhook configurations'
matchConditions skip the gateway, so the configuration can be repaired while the gateway is down."""
RENEW_ANNOTATION: Final = PREFIX + "renew"
"""On the serving Secret, written by an admin: a value the keeper has not handled yet forces a new
serving certificate; a value starting with RENEW_CA_PREFIX forces a new CA as well."""
RENEW_CA_PREFIX: Final = "ca-"
RENEWED_ANNOTATION: Final = PREFIX + "renewed"
"""On the serving Secret, written by the certificate keeper: the RENEW_ANNOTATION value it handled."""
FRAMEWORK_ARGS_ANNOTATION: Final = PREFIX + "framework-args"
ROLE_LABEL: Final = PREFIX + "role"
FAILURE_POLICY_ANNOTATION: Final = PREFIX + "failure-policy"
RANK_ANNOTATION: Final = PREFIX + "rank"
FRAMEWORKS: Final = ("pytorch", "tensorflow", "mpi", "mxnet")
# Written by the framework workload phase on every pod template, read back by the pod phase:
# the whole layout (roles, counts, hosts, port) as JSON, which host prefix this template's pods
# use, and the subdomain its pods share (the headless Service selects on it).
FRAMEWORK_LAYOUT_ANNOTATION: Final = PREFIX + "framework-layout"
HOST_PREFIX_ANNOTATION: Final = PREFIX + "host-prefix"
SUBDOMAIN_LABEL: Final = PREFIX + "subdomain"

# --- Kubernetes keys we read ---------------------------------------------------------------
JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
JOB_COMPLETION_INDEX_LABEL: Final = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
KUBEFLOW_REPLICA_TYPE_LABEL: Final = "training.kubeflow.org/replica-type"
KUBEFLOW_REPLICA_INDEX_LABEL: Final = "training.kubeflow.org/replica-index"
GPU_RESOURCE: Final = "nvidia.com/gpu"
AUTOPILOT_GPU_HEALTH_LABEL: Final = "autopilot.ibm.com/gpuhealth"
EVENT_LENDING_LIMIT_UPDATED: Final = "LendingLimitUpdated"  # on the slack ClusterQueue, per resource changed
TAINT_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NOT_READY: Final = "node.kubernetes.io/not-ready"
DEFAULT_SCHEDULER: Final = "default-scheduler"
