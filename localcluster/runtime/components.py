"""The simulated cluster's components, run together as one entry of `DEFAULT_CONTROLLERS`.

They share one informer per resource, as kube-controller-manager's controllers share an
informer factory: each pod event is watched and decoded once, under the controller manager's
identity. Each component writes with its own identity and the RBAC role bootstrap gives it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from localcluster.runner import ControllerContext
from localcluster.runtime.base import Controller
from localcluster.runtime.client import Api
from localcluster.runtime.deployment_controller import DeploymentController
from localcluster.runtime.endpoints_controller import EndpointsController
from localcluster.runtime.informers import SharedInformers
from localcluster.runtime.job_controller import JobController
from localcluster.runtime.kubelets import Kubelets
from localcluster.runtime.node_lifecycle import NodeLifecycle
from localcluster.runtime.pytorchjob_controller import PyTorchJobController
from localcluster.runtime.raycluster_controller import RayClusterController
from localcluster.runtime.rayjob_controller import RayJobController
from localcluster.runtime.scheduler import Scheduler
from localcluster.runtime.serviceaccounts_controller import ServiceAccountsController
from localcluster.runtime.statefulset_controller import StatefulSetController

log = logging.getLogger(__name__)
COMPONENTS: tuple[type[Controller], ...] = (
    Kubelets,
    ServiceAccountsController,
    Scheduler,
    NodeLifecycle,
    JobController,
    PyTorchJobController,
    RayClusterController,
    RayJobController,
    DeploymentController,
    StatefulSetController,
    EndpointsController,
)


async def simulated_cluster(ctx: ControllerContext) -> None:
    """Nodes, kubelets, scheduler and workload controllers until cancelled."""
    await run_components(ctx, COMPONENTS)


async def run_components(ctx: ControllerContext, kinds: Sequence[type[Controller]]) -> None:
    """`kinds` on shared informers (the context's identity), each writing as its own identity
    where the context has a token for it, until cancelled."""
    api = Api(ctx.url, token=ctx.token, ca_file=str(ctx.ca_file))
    shared = SharedInformers(api)
    writers = {c.component: Api(ctx.url, token=ctx.tokens[c.component], ca_file=str(ctx.ca_file))
               for c in kinds if c.component in ctx.tokens}
    components = [component(ctx, writers.get(component.component, api), shared) for component in kinds]
    tasks = [asyncio.create_task(_alone(c), name=c.component) for c in components]
    tasks += [asyncio.create_task(i.run(), name=f"informer {i.path}") for i in shared.all()]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await api.close()
        for writer in writers.values():
            await writer.close()


async def _alone(component: Controller) -> None:
    """Run one component; if it breaks, say so and let the others go on."""
    try:
        await component.run()
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - one broken component must not stop the cluster
        log.exception("simulated %s stopped with an error", component.component)


RUNTIME_CONTROLLERS = [simulated_cluster]
