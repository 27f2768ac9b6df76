"""Bounded load of concurrent episodes on loopback: the HTTP episode API and the MCP endpoint.

    DATABASE_URL=postgres://root@127.0.0.1:5432/aw_scale .venv/bin/python benchmarks/episode_load.py \
        --episodes 200 --concurrency 16 --calls 6 --mcp-sessions 40

HTTP: records the sample bookstore package (tests/support/sample_package.py) as a verified
environment, starts gunicorn (1 worker, threads; the episode service lives in that process) on a
random 127.0.0.1 port, and runs ``--episodes`` episodes (create, ``--calls`` tool calls, finish)
from ``--concurrency`` client threads. MCP: starts ``python -m serving.mcp_server <package>
--http PORT`` and runs ``--mcp-sessions`` concurrent SDK sessions of ``--calls`` calls each.
Both are bounded by request count and ``--max-seconds``. Reports throughput, p50/p95 latency per
operation, error rate, and that nothing was lost: every created episode finished, the server's
call count per episode equals the client's, and every finished episode is gone (404).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

CALL_PLAN = [
    ("get_book", {"book_id": 1}),
    ("search_books", {"title_contains": "a"}),
    ("update_stock", {"book_id": 2, "stock": 7}),
    ("list_books_by_author", {"author_name": "Frank Herbert"}),
    ("get_book", {"book_id": 999}),  # a tool error: 200 with ok=false, still a call
    ("place_order", {"book_id": 1, "quantity": 1, "customer": "load"}),
]


@dataclass
class LoadStats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    created: int = 0
    finished: int = 0
    client_calls: int = 0
    server_calls: int = 0
    mismatched: int = 0
    still_open: int = 0
    seconds: float = 0.0

    def record(self, op: str, started: float) -> None:
        self.latencies[op].append((time.perf_counter() - started) * 1000)

    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    def lines(self, title: str) -> list[str]:
        total = self.requests() + len(self.errors)
        out = [
            f"{title}: {self.requests()} requests in {self.seconds:.1f} s = "
            f"{self.requests() / max(self.seconds, 1e-9):.0f} req/s; errors {len(self.errors)} "
            f"({100 * len(self.errors) / max(total, 1):.2f} %)",
            f"  episodes created {self.created}, finished {self.finished}, still open {self.still_open}; "
            f"calls client {self.client_calls}, server {self.server_calls}, mismatched episodes {self.mismatched}",
        ]
        for op, values in sorted(self.latencies.items()):
            ordered = sorted(values)
            p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
            out.append(
                f"  {op:8s} n={len(values):5d} p50 {statistics.median(values):7.1f} ms  p95 {p95:7.1f} ms"
            )
        out += [f"  error: {e}" for e in self.errors[:5]]
        return out


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout} s")


def prepare(root: Path) -> tuple[int, Path, str]:
    """Record a fresh sample package; returns (environment id, package path, viewer token)."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from aw_site.roles import VIEWER, grant_role
    from environments.registry import record_package
    from tests.support.sample_package import build_sample_package

    package = build_sample_package(root, name=f"bookstore-load-{uuid.uuid4().hex[:8]}")
    environment = record_package(package)
    user, _ = get_user_model().objects.get_or_create(username="episode_load")
    grant_role(user, VIEWER)
    token, _ = Token.objects.get_or_create(user=user)
    return environment.pk, package, token.key


def run_http(base: str, token: str, environment: int, args) -> LoadStats:
    import httpx

    stats = LoadStats()
    headers = {"Authorization": f"Token {token}"}
    deadline = time.monotonic() + args.max_seconds
    keys: list[str] = []

    def episode(_: int) -> None:
        if time.monotonic() > deadline:
            return
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            started = time.perf_counter()
            response = client.post("/api/episodes/", json={"environment": environment})
            if response.status_code != 201:
                stats.errors.append(f"create {response.status_code} {response.text[:120]}")
                return
            stats.record("create", started)
            stats.created += 1
            key = response.json()["episode"]
            keys.append(key)
            made = 0
            for i in range(args.calls):
                tool, arguments = CALL_PLAN[i % len(CALL_PLAN)]
                started = time.perf_counter()
                response = client.post(
                    f"/api/episodes/{key}/call/", json={"tool": tool, "arguments": arguments}
                )
                if response.status_code != 200:
                    stats.errors.append(f"call {response.status_code} {response.text[:120]}")
                    continue
                stats.record("call", started)
                made += 1
            stats.client_calls += made
            started = time.perf_counter()
            response = client.post(f"/api/episodes/{key}/finish/", json={"answer": None})
            if response.status_code != 200:
                stats.errors.append(f"finish {response.status_code} {response.text[:120]}")
                return
            stats.record("finish", started)
            stats.finished += 1
            stats.server_calls += response.json()["calls"]
            stats.mismatched += response.json()["calls"] != made

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        list(pool.map(episode, range(args.episodes)))
    stats.seconds = time.perf_counter() - started
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        stats.still_open = sum(
            client.get(f"/api/episodes/{key}/tools/").status_code != 404 for key in keys
        )
    return stats


def run_mcp(url: str, args) -> LoadStats:
    from mcp import Client

    stats = LoadStats()
    deadline = time.monotonic() + args.max_seconds
    semaphore = asyncio.Semaphore(args.concurrency)

    async def session(_: int) -> None:
        async with semaphore:
            if time.monotonic() > deadline:
                return
            try:
                started = time.perf_counter()
                async with Client(url, mode="legacy") as client:
                    stats.record("connect", started)
                    stats.created += 1
                    for i in range(args.calls):
                        tool, arguments = CALL_PLAN[i % len(CALL_PLAN)]
                        started = time.perf_counter()
                        result = await client.call_tool(tool, arguments)
                        stats.record("call", started)
                        stats.client_calls += 1
                        stats.server_calls += result is not None
                stats.finished += 1
            except Exception as exc:  # counted, the run goes on
                stats.errors.append(f"{type(exc).__name__}: {exc}"[:160])

    async def main() -> None:
        await asyncio.gather(*(session(i) for i in range(args.mcp_sessions)))

    started = time.perf_counter()
    asyncio.run(main())
    stats.seconds = time.perf_counter() - started
    stats.still_open = stats.created - stats.finished
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--calls", type=int, default=6)
    parser.add_argument("--mcp-sessions", type=int, default=40)
    parser.add_argument("--threads", type=int, default=16, help="gunicorn threads")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        parser.error("set DATABASE_URL (the server and this script must share a database)")

    root = Path(tempfile.mkdtemp(prefix="aw-episode-load-"))
    environment, package, token = prepare(root)
    env = {
        **os.environ,
        "AW_MAX_EPISODES": str(args.concurrency * 4),
        "AW_MAX_EPISODES_PER_USER": str(args.concurrency * 4),
        "PYTHONUNBUFFERED": "1",
    }
    ok = True

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "aw_site.wsgi:application",
            "--workers",
            "1",
            "--threads",
            str(args.threads),
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=open(root / "gunicorn.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, server)
        stats = run_http(f"http://127.0.0.1:{port}", token, environment, args)
        print(
            "\n".join(
                stats.lines(
                    f"HTTP episode API (gunicorn 1 worker x {args.threads} threads, "
                    f"{args.concurrency} clients)"
                )
            ),
            flush=True,
        )
        ok &= not stats.errors and stats.created == stats.finished and not stats.still_open
        ok &= stats.client_calls == stats.server_calls and not stats.mismatched
    finally:
        server.terminate()
        server.wait(timeout=30)

    port = free_port()
    mcp = subprocess.Popen(
        [sys.executable, "-m", "serving.mcp_server", str(package), "--http", str(port)],
        cwd=REPO,
        env=env,
        stdout=open(root / "mcp.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, mcp)
        stats = run_mcp(f"http://127.0.0.1:{port}/mcp", args)
        print(
            "\n".join(stats.lines(f"MCP streamable HTTP ({args.concurrency} concurrent sessions)")),
            flush=True,
        )
        ok &= not stats.errors and stats.created == stats.finished
    finally:
        mcp.terminate()
        mcp.wait(timeout=30)
    print(f"logs in {root}; nothing lost: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
