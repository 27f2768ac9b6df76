"""Headless Debian Chromium driven by Playwright against pytest-django's live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django must still allow ORM calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("AW_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# docs/screenshots is refreshed only on request, so a test run leaves the tree clean.
SCREENSHOTS = (
    Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    if os.environ.get("AW_UPDATE_SCREENSHOTS") == "1"
    else Path(os.environ.get("TMPDIR", "/tmp")) / "aw-screenshots"
)


@pytest.fixture(scope="module")
def browser():
    """Module scope: Playwright's loop must stop before tests that run their own asyncio loop."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(8000)
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture(autouse=True)
def jobs_end_before_the_flush(request):
    """A page can start jobs that run in this process's threads (a rejected round moves on to
    train). The live server's database is flushed after the test; a job still writing then
    deadlocks the flush and leaves rows for the next test. So the test ends when they do."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so torn down before the flush
    yield
    from aw_site.jobs import in_process_worker_name
    from aw_site.models import Job
    from tests.support.worker import wait_for

    live = (Job.State.QUEUED, Job.State.RUNNING, Job.State.RETRYING)
    mine = Job.objects.filter(state__in=live, worker=in_process_worker_name())
    wait_for(lambda: not mine.exists(), timeout=120, message="this test's in-process jobs")


@pytest.fixture
def sign_in(page, live_server):
    """sign_in(user) logs in through the real login form and lands on the home page."""
    from tests.conftest import PASSWORD

    def login(user):
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector(".role-badge[data-role]")
        return page

    return login


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
