"""Builds the real control plane's programs from their Go modules, once, into a cache outside the
repository: kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from
`k8s.io/kubernetes`, etcd from `go.etcd.io/etcd/server/v3`, at the versions in `versions.env`.

Neither module can be `go install`ed: both replace their sibling modules with directories of
their own repository. A small tools module per release requires the upstream module and points
each such replace at the sibling module of the same release on the proxy; it is generated from
the upstream go.mod, so a version bump is one line in `versions.env`. Binaries are stamped with
their version (an unstamped one reports v0.0.0-master, which clients that parse it reject), and
a cached binary is trusted only if it reports the version it was built for.

`python -m realcluster.toolchain` builds what is missing, a progress line per program.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("versions.env")
CACHE_ENV = "BATCHGATE_CACHE"
KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
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

    def minor(self) -> str:
        """Kubernetes' minor version: '35' for v1.35.4."""
        return self.kubernetes.split(".")[1]


_KEYS = {"KUBERNETES": "kubernetes", "ETCD": "etcd"}
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
    """One binary of the control plane: where it is built from and how it proves its version."""

    name: str
    module: str
    version: str
    package: str
    version_args: tuple[str, ...]
    reports: str  # what `name version_args` prints when it is this version
    family: str  # the release it belongs to: its cache directory is FAMILY-VERSION

    def key(self) -> str:
        return f"{self.family}-{self.version}"


def programs(versions: Versions) -> tuple[Program, ...]:
    kube = [Program(name, KUBERNETES_MODULE, versions.kubernetes, f"{KUBERNETES_MODULE}/cmd/{name}", ("--version",),
                    f"Kubernetes {versions.kubernetes}", "kubernetes")
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    kubectl = Program("kubectl", KUBERNETES_MODULE, versions.kubernetes, f"{KUBERNETES_MODULE}/cmd/kubectl",
                      ("version", "--client"), f"Client Version: {versions.kubernetes}", "kubernetes")
    etcd = Program("etcd", ETCD_MODULE, versions.etcd, ETCD_MODULE, ("--version",),
                   f"etcd Version: {versions.etcd.removeprefix('v')}", "etcd")
    return (*kube, kubectl, etcd)


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


def ldflags(program: Program) -> str:
    """Strip symbols and stamp the release into component-base's and client-go's version."""
    if program.module != KUBERNETES_MODULE:
        return "-s -w"
    major, minor = program.version.removeprefix("v").split(".")[:2]
    stamps = [f"-X {package}.{name}={value}" for package in VERSION_PACKAGES for name, value in (
        ("gitVersion", program.version), ("gitMajor", major), ("gitMinor", minor),
        ("gitTreeState", "clean"), ("buildDate", BUILD_DATE))]
    return " ".join(["-s", "-w", *stamps])


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


def upstream_go_mod(go: str, module: str, version: str, workdir: Path, env: Mapping[str, str]) -> str:
    """The go.mod of `module@version`, from the module proxy (kept in GOMODCACHE)."""
    done = _run_go(go, ["mod", "download", "-json", f"{module}@{version}"], workdir, env, MODULE_DOWNLOAD_SECONDS)
    try:
        info = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    if done.returncode != 0 or info.get("Error") or not info.get("GoMod"):
        why = (str(info.get("Error") or "").strip() or done.stderr.strip() or "no answer").splitlines()[0]
        raise ToolchainError(f"the Go module proxy did not give {module}@{version} ({why}): "
                             f"set a served version in {VERSIONS_FILE.name} (`go list -m -versions {module}`)")
    return Path(info["GoMod"]).read_text()


def reported_version(path: Path, program: Program) -> str:
    """What a binary says its version is; '' if it does not run."""
    try:
        done = subprocess.run([str(path), *program.version_args], capture_output=True, text=True,
                              timeout=VERSION_CHECK_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).strip().splitlines()[0] if (done.stdout + done.stderr).strip() else ""


def is_current(path: Path, program: Program) -> bool:
    return path.exists() and reported_version(path, program).startswith(program.reports)


def missing(versions: Versions, cache: Path) -> list[Program]:
    """Programs not yet built at these versions (a cached binary of another version counts)."""
    return [p for p in programs(versions) if not is_current(binary_path(p, cache), p)]


def locate(versions: Versions | None = None, cache: Path | None = None) -> dict[str, Path] | None:
    """Every program's cached binary, or None if any is missing or of another version."""
    versions = versions or load_versions()
    cache = cache or cache_root()
    if missing(versions, cache):
        return None
    return {p.name: binary_path(p, cache) for p in programs(versions)}


def build(versions: Versions, cache: Path, say: Callable[[str], None] = print) -> dict[str, Path]:
    """Build every program that is missing; the path of each. A ToolchainError on bad input."""
    todo = missing(versions, cache)
    every = programs(versions)
    for program in every:
        if program not in todo:
            say(f"realcluster: {program.name} {program.version} is cached ({binary_path(program, cache)})")
    if todo:
        go = go_binary()
        check_go(go, versions, cache)
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
    return {p.name: binary_path(p, cache) for p in every}


def check_go(go: str, versions: Versions, cache: Path) -> None:
    """Go must be at least what every module to build asks for."""
    done = subprocess.run([go, "version"], capture_output=True, text=True, timeout=VERSION_CHECK_SECONDS)
    have = parse_go_version(done.stdout)
    for module, version in ((KUBERNETES_MODULE, versions.kubernetes), (ETCD_MODULE, versions.etcd)):
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
    go_mod = tools_go_mod(program.module, program.version, upstream_go_mod(go, program.module, program.version,
                                                                           workdir, env))
    (workdir / "go.mod").write_text(go_mod)
    target = binary_path(program, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    done = subprocess.run([go, "build", "-ldflags", ldflags(program), "-o", str(partial), program.package],
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
        if args == ["--check"]:
            absent = missing(versions, cache_root())
            for program in absent:
                print(f"realcluster: {program.name} {program.version} is not built (make test builds it)")
            return 1 if absent else 0
        build(versions, cache_root(), lambda line: print(line, flush=True))
    except ToolchainError as err:
        print(f"realcluster: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
