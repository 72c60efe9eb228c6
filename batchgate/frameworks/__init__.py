"""The distributed-framework vocabulary both product parts speak (docs/frameworks.md).

Roles, layouts, each pod's env, and the shapes of the headless Service and MPI hostfile: the
gateway lays workloads out with them and the controller makes a top-level Job's objects from them,
so neither part imports the other.
"""

from .errors import FrameworkError
from .objects import headless_service_for, hostfile_configmap_for

__all__ = ["FrameworkError", "headless_service_for", "hostfile_configmap_for"]
