"""The real control plane's build: versions, the generated tools module, stamping, the cache,
and each bad input as the one line that names the fix."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from realcluster import toolchain
from realcluster.toolchain import ToolchainError, Versions

OPERATORS = "KUBERAY=v1.5.0\nTRAINING_OPERATOR=v1.8.1\nHELM=v3.20.2\n"
GOOD = ("# comment\nKUBERNETES=v1.35.4\n\nETCD=v3.6.16  # trailing comment\nKUEUE=v0.17.0\nAPPWRAPPER=v1.2.2\n"
        + OPERATORS)
VERSIONS = Versions("v1.35.4", "v3.6.16", "v0.17.0", "v1.2.2", "v1.5.0", "v1.8.1", "v3.20.2")
PEERS = "KUEUE=v0.17.0\nAPPWRAPPER=v1.2.2\n" + OPERATORS


def test_the_versions_file_in_the_repo_parses() -> None:
    versions = toolchain.load_versions()
    assert versions.kubernetes.startswith("v1.") and versions.etcd.startswith("v3.")


def test_versions_are_read_with_comments_and_blank_lines() -> None:
    assert toolchain.parse_versions(GOOD, "v.env") == VERSIONS


@pytest.mark.parametrize("text, message", [
    ("KUBERNETES=v1.35.4\n" + PEERS, "v.env: no ETCD= line"),
    ("KUBERNETES=v1.35.4\nETCD=v3.6.16\nKUEUE=v0.17.0\n" + OPERATORS, "v.env: no APPWRAPPER= line"),
    ("KUBERNETES=v1.35.4\nETCD=v3.6.16\nKUEUE=v0.17.0\nAPPWRAPPER=v1.2.2\nKUBERAY=v1.5.0\nHELM=v3.20.2\n",
     "v.env: no TRAINING_OPERATOR= line"),
    ("KUBERNETES=v1.35.4\nETCD=v3.6.16\nKUEUE=v0.17.0\nAPPWRAPPER=v1.2.2\nKUBERAY=v1.5.0\nTRAINING_OPERATOR=v1.8.1\n",
     "v.env: no HELM= line"),
    ("KUBERNETES=1.35.4\nETCD=v3.6.16\n", "v.env:1: KUBERNETES must be a release such as v1.35.4, got '1.35.4'"),
    ("KUBERNETES=v1.35.4\nETCD=v3.6.16\nKUEUE=0.17\n", "v.env:3: KUEUE must be a release such as v1.35.4, got '0.17'"),
    ("KUBERNETES=v1.35.4\nETCD=v3.6.16\nKUBERNETES=v1.34.0\n", "v.env:3: KUBERNETES is given twice"),
    ("KUBE=v1.35.4\n", "v.env:1: expected one of KUBERNETES=vX.Y.Z, ETCD=vX.Y.Z, KUEUE=vX.Y.Z, APPWRAPPER=vX.Y.Z, "
                       "KUBERAY=vX.Y.Z, TRAINING_OPERATOR=vX.Y.Z, HELM=vX.Y.Z, got 'KUBE=v1.35.4'"),
    ("KUBERNETES=v2.0.0\nETCD=v3.6.16\n" + PEERS, "v.env: KUBERNETES must be a v1.x release, got v2.0.0"),
], ids=["a missing key is named", "a missing peer is named", "a missing operator is named",
        "a missing helm is named", "a version without its v is refused with the line",
        "a peer's version without its v is refused with the line",
        "a key given twice is refused at its second line", "an unknown key is refused with the line",
        "a Kubernetes that is not 1.x is refused"])
def test_bad_versions_files_are_one_line_each(text: str, message: str) -> None:
    with pytest.raises(ToolchainError) as caught:
        toolchain.parse_versions(text, "v.env")
    assert str(caught.value) == message


UPSTREAM = """module k8s.io/kubernetes

go 1.25.0

require (
\tk8s.io/api v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tgithub.com/example/pinned => github.com/example/pinned v1.2.3
)
replace go.etcd.io/etcd => ./FORBIDDEN_DEPENDENCY
replace k8s.io/kms => ./staging/src/k8s.io/kms
"""


def test_only_replaces_with_directories_of_the_repository_become_sibling_modules() -> None:
    assert toolchain.local_replaces(UPSTREAM) == ["k8s.io/api", "k8s.io/client-go", "k8s.io/kms"]


def test_the_tools_module_pins_each_staging_module_at_the_release() -> None:
    text = toolchain.tools_go_mod("k8s.io/kubernetes", "v1.35.4", UPSTREAM)
    assert "require k8s.io/kubernetes v1.35.4\n" in text
    assert "\tk8s.io/api => k8s.io/api v0.35.4\n" in text
    assert "\tk8s.io/kms => k8s.io/kms v0.35.4\n" in text
    assert "go 1.25\n" in text
    assert "FORBIDDEN" not in text and "example" not in text


@pytest.mark.parametrize("module, version, sibling", [
    ("k8s.io/kubernetes", "v1.35.4", "v0.35.4"),
    ("k8s.io/kubernetes", "v1.36.10", "v0.36.10"),
    ("go.etcd.io/etcd/server/v3", "v3.6.16", "v3.6.16"),
], ids=["kubernetes staging modules are v0.MINOR.PATCH", "two-digit patches keep their digits",
        "etcd's siblings share its version"])
def test_sibling_versions(module: str, version: str, sibling: str) -> None:
    assert toolchain.sibling_version(module, version) == sibling


def test_kubernetes_programs_are_stamped_with_their_release_in_both_version_packages() -> None:
    apiserver = next(p for p in toolchain.programs(VERSIONS) if p.name == "kube-apiserver")
    flags = toolchain.ldflags(apiserver)
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {package}.gitVersion=v1.35.4" in flags
        assert f"-X {package}.gitMajor=1" in flags and f"-X {package}.gitMinor=35" in flags


HELM_GO_MOD = """module helm.sh/helm/v3

go 1.25.0

require (
\tgithub.com/Masterminds/semver/v3 v3.4.0
\tk8s.io/client-go v0.35.1
\tk8s.io/client-go/extra v0.1.0
)
"""


def test_helm_is_stamped_as_its_makefile_stamps_a_release() -> None:
    helm = next(p for p in toolchain.programs(VERSIONS) if p.name == "helm")
    flags = toolchain.ldflags(helm, HELM_GO_MOD)
    assert flags.startswith("-s -w")
    assert "-X helm.sh/helm/v3/internal/version.version=v3.20.2" in flags
    assert "-X helm.sh/helm/v3/internal/version.gitTreeState=clean" in flags
    for package in ("helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"):
        assert f"-X {package}.k8sVersionMajor=1 -X {package}.k8sVersionMinor=35" in flags
    assert helm.reports == 'Version:"v3.20.2"'
    assert toolchain.binary_path(helm, Path("/c")) == Path("/c/realcluster/helm-v3.20.2/helm")


def test_a_helm_whose_go_mod_names_no_client_go_is_refused_naming_the_fix() -> None:
    helm = toolchain.helm_program("v3.20.2")
    with pytest.raises(ToolchainError, match=r"helm\.sh/helm/v3@v3\.20\.2 requires no k8s\.io/client-go .*"
                                             r"pin another release in versions\.env"):
        toolchain.ldflags(helm, "module helm.sh/helm/v3\n")
    assert "k8sVersion" not in toolchain.ldflags(next(p for p in toolchain.programs(VERSIONS) if p.name == "kubectl"))


@pytest.mark.parametrize("name, stamp", [
    ("kueue", "-X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.17.0"),
    ("appwrapper", "-X main.BuildVersion=v1.2.2"),
], ids=["Kueue's manager is stamped where it logs its gitVersion",
        "the AppWrapper controller is stamped where it logs its build version"])
def test_peers_are_stamped_with_their_release(name: str, stamp: str) -> None:
    peer = next(p for p in toolchain.peer_programs(VERSIONS) if p.name == name)
    assert stamp in toolchain.ldflags(peer)
    assert toolchain.ldflags(peer).startswith("-s -w")


def test_each_program_has_its_own_cache_path_keyed_by_its_release(tmp_path: Path) -> None:
    paths = {p.name: toolchain.binary_path(p, tmp_path) for p in toolchain.programs(VERSIONS)
             + toolchain.peer_programs(VERSIONS) + toolchain.operator_programs(VERSIONS)}
    assert paths["kube-apiserver"] == tmp_path / "realcluster" / "kubernetes-v1.35.4" / "kube-apiserver"
    assert paths["kubectl"].parent == paths["kube-apiserver"].parent
    assert paths["etcd"] == tmp_path / "realcluster" / "etcd-v3.6.16" / "etcd"
    assert paths["kueue"] == tmp_path / "realcluster" / "kueue-v0.17.0" / "kueue"
    assert paths["appwrapper"] == tmp_path / "realcluster" / "appwrapper-v1.2.2" / "appwrapper"
    assert paths["kuberay-operator"] == tmp_path / "realcluster" / "kuberay-v1.5.0" / "kuberay-operator"
    assert paths["training-operator"] == tmp_path / "realcluster" / "training-operator-v1.8.1" / "training-operator"


@pytest.mark.parametrize("environ, expected", [
    ({"BATCHGATE_CACHE": "/c"}, Path("/c")),
    ({"XDG_CACHE_HOME": "/x"}, Path("/x/batchgate")),
    ({}, Path.home() / ".cache" / "batchgate"),
], ids=["BATCHGATE_CACHE wins", "else the XDG cache home", "else ~/.cache"])
def test_the_cache_lives_outside_the_repository(environ: dict[str, str], expected: Path) -> None:
    assert toolchain.cache_root(environ) == expected


@pytest.mark.parametrize("text, version", [
    ("go version go1.26.8 linux/amd64", (1, 26, 8)),
    ("go version go1.25 linux/arm64", (1, 25, 0)),
])
def test_go_versions_are_read(text: str, version: tuple[int, int, int]) -> None:
    assert toolchain.parse_go_version(text) == version


def test_no_go_on_the_path_names_the_fix() -> None:
    with pytest.raises(ToolchainError, match=r"Go is not installed: .*install Go 1\.25 or newer.*--kube local"):
        toolchain.go_binary(path="/nonexistent")


def test_a_go_too_old_for_the_module_names_both_versions_and_the_fix() -> None:
    with pytest.raises(ToolchainError) as caught:
        toolchain.require_go((1, 24, 3), (1, 25, 0), "k8s.io/kubernetes@v1.35.4")
    assert str(caught.value) == ("Go 1.24.3 is too old for k8s.io/kubernetes@v1.35.4, which needs Go 1.25.0: "
                                 "install a newer Go, or pin an older release in versions.env")
    toolchain.require_go((1, 26, 8), (1, 25, 0), "k8s.io/kubernetes@v1.35.4")


def _fake_binary(path: Path, prints: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{prints}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_cached_binary_of_another_version_counts_as_missing(tmp_path: Path) -> None:
    chosen = toolchain.programs(VERSIONS)
    by_name = {p.name: p for p in chosen}
    for program in by_name.values():
        _fake_binary(toolchain.binary_path(program, tmp_path), program.reports)
    assert toolchain.missing(chosen, tmp_path) == []
    assert toolchain.locate(VERSIONS, tmp_path) is not None
    _fake_binary(toolchain.binary_path(by_name["kube-apiserver"], tmp_path), "Kubernetes v1.34.0")
    assert [p.name for p in toolchain.missing(chosen, tmp_path)] == ["kube-apiserver"]
    assert toolchain.locate(VERSIONS, tmp_path) is None


def test_a_peer_is_current_when_a_line_of_its_start_log_names_its_version(tmp_path: Path) -> None:
    kueue, appwrapper = toolchain.peer_programs(VERSIONS)
    path = toolchain.binary_path(kueue, tmp_path)
    _fake_binary(path, '{"level":"info","msg":"Initializing","gitVersion":"v0.17.0"}')
    path.write_text(path.read_text().replace("#!/bin/sh\n", "#!/bin/sh\necho 'flag parsing'\n"))
    assert toolchain.reported_version(path, kueue) == '{"level":"info","msg":"Initializing","gitVersion":"v0.17.0"}'
    _fake_binary(toolchain.binary_path(appwrapper, tmp_path), 'INFO setup Build info {"version": "v1.2.1"}')
    assert toolchain.missing((kueue, appwrapper), tmp_path) == [appwrapper]
    assert toolchain.locate(VERSIONS, tmp_path, toolchain.peer_programs) is None


def _binary_recording(path: Path, build_info: str) -> None:
    """A file laid out as a Go binary around its build info (module lines between other bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x7fELF" + b"\0" * 64 + build_info.encode() + b"\0" * 64)


def test_an_operator_is_current_when_its_binary_records_the_module_version_it_was_built_from(tmp_path: Path) -> None:
    kuberay, training = toolchain.operator_programs(VERSIONS)
    path = toolchain.binary_path(kuberay, tmp_path)
    _binary_recording(path, "path\tgithub.com/ray-project/kuberay/ray-operator\n"
                            "mod\tgithub.com/ray-project/kuberay/ray-operator\tv1.5.0\th1:abc=\n"
                            "dep\tgithub.com/beorn7/perks\tv1.0.1\th1:def=\n")
    assert toolchain.reported_version(path, kuberay) == "github.com/ray-project/kuberay/ray-operator v1.5.0"
    _binary_recording(toolchain.binary_path(training, tmp_path),
                      "mod\tgithub.com/kubeflow/training-operator\tv1.7.0\th1:abc=\n")
    assert toolchain.missing((kuberay, training), tmp_path) == [training]
    assert toolchain.reported_version(tmp_path / "absent", training) == ""


@pytest.mark.skipif(toolchain.shutil.which("go") is None, reason="needs Go and the module proxy")
def test_a_version_the_module_proxy_refuses_names_the_versions_file(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as caught:
        toolchain.upstream_go_mod(toolchain.go_binary(), "k8s.io/kubernetes", "v1.35.999", tmp_path,
                                  toolchain.go_env())
    message = str(caught.value)
    assert message.startswith("the Go module proxy did not give k8s.io/kubernetes@v1.35.999 (")
    assert message.endswith("set a served version in versions.env (`go list -m -versions k8s.io/kubernetes`)")
    assert "\n" not in message


def test_check_reports_each_missing_program_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ["BATCHGATE_CACHE"] = str(tmp_path)
    try:
        assert toolchain.main(["--check"]) == 1
    finally:
        del os.environ["BATCHGATE_CACHE"]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6
    assert all(line.startswith("realcluster: ") and line.endswith("is not built (make test builds it)") for line in lines)


def test_unknown_arguments_are_one_line_that_names_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert toolchain.main(["--peer"]) == 2
    err = capsys.readouterr().err
    assert err == ("realcluster: unknown arguments '--peer': give none (the control plane), --check, "
                   "--peers (Kueue and the AppWrapper controller) or --operators (KubeRay's and the training "
                   "operator)\n")
