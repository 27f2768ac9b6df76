"""The parent's handle on one sandbox worker process: start it, exchange frames, kill it.

Messages cross the process boundary here, as length-prefixed JSON over two pipes. The wall-time
limit of a request is enforced here too: past its deadline the request raises WorkerTimeout and
the pool kills and replaces the worker.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HEADER = struct.Struct(">I")
WORKER_SCRIPT = Path(__file__).with_name("sandbox_worker.py")
MAX_REPLY_BYTES = 256 * 1024 * 1024


class SandboxUnavailable(RuntimeError):
    """The sandbox backend cannot start a worker (no engine, bad configuration)."""


class WorkerTimeout(Exception):
    """The worker did not answer before the request's deadline."""


class WorkerDied(Exception):
    """The worker's pipe closed: it crashed or was killed."""


class WorkerProcess:
    """A sandbox worker started with `python -I sandbox_worker.py <config>` and two pipes."""

    def __init__(self, config: dict[str, Any], boot_timeout: float = 20.0) -> None:
        request_read, self._request_write = os.pipe()
        self._reply_read, reply_write = os.pipe()
        config = dict(config, request_fd=request_read, reply_fd=reply_write)
        self.log_path = Path(config["worker_dir"]) / "worker.log"
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-B", "-X", "utf8", str(WORKER_SCRIPT), json.dumps(config)],
                pass_fds=(request_read, reply_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=_worker_environment(config["worker_dir"]),
                close_fds=True,
            )
        os.close(request_read)
        os.close(reply_write)
        self._poll = select.poll()
        self._poll.register(self._reply_read, select.POLLIN)
        try:
            self.hello = self._receive(time.monotonic() + boot_timeout)
        except (WorkerTimeout, WorkerDied) as exc:
            self.kill()
            raise SandboxUnavailable(f"sandbox worker failed to start: {self.log_tail()}") from exc

    @property
    def pid(self) -> int:
        return self.process.pid

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait at most `timeout` seconds for its reply."""
        payload = json.dumps(message, ensure_ascii=False).encode()
        try:
            view = memoryview(HEADER.pack(len(payload)) + payload)
            while view:
                view = view[os.write(self._request_write, view) :]
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(str(exc)) from exc
        return self._receive(time.monotonic() + timeout)

    def _receive(self, deadline: float) -> dict[str, Any]:
        header = self._read_exact(HEADER.size, deadline)
        size = HEADER.unpack(header)[0]
        if size > MAX_REPLY_BYTES:
            raise WorkerDied(f"reply of {size} bytes is over the limit")
        return json.loads(self._read_exact(size, deadline))

    def _read_exact(self, size: int, deadline: float) -> bytes:
        chunks, remaining = [], size
        while remaining:
            wait_ms = max(0, int((deadline - time.monotonic()) * 1000))
            if not self._poll.poll(wait_ms):
                raise WorkerTimeout()
            chunk = os.read(self._reply_read, min(remaining, 1 << 20))
            if not chunk:
                raise WorkerDied(f"worker {self.pid} exited; log: {self.log_tail()}")
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]

    def kill(self) -> None:
        """Kill the worker (SIGKILL) and release its pipes."""
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        self._close("_request_write")
        self._close("_reply_read")

    def _close(self, attribute: str) -> None:
        """Close a pipe end once: a second close could hit a descriptor another thread now owns."""
        fd = getattr(self, attribute)
        if fd < 0:
            return
        setattr(self, attribute, -1)
        if attribute == "_reply_read":
            try:
                self._poll.unregister(fd)
            except (KeyError, ValueError):
                pass
        try:
            os.close(fd)
        except OSError:
            pass

    def stop(self) -> None:
        """Close the request pipe so the worker exits on its own; kill it if it lingers."""
        self._close("_request_write")
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def rss_bytes(self) -> int:
        """Resident memory of the worker process (0 when unknown)."""
        try:
            with open(f"/proc/{self.pid}/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self.log_path.read_bytes()[-size:].decode(errors="replace").strip()
        except OSError:
            return ""


def _worker_environment(worker_dir: str) -> dict[str, str]:
    """A minimal environment: nothing from the parent's (no secrets, no proxies)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": worker_dir,
        "TMPDIR": worker_dir,
        "SQLITE_TMPDIR": worker_dir,
        "LANG": "C.UTF-8",
    }
