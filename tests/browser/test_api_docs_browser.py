"""The API docs in a real browser with no way out: every request must stay on the live server."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
IN_PAGE_SCHEMES = {"data", "blob", "about"}

SCHEMA_RENDER_MS = 30_000


def leaves_the_machine(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme not in IN_PAGE_SCHEMES and parts.hostname not in LOCAL_HOSTS


@dataclass
class OutsideRequests:
    """What the page asked for beyond the live server: tried (every request the page made),
    sent (those the browser let go to the network; the test aborts them there) and refused
    by the page's own Content-Security-Policy (never sent)."""

    tried: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)
    refused_by_policy: list[str] = field(default_factory=list)


@pytest.fixture
def outside(page) -> OutsideRequests:
    seen = OutsideRequests()

    def on_request(request) -> None:
        if leaves_the_machine(request.url):
            seen.tried.append(request.url)

    def on_failed(request) -> None:
        if leaves_the_machine(request.url) and request.failure == "csp":
            seen.refused_by_policy.append(request.url)

    def on_route(route) -> None:
        if leaves_the_machine(route.request.url):
            seen.sent.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.on("request", on_request)
    page.on("requestfailed", on_failed)
    page.route("**/*", on_route)
    return seen


def test_swagger_ui_lists_and_runs_operations_offline_inside_the_console(
    page, live_server, sign_in, viewer, outside
):
    sign_in(viewer)
    page.click("nav >> text=API")
    expect(page).to_have_url(f"{live_server.url}/api/docs/")
    expect(page.locator("nav a.active")).to_have_text("API")
    # The schema is generated per request and parsed in the page: slow on a loaded machine.
    expect(page.locator(".opblock").first).to_be_visible(timeout=SCHEMA_RENDER_MS)
    assert page.locator(".opblock").count() > 20
    environments = page.locator(
        ".opblock-get", has=page.locator('[data-path="/api/environments/"]')
    )
    expect(environments).to_be_visible()
    screenshot(page, "api_docs")

    environments.locator(".opblock-summary").click()
    environments.get_by_role("button", name="Try it out").click()
    environments.get_by_role("button", name="Execute").click()
    live_status = environments.locator(".live-responses-table tbody .response-col_status")
    expect(live_status).to_have_text("200")

    page.click("nav >> text=Catalogue")
    expect(page).to_have_url(f"{live_server.url}/environments/")
    assert outside.tried == [], f"Swagger UI asked for URLs outside the site: {outside.tried}"


def test_redoc_reads_the_schema_offline_and_its_vendor_logo_is_refused(
    page, live_server, sign_in, viewer, outside
):
    sign_in(viewer)
    page.goto(f"{live_server.url}/api/docs/")
    page.click("text=ReDoc view")
    expect(page).to_have_url(f"{live_server.url}/api/redoc/")
    expect(page.locator("nav a.active")).to_have_text("API")
    expect(page.locator('[data-section-id^="operation/"]').first).to_be_attached(
        timeout=SCHEMA_RENDER_MS
    )
    expect(page.locator("#redoc-container")).to_contain_text("/api/environments/")
    screenshot(page, "api_redoc")

    # ReDoc's bundle always asks for its vendor's logo; the page's policy refuses it unsent.
    assert outside.sent == [], f"ReDoc sent requests outside the site: {outside.sent}"
    assert sorted(outside.tried) == sorted(outside.refused_by_policy), outside
