"""One async entry point per simulated component, in the shape `LocalCluster` starts them."""

from __future__ import annotations

from localcluster.runner import ControllerContext
from localcluster.runtime.deployment_controller import DeploymentController
from localcluster.runtime.endpoints_controller import EndpointsController
from localcluster.runtime.job_controller import JobController
from localcluster.runtime.kubelets import Kubelets
from localcluster.runtime.node_lifecycle import NodeLifecycle
from localcluster.runtime.pytorchjob_controller import PyTorchJobController
from localcluster.runtime.scheduler import Scheduler


async def default_scheduler(ctx: ControllerContext) -> None:
    await Scheduler(ctx).run()


async def kubelets(ctx: ControllerContext) -> None:
    await Kubelets(ctx).run()


async def node_lifecycle(ctx: ControllerContext) -> None:
    await NodeLifecycle(ctx).run()


async def job_controller(ctx: ControllerContext) -> None:
    await JobController(ctx).run()


async def pytorchjob_controller(ctx: ControllerContext) -> None:
    await PyTorchJobController(ctx).run()


async def deployment_controller(ctx: ControllerContext) -> None:
    await DeploymentController(ctx).run()


async def endpoints_controller(ctx: ControllerContext) -> None:
    await EndpointsController(ctx).run()


RUNTIME_CONTROLLERS = [
    kubelets,
    default_scheduler,
    node_lifecycle,
    job_controller,
    pytorchjob_controller,
    deployment_controller,
    endpoints_controller,
]
