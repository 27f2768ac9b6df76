"""`./dev run`'s promise: the console answers at once on an empty database, the printed login
works, and the dashboard fills in while the loop runs as jobs in worker processes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Terminal:
    """The command's output, read line by line in a thread (as a user watches it)."""

    def __init__(self, process: subprocess.Popen):
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, seconds: float) -> re.Match:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            time.sleep(0.2)
        raise AssertionError(f"no line matching {pattern!r} within {seconds} s:\n" + self.text())

    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def dev_run(tmp_path):
    """run_embedded on an empty SQLite database in a temp dir, one small source, no round."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "AW_TEST_DATABASE_NAME")
    }
    env.update(AW_VAR_DIR=str(tmp_path), PYTHONUNBUFFERED="1", AW_DEMO_PASSWORD="first-ten")
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    # No job worker of its own at first: the test sees the console before any stage ran, then
    # starts the worker (as run_embedded does) and watches the dashboard fill in.
    process = subprocess.Popen(
        [*manage, "run_embedded", f"--port={port}", "--sources=iris", "--rounds=0"]
        + ["--tasks-per-environment=2", "--job-workers=0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the web server and workers go with it
    )
    terminal = Terminal(process)
    workers: list[subprocess.Popen] = []

    def start_worker() -> None:
        worker_env = {**env, "AW_JOBS_MODE": "db"}
        workers.append(
            subprocess.Popen(
                [*manage, "run_job_worker"], cwd=ROOT, env=worker_env, start_new_session=True
            )
        )

    try:
        yield port, terminal, start_worker
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=20)
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_console_first_then_the_loop_fills_the_dashboard(dev_run, page):
    port, terminal, start_worker = dev_run
    url = terminal.wait_for(r"console: (http://127\.0\.0\.1:\d+/)", 90).group(1)
    assert url == f"http://127.0.0.1:{port}/"
    # The URL and the logins come first, then the main loop is queued.
    terminal.wait_for(r"user admin .*default 'first-ten'", 5)
    queued = terminal.wait_for(r"main loop \(job \d+\): 1 sources \(iris\)", 30)
    text = terminal.text()
    assert text.index("console: ") < text.index("user admin") < text.index(queued.group(0))

    page.goto(f"{url}accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "first-ten")
    page.click("button[type=submit]")
    page.wait_for_selector(".role-badge[data-role]")
    # Before the catalogue exists: the main loop's plan, an estimate and the first-visit guide.
    expect(page.locator("#verified-count")).to_have_text("0")
    expect(page.locator("#main-loop")).to_contain_text("build the starter catalogue (1 sources)")
    expect(page.locator("#loop-estimate")).to_contain_text("an estimate")
    expect(page.locator("#first-visit-guide")).to_contain_text("/api/docs/")

    # Worker processes take the loop (one follows it, one runs its jobs); the dashboard fills in
    # without a reload (HTMX polling).
    start_worker()
    start_worker()
    expect(page.locator("#verified-count")).to_have_text("1", timeout=240_000)
    terminal.wait_for(r"stage 1/2 done in \d+ s: 1 verified environments", 60)
    terminal.wait_for(r"loop finished in \d+ s", 240)
    expect(page.locator("#main-loop")).to_have_attribute("data-state", "succeeded", timeout=10_000)
    page.goto(f"{url}environments/")
    expect(page.get_by_text("Iris Flowers").first).to_be_visible()

    # Dismissed once, the guide stays hidden for this user.
    page.goto(url)
    page.click("#dismiss-guide")
    page.reload()
    expect(page.locator("#first-visit-guide")).to_have_count(0)
    expect(page.locator("#main-loop")).to_be_visible()
