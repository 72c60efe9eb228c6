"""Scene 3: a PyTorch job with no hand-written env; each pod gets its rank from the gateway.

The brief asks for a PyTorch AppWrapper. Nothing creates an AppWrapper's components yet (the
AppWrapper controller has not landed), so the same plugin is shown on an Indexed Job marked
`batchgate.dev/framework: pytorch`: index 0 is the master, the others workers, and every pod
the Job controller creates is given MASTER_ADDR, WORLD_SIZE, RANK and the PET_* variables.
"""

from __future__ import annotations

import time

import yaml

from batchgate import keys
from batchgate.clock import Clock
from demo.kubectl import Kubectl
from demo.narration import Narrator
from demo.workloads import pytorch_job

JOB = "mnist"
NAMESPACE = "team-b"
PODS = 3
POLL_SECONDS = 0.4
WAIT_SECONDS = 30.0
ENV_JSONPATH = ('{range .items[*]}{.metadata.name}{":"}{range .spec.containers[0].env[?(@.value)]}'
                '{" "}{.name}={.value}{end}{"\\n"}{end}')


def pods_with_env(kubectl: Kubectl, clock: Clock) -> str:
    """kubectl's jsonpath output once all the job's pods exist with their env (or at the timeout)."""
    deadline = clock.monotonic() + WAIT_SECONDS
    while True:
        out = kubectl.run("get", "pods", "-n", NAMESPACE, "-l", f"{keys.JOB_NAME_LABEL}={JOB}", "--sort-by",
                          ".metadata.name", "-o", f"jsonpath={ENV_JSONPATH}").stdout
        rows = [line for line in out.splitlines() if "RANK=" in line]
        if len(rows) >= PODS or clock.monotonic() > deadline:
            return out
        time.sleep(POLL_SECONDS)


def run(kubectl: Kubectl, narrator: Narrator, clock: Clock) -> str:
    narrator.say(f"bob submits {JOB}: an Indexed Job of {PODS} pods labelled {keys.FRAMEWORK_LABEL}=pytorch, "
                 "2 processes per pod, no env of its own (no GPUs: the cluster's are all taken)")
    kubectl.run("apply", "-f", "-", user="bob", stdin=yaml.safe_dump(pytorch_job(JOB, NAMESPACE, PODS, 2)))
    out = pods_with_env(kubectl, clock)
    narrator.say(f"each pod's env, as the gateway injected it "
                 f"(kubectl get pods -n {NAMESPACE} -l {keys.JOB_NAME_LABEL}={JOB} -o jsonpath='...env[?(@.value)]...'):")
    narrator.quote(out)
    return out
