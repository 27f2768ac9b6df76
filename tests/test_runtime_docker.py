"""The Docker backend: the container it would create, and a clear error without an engine."""

from __future__ import annotations

import pytest

from environments.runtime import SandboxPool, SandboxUnavailable
from environments.runtime.docker_backend import DockerBackend

HOST_CONFIG = {
    "worker_dir": "/srv/aw/workers/w0-1",
    "packages_dir": "/srv/aw/packages",
    "read_roots": ["/usr/lib/python3.11"],
    "memory_mb": 512,
    "file_size_mb": 64,
    "cpu_budget_s": 600,
    "max_output_bytes": 1000,
    "in_memory_max_bytes": 1 << 20,
    "isolate_network": True,
    "drop_privileges": True,
}


def test_container_is_locked_down():
    config = DockerBackend(image="python:3.11-slim", memory_mb=512, pids_limit=8).container_config(
        HOST_CONFIG
    )
    assert config["network_mode"] == "none"
    assert config["read_only"] is True
    assert config["mem_limit"] == "512m"
    assert config["pids_limit"] == 8
    assert config["cap_drop"] == ["ALL"]
    assert config["user"] == "65534:65534"
    mounts = {v["bind"]: (host, v["mode"]) for host, v in config["volumes"].items()}
    assert mounts["/aw/worker"] == ("/srv/aw/workers/w0-1", "rw")
    assert mounts["/aw/packages"] == ("/srv/aw/packages", "ro")
    assert mounts["/aw/runtime"][1] == "ro"
    assert config["command"][:6] == [
        "python",
        "-I",
        "-B",
        "-X",
        "utf8",
        "/aw/runtime/sandbox_worker.py",
    ]


def test_worker_sees_container_paths():
    worker = DockerBackend().worker_config(HOST_CONFIG)
    assert worker["worker_dir"] == "/aw/worker"
    assert worker["packages_dir"] == "/aw/packages"
    assert (worker["request_fd"], worker["reply_fd"]) == (0, 1)


def test_no_engine_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailable, match="no Docker engine reachable"):
        SandboxPool(workers=1, spawn=DockerBackend())
