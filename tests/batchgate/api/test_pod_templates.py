"""Pod-template locations of any registered kind, the podSet path grammar and the strict pod spec."""

from __future__ import annotations

from typing import Any

import pytest

from batchgate.api.errors import FieldError
from batchgate.api.paths import parse_podset_path, resolve
from batchgate.api.pod_spec import check_pod_spec
from batchgate.api.pod_templates import pod_template_locations
from tests.builders import a_job, a_jobset, a_pod, a_rayjob, a_service, an_appwrapper, pod_template


@pytest.mark.parametrize(
    "obj, expected",
    [
        pytest.param(a_pod().build(), [""], id="a pod's template is the pod"),
        pytest.param(a_job().build(), ["spec.template"], id="a job's template"),
        pytest.param(a_rayjob(workers=(1, 1)).build(),
                     ["spec.rayClusterSpec.headGroupSpec.template",
                      "spec.rayClusterSpec.workerGroupSpecs[0].template",
                      "spec.rayClusterSpec.workerGroupSpecs[1].template"], id="every ray template"),
        pytest.param(an_appwrapper().with_job().with_pytorchjob(workers=2).build(),
                     ["spec.components[0].template.spec.template",
                      "spec.components[1].template.spec.pytorchReplicaSpecs.Master.template",
                      "spec.components[1].template.spec.pytorchReplicaSpecs.Worker.template"],
                     id="appwrapper components at their inferred podSet paths"),
        pytest.param(an_appwrapper().with_component(
            {"apiVersion": "example.com/v1", "kind": "Custom", "spec": {"pods": [pod_template()]}},
            pod_sets=[{"path": "template.spec.pods[0]", "replicas": 2}]).build(),
            ["spec.components[0].template.spec.pods[0]"], id="appwrapper components at their declared paths"),
        pytest.param(an_appwrapper().with_component(a_job().build(), pod_sets=[{"path": "template.nope"}]).build(),
                     [], id="a declared path that resolves nowhere is skipped"),
        pytest.param({**a_job().build(), "spec": {"template": ["a", "list"]}}, [],
                     id="a template that is a list is skipped"),
        pytest.param({**a_job().build(), "spec": "a string"}, [], id="a spec that is a string is skipped"),
        pytest.param(a_service().build(), [], id="a service has no pod templates"),
    ],
)
def test_pod_template_locations(obj: Any, expected: list[str]) -> None:
    assert [at.path for at in pod_template_locations(obj)] == expected


@pytest.mark.parametrize(
    "path, problem",
    [
        pytest.param("", "podspec must specify path", id="an empty path"),
        pytest.param("spec.template", "first element of the path must be 'template'", id="not starting at template"),
        pytest.param("template.spec.replicatedJobs[1", "unexpected", id="an unclosed bracket"),
        pytest.param("template.spec.replicatedJobs[1]]", "unexpected", id="a stray bracket"),
        pytest.param("template.spec.replicatedJobs[-1]", "not a non-negative integer", id="a negative index"),
        pytest.param("template.spec.replicatedJobs[a10]", "not a non-negative integer", id="a non-numeric index"),
        pytest.param("template..spec", "unexpected", id="an empty field name"),
    ],
)
def test_podset_path_grammar_rejects(path: str, problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        parse_podset_path(path, "spec.components[0].podSets[0].path")


@pytest.mark.parametrize(
    "path, problem",
    [
        pytest.param("template.spec.replicatedJobs.template.spec.template",
                     r": template\.spec\.replicatedJobs is not a map",
                     id="a field step on a list"),
        pytest.param("template.spec.replicatedJobs[0].template[0].spec.template",
                     r": template\.spec\.replicatedJobs\[0\]\.template is not an array",
                     id="an index step on a map"),
        pytest.param("template.spec.replicatedJobs[10].template.spec.template",
                     r"index 10 out of bounds at template\.spec\.replicatedJobs$",
                     id="an index past the end"),
        pytest.param("template.spec.replicatedJobs[0].template.spec.missing",
                     r"no field 'missing' at template\.spec\.replicatedJobs\[0\]\.template\.spec$",
                     id="a missing field"),
        pytest.param("template.spec.replicatedJobs[0].name", "does not lead to a map", id="a path ending on a string"),
    ],
)
def test_podset_paths_that_do_not_resolve(path: str, problem: str) -> None:
    jobset = a_jobset().build()
    steps = parse_podset_path(path, "p")
    with pytest.raises(FieldError, match=problem):
        resolve(jobset, steps[1:], "p", path)


def test_a_valid_path_resolves_to_the_template() -> None:
    jobset = a_jobset().build()
    steps = parse_podset_path("template.spec.replicatedJobs[0].template.spec.template", "p")
    assert resolve(jobset, steps[1:], "p", "") is jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]


@pytest.mark.parametrize(
    "spec, problem",
    [
        pytest.param({"containers": [{"name": "a", "image": "x", "imagePullPolice": "Always"}]},
                     r"containers\[0\]\.imagePullPolice: unknown field", id="a misspelled container field"),
        pytest.param({"containers": [], "nodeSelecter": {}}, "nodeSelecter: unknown field",
                     id="a misspelled pod field"),
        pytest.param({"containers": {"name": "a"}}, "containers: must be a list, got mapping",
                     id="containers given as a mapping"),
        pytest.param({"containers": [{"name": "a", "ports": [{"containerPort": "80"}]}]},
                     r"ports\[0\]\.containerPort: must be an integer, got string", id="a port given as a string"),
        pytest.param({"nodeSelector": {"zone": 1}}, r"nodeSelector\.zone: must be a string", id="a selector value must be a string"),
        pytest.param({"priority": True}, "priority: must be an integer, got boolean", id="a boolean is not an integer"),
    ],
)
def test_strict_pod_spec_rejects(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(FieldError, match=problem):
        check_pod_spec(spec, "spec")


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(pod_template(gpus=8)["spec"], id="a typical gpu pod"),
        pytest.param({"containers": [{"name": "a", "resources": {"limits": {"cpu": 2, "memory": "1Gi"}}}]},
                     id="quantities may be numbers"),
        pytest.param({"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": "http"}}}]},
                     id="int-or-string ports may be names"),
        pytest.param({"containers": [{"name": "a"}], "affinity": None}, id="null fields are unset"),
    ],
)
def test_strict_pod_spec_accepts(spec: dict[str, Any]) -> None:
    check_pod_spec(spec, "spec")
