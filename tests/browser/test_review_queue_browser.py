"""Bulk review in a real browser: decide a group of alike proposals in one click, then the
rest with keys, and see every status change."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from arena.models import ExpansionProposal
from tests.browser.conftest import screenshot
from tests.support import factories

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def waiting_round():
    shopping = factories.make_category("Shopping", "Books")
    evolution_round = factories.make_round()
    planning = {"focus": "multi-step planning", "count": 20}
    alike = [
        factories.make_proposal(
            evolution_round,
            environment=factories.make_environment(f"shop-{i}", category=shopping, tasks=0),
            category=shopping,
            params=planning,
        )
        for i in range(4)
    ]
    other = factories.make_proposal(
        evolution_round,
        environment=alike[0].environment,
        category=shopping,
        params={"focus": "state updates", "write_steps": 2},
    )
    return evolution_round, alike, other


def test_reviewer_bulk_approves_a_group_and_rejects_with_keys(page, live_server, sign_in, reviewer):
    evolution_round, alike, other = waiting_round()
    sign_in(reviewer)
    expect(page.locator(f'[data-review-waiting="{evolution_round.number}"]')).to_contain_text(
        "5 proposals wait for your review"
    )
    page.click(f'[data-review-waiting="{evolution_round.number}"] a')
    expect(page.locator("#review-prompt")).to_contain_text("This round waits for your review")
    expect(page.locator("#review-keys")).to_be_visible()
    group = page.locator(".proposal-group").first
    expect(group).to_contain_text("More tasks for multi-step planning in Shopping")
    screenshot(page, "review_queue")
    group.locator('button[value="approve"]', has_text="Approve all 4").click()
    expect(page.locator(".messages")).to_contain_text("4 proposal(s) approved")
    for proposal in alike:
        expect(page.locator(f"#proposal-{proposal.pk} [data-proposal-status]")).to_have_text(
            "approved"
        )
    # Read while one proposal is still pending: once none is, the round goes on to expand and
    # its expansion job moves the approved ones on (applied, or failed on these bare rows).
    statuses = dict(ExpansionProposal.objects.values_list("pk", "status"))
    assert [statuses[p.pk] for p in alike] == ["approved"] * 4
    # The last one by keys: j moves to the first card, j again ... to the pending one, r rejects.
    page.locator("h1").click()
    for _ in range(5):
        page.keyboard.press("j")
    expect(page.locator(f"#proposal-{other.pk}")).to_have_class("proposal is-current")
    page.keyboard.press("r")
    expect(page.locator(f"#proposal-{other.pk} [data-proposal-status]")).to_have_text("rejected")
    assert ExpansionProposal.objects.get(pk=other.pk).status == "rejected"
    assert {p.reviewer_id for p in ExpansionProposal.objects.all()} == {reviewer.pk}


def test_reviewer_selects_all_and_rejects_in_one_post(page, live_server, sign_in, reviewer):
    evolution_round, alike, other = waiting_round()
    sign_in(reviewer)
    page.goto(f"{live_server.url}/rounds/{evolution_round.number}/")
    page.check("[data-select-all]")
    expect(page.locator("[data-select-proposal]:checked")).to_have_count(5)
    page.fill('#bulk-review input[name="note"]', "not this round")
    page.click('#bulk-review button[value="reject"]')
    expect(page.locator(".messages")).to_contain_text("5 proposal(s) rejected")
    expect(page.locator('[data-proposal-status]:text-is("rejected")')).to_have_count(5)
    expect(page.locator("#left-out-of-replay")).to_have_text(
        ", ".join(f"shop-{i}" for i in range(4))
    )
    notes = set(ExpansionProposal.objects.values_list("review_note", flat=True))
    assert notes == {"not this round"}
