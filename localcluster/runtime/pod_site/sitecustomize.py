"""Imported first by every Python process of a process pod (the kubelet puts a copy with the
pod's IP filled in first on PYTHONPATH). It stands in for the pod's own network namespace: a
bind to the IPv4 wildcard (`0.0.0.0` or `""`) listens on the pod's IP instead, so two replicas
can both serve on 0.0.0.0:8443 as they do on a real cluster, each reachable at its pod IP."""

import socket
from typing import Any

POD_IP = "{pod_ip}"
_bind = socket.socket.bind


def _pod_bind(self: socket.socket, address: Any) -> None:  # each address family has its own form
    if self.family == socket.AF_INET and isinstance(address, tuple) and address and address[0] in ("", "0.0.0.0"):
        address = (POD_IP, *address[1:])
    _bind(self, address)


# Patching the class is the point here; typeshed types bind's self as the C base class.
socket.socket.bind = _pod_bind  # type: ignore[method-assign, assignment]
