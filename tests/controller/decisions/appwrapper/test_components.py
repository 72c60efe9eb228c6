"""What AppWrapper components become (docs/appwrapper.md, "What components become") and their initial status.

We test these aspects: every AppWrapper of demo/samples and of upstream's corpus (skipped where
absent) with its components built with admission's podSetInfos (labels, owner, namespace,
markers, Autopilot affinity only for GPU pods); upstream's podSet
injection cases (item 13: minimal and complex pods); each fatal conflict with the key and the
component named; the initial componentStatus; and with Hypothesis that the input is never
mutated while user labels, selectors and tolerations survive.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from batchgate import keys
from batchgate.kinds import APPWRAPPER
from batchgate.api.appwrapper_status import read_appwrapper_state as state
from batchgate.api.pod_templates import pod_template_locations
from batchgate.api.paths import get_at, parse_podset_path
from batchgate.policy import NodeHealth
from controller.decisions.appwrapper.components import ComponentError, build_component, component_status
from demo.gateway_only import sample_objects
from demo.samples_scene import SAMPLES
from tests.upstream_corpus import corpus_documents, corpus_rows, upstream

def health(labels: dict[str, dict[str, str]]) -> NodeHealth:
    return NodeHealth(labels=labels)


EVICT = health({keys.AUTOPILOT_GPU_HEALTH_LABEL: {"EVICT": "NoExecute"}})
AVOID_EVICT = {"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": ["EVICT"]}
MARKER = {
    "labels": {"testkey1": "value1"},
    "annotations": {"test2": "test2"},
    "nodeSelector": {"nodeName": "myNode"},
    "tolerations": [{"key": "aKey", "operator": "Exists", "effect": "NoSchedule"}],
    "schedulingGates": [{"name": "aGate"}],
}


def an_appwrapper(*templates: dict[str, Any], infos: list[dict[str, Any]] | None = None,
                  pod_sets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    components: list[dict[str, Any]] = []
    for template in templates:
        component: dict[str, Any] = {"template": template}
        if pod_sets is not None:
            component["podSets"] = pod_sets
        if infos is not None:
            component["podSetInfos"] = infos
        components.append(component)
    return {"apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper",
            "metadata": {"name": "aw", "namespace": "team-a", "uid": "uid-aw"},
            "spec": {"components": components}}


def a_pod(gpus: int = 0, **extra_spec: Any) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": "100m"}
    resources: dict[str, Any] = {"requests": requests}
    if gpus:
        requests[keys.GPU_RESOURCE] = gpus
        resources["limits"] = {keys.GPU_RESOURCE: gpus}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"restartPolicy": "Never", **extra_spec,
                     "containers": [{"name": "busybox", "image": "busybox", "resources": resources}]}}


def complex_pod() -> dict[str, Any]:
    """Upstream's complexPodYAML: a GPU pod with its own labels, selector, affinity, gates and tolerations."""
    pod = a_pod(gpus=1, nodeSelector={"myComplexSelector": "myComplexValue"},
                affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                                           "values": ["badHost1"]}]}]}}},
                schedulingGates=[{"name": "myComplexGate"}],
                tolerations=[{"key": "myComplexKey", "value": "myComplexValue", "operator": "Equal",
                              "effect": "NoSchedule"}])
    pod["metadata"].update(labels={"myComplexLabel": "myComplexValue"},
                           annotations={"myComplexAnnotation": "myComplexValue"})
    return pod


def required_terms(pod_spec: dict[str, Any]) -> list[dict[str, Any]] | None:
    return get_at(pod_spec, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                             "nodeSelectorTerms"))


def templates_of(obj: dict[str, Any], aw: dict[str, Any], index: int) -> list[dict[str, Any]]:
    return [get_at(obj, parse_podset_path(p.path, "")[1:]) for p in component_status(aw)[index].pod_sets]


def _stored(doc: dict[str, Any]) -> dict[str, Any]:
    doc["metadata"].setdefault("name", doc["metadata"].get("generateName", "aw"))
    doc["metadata"].setdefault("namespace", "team-a")
    doc["metadata"]["uid"] = "uid-aw"
    return doc


def corpus_appwrappers() -> list[Any]:
    """Upstream's AppWrappers, the generator's snapshots included."""
    return corpus_rows(((name, (_stored(doc),)) for name, doc in corpus_documents() if doc.get("kind") == "AppWrapper"), 1)


def sample_appwrappers() -> list[Any]:
    return [pytest.param(_stored(doc), id=f"demo/samples/{name}")
            for name, doc in sample_objects(SAMPLES) if doc["kind"] == "AppWrapper"]


@upstream
def test_the_corpus_holds_the_upstream_samples_and_the_generator_snapshots() -> None:
    assert len(corpus_appwrappers()) >= 25


@pytest.mark.parametrize("aw", sample_appwrappers() + corpus_appwrappers())
def test_every_component_is_built_with_admissions_pod_set_infos(aw: dict[str, Any]) -> None:
    statuses = component_status(aw)
    for index, component in enumerate(aw["spec"]["components"]):
        component["podSetInfos"] = [MARKER] * len(statuses[index].pod_sets)
    before = copy.deepcopy(aw)
    for index, component in enumerate(aw["spec"]["components"]):
        obj = build_component(state(aw), index, EVICT)
        user_labels = component["template"]["metadata"].get("labels") or {}
        assert obj["metadata"]["labels"][keys.APPWRAPPER_LABEL] == user_labels.get(keys.APPWRAPPER_LABEL, aw["metadata"]["name"])
        assert obj["metadata"]["namespace"] == aw["metadata"]["namespace"]
        assert obj["metadata"]["ownerReferences"] == [{
            "apiVersion": APPWRAPPER.api_version, "kind": "AppWrapper", "name": aw["metadata"]["name"],
            "uid": "uid-aw", "controller": True, "blockOwnerDeletion": True}]
        for path in (p.path for p in statuses[index].pod_sets):
            steps = parse_podset_path(path, "")[1:]
            template, original = get_at(obj, steps), get_at(component["template"], steps)
            assert template["metadata"]["labels"][keys.APPWRAPPER_LABEL] == aw["metadata"]["name"]
            assert template["metadata"]["labels"]["testkey1"] == "value1"
            assert template["metadata"]["annotations"]["test2"] == "test2"
            assert template["spec"]["nodeSelector"]["nodeName"] == "myNode"
            assert MARKER["tolerations"][0] in template["spec"]["tolerations"]
            assert {"name": "aGate"} in template["spec"]["schedulingGates"]
            assert template["spec"].get("schedulerName") == original["spec"].get("schedulerName")
            terms = required_terms(template["spec"]) or []
            avoids = bool(terms) and all(AVOID_EVICT in term.get("matchExpressions", []) for term in terms)
            assert avoids == _asks_for_gpus(template["spec"])
    assert aw == before, "building components must not change the AppWrapper"


def _asks_for_gpus(spec: dict[str, Any]) -> bool:
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    return any(str(amounts.get(keys.GPU_RESOURCE, "0")) not in ("0", "")
               for c in containers for amounts in ((c.get("resources") or {}).get("requests") or {},
                                                   (c.get("resources") or {}).get("limits") or {}))


def test_the_samples_have_gpu_and_cpu_pods_so_both_affinity_branches_run() -> None:
    specs = [t.template.get("spec") or {} for p in sample_appwrappers() for t in pod_template_locations(p.values[0])]
    assert any(_asks_for_gpus(s) for s in specs) and not all(_asks_for_gpus(s) for s in specs)


def test_minimal_pods_get_markers_and_only_the_gpu_pod_gets_the_affinity() -> None:
    """Upstream item 13, minimal pods: one CPU pod, one GPU pod with a declared podSet."""
    aw = an_appwrapper(a_pod(gpus=0), a_pod(gpus=1), infos=[MARKER])
    aw["spec"]["components"][1]["podSets"] = [{"replicas": 1, "path": "template"}]
    cpu_pod, gpu_pod = build_component(state(aw), 0, EVICT), build_component(state(aw), 1, EVICT)
    for pod in (cpu_pod, gpu_pod):
        assert pod["metadata"]["labels"] == {keys.APPWRAPPER_LABEL: "aw", "testkey1": "value1"}
        assert pod["metadata"]["annotations"] == {"test2": "test2"}
        assert pod["spec"]["nodeSelector"] == {"nodeName": "myNode"}
        assert pod["spec"]["tolerations"] == MARKER["tolerations"]
        assert pod["spec"]["schedulingGates"] == [{"name": "aGate"}]
    assert "affinity" not in cpu_pod["spec"]
    assert required_terms(gpu_pod["spec"]) == [{"matchExpressions": [AVOID_EVICT]}]


def test_a_complex_pod_keeps_everything_it_had() -> None:
    """Upstream item 13, complex pods: user labels, annotations, selector, tolerations, gates, affinity kept."""
    pod = build_component(state(an_appwrapper(complex_pod(), infos=[MARKER])), 0, EVICT)
    assert pod["metadata"]["labels"] == {"myComplexLabel": "myComplexValue", keys.APPWRAPPER_LABEL: "aw",
                                         "testkey1": "value1"}
    assert pod["metadata"]["annotations"] == {"myComplexAnnotation": "myComplexValue", "test2": "test2"}
    assert pod["spec"]["nodeSelector"] == {"myComplexSelector": "myComplexValue", "nodeName": "myNode"}
    assert pod["spec"]["tolerations"] == complex_pod()["spec"]["tolerations"] + MARKER["tolerations"]
    assert pod["spec"]["schedulingGates"] == [{"name": "myComplexGate"}, {"name": "aGate"}]
    assert required_terms(pod["spec"]) == [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["badHost1"]}, AVOID_EVICT]}]


def a_job(gpus: int = 1) -> dict[str, Any]:
    pod = a_pod(gpus=gpus)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "labels": {"team": "a"}},
            "spec": {"template": {"spec": pod["spec"]}}}


def built(aw: dict[str, Any], index: int = 0, labels: NodeHealth | None = None) -> dict[str, Any]:
    return build_component(state(aw), index, EVICT if labels is None else labels)


BUILD_CASES = [
    pytest.param(an_appwrapper(a_job()), ("metadata", "labels"), {"team": "a", keys.APPWRAPPER_LABEL: "aw"},
                 id="the wrapped object gets the AppWrapper label beside its own"),
    pytest.param(an_appwrapper(a_job()), ("spec", "template", "metadata", "labels"), {keys.APPWRAPPER_LABEL: "aw"},
                 id="a pod template without metadata gets the AppWrapper label"),
    pytest.param(an_appwrapper(a_job()), ("metadata", "namespace"), "team-a",
                 id="a component without namespace gets the AppWrapper's"),
    pytest.param(an_appwrapper(a_job(), infos=[{"schedulingGates": [{"name": "g"}, {"name": "g"}]}]),
                 ("spec", "template", "spec", "schedulingGates"), [{"name": "g"}],
                 id="scheduling gates are added once by name"),
    pytest.param(an_appwrapper(a_job(), infos=[{"tolerations": [{"key": "k", "operator": "Exists"}] * 2}]),
                 ("spec", "template", "spec", "tolerations"), [{"key": "k", "operator": "Exists"}] * 2,
                 id="tolerations are appended as given"),
    pytest.param(an_appwrapper(a_job(), infos=[{}]), ("spec", "template", "spec", "nodeSelector"), None,
                 id="an empty podSetInfo adds no node selector"),
    pytest.param(an_appwrapper(a_job(gpus=0)), ("spec", "template", "spec", "affinity"), None,
                 id="a pod without gpus gets no affinity"),
    pytest.param(an_appwrapper(a_job()), ("spec", "template", "spec", "schedulerName"), None,
                 id="no scheduler name is set since the gateway does that"),
]


@pytest.mark.parametrize(("aw", "at", "expected"), BUILD_CASES)
def test_build(aw: dict[str, Any], at: tuple[str, ...], expected: Any) -> None:
    assert get_at(built(aw), at) == expected


def test_an_existing_appwrapper_label_on_the_object_wins() -> None:
    job = a_job()
    job["metadata"]["labels"][keys.APPWRAPPER_LABEL] = "other"
    assert built(an_appwrapper(job))["metadata"]["labels"][keys.APPWRAPPER_LABEL] == "other"


def test_the_affinity_goes_into_every_node_selector_term_one_per_label() -> None:
    job = a_job()
    job["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}
    labels = health({keys.AUTOPILOT_GPU_HEALTH_LABEL: {"EVICT": "NoExecute"}, "health": {"bad": "NoSchedule"}})
    avoid = [AVOID_EVICT, {"key": "health", "operator": "NotIn", "values": ["bad"]}]
    assert required_terms(built(an_appwrapper(job), labels=labels)["spec"]["template"]["spec"]) == [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}, *avoid]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}], "matchExpressions": avoid}]


def test_a_policy_without_health_labels_adds_no_affinity() -> None:
    assert "affinity" not in built(an_appwrapper(a_job()), labels=health({}))["spec"]["template"]["spec"]


def test_upstreams_autopilot_defaults_give_a_required_and_a_preferred_term() -> None:
    """resource_management.go: NoSchedule and NoExecute values in a required NotIn, PreferNoSchedule
    ones in a preferred term of weight preferNoScheduleWeight (50 by default, config.go)."""
    spec = built(an_appwrapper(a_job()), labels=NodeHealth())["spec"]["template"]["spec"]
    assert required_terms(spec) == [{"matchExpressions": [
        {"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": ["TESTING", "EVICT"]}]}]
    assert spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [{
        "weight": 50, "preference": {"matchExpressions": [
            {"key": keys.AUTOPILOT_GPU_HEALTH_LABEL, "operator": "NotIn", "values": ["WARN"]}]}}]


def test_a_templates_own_preferred_terms_are_kept() -> None:
    job = a_job()
    own = {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
    job["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [own]}}
    spec = built(an_appwrapper(job), labels=NodeHealth(prefer_no_schedule_weight=7))["spec"]["template"]["spec"]
    preferred = spec["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred[0] == own and preferred[1]["weight"] == 7


def test_an_init_container_asking_for_gpus_is_enough_for_the_affinity() -> None:
    job = a_job(gpus=0)
    job["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "warm", "image": "busybox", "resources": {"limits": {keys.GPU_RESOURCE: "1"}}}]
    assert required_terms(built(an_appwrapper(job))["spec"]["template"]["spec"]) == [{"matchExpressions": [AVOID_EVICT]}]


def test_podsets_cached_in_status_decide_which_templates_are_touched() -> None:
    aw = an_appwrapper(a_job(), infos=[MARKER])
    aw["status"] = {"componentStatus": [{"name": "train", "kind": "Job", "apiVersion": "batch/v1", "podSets": []}]}
    assert "nodeSelector" not in built(aw)["spec"]["template"]["spec"]


def with_labels(template: dict[str, Any], at: tuple[str, ...], **values: str) -> dict[str, Any]:
    target = get_at(template, at)
    target.update(values)
    return template


def pod_meta(job: dict[str, Any]) -> dict[str, Any]:
    job["spec"]["template"]["metadata"] = {"labels": {}, "annotations": {}}
    job["spec"]["template"]["spec"]["nodeSelector"] = {}
    return job


FATAL_CASES = [
    pytest.param(
        an_appwrapper(with_labels(pod_meta(a_job()), ("spec", "template", "metadata", "annotations"), test2="mine"),
                      infos=[MARKER]),
        "component 0 (Job train): annotation 'test2' is 'mine' in the pod template but admission sets 'test2'",
        id="an annotation admission sets differently is a fatal conflict"),
    pytest.param(
        an_appwrapper(with_labels(pod_meta(a_job()), ("spec", "template", "metadata", "labels"), testkey1="x"),
                      infos=[MARKER]),
        "component 0 (Job train): label 'testkey1' is 'x' in the pod template but admission sets 'value1'",
        id="a label admission sets differently is a fatal conflict"),
    pytest.param(
        an_appwrapper(with_labels(pod_meta(a_job()), ("spec", "template", "spec", "nodeSelector"), nodeName="other"),
                      infos=[MARKER]),
        "component 0 (Job train): nodeSelector 'nodeName' is 'other' in the pod template but admission sets 'myNode'",
        id="a node selector admission sets differently is a fatal conflict"),
    pytest.param(
        an_appwrapper(with_labels(pod_meta(a_job()), ("spec", "template", "metadata", "labels"),
                                  **{keys.APPWRAPPER_LABEL: "other"})),
        f"component 0 (Job train): label '{keys.APPWRAPPER_LABEL}' is 'other' in the pod template but admission sets 'aw'",
        id="a pod template labelled for another AppWrapper is a fatal conflict"),
    pytest.param(
        an_appwrapper({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
                       "spec": {"pytorchReplicaSpecs": {"Master": {"template": a_job()["spec"]["template"]},
                                                        "Worker": {"template": a_job()["spec"]["template"]}}}},
                      infos=[MARKER]),
        "missing podSetInfo 1 for component 0",
        id="fewer podSetInfos than podSets is fatal"),
    pytest.param(
        an_appwrapper(with_labels(a_job(), ("metadata",), namespace="team-b")),
        "spec.components[0]: namespace 'team-b' differs from the AppWrapper's namespace 'team-a'",
        id="a component in another namespace is fatal"),
    pytest.param(
        an_appwrapper(a_pod(), pod_sets=[{"path": "template.spec.nothing"}]),
        "spec.components[0].podSets[0].path: path 'template.spec.nothing': no field 'nothing' at template.spec",
        id="a podSet path to nothing is fatal"),
    pytest.param(
        an_appwrapper({"kind": "Job", "spec": {}}),
        "spec.components[0].template: failed to decode as an object with apiVersion and kind",
        id="a template without apiVersion is fatal"),
    pytest.param(
        an_appwrapper(a_job(), infos=[{"labels": {"a": 1}}]),
        "spec.components[0].podSetInfos[0].labels.a: must be a string, got number",
        id="podSetInfo labels that are not strings are fatal"),
]


@pytest.mark.parametrize(("aw", "message"), FATAL_CASES)
def test_fatal_component_errors(aw: dict[str, Any], message: str) -> None:
    with pytest.raises(ComponentError) as caught:
        built(aw)
    assert (str(caught.value), caught.value.fatal) == (message, True)


def test_a_template_owned_by_another_controller_is_fatal() -> None:
    job = a_job()
    job["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u",
                                           "controller": True}]
    with pytest.raises(ComponentError, match=r"already names a controller \(Thing t\)"):
        built(an_appwrapper(job))


def test_an_index_past_the_components_is_fatal() -> None:
    with pytest.raises(ComponentError, match=r"spec.components\[3\]: no such component"):
        built(an_appwrapper(a_job()), 3)


STATUS_CASES = [
    pytest.param(an_appwrapper(a_job()),
                 [{"name": "train", "kind": "Job", "apiVersion": "batch/v1",
                   "podSets": [{"replicas": 1, "path": "template.spec.template"}]}],
                 id="a Job's podSet is inferred"),
    pytest.param(an_appwrapper(a_pod(), pod_sets=[{"path": "template"}]),
                 [{"name": "p", "kind": "Pod", "apiVersion": "v1", "podSets": [{"path": "template"}]}],
                 id="declared podSets are kept as written"),
    pytest.param(an_appwrapper({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {}}),
                 [{"name": "svc", "kind": "Service", "apiVersion": "v1", "podSets": []}],
                 id="a Service has no podSets"),
    pytest.param(an_appwrapper({**a_pod(), "metadata": {"generateName": "p-"}}),
                 [{"name": "", "kind": "Pod", "apiVersion": "v1", "podSets": [{"replicas": 1, "path": "template"}]}],
                 id="a generateName component has no name until it is created"),
]


@pytest.mark.parametrize(("aw", "expected"), STATUS_CASES)
def test_component_status(aw: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert [c.to_wire() for c in component_status(aw)] == expected


@upstream
def test_the_lws_sample_keeps_its_declared_podsets_in_status() -> None:
    lws = next(p.values[0] for p in corpus_appwrappers() if p.id == "appwrapper/wrapped-leader-worker-set.yaml#0")
    assert [p for c in component_status(lws) for p in c.to_wire()["podSets"]] == [
        {"path": "template.spec.leaderWorkerTemplate.leaderTemplate", "replicas": 2},
        {"path": "template.spec.leaderWorkerTemplate.workerTemplate", "replicas": 3}]


@pytest.mark.parametrize("aw, message", [
    pytest.param(an_appwrapper(a_pod(), pod_sets=[{"path": "spec"}]),
                 "spec.components[0].podSets[0].path: first element of the path must be 'template', got 'spec'",
                 id="a podSet path not starting at template"),
    pytest.param({**an_appwrapper(a_job()), "spec": {"components": [{"template": "text"}]}},
                 "spec.components[0].template: failed to decode as an object (apiVersion, kind, metadata, spec), got string",
                 id="a template that is not an object"),
])
def test_component_status_of_an_unparsable_appwrapper_is_fatal(aw: dict[str, Any], message: str) -> None:
    with pytest.raises(ComponentError) as caught:
        component_status(aw)
    assert (str(caught.value), caught.value.fatal) == (message, True)


label_maps = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(["1", "2"]), max_size=3)
tolerations_st = st.lists(st.fixed_dictionaries({"key": st.sampled_from(["x", "y"]), "operator": st.just("Exists")}),
                          max_size=2)


@given(user_labels=label_maps, user_selector=label_maps, user_tolerations=tolerations_st,
       info_labels=label_maps, info_selector=label_maps, info_tolerations=tolerations_st,
       gpus=st.integers(0, 2), kind=st.sampled_from(["Job", "Pod", "PyTorchJob"]))
def test_building_keeps_user_settings_and_never_mutates_the_appwrapper(
    user_labels: dict[str, str], user_selector: dict[str, str], user_tolerations: list[dict[str, str]],
    info_labels: dict[str, str], info_selector: dict[str, str], info_tolerations: list[dict[str, str]],
    gpus: int, kind: str,
) -> None:
    pod = a_pod(gpus=gpus, nodeSelector=dict(user_selector), tolerations=list(user_tolerations))
    pod["metadata"]["labels"] = dict(user_labels)
    template: dict[str, Any] = {"metadata": pod["metadata"], "spec": pod["spec"]}
    if kind == "Pod":
        wrapped = pod
    elif kind == "Job":
        wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template}}
    else:
        wrapped = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
                   "spec": {"pytorchReplicaSpecs": {"Master": {"template": template},
                                                    "Worker": {"replicas": 2, "template": copy.deepcopy(template)}}}}
    pod_set_count = 2 if kind == "PyTorchJob" else 1
    info = {"labels": info_labels, "nodeSelector": info_selector, "tolerations": info_tolerations}
    aw = an_appwrapper(wrapped, infos=[info] * pod_set_count)
    before = copy.deepcopy(aw)
    conflict = any(user_labels.get(k, v) != v for k, v in info_labels.items()) or any(
        user_selector.get(k, v) != v for k, v in info_selector.items())
    try:
        obj = build_component(state(aw), 0, EVICT)
    except ComponentError as exc:
        assert conflict and exc.fatal
        assert aw == before
        return
    assert not conflict
    assert aw == before
    for built_template in templates_of(obj, aw, 0):
        labels = built_template["metadata"]["labels"]
        assert labels[keys.APPWRAPPER_LABEL] == "aw"
        assert user_labels.items() <= labels.items() and info_labels.items() <= labels.items()
        selector = built_template["spec"].get("nodeSelector") or {}
        assert user_selector.items() <= selector.items() and info_selector.items() <= selector.items()
        assert built_template["spec"].get("tolerations", []) == user_tolerations + info_tolerations
        assert (required_terms(built_template["spec"]) is not None) == (gpus > 0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "path", "spec", "x"]),
                                                                inner, max_size=3),
    max_leaves=10,
)


def replace_at(obj: dict[str, Any], at: tuple[Any, ...], value: Any) -> dict[str, Any]:
    parent = get_at(obj, at[:-1])
    if isinstance(parent, dict):
        parent[at[-1]] = value
    elif isinstance(parent, list) and isinstance(at[-1], int) and at[-1] < len(parent):
        parent[at[-1]] = value
    return obj


@given(st.sampled_from([
    ("spec", "components", 0, "template", "metadata"),
    ("spec", "components", 0, "template", "metadata", "labels"),
    ("spec", "components", 0, "template", "metadata", "ownerReferences"),
    ("spec", "components", 0, "template", "spec"),
    ("spec", "components", 0, "template", "spec", "template"),
    ("spec", "components", 0, "template", "spec", "template", "spec", "affinity"),
    ("spec", "components", 0, "template", "spec", "template", "spec", "tolerations"),
    ("spec", "components", 0, "template", "spec", "template", "spec", "containers"),
    ("spec", "components", 0, "podSets"),
    ("spec", "components", 0, "podSetInfos"),
    ("spec", "components", 0, "podSetInfos", 0),
    ("spec", "components", 0, "podSetInfos", 0, "schedulingGates"),
    ("spec", "components", 0),
    ("status",),
    ("status", "componentStatus"),
]), json_values)
@example(("status",), "text")
@example(("spec", "components", 0, "podSetInfos", 0, "schedulingGates"), ["gate"])
@settings(max_examples=400)
def test_a_malformed_appwrapper_raises_only_component_errors(at: tuple[Any, ...], value: Any) -> None:
    aw = an_appwrapper(a_job(), infos=[dict(MARKER)])
    aw["status"] = {"componentStatus": [c.to_wire() for c in component_status(aw)]}
    aw = replace_at(aw, at, value)
    for build in (lambda: component_status(aw), lambda: build_component(state(aw), 0, EVICT)):
        try:
            build()
        except ComponentError as exc:
            assert exc.fatal and str(exc)
