"""Docker backend: the same sandbox worker, each in its own container (docker SDK).

    pool = SandboxPool(workers=4, spawn=DockerBackend(image="python:3.11-slim"))

The container has no network (network_mode "none"), a read-only root filesystem, a memory and a
pids limit, no capabilities, runs as `nobody`, and mounts only the runtime code and the staged
packages (read-only) and its own worker directory (read-write). The worker speaks the same framed
JSON over the container's stdin/stdout as over pipes.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Any

from environments.runtime.worker_process import (
    HEADER,
    SandboxUnavailable,
    WorkerDied,
    WorkerTimeout,
)

RUNTIME_DIR = Path(__file__).resolve().parent
CONTAINER_RUNTIME = "/aw/runtime"
CONTAINER_PACKAGES = "/aw/packages"
CONTAINER_WORKER = "/aw/worker"
STREAM_HEADER = struct.Struct(">BxxxI")  # docker attach multiplexing: stream id, size


class DockerBackend:
    """Starts sandbox workers as containers; pass an instance as SandboxPool(spawn=...)."""

    def __init__(
        self,
        image: str = "python:3.11-slim",
        *,
        memory_mb: int = 1024,
        pids_limit: int = 16,
        cpus: float = 1.0,
        client: Any = None,
    ) -> None:
        self.image = image
        self.memory_mb = memory_mb
        self.pids_limit = pids_limit
        self.cpus = cpus
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                import docker

                self._client = docker.from_env()
                self._client.ping()
            except Exception as exc:  # noqa: BLE001 - docker.errors.DockerException and friends
                self._client = None
                raise SandboxUnavailable(f"no Docker engine reachable: {exc}") from exc
        return self._client

    def worker_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """The worker's own config, with the paths it sees inside the container."""
        return dict(
            config,
            worker_dir=CONTAINER_WORKER,
            packages_dir=CONTAINER_PACKAGES,
            read_roots=["/usr/local/lib", "/usr/lib", "/usr/share/zoneinfo", CONTAINER_PACKAGES],
            request_fd=0,
            reply_fd=1,
            isolate_network=False,  # network_mode none already
            drop_privileges=False,  # the container runs as nobody
        )

    def container_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments for `client.containers.create` for one worker."""
        worker_config = self.worker_config(config)
        return {
            "image": self.image,
            "command": [
                "python",
                "-I",
                "-B",
                "-X",
                "utf8",  # open() without an encoding reads and writes UTF-8 (released tools)
                f"{CONTAINER_RUNTIME}/sandbox_worker.py",
                json.dumps(worker_config),
            ],
            "network_mode": "none",
            "read_only": True,
            "mem_limit": f"{self.memory_mb}m",
            "memswap_limit": f"{self.memory_mb}m",
            "pids_limit": self.pids_limit,
            "nano_cpus": int(self.cpus * 1e9),
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "user": "65534:65534",
            "working_dir": CONTAINER_WORKER,
            "stdin_open": True,
            "tty": False,
            "environment": {"HOME": CONTAINER_WORKER, "SQLITE_TMPDIR": CONTAINER_WORKER},
            "volumes": {
                str(RUNTIME_DIR): {"bind": CONTAINER_RUNTIME, "mode": "ro"},
                config["packages_dir"]: {"bind": CONTAINER_PACKAGES, "mode": "ro"},
                config["worker_dir"]: {"bind": CONTAINER_WORKER, "mode": "rw"},
            },
            "labels": {"agent-world.role": "sandbox-worker"},
        }

    def __call__(self, config: dict[str, Any]) -> DockerWorker:
        return DockerWorker(self.client, self.container_config(config))


class DockerWorker:
    """One worker container; the same request/kill/stop interface as WorkerProcess."""

    def __init__(self, client: Any, container_config: dict[str, Any], boot_timeout: float = 60):
        self.container = client.containers.create(**container_config)
        self._socket = self.container.attach_socket(
            params={"stdin": 1, "stdout": 1, "stream": 1}
        )._sock
        self._buffer = b""
        self.container.start()
        try:
            self.hello = self._receive(time.monotonic() + boot_timeout)
        except (WorkerTimeout, WorkerDied) as exc:
            self.kill()
            raise SandboxUnavailable(f"sandbox container failed to start: {exc}") from exc

    @property
    def pid(self) -> str:
        return self.container.short_id

    def request(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        payload = json.dumps(message, ensure_ascii=False).encode()
        try:
            self._socket.sendall(HEADER.pack(len(payload)) + payload)
        except OSError as exc:
            raise WorkerDied(str(exc)) from exc
        return self._receive(time.monotonic() + timeout)

    def _receive(self, deadline: float) -> dict[str, Any]:
        size = HEADER.unpack(self._stdout(HEADER.size, deadline))[0]
        return json.loads(self._stdout(size, deadline))

    def _stdout(self, size: int, deadline: float) -> bytes:
        """`size` bytes of the container's stdout, demultiplexed from the attach stream."""
        while len(self._buffer) < size:
            stream, length = STREAM_HEADER.unpack(self._raw(STREAM_HEADER.size, deadline))
            chunk = self._raw(length, deadline)
            if stream == 1:
                self._buffer += chunk
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _raw(self, size: int, deadline: float) -> bytes:
        data = b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout()
            self._socket.settimeout(remaining)
            try:
                chunk = self._socket.recv(size - len(data))
            except TimeoutError as exc:
                raise WorkerTimeout() from exc
            if not chunk:
                raise WorkerDied("worker container closed its output")
            data += chunk
        return data

    def kill(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        try:
            self._socket.close()
        except OSError:
            pass

    def stop(self) -> None:
        self.kill()

    def rss_bytes(self) -> int:
        try:
            stats = self.container.stats(stream=False)
            return int(stats["memory_stats"].get("usage", 0))
        except Exception:  # noqa: BLE001
            return 0

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self.container.logs(tail=50).decode(errors="replace")[-size:]
        except Exception:  # noqa: BLE001
            return ""
