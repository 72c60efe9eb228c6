"""Every product module has its tests where a newcomer looks: tests/<package path>/test_<module>.py.

The product is what the wheel ships (pyproject's `packages.find.include`). A package's
`__init__.py` with functions or classes of its own is tested at tests/<package path>/test_<package>.py;
one holding only a docstring, imports and constants has nothing of its own to test. A module whose
tests live elsewhere is on UNMIRRORED with the reason and the test files that cover it.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Mapping

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = "tests/test_layout.py"

UNMIRRORED: Mapping[str, str] = {
    # batchgate/: the shared vocabulary, mostly exercised through the modules that parse with it
    "batchgate/api/failure_policy.py": "parsed with the typed AppWrapper in tests/batchgate/api/test_appwrapper.py; "
                                       "applied in tests/controller/decisions/appwrapper/test_failure_policy.py",
    "batchgate/api/kueue_fields.py": "Kueue's field readers, through the typed Workload and ClusterQueue in "
                                     "tests/batchgate/api/test_kueue.py",
    "batchgate/api/located_yaml.py": "line numbers in bad-input messages, asserted in tests/batchgate/generator/test_cli.py "
                                     "and tests/webhook/test_wrap_cli.py",
    "batchgate/api/node.py": "the typed Node, read in tests/dashboard/views/test_nodes.py and "
                             "tests/controller/decisions/gang/test_placement.py",
    "batchgate/api/node_affinity.py": "node affinity matching, through flavor assignment in "
                                      "tests/controller/decisions/quota/test_flavor_assignment.py and "
                                      "tests/controller/decisions/gang/test_node_fit.py",
    "batchgate/api/objects.py": "wire-object accessors used by every kind; through tests/batchgate/kinds/test_kinds.py",
    "batchgate/api/output.py": "the CLIs' YAML output, through tests/batchgate/generator/test_cli.py and "
                               "tests/webhook/test_wrap_cli.py",
    "batchgate/api/paths.py": "field paths in error messages, asserted in tests/batchgate/api/test_pod_templates.py "
                              "and tests/batchgate/api/test_wrap.py",
    "batchgate/api/pod_requests.py": "a pod's effective requests, through tests/batchgate/api/test_kueue.py and "
                                     "tests/controller/decisions/jobs/test_pod_requests.py",
    "batchgate/api/selectors.py": "label selectors, tabled in tests/batchgate/api/test_appwrapper.py",
    "batchgate/api/values.py": "typed YAML values, through the policy in tests/batchgate/test_policy.py",
    "batchgate/cli.py": "the `batchgate` command's dispatch; each verb is run as a subprocess, e.g. "
                        "tests/batchgate/generator/test_cli.py, tests/webhook/test_wrap_cli.py, tests/controller/test_cli.py",
    "batchgate/controller_rights.py": "the controller's RBAC needs, checked against the shipped roles in "
                                      "tests/manifests/test_controller_rbac.py",
    "batchgate/events.py": "the Event shape both processes write, through tests/batchgate/test_policy_configmap.py "
                           "and tests/certs/test_keeper.py",
    "batchgate/frameworks/env.py": "each pod's framework env, pinned by tests/webhook/rules/frameworks/test_env_golden.py",
    "batchgate/frameworks/errors.py": "the framework error type, through tests/webhook/rules/frameworks/test_bad_input.py",
    "batchgate/frameworks/layout.py": "framework layouts, through tests/webhook/rules/frameworks/test_properties.py "
                                      "and tests/webhook/rules/frameworks/test_env_golden.py",
    "batchgate/frameworks/objects.py": "the headless Service and MPI hostfile, through "
                                       "tests/webhook/rules/frameworks/test_mpi_and_objects.py",
    "batchgate/frameworks/roles.py": "framework roles, through tests/webhook/rules/frameworks/test_properties.py and "
                                     "tests/webhook/rules/test_bounded_inputs.py",
    "batchgate/generator/shapes.py": "the generator's value shapes, through tests/batchgate/generator/test_settings.py",
    "batchgate/keys.py": "names and labels only (constants and one-line helpers), used by nearly every test, e.g. "
                         "tests/batchgate/api/test_appwrapper_status.py",
    "batchgate/kinds/apps.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/appwrapper.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/job.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/jobset.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/leaderworkerset.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/model.py": "the Kind record itself, through tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/pod.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/pytorchjob.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/raycluster.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    "batchgate/kinds/rayjob.py": "one row per kind in the registry's tables, tests/batchgate/kinds/test_kinds.py",
    # certs/
    "certs/cli.py": "`batchgate certs` run as a subprocess in tests/webhook/serving/test_tls.py (rotate) and "
                    "tests/manifests/test_install_overlays.py",
    # controller/adapters/: thin I/O, tested together on the local cluster
    "controller/adapters/cluster_reader.py": "read-only cluster access for `check` and `migrate`, through "
                                             "tests/controller/check/test_check_cluster.py and tests/realcluster/test_migrate.py",
    "controller/adapters/discovery.py": "discovery of wrapped kinds, through tests/controller/adapters/test_appwrappers.py",
    "controller/adapters/kube.py": "the kubernetes client adapter every cluster test drives, e.g. "
                                   "tests/controller/adapters/test_runtime_cluster.py",
    "controller/adapters/leader.py": "Lease handover, in tests/controller/adapters/test_runtime_cluster.py; the decision is "
                                     "tests/controller/decisions/test_leader_election.py",
    "controller/adapters/manager.py": "the controller process's wiring, started by every cluster test, e.g. "
                                      "tests/controller/adapters/test_admission_cluster.py and "
                                      "tests/controller/adapters/test_restart_cluster.py",
    "controller/adapters/ratelimit.py": "the work queue's backoff, in tests/controller/adapters/test_workqueue.py",
    "controller/adapters/store.py": "the status store, through tests/controller/adapters/test_admission.py and "
                                    "tests/controller/adapters/test_queue_status.py",
    "controller/adapters/write_pool.py": "background writes, in tests/controller/adapters/test_cycle_loop.py",
    "controller/adapters/writer.py": "status writes with conflict retry, in tests/controller/adapters/test_runtime_cluster.py",
    # controller/check/
    "controller/check/inventory.py": "reading the cluster's objects, in tests/controller/check/test_hostile_input.py and "
                                     "tests/controller/check/test_pending.py",
    "controller/check/render.py": "the report's text, in tests/controller/check/test_hostile_input.py and "
                                  "tests/controller/test_check_cli.py",
    "controller/check/report.py": "the report the check's tables read, e.g. tests/controller/check/test_pending.py",
    # controller/decisions/
    "controller/decisions/appwrapper/teardown.py": "deletion and teardown rows of "
                                                   "tests/controller/decisions/appwrapper/test_lifecycle.py",
    "controller/decisions/appwrapper/transition.py": "the transition record, through "
                                                     "tests/controller/decisions/appwrapper/test_lifecycle.py",
    "controller/decisions/quota/admission.py": "admission order and fit, through the traces of "
                                               "tests/controller/decisions/quota/test_single_queue.py and "
                                               "tests/controller/decisions/quota/test_invariants.py",
    "controller/decisions/quota/cycle.py": "one admission cycle, which every trace runs, e.g. "
                                           "tests/controller/decisions/quota/test_event_driven_cycles.py",
    "controller/decisions/quota/outcomes.py": "cycle outcomes, in tests/controller/decisions/quota/test_admission_status.py",
    "controller/decisions/quota/stop_policy.py": "the STOP_SCENARIOS of tests/controller/decisions/quota/test_preemption.py",
    "controller/decisions/quota/victims.py": "victim choice, through tests/controller/decisions/quota/test_preemption.py "
                                             "and tests/controller/decisions/quota/test_fair_sharing.py",
    # controller/migrate/, plugin/, state/
    "controller/migrate/cli.py": "`batchgate migrate` on the real control plane, tests/realcluster/test_migrate.py",
    "controller/migrate/steps.py": "the plan's steps, in tests/controller/migrate/test_plan.py and "
                                   "tests/controller/migrate/test_rollback.py",
    "controller/plugin/cli.py": "`kubectl batchgate` through the real kubectl, tests/realcluster/test_kubectl_plugin.py",
    "controller/state/pending_queues.py": "pending queues, with the quota book in tests/controller/state/test_quota_book.py",
    # dashboard/
    "dashboard/cli.py": "thin `batchgate dashboard` entry; the server it starts is the fixture of tests/dashboard/test_browser.py",
    "dashboard/server.py": "served over HTTP to a real browser in tests/dashboard/test_browser.py",
    "dashboard/views/observed.py": "the observed state, through tests/dashboard/views/test_digest.py",
    "dashboard/views/queues.py": "queue rows, shared with the plugin, in tests/controller/plugin/test_tables.py",
    # kubeapi/
    "kubeapi/client.py": "the shared kubernetes client, through tests/kubeapi/test_listwatch.py",
    "kubeapi/events.py": "Event writing for both processes, through tests/certs/test_keeper.py and "
                         "tests/webhook/policy/test_reloader.py",
    # webhook/
    "webhook/policy/store.py": "the policy store, through tests/webhook/policy/test_file.py and "
                               "tests/webhook/policy/test_reloader.py",
    "webhook/rules/__init__.py": "mutate and validate, the rules' entry points every rules test calls, e.g. "
                                 "tests/webhook/rules/test_validation.py",
    "webhook/rules/annotation_rules.py": "annotation rules, through tests/webhook/rules/test_validation.py",
    "webhook/rules/frameworks/__init__.py": "apply_frameworks, through tests/webhook/rules/frameworks/test_bad_input.py "
                                            "and tests/webhook/rules/frameworks/test_properties.py",
    "webhook/rules/frameworks/fields.py": "framework fields, through tests/webhook/rules/frameworks/test_bad_input.py",
    "webhook/rules/frameworks/pod_phase.py": "the pod phase, through tests/webhook/rules/frameworks/test_env_golden.py",
    "webhook/rules/frameworks/settings.py": "framework settings, through tests/webhook/rules/frameworks/test_bad_input.py",
    "webhook/rules/frameworks/topology.py": "topology settings, through tests/webhook/rules/frameworks/test_env_golden.py",
    "webhook/rules/frameworks/workload_phase.py": "the workload phase, through "
                                                  "tests/webhook/rules/frameworks/test_mpi_and_objects.py",
    "webhook/rules/policy_configmap.py": "the policy ConfigMap's scope, in tests/certs/test_scope.py and "
                                         "tests/batchgate/test_policy_configmap.py",
    "webhook/rules/review.py": "the review record every rules test builds, e.g. tests/webhook/rules/test_validation.py",
    "webhook/rules/scope.py": "which requests the gateway judges, through tests/webhook/rules/test_validation.py and "
                              "tests/manifests/test_gateway_webhook_scope.py",
    "webhook/serving/audit.py": "the audit log, in tests/webhook/serving/test_app.py",
    "webhook/serving/client.py": "the test and bench client, used by tests/webhook/serving/test_readahead.py",
    "webhook/serving/gateway.py": "rules wrapped into replies, in tests/webhook/serving/test_app.py and "
                                  "tests/webhook/rules/test_bounded_inputs.py",
    "webhook/serving/launch.py": "starts the gateway for tests, bench and demo: the fixture of tests/webhook/conftest.py, "
                                 "run by tests/webhook/serving/test_gateway_tls.py",
    "webhook/serving/server.py": "gunicorn's application, run by tests/webhook/serving/test_gateway_tls.py",
    "webhook/serving/worker.py": "the gunicorn worker, in tests/webhook/serving/test_readahead.py, "
                                 "tests/webhook/serving/test_balance.py and tests/webhook/serving/test_gunicorn_contract.py",
}
"""Product modules without a test file of their own: module path -> why, naming the tests that cover it."""


def product_packages() -> list[str]:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(name.rstrip("*") for name in include)


def own_test_file(module: str) -> str:
    """Where a module's tests live: tests/ mirrors the package path, `__init__` goes by its package's name."""
    path = Path(module)
    name = path.parent.name if path.name == "__init__.py" else path.stem
    return str(Path("tests", path.parent, f"test_{name}.py"))


def has_code(source: str) -> bool:
    """Whether a module defines a function or a class: an `__init__` without one holds only imports and constants."""
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in ast.parse(source).body)


def layout_problems(modules: Mapping[str, str], test_files: set[str], unmirrored: Mapping[str, str]) -> list[str]:
    """One line per problem, each naming its fix: modules (path -> source) against the files under
    tests/ and the allow-list."""
    problems = []
    for module, source in sorted(modules.items()):
        if module.endswith("__init__.py") and not has_code(source):
            continue
        if own_test_file(module) not in test_files and module not in unmirrored:
            problems.append(f"{module} has no {own_test_file(module)}: write it, or add {module} to UNMIRRORED in "
                            f"{HERE} with the tests that cover it")
    for module, reason in sorted(unmirrored.items()):
        if module not in modules:
            problems.append(f"{module} is on UNMIRRORED in {HERE} but no longer exists: remove its entry")
        elif own_test_file(module) in test_files:
            problems.append(f"{module} now has {own_test_file(module)}: remove its entry from UNMIRRORED in {HERE}")
        named = re.findall(r"tests/[\w/]+\.py", reason)
        if not named:
            problems.append(f"UNMIRRORED[{module!r}] in {HERE} names no test file: say which tests cover it")
        for path in named:
            if path not in test_files:
                problems.append(f"UNMIRRORED[{module!r}] in {HERE} names {path}, which does not exist: name the file "
                                "that covers it now")
    return problems


CODE = "def f():\n    pass\n"


@pytest.mark.parametrize("modules, test_files, unmirrored, expected", [
    pytest.param({"pkg/a.py": CODE}, {"tests/pkg/test_a.py"}, {}, [],
                 id="a module with its own test file is in place"),
    pytest.param({"pkg/sub/a.py": CODE}, {"tests/pkg/test_a.py"}, {},
                 ["pkg/sub/a.py has no tests/pkg/sub/test_a.py: write it, or add pkg/sub/a.py to UNMIRRORED"],
                 id="a test file outside the mirrored directory does not count"),
    pytest.param({"pkg/a.py": CODE}, {"tests/pkg/test_b.py"}, {"pkg/a.py": "covered by tests/pkg/test_b.py"}, [],
                 id="an allowed module names the tests that cover it"),
    pytest.param({"pkg/__init__.py": '"""Doc."""\nfrom pkg.a import f\nX = 1\n'}, set(), {}, [],
                 id="an __init__ of imports and constants needs no test file"),
    pytest.param({"pkg/__init__.py": CODE}, set(), {},
                 ["pkg/__init__.py has no tests/pkg/test_pkg.py: write it"],
                 id="an __init__ with code of its own is tested under its package's name"),
    pytest.param({}, {"tests/pkg/test_b.py"}, {"pkg/a.py": "covered by tests/pkg/test_b.py"},
                 ["pkg/a.py is on UNMIRRORED in tests/test_layout.py but no longer exists: remove its entry"],
                 id="an entry for a module that is gone is stale"),
    pytest.param({"pkg/a.py": CODE}, {"tests/pkg/test_a.py", "tests/pkg/test_b.py"},
                 {"pkg/a.py": "covered by tests/pkg/test_b.py"},
                 ["pkg/a.py now has tests/pkg/test_a.py: remove its entry"],
                 id="an entry for a module that got its own test file is stale"),
    pytest.param({"pkg/a.py": CODE}, set(), {"pkg/a.py": "simple enough"},
                 ["UNMIRRORED['pkg/a.py'] in tests/test_layout.py names no test file"],
                 id="a reason must name the tests that cover the module"),
    pytest.param({"pkg/a.py": CODE}, set(), {"pkg/a.py": "covered by tests/pkg/test_gone.py"},
                 ["UNMIRRORED['pkg/a.py'] in tests/test_layout.py names tests/pkg/test_gone.py, which does not exist"],
                 id="a reason naming a test file that moved away is stale"),
])
def test_layout_problems(modules: dict[str, str], test_files: set[str], unmirrored: dict[str, str],
                         expected: list[str]) -> None:
    problems = layout_problems(modules, test_files, unmirrored)
    assert len(problems) == len(expected) and all(p.startswith(e) for p, e in zip(problems, expected)), problems


def test_every_product_module_has_its_test_file_or_a_reason() -> None:
    modules = {str(p.relative_to(ROOT)): p.read_text()
               for package in product_packages() for p in (ROOT / package).rglob("*.py")}
    test_files = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")}
    problems = layout_problems(modules, test_files, UNMIRRORED)
    assert not problems, "\n".join(problems)
