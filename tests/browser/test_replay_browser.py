"""A failed run's replay in a real browser at 1,440 px: it says why the run failed, in words, to a
reviewer and to a viewer (who gets no gold value), says an empty model output as such, and
fits the window."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOLD_CODE = "ZEBRA-4417"
GOLD_ROW = "crate-note-SECRET-ROW"
WIDTH = 1440
LONG_TOOL = "lookup_crate_by_aisle_shelf_and_bin_number_in_the_north_warehouse_building"


@pytest.fixture
def failed_run():
    environment = factories.make_environment("warehouse")
    task = factories.make_task(
        environment,
        split="arena",
        instruction="Find the code of the crate in aisle 7 and note it: "
        + "aisle7" * 40,  # one long unbroken word must wrap, not widen the page
        reference_answer={"code": GOLD_CODE},
        gold_chain=[{"tool": LONG_TOOL, "arguments": {"aisle": 7, "note": "x" * 300}}],
    )
    reward = {
        "total": 0.0,
        "success": False,
        "gate": "not solved: no valid tool call, so no credit",
        "components": {
            "answer": {
                "score": 0.0,
                "weight": 1.0,
                "reason": f"answer unusable: expected {{'code': '{GOLD_CODE}'}}",
                "applicable": True,
            },
            "state": {
                "score": 0.0,
                "weight": 1.0,
                "reason": "final state differs from the gold run's: 0/1 requested writes made, "
                f"missing: crate(note={GOLD_ROW})",
                "applicable": True,
            },
            "format": {"score": 0.0, "weight": 0.0, "reason": "0/1 tool calls well-formed"},
            "efficiency": {
                "score": 0.0,
                "weight": 0.0,
                "reason": "not solved (0 calls)",
                "applicable": False,
            },
        },
    }
    return factories.make_trajectory(
        task,
        factories.make_policy(kind="local_hf"),
        steps=[{"role": "assistant", "content": ""}],
        reward=reward,
        finished_reason="format_error",
        final_answer="",
    )


def open_replay(page, live_server, trajectory):
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.goto(f"{live_server.url}/trajectories/{trajectory.pk}/")
    expect(page.locator("#why-failed")).to_be_visible()


def assert_states_why_in_words(page):
    why = page.locator("#why-failed")
    expect(why).to_contain_text("Why this run failed")
    expect(why).to_contain_text("could not be read as a tool call or an answer (format error)")
    expect(why).to_contain_text("The model answered with an empty message at step 1.")
    expect(why).to_contain_text("no valid tool call, so the run earns no credit")
    expect(why).to_contain_text("The final state did not match: 1 requested change missing.")
    expect(page.locator("#step-1 .empty-output")).to_have_text(
        "The model answered with an empty message."
    )
    expect(page.locator('[data-words="answer"]')).to_have_text(
        "The answer could not be read in the form the task asks for."
    )
    expect(page.locator('[data-words="format"]')).to_have_text("0 of 1 tool call well-formed.")
    expect(page.locator("#final-answer")).to_have_text("The run submitted no final answer.")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, f"the replay is {width} px wide in a {WIDTH} px window"


def test_reviewer_reads_why_the_run_failed_and_the_stored_reasons(
    page, live_server, sign_in, reviewer, failed_run
):
    sign_in(reviewer)
    open_replay(page, live_server, failed_run)
    assert_states_why_in_words(page)
    expect(page.locator("#reward")).to_contain_text(GOLD_CODE)  # reviewers see the stored reason
    screenshot(page, "replay_failed_reviewer")


def test_viewer_reads_why_the_run_failed_without_gold_values(
    page, live_server, sign_in, viewer, failed_run
):
    sign_in(viewer)
    open_replay(page, live_server, failed_run)
    assert_states_why_in_words(page)
    assert GOLD_CODE not in page.content() and GOLD_ROW not in page.content()
    text = page.locator("body").inner_text()
    assert '{"' not in text and "{'" not in text  # no raw JSON or Python repr
    screenshot(page, "replay_failed_viewer")
