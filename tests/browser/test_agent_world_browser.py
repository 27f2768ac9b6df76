"""An Agent-World release in a real browser: a reviewer uploads its archive on the New environment
page, watches the catalogue run finish, and opens an environment's collections."""

from __future__ import annotations

import tarfile

import pytest
from playwright.sync_api import expect

from environments.models import Environment
from tests.browser.conftest import screenshot
from tests.support.agent_world_release import LIBRARY, write_release

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_uploads_a_release_and_browses_its_collections(
    page, live_server, sign_in, reviewer, settings, tmp_path
):
    settings.AW_JOBS_MODE = "thread"  # the builds really run, in this process
    settings.STORAGE_ROOT = tmp_path / "storage"
    mix = write_release(tmp_path / "checkout")
    archive = tmp_path / "agent-world.tar.gz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(mix.parent, arcname="Agent-World-main")

    sign_in(reviewer)
    page.goto(f"{live_server.url}/environments/new/")
    page.set_input_files("#release", str(archive))
    page.click("#build-button")
    expect(page.locator("h1")).to_contain_text("Catalogue run")
    expect(page.locator("#run-selection")).to_contain_text("Agent-World release")
    expect(page.locator('[data-count="remaining"]')).to_have_text("0", timeout=60_000)
    expect(page.locator('[data-count="published"]')).to_have_text("2")
    screenshot(page, "agent_world_release_run")

    library = Environment.objects.get(name=f"aw_{LIBRARY}")
    page.goto(f"{live_server.url}/environments/{library.pk}/?tab=database")
    expect(page.locator("#business-rules")).to_contain_text("A loan takes one copy")
    page.click('[data-table="settings"]')
    expect(page.locator("#document-pairs")).to_contain_text("¡Bienvenidos!")
    page.click('[data-table="request_logs"]')
    expect(page.locator("#log-collection")).to_contain_text("left out of state comparison")
    screenshot(page, "agent_world_collections")
