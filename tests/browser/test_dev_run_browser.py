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
    process = subprocess.Popen(
        [*manage, "run_embedded", f"--port={port}", "--sources=iris", "--rounds=0"]
        + ["--tasks-per-environment=2", "--job-workers=2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: the web server and workers go with it
    )
    terminal = Terminal(process)
    try:
        yield port, terminal
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_console_first_then_the_loop_fills_the_dashboard(dev_run, page):
    port, terminal = dev_run
    url = terminal.wait_for(r"console: (http://127\.0\.0\.1:\d+/)", 90).group(1)
    assert url == f"http://127.0.0.1:{port}/"
    # The URL and the logins come first, before any stage of the loop.
    terminal.wait_for(r"user admin .*default 'first-ten'", 5)
    first_stage = terminal.wait_for(r"stage 1/\d+: build the starter catalogue", 60)
    assert terminal.text().index("console: ") < terminal.text().index(first_stage.group(0))

    page.goto(f"{url}accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "first-ten")
    page.click("button[type=submit]")
    page.wait_for_selector(".role-badge[data-role]")
    # Before the catalogue exists: the main loop and the first-visit guide are shown.
    expect(page.locator("#main-loop")).to_be_visible()
    expect(page.locator("#first-visit-guide")).to_contain_text("/api/docs/")
    expect(page.locator("#loop-estimate")).to_contain_text("estimate")
    # Then it fills in without a reload (HTMX polling): an environment is verified.
    expect(page.locator("#verified-count")).to_have_text("1", timeout=240_000)
    terminal.wait_for(r"stage 1/2 done in \d+ s: 1 verified environments", 30)
    page.goto(f"{url}environments/")
    expect(page.get_by_text("Iris Flowers").first).to_be_visible()

    # Dismissed once, the guide stays hidden for this user.
    page.goto(url)
    page.click("#dismiss-guide")
    page.reload()
    expect(page.locator("#first-visit-guide")).to_have_count(0)
    expect(page.locator("#main-loop")).to_be_visible()
    terminal.wait_for(r"loop finished in \d+ s", 240)
