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
