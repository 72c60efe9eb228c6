"""Which Kubernetes the demo runs on (`--kube`, demo/kube.py): the choice, why the stand-in when it
is, the one line where the real one is asked for and cannot run, and the kubectl each is driven by."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.kube import Kube, KubeChoiceError, choose
from demo.kubectl import KUBECTL
from realcluster import toolchain

BUILT = {name: Path(f"/cache/realcluster/{name}") for name in
         ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd")}


@pytest.mark.parametrize(("wanted", "built", "go", "kind", "why"), [
    pytest.param("auto", BUILT, True, "real", "", id="auto runs the real control plane where it is built"),
    pytest.param("auto", None, True, "local", "the real control plane is not built: `make kube` builds it",
                 id="auto runs the stand-in where nothing is built, and says how to build it"),
    pytest.param("auto", None, False, "local",
                 "Go not found: install Go 1.25 or newer, then `make kube` builds Kubernetes",
                 id="auto runs the stand-in where Go is missing, and says what to install"),
    pytest.param("local", BUILT, True, "local", "chosen with --kube local",
                 id="local runs the stand-in even where the real control plane is built"),
    pytest.param("real", BUILT, False, "real", "", id="real runs the built control plane, Go or not"),
])
def test_the_choice(wanted: str, built: dict[str, Path] | None, go: bool, kind: str, why: str) -> None:
    kube = choose(wanted, built, lambda: go)
    assert (kube.kind, kube.why_local) == (kind, why)


@pytest.mark.parametrize(("go", "message"), [
    pytest.param(True, "--kube real: the real control plane is not built: `make kube` builds it (minutes, once); "
                       "or use --kube local", id="real where nothing is built names make kube"),
    pytest.param(False, "--kube real: the real control plane is not built and Go is not installed: install Go 1.25 "
                        "or newer, then `make kube` builds it; or use --kube local",
                 id="real where Go is missing names Go first"),
])
def test_real_where_it_cannot_run_is_one_line_naming_the_fix(go: bool, message: str) -> None:
    with pytest.raises(KubeChoiceError) as raised:
        choose("real", None, lambda: go)
    assert str(raised.value) == message


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(KubeChoiceError, match=r"^--kube kind: expected one of auto, local, real$"):
        choose("kind", BUILT, lambda: True)


def test_the_real_control_plane_is_driven_by_the_kubectl_of_its_release_and_named_by_its_version() -> None:
    kube = Kube("auto", BUILT)
    assert kube.kubectl == "/cache/realcluster/kubectl"
    assert kube.describe() == (f"Kubernetes {toolchain.load_versions().kubernetes} (kube-apiserver, etcd, "
                               "kube-controller-manager, kube-scheduler built from their Go modules)")


def test_the_stand_in_is_driven_by_the_users_kubectl_and_says_why_it_runs() -> None:
    kube = Kube("auto", None, "Go not found: install Go")
    assert kube.kubectl == KUBECTL
    assert kube.describe() == "the stand-in API server (localcluster/; Go not found: install Go)"
