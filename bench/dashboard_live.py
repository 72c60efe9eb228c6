"""`batchgate dashboard` at Kueue's baseline scale: first paint and live-update delay, 10 viewers.

The local cluster's API server and the dashboard each run in their own process (so neither shares
a GIL with the clients); the cluster holds check_scale.py's objects (30 ClusterQueues in 5
cohorts, 100 nodes, 15,000 Workloads, all pending, so every reason is computed by the quota cycle).
Figures:
- sync: from starting `batchgate dashboard` to the first digest that holds every Workload;
- first paint: a page's HTML served (GET, 10 viewers' streams open), and in headless Chromium the
  first contentful paint of /workloads when /usr/bin/chromium is there;
- live-update delay: from a Workload's create answered by the API server to the event stream of
  each of 10 viewers announcing a digest that holds it (median and max over the viewers and rounds).
Prints figures and the machine; asserts nothing.

    .venv/bin/python bench/dashboard_live.py [--workloads N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_scale import objects as baseline_objects  # noqa: E402
from machine_info import machine  # noqa: E402

from controller.adapters.kube import RESOURCES, KubeClient  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VIEWERS = 10
API_ONLY = """
import sys, threading
from pathlib import Path
from localcluster.runner import LocalCluster
cluster = LocalCluster(Path(sys.argv[1])).start()
print("ready", flush=True)
threading.Event().wait()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(command: list[str], ready: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    for line in process.stdout:
        if ready in line:
            return process
    raise RuntimeError(f"{command[:4]} exited before it was ready")


def populate(client: KubeClient, workloads: int) -> float:
    objs = baseline_objects(workloads, admitted_share=0.0)
    namespaces = sorted({o["metadata"]["namespace"] for o in objs if o["kind"] == "LocalQueue"})
    for ns in namespaces:
        client.create(RESOURCES["Namespace"], {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    started = time.perf_counter()

    def create(obj: dict[str, Any]) -> None:
        res = RESOURCES[obj["kind"]]
        body = {"apiVersion": res.api_version, **obj}
        client.create(res, body)

    ordered = [o for kind in ("ResourceFlavor", "Node", "ClusterQueue", "LocalQueue", "Workload") for o in objs
               if o["kind"] == kind]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, ordered))
    return time.perf_counter() - started


class Viewer:
    """One open page's event stream: the time each digest announcement arrives."""

    def __init__(self, url: str) -> None:
        self.arrivals: queue.Queue[tuple[float, int]] = queue.Queue()
        self.response = requests.get(f"{url}/events", stream=True, timeout=(5, 120))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.response.iter_lines(decode_unicode=True):
                if line.startswith("data: "):
                    self.arrivals.put((time.perf_counter(), json.loads(line[6:])["version"]))
        except Exception:
            return


def pending_count(url: str) -> int:
    html = requests.get(f"{url}/", timeout=60).text
    marker = 'Pending Workloads</dt><dd><a href="/workloads">'
    return int(html.split(marker, 1)[1].split("<", 1)[0]) if marker in html else -1


def chromium_first_paint(url: str) -> float | None:
    if not Path("/usr/bin/chromium").exists():
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="bench-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))
    try:
        driver.get(f"{url}/workloads")
        for _ in range(50):  # the paint entry is recorded after the load event returns
            paint = driver.execute_script(
                "const e = performance.getEntriesByName('first-contentful-paint')[0]; return e ? e.startTime : null;")
            if paint is not None:
                return float(paint) / 1000
            time.sleep(0.1)
        return None
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=15_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {machine()}")
    workdir = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    cluster = start([sys.executable, "-c", API_ONLY, str(workdir)], "ready")
    dashboard = None
    try:
        kubeconfig = workdir / "kubeconfig"
        subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "apply", "-k", str(ROOT / "manifests" / "crds")],
                       check=True, capture_output=True, timeout=120)
        client = KubeClient.from_kubeconfig(str(kubeconfig))
        took = populate(client, args.workloads)
        print(f"objects: {args.workloads} Workloads, 30 ClusterQueues, 100 nodes; created in {took:.1f} s")
        port = free_port()
        began = time.perf_counter()
        dashboard = start([sys.executable, "-m", "batchgate.cli", "dashboard", "--kubeconfig", str(kubeconfig),
                           "--port", str(port)], "batchgate dashboard: http")
        url = f"http://127.0.0.1:{port}"
        while pending_count(url) < args.workloads:
            time.sleep(0.2)
        print(f"sync: {time.perf_counter() - began:.2f} s from start to a digest holding every Workload")
        viewers = [Viewer(url) for _ in range(VIEWERS)]
        for path in ("/", "/queues", "/workloads", f"/workloads?page={args.workloads // 100}", "/nodes"):
            samples = []
            for _ in range(5):
                t = time.perf_counter()
                requests.get(url + path, timeout=60).raise_for_status()
                samples.append(time.perf_counter() - t)
            print(f"first paint (HTML served) {path:<22} median {statistics.median(samples) * 1000:7.1f} ms"
                  f"   max {max(samples) * 1000:7.1f} ms   ({VIEWERS} viewers' streams open)")
        paint = chromium_first_paint(url)
        print("first contentful paint in Chromium, /workloads: "
              + (f"{paint * 1000:.0f} ms" if paint is not None else "n/a (no /usr/bin/chromium, or no paint entry)"))
        delays: list[float] = []
        for r in range(args.rounds):
            time.sleep(1.0)
            for v in viewers:
                while not v.arrivals.empty():
                    v.arrivals.get()
            body = {**baseline_objects(1, 0.0)[-1]}
            body["metadata"] = {**body["metadata"], "name": f"bench-live-{r}", "namespace": "cq-0-0"}
            client.create(RESOURCES["Workload"], {"apiVersion": RESOURCES["Workload"].api_version, **body})
            created = time.perf_counter()
            for v in viewers:
                arrived, _ = v.arrivals.get(timeout=120)
                delays.append(arrived - created)
        print(f"live-update delay (create answered -> {VIEWERS} viewers told of a new digest, {args.rounds} rounds): "
              f"median {statistics.median(delays) * 1000:.0f} ms   max {max(delays) * 1000:.0f} ms")
    finally:
        if dashboard is not None:
            dashboard.send_signal(signal.SIGINT)
            dashboard.wait(timeout=30)
        cluster.terminate()
        try:
            cluster.wait(timeout=30)
        except subprocess.TimeoutExpired:
            cluster.kill()


if __name__ == "__main__":
    main()
