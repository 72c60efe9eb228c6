"""Hot reload of the policy from a file, including a mounted ConfigMap volume.

Kubelet updates a ConfigMap volume by writing a new timestamped directory and renaming the
`..data` symlink over the old one; `policy.yaml` is a symlink through `..data`. Following the
symlinks on every poll and comparing (device, inode, mtime, size) catches both an in-place
rewrite and such a swap, without inotify (which misses renames of a parent symlink).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from batchgate.policy import PolicyError, load_policy_document
from webhook.policy.store import LoadedPolicy, PolicyStore

POLL_SECONDS = 1.0
"""How often a worker looks at the policy file; kubelet itself syncs volumes only every ~60 s."""


def read_policy_file(path: Path) -> LoadedPolicy:
    """Parse a policy.yaml or a ConfigMap manifest; PolicyError or OSError on failure."""
    text = path.read_text(encoding="utf-8")
    return LoadedPolicy.of(load_policy_document(text, str(path)), str(path))


class PolicyFileWatcher:
    """Polls one file and installs each valid new version into a `PolicyStore`."""

    def __init__(self, path: str | os.PathLike[str], store: PolicyStore, poll_seconds: float = POLL_SECONDS):
        self.path = Path(path)
        self.store = store
        self.poll_seconds = poll_seconds
        self._seen: tuple[int, int, int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> bool:
        """Look once; reload when the file (or what its symlinks point at) changed."""
        try:
            st = os.stat(self.path)
        except OSError as exc:
            if self._seen != (0, 0, 0, 0):
                self._seen = (0, 0, 0, 0)
                self.store.reject(str(self.path), f"cannot read policy file: {exc.strerror}")
            return False
        signature = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        if signature == self._seen:
            return False
        self._seen = signature
        try:
            loaded = read_policy_file(self.path)
        except (PolicyError, OSError, UnicodeDecodeError) as exc:
            self.store.reject(str(self.path), str(exc))
            return False
        self.store.install(loaded)
        return True

    def start(self) -> "PolicyFileWatcher":
        """Load now (so the worker is ready at once), then poll in a daemon thread."""
        self.check()
        self._thread = threading.Thread(target=self._run, name="policy-file-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.poll_seconds * 5)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.check()
