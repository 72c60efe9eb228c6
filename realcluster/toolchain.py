"""Builds the real control plane's programs from their Go modules, once, into a cache outside the
repository: kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from
`k8s.io/kubernetes`, etcd from `go.etcd.io/etcd/server/v3`, and helm (`helm.sh/helm/v3`, which the
chart's tests drive) at the versions in `versions.env`; and,
on request, the peers the benchmarks and differential tests run beside batchgate: Kueue's manager
(`sigs.k8s.io/kueue`) and the AppWrapper controller (`github.com/project-codeflare/appwrapper`); and the upstream operators of the workloads batchgate
wraps: KubeRay's (`github.com/ray-project/kuberay/ray-operator`) and Kubeflow's training operator
(`github.com/kubeflow/training-operator`).

Neither module can be `go install`ed: both replace their sibling modules with directories of
their own repository. A small tools module per release requires the upstream module and points
each such replace at the sibling module of the same release on the proxy; it is generated from
the upstream go.mod, so a version bump is one line in `versions.env`. Binaries are stamped with
their version (an unstamped one reports v0.0.0-master, which clients that parse it reject), and
a cached binary is trusted only if it reports the version it was built for.

`python -m realcluster.toolchain` builds what is missing, a progress line per program;
`--peers` builds the peers instead (`make peers`), `--operators` the operators (`make operators`).
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("versions.env")
CACHE_ENV = "BATCHGATE_CACHE"
KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
HELM_MODULE = "helm.sh/helm/v3"
KUEUE_MODULE = "sigs.k8s.io/kueue"
APPWRAPPER_MODULE = "github.com/project-codeflare/appwrapper"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"
TRAINING_MODULE = "github.com/kubeflow/training-operator"
BUILD_DATE = "2026-01-01T00:00:00Z"  # fixed, so two builds of one release are the same program
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
MODULE_DOWNLOAD_SECONDS = 600
VERSION_CHECK_SECONDS = 20


class ToolchainError(Exception):
    """One line that says what is wrong and how to fix it."""


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    kueue: str
    appwrapper: str
    kuberay: str
    training_operator: str
    helm: str

    def minor(self) -> str:
        """Kubernetes' minor version: '35' for v1.35.4."""
        return self.kubernetes.split(".")[1]


_KEYS = {"KUBERNETES": "kubernetes", "ETCD": "etcd", "KUEUE": "kueue", "APPWRAPPER": "appwrapper",
         "KUBERAY": "kuberay", "TRAINING_OPERATOR": "training_operator", "HELM": "helm"}
_SEMVER = re.compile(r"^v\d+\.\d+\.\d+$")


def parse_versions(text: str, source: str = str(VERSIONS_FILE)) -> Versions:
    """`KEY=vX.Y.Z` lines (comments and blank lines allowed); every key once, nothing else."""
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = (part.strip() for part in line.partition("="))
        if not sep or key not in _KEYS:
            raise ToolchainError(f"{source}:{number}: expected one of {', '.join(f'{k}=vX.Y.Z' for k in _KEYS)}, "
                                 f"got {raw.strip()!r}")
        if not _SEMVER.match(value):
            raise ToolchainError(f"{source}:{number}: {key} must be a release such as v1.35.4, got {value!r}")
        if key in found:
            raise ToolchainError(f"{source}:{number}: {key} is given twice")
        found[key] = value
    missing = [k for k in _KEYS if k not in found]
    if missing:
        raise ToolchainError(f"{source}: no {', '.join(missing)}= line")
    versions = Versions(**{_KEYS[k]: v for k, v in found.items()})
    if not versions.kubernetes.startswith("v1."):
        raise ToolchainError(f"{source}: KUBERNETES must be a v1.x release, got {versions.kubernetes}")
    return versions


def load_versions(path: Path = VERSIONS_FILE) -> Versions:
    return parse_versions(path.read_text(), str(path))


@dataclass(frozen=True)
class Program:
    """One binary to build: where it is built from, what its build stamps, how it proves its version."""

    name: str
    module: str
    version: str
    package: str
    version_args: tuple[str, ...]
    reports: str  # a line of what `name version_args` prints contains this when it is this version
    family: str  # the release it belongs to: its cache directory is FAMILY-VERSION
    stamps: tuple[str, ...] = ()  # `-X package.variable=value` link flags that record the version
    build_info: bool = False  # prints no version: the module version Go records in the binary is checked
    kubernetes_stamps: tuple[str, ...] = ()  # packages whose k8sVersionMajor/Minor record the client-go built in

    def key(self) -> str:
        return f"{self.family}-{self.version}"


def kubernetes_stamps(version: str) -> tuple[str, ...]:
    """The release in component-base's and client-go's version variables."""
    major, minor = version.removeprefix("v").split(".")[:2]
    return tuple(f"{package}.{name}={value}" for package in VERSION_PACKAGES for name, value in (
        ("gitVersion", version), ("gitMajor", major), ("gitMinor", minor),
        ("gitTreeState", "clean"), ("buildDate", BUILD_DATE)))


def programs(versions: Versions) -> tuple[Program, ...]:
    """The control plane's programs."""
    stamps = kubernetes_stamps(versions.kubernetes)
    kube = [Program(name, KUBERNETES_MODULE, versions.kubernetes, f"{KUBERNETES_MODULE}/cmd/{name}", ("--version",),
                    f"Kubernetes {versions.kubernetes}", "kubernetes", stamps)
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    kubectl = Program("kubectl", KUBERNETES_MODULE, versions.kubernetes, f"{KUBERNETES_MODULE}/cmd/kubectl",
                      ("version", "--client"), f"Client Version: {versions.kubernetes}", "kubernetes", stamps)
    etcd = Program("etcd", ETCD_MODULE, versions.etcd, ETCD_MODULE, ("--version",),
                   f"etcd Version: {versions.etcd.removeprefix('v')}", "etcd")
    return (*kube, kubectl, etcd, helm_program(versions.helm))


def helm_program(version: str) -> Program:
    """helm, stamped as its Makefile stamps a release: its version, a clean tree, and the Kubernetes
    release of its client-go, which `helm lint` and `helm template` take as the cluster's version
    (unstamped, they assume v1.20). The proxy gives no commit, so gitCommit stays empty."""
    return Program("helm", HELM_MODULE, version, f"{HELM_MODULE}/cmd/helm", ("version",), f'Version:"{version}"',
                   "helm", (f"{HELM_MODULE}/internal/version.version={version}",
                            f"{HELM_MODULE}/internal/version.gitTreeState=clean"),
                   kubernetes_stamps=(f"{HELM_MODULE}/pkg/lint/rules", f"{HELM_MODULE}/pkg/chartutil"))


def peer_programs(versions: Versions) -> tuple[Program, ...]:
    """The peers. Neither has a version flag: each logs its stamped version as it starts and then
    stops for want of a cluster (Kueue: --kubeconfig names an empty file) or of a namespace (the
    AppWrapper controller without NAMESPACE), so that start is its version check."""
    kueue = Program("kueue", KUEUE_MODULE, versions.kueue, f"{KUEUE_MODULE}/cmd/kueue", ("--kubeconfig", os.devnull),
                    f'"gitVersion":"{versions.kueue}"', "kueue",
                    (f"{KUEUE_MODULE}/pkg/version.GitVersion={versions.kueue}",
                     f"{KUEUE_MODULE}/pkg/version.BuildDate={BUILD_DATE}"))
    appwrapper = Program("appwrapper", APPWRAPPER_MODULE, versions.appwrapper, f"{APPWRAPPER_MODULE}/cmd", (),
                         f'"version": "{versions.appwrapper}"', "appwrapper",
                         (f"main.BuildVersion={versions.appwrapper}", f"main.BuildDate={BUILD_DATE}"))
    return (kueue, appwrapper)


def operator_programs(versions: Versions) -> tuple[Program, ...]:
    """KubeRay's operator and the training operator. Neither prints or logs its version, so the
    check reads what Go records in every binary: the module and version it was built from."""
    kuberay = Program("kuberay-operator", KUBERAY_MODULE, versions.kuberay, KUBERAY_MODULE, (),
                      f"{KUBERAY_MODULE} {versions.kuberay}", "kuberay", build_info=True)
    training = Program("training-operator", TRAINING_MODULE, versions.training_operator,
                       f"{TRAINING_MODULE}/cmd/training-operator.v1", (),
                       f"{TRAINING_MODULE} {versions.training_operator}", "training-operator", build_info=True)
    return (kuberay, training)


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    """$BATCHGATE_CACHE, else $XDG_CACHE_HOME/batchgate, else ~/.cache/batchgate: never the repo."""
    if environ.get(CACHE_ENV):
        return Path(environ[CACHE_ENV])
    base = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "batchgate"


def binary_path(program: Program, cache: Path) -> Path:
    return cache / "realcluster" / program.key() / program.name


# the tools module -------------------------------------------------------------------------------

_REPLACE_BLOCK = re.compile(r"^replace\s*\((.*?)^\)", re.M | re.S)
_REPLACE_LINE = re.compile(r"^replace\s+(\S+)\s*=>\s*(\S+)\s*$", re.M)
_GO_LINE = re.compile(r"^go\s+(\d+)\.(\d+)(?:\.(\d+))?\s*$", re.M)


def local_replaces(go_mod: str) -> list[str]:
    """Modules that the upstream go.mod replaces with a directory of its own repository
    (`k8s.io/api => ./staging/src/k8s.io/api`); placeholders such as ./FORBIDDEN_DEPENDENCY are
    not modules the build uses and are left out."""
    pairs = [line.split("=>") for block in _REPLACE_BLOCK.findall(go_mod) for line in block.splitlines()
             if "=>" in line]
    pairs += [[m.group(1), m.group(2)] for m in _REPLACE_LINE.finditer(go_mod)]
    out = []
    for left, right in pairs:
        module, target = left.split()[0], right.strip().split()[0]
        if target.startswith((".", "/")) and "FORBIDDEN" not in target:
            out.append(module)
    return out


def sibling_version(module: str, version: str) -> str:
    """The version of a sibling module released with `module@version`: Kubernetes' staging
    modules carry v0.MINOR.PATCH for v1.MINOR.PATCH; etcd's siblings share its version."""
    if module == KUBERNETES_MODULE:
        return "v0." + version.split(".", 1)[1]
    return version


def tools_go_mod(module: str, version: str, upstream_go_mod: str) -> str:
    """The go.mod of the tools module that builds `module@version`."""
    replaces = "".join(f"\t{m} => {m} {sibling_version(module, version)}\n" for m in local_replaces(upstream_go_mod))
    go = minimum_go(upstream_go_mod)
    text = f"module batchgate.dev/realcluster-tools\n\ngo {go[0]}.{go[1]}\n\nrequire {module} {version}\n"
    return text + (f"\nreplace (\n{replaces})\n" if replaces else "")


def minimum_go(go_mod: str) -> tuple[int, int, int]:
    match = _GO_LINE.search(go_mod)
    if match is None:
        return (1, 0, 0)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def parse_go_version(text: str) -> tuple[int, int, int]:
    """`go version go1.26.8 linux/amd64` -> (1, 26, 8)."""
    match = re.search(r"go(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise ToolchainError(f"cannot read the Go version from {text.strip()!r}")
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


_CLIENT_GO = re.compile(r"^\s*(?:require\s+)?k8s\.io/client-go\s+v0\.(\d+)\.\d+", re.M)


def client_go_stamps(program: Program, go_mod: str) -> tuple[str, ...]:
    """The Kubernetes release of the client-go that `go_mod` requires (v0.35.1 is 1.35), in each of
    the program's `kubernetes_stamps` packages, as helm's Makefile derives it."""
    if not program.kubernetes_stamps:
        return ()
    match = _CLIENT_GO.search(go_mod)
    if match is None:
        raise ToolchainError(f"{program.module}@{program.version} requires no k8s.io/client-go v0.MINOR.PATCH "
                             f"to stamp as its Kubernetes version: pin another release in {VERSIONS_FILE.name}")
    return tuple(f"{package}.{name}={value}" for package in program.kubernetes_stamps
                 for name, value in (("k8sVersionMajor", "1"), ("k8sVersionMinor", match.group(1))))


def ldflags(program: Program, upstream_go_mod: str = "") -> str:
    """Strip symbols and stamp the release where the program reports it."""
    stamps = (*program.stamps, *client_go_stamps(program, upstream_go_mod))
    return " ".join(["-s", "-w", *(f"-X {stamp}" for stamp in stamps)])


# running Go ---------------------------------------------------------------------------------------


def go_binary(path: str | None = None) -> str:
    """The `go` on PATH (or on `path`)."""
    found = shutil.which("go", path=path)
    if found is None:
        raise ToolchainError("Go is not installed: the real control plane is built from Kubernetes' Go modules; "
                             "install Go 1.25 or newer (Debian: golang-1.25), or use the stand-in (--kube local)")
    return found


def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GOFLAGS": "-mod=mod -buildvcs=false", "GOTOOLCHAIN": "local", "GOWORK": "off"})
    return env


def _run_go(go: str, args: list[str], cwd: Path, env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([go, *args], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout)


def _download(go: str, module: str, version: str, workdir: Path, env: Mapping[str, str], field: str) -> Path:
    """`field` (GoMod or Dir) of `module@version` fetched from the module proxy into GOMODCACHE."""
    done = _run_go(go, ["mod", "download", "-json", f"{module}@{version}"], workdir, env, MODULE_DOWNLOAD_SECONDS)
    try:
        info = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if done.returncode != 0 or info.get("Error") or not info.get(field):
        why = (str(info.get("Error") or "").strip() or done.stderr.strip() or "no answer").splitlines()[0]
        raise ToolchainError(f"the Go module proxy did not give {module}@{version} ({why}): "
                             f"set a served version in {VERSIONS_FILE.name} (`go list -m -versions {module}`)")
    return Path(info[field])


def upstream_go_mod(go: str, module: str, version: str, workdir: Path, env: Mapping[str, str]) -> str:
    """The go.mod of `module@version`, from the module proxy (kept in GOMODCACHE)."""
    return _download(go, module, version, workdir, env, "GoMod").read_text()


def module_source(program: Program, cache: Path) -> Path:
    """The read-only source tree of a program's module in GOMODCACHE (its manifests live there)."""
    return _download(go_binary(), program.module, program.version, _module_dir(cache, program.module, program.version),
                     go_env(), "Dir")


_CLUSTER_ENV = ("KUBECONFIG", "NAMESPACE", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


def without_cluster_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """This environment less what would point a peer at a cluster or namespace other than the one
    it is given (a version check must reach none)."""
    return {k: v for k, v in environ.items() if k not in _CLUSTER_ENV}


def recorded_module(path: Path, module: str) -> str:
    """'MODULE VERSION' as Go's build info in the binary records the module of its main package
    (its `mod` line); '' if it records another."""
    try:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            start = data.find(f"\nmod\t{module}\t".encode())
            if start < 0:
                return ""
            line = data[start + 1:data.find(b"\n", start + 1)].decode(errors="replace")
    except (OSError, ValueError):
        return ""
    return " ".join(line.split("\t")[1:3])


def reported_version(path: Path, program: Program) -> str:
    """The line of a binary's output that states its version (its first line if none does);
    '' if it does not run. A program that prints none: its module version as Go recorded it."""
    if program.build_info:
        return recorded_module(path, program.module)
    try:
        done = subprocess.run([str(path), *program.version_args], capture_output=True, text=True,
                              timeout=VERSION_CHECK_SECONDS, env=without_cluster_env(), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return next((line for line in lines if program.reports in line), lines[0] if lines else "")


def is_current(path: Path, program: Program) -> bool:
    return path.exists() and program.reports in reported_version(path, program)


def missing(chosen: Sequence[Program], cache: Path) -> list[Program]:
    """Programs not yet built at their versions (a cached binary of another version counts)."""
    return [p for p in chosen if not is_current(binary_path(p, cache), p)]


def locate(versions: Versions | None = None, cache: Path | None = None,
           which: Callable[[Versions], tuple[Program, ...]] = programs) -> dict[str, Path] | None:
    """Every chosen program's cached binary (the control plane's unless `which` says otherwise),
    or None if any is missing or of another version."""
    chosen = which(versions or load_versions())
    cache = cache or cache_root()
    if missing(chosen, cache):
        return None
    return {p.name: binary_path(p, cache) for p in chosen}


def build(chosen: Sequence[Program], cache: Path, say: Callable[[str], None] = print) -> dict[str, Path]:
    """Build every chosen program that is missing; the path of each. A ToolchainError on bad input."""
    todo = missing(chosen, cache)
    for program in chosen:
        if program not in todo:
            say(f"realcluster: {program.name} {program.version} is cached ({binary_path(program, cache)})")
    if todo:
        go = go_binary()
        check_go(go, todo, cache)
    for index, program in enumerate(todo, start=1):
        path = binary_path(program, cache)
        if path.exists():
            say(f"realcluster: cached {program.name} reports {reported_version(path, program)!r}, "
                f"not {program.reports!r}: building it again")
        say(f"realcluster: building {program.name} {program.version} ({index} of {len(todo)}; "
            "a cold build takes minutes) ...")
        started = time.monotonic()
        _build_one(go, program, cache)
        say(f"realcluster: {program.name} built in {time.monotonic() - started:.0f} s")
    return {p.name: binary_path(p, cache) for p in chosen}


def check_go(go: str, todo: Sequence[Program], cache: Path) -> None:
    """Go must be at least what every module to build asks for."""
    done = subprocess.run([go, "version"], capture_output=True, text=True, timeout=VERSION_CHECK_SECONDS)
    have = parse_go_version(done.stdout)
    for module, version in sorted({(p.module, p.version) for p in todo}):
        workdir = _module_dir(cache, module, version)
        require_go(have, minimum_go(upstream_go_mod(go, module, version, workdir, go_env())), f"{module}@{version}")


def require_go(have: tuple[int, int, int], need: tuple[int, int, int], what: str) -> None:
    if have < need:
        raise ToolchainError(f"Go {'.'.join(map(str, have))} is too old for {what}, which needs Go "
                             f"{'.'.join(map(str, need))}: install a newer Go, or pin an older release in "
                             f"{VERSIONS_FILE.name}")


def _module_dir(cache: Path, module: str, version: str) -> Path:
    directory = cache / "realcluster" / "modules" / f"{module.replace('/', '_')}-{version}"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _build_one(go: str, program: Program, cache: Path) -> None:
    env = go_env()
    workdir = _module_dir(cache, program.module, program.version)
    upstream = upstream_go_mod(go, program.module, program.version, workdir, env)
    (workdir / "go.mod").write_text(tools_go_mod(program.module, program.version, upstream))
    target = binary_path(program, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    done = subprocess.run([go, "build", "-ldflags", ldflags(program, upstream), "-o", str(partial), program.package],
                          cwd=workdir, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-3:]
        raise ToolchainError(f"go build {program.package}@{program.version} failed: {' | '.join(tail)}")
    partial.replace(target)  # only a whole binary ever stands at the cached path
    if not is_current(target, program):
        raise ToolchainError(f"{target} reports {reported_version(target, program)!r} after its build, "
                             f"not {program.reports!r}")


def main(argv: Iterable[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        versions = load_versions()
        if args not in ([], ["--check"], ["--peers"], ["--operators"]):
            raise ToolchainError(f"unknown arguments {' '.join(args)!r}: give none (the control plane), "
                                 "--check, --peers (Kueue and the AppWrapper controller) or --operators "
                                 "(KubeRay's and the training operator)")
        if args == ["--check"]:
            absent = missing(programs(versions), cache_root())
            for program in absent:
                print(f"realcluster: {program.name} {program.version} is not built (make test builds it)")
            return 1 if absent else 0
        chosen = {"--peers": peer_programs, "--operators": operator_programs}.get(
            args[0] if args else "", programs)(versions)
        build(chosen, cache_root(), lambda line: print(line, flush=True))
    except ToolchainError as err:
        print(f"realcluster: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
