"""Fixtures for the gateway server: fresh certs and real gunicorn processes."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from certs.authority import service_names, write_serving_files
from batchgate.clock import SystemClock
from tests.webhook.helpers import with_all_workers
from webhook.serving.launch import RunningGateway, start_gateway


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "certs"
    write_serving_files(directory, service_names("batchgate-webhook", "batchgate-system"), SystemClock().now())
    return directory


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Callable[..., RunningGateway]]:
    """Start real gateways (stopped at the end of the test): launch(cert_dir, *args)."""
    running: list[RunningGateway] = []

    def _launch(certs: Path, *args: str) -> RunningGateway:
        gateway = start_gateway(certs, *args)
        running.append(gateway)
        return with_all_workers(gateway, args)

    yield _launch
    for gateway in running:
        gateway.stop()
