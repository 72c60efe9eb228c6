"""What every benchmark prints first: the machine its figures came from."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """OS, architecture, CPU count and model, Python version: `Linux x86_64, 2 cpus (AMD EPYC ...), Python 3.11.7`."""
    cpu = "unknown cpu"
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus ({cpu}), Python {platform.python_version()}"
