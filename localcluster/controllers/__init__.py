"""Simulated cluster controllers started by `LocalCluster` after the API server listens.

Each entry is an async callable taking a `ControllerContext` (localcluster.runner); it talks
to the API over HTTPS like a real controller. This list is the one place they are enabled.
"""

from __future__ import annotations

from localcluster.runner import ControllerFactory
from localcluster.runtime.components import RUNTIME_CONTROLLERS

DEFAULT_CONTROLLERS: list[ControllerFactory] = [*RUNTIME_CONTROLLERS]
