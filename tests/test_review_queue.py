"""Reviewing a round's proposals as a queue: the prompt while a round waits, alike proposals
grouped, bulk approve/reject (reviewers only, CSRF checked, each proposal recorded on its
own), and evidence in words whose task ids link to the runs they cite."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from arena.models import EvolutionRound, ExpansionProposal
from arena.review_queue import group_proposals
from tests.support import factories

pytestmark = pytest.mark.django_db


def signed_in(user, **options) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


@pytest.fixture
def queue(db):
    """A round awaiting review with 8 alike planning proposals (one per Shopping environment),
    2 state-update proposals in Shopping and one new-environment proposal."""
    shopping = factories.make_category("Shopping", "Books")
    evolution_round = factories.make_round()
    planning = {"focus": "multi-step planning", "min_walk_length": 4, "count": 20}
    state = {"focus": "state updates", "write_steps": 2, "count": 20}
    environments = [
        factories.make_environment(f"shop-{i}", category=shopping, tasks=0) for i in range(8)
    ]
    alike = [
        factories.make_proposal(
            evolution_round, environment=env, category=shopping, params=planning
        )
        for env in environments
    ]
    writes = [
        factories.make_proposal(evolution_round, environment=env, category=shopping, params=state)
        for env in environments[:2]
    ]
    new_env = factories.make_proposal(
        evolution_round,
        kind=ExpansionProposal.Kind.NEW_ENVIRONMENT,
        params={"subcategory": "Books", "focus": ""},
    )
    return {"round": evolution_round, "alike": alike, "writes": writes, "new_env": new_env}


def round_page(client, evolution_round) -> str:
    response = client.get(reverse("round-detail", args=[evolution_round.number]))
    assert response.status_code == 200
    return response.content.decode()


def test_alike_proposals_are_grouped_by_kind_capability_and_category(queue):
    proposals = list(queue["round"].proposals.select_related("environment", "category"))
    groups = group_proposals(proposals)
    assert [g.title for g in groups] == [
        "More tasks for multi-step planning in Shopping",
        "More tasks for state updates in Shopping",
        "A new environment in Books",
    ]
    assert [len(g.proposals) for g in groups] == [8, 2, 1]
    assert groups[0].targets == [f"shop-{i}" for i in range(8)]
    assert len({g.key for g in groups}) == 3


def test_round_page_shows_groups_with_bulk_forms_and_key_hints(queue, reviewer):
    body = round_page(signed_in(reviewer), queue["round"])
    assert body.count('class="proposal-group"') == 3
    assert "More tasks for multi-step planning in Shopping" in body
    assert "Approve all 8" in body and "Reject all 2" in body
    assert 'id="bulk-review"' in body and "Approve selected" in body
    assert body.count("data-select-proposal") == 11
    assert 'id="review-keys"' in body and "<kbd>a</kbd> approve" in body
    assert "/static/js/review_queue.js" in body


def test_a_waiting_round_asks_reviewers_for_the_review(queue, reviewer, viewer):
    body = round_page(signed_in(reviewer), queue["round"])
    assert 'id="review-prompt"' in body and "This round waits for your review" in body
    assert "11 proposals to approve or reject" in body
    seen = round_page(signed_in(viewer), queue["round"])
    assert "This round waits for a reviewer" in seen and "waits for your review" not in seen
    assert "Approve all" not in seen and 'id="bulk-review"' not in seen


def test_dashboard_banner_asks_reviewers_only(queue, reviewer, viewer):
    body = signed_in(reviewer).get(reverse("home")).content.decode()
    assert "11 proposals wait for your review" in body
    assert f'href="/rounds/{queue["round"].number}/#proposals"' in body
    assert "wait for your review" not in signed_in(viewer).get(reverse("home")).content.decode()
    for proposal in queue["round"].proposals.all():
        proposal.review(None, approve=False)
    assert "wait for your review" not in signed_in(reviewer).get(reverse("home")).content.decode()


def test_bulk_approve_of_a_group_records_each_proposal(queue, reviewer):
    client = signed_in(reviewer)
    ids = [p.pk for p in queue["alike"]]
    response = client.post(
        reverse("round-review", args=[queue["round"].number]),
        {"decision": "approve", "proposal": ids, "note": "planning, all of them"},
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"/rounds/{queue['round'].number}/#proposals")
    for proposal in queue["alike"]:
        proposal.refresh_from_db()
        assert proposal.status == ExpansionProposal.Status.APPROVED
        assert proposal.reviewer == reviewer and proposal.review_note == "planning, all of them"
    assert queue["round"].proposals.filter(status="pending").count() == 3
    page = client.get(response["Location"])
    assert "8 proposal(s) approved" in page.content.decode()


def test_bulk_reject_of_the_rest_moves_the_round_on(queue, reviewer):
    rest = [p.pk for p in queue["writes"]] + [queue["new_env"].pk]
    client = signed_in(reviewer)
    url = reverse("round-review", args=[queue["round"].number])
    client.post(url, {"decision": "approve", "proposal": [p.pk for p in queue["alike"]]})
    client.post(url, {"decision": "reject", "proposal": rest})
    assert set(ExpansionProposal.objects.filter(pk__in=rest).values_list("status", flat=True)) == {
        "rejected"
    }
    queue["round"].refresh_from_db()
    assert queue["round"].status == EvolutionRound.Status.EXPANDING


def test_bulk_review_refuses_decided_and_foreign_proposals_by_number(queue, reviewer):
    other = factories.make_proposal(factories.make_round(status=EvolutionRound.Status.DONE))
    first = queue["alike"][0]
    first.review(reviewer, approve=True)
    client = signed_in(reviewer)
    response = client.post(
        reverse("round-review", args=[queue["round"].number]),
        {"decision": "reject", "proposal": [first.pk, other.pk, queue["alike"][1].pk]},
        follow=True,
    )
    body = response.content.decode()
    assert "1 proposal(s) rejected" in body
    assert f"#{first.pk}: proposal #{first.pk} was already approved" in body
    assert f"#{other.pk} is no proposal of round {queue['round'].number}" in body
    other.refresh_from_db()
    assert other.status == "pending"


def test_bulk_review_needs_the_reviewer_role(queue, viewer):
    response = signed_in(viewer).post(
        reverse("round-review", args=[queue["round"].number]),
        {"decision": "approve", "proposal": [p.pk for p in queue["alike"]]},
    )
    assert response.status_code == 403
    assert not queue["round"].proposals.exclude(status="pending").exists()


def test_bulk_review_needs_the_csrf_token(queue, reviewer):
    client = signed_in(reviewer, enforce_csrf_checks=True)
    url = reverse("round-review", args=[queue["round"].number])
    refused = client.post(url, {"decision": "approve", "proposal": [queue["alike"][0].pk]})
    assert refused.status_code == 403
    assert not queue["round"].proposals.exclude(status="pending").exists()
    client.get(reverse("round-detail", args=[queue["round"].number]))  # sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        url,
        {"decision": "approve", "proposal": [queue["alike"][0].pk], "csrfmiddlewaretoken": token},
    )
    assert accepted.status_code == 302
    assert queue["round"].proposals.filter(status="approved").count() == 1


def test_bulk_review_without_a_choice_says_what_is_missing(queue, reviewer):
    url = reverse("round-review", args=[queue["round"].number])
    body = signed_in(reviewer).post(url, {"proposal": [1]}, follow=True).content.decode()
    assert "choose approve or reject" in body
    body = signed_in(reviewer).post(url, {"decision": "approve"}, follow=True).content.decode()
    assert "select at least one proposal" in body


# --- evidence in words ------------------------------------------------------------------------


@pytest.fixture
def cited(db):
    scene = factories.make_review_scene()
    lone = factories.make_task(scene["environment"])  # no run in the evaluation: its task page
    scene["proposal"].evidence = {
        "failed_episodes": 2,
        "labels": {"tool_error": 2},
        "task_ids": [str(scene["task"].pk), str(lone.pk), "999999"],
        "trajectory_ids": [scene["passed"].pk],
        "examples": [
            {
                "task_id": str(scene["task"].pk),
                "label": "tool_error",
                "steps": [2],
                "explanation": "place_order refused quantity 7 of the SECRET-QUOTE",
            }
        ],
    }
    scene["proposal"].save()
    scene["lone"] = lone
    return scene


def test_evidence_reads_in_words_and_links_the_runs_it_cites(cited, viewer):
    body = round_page(signed_in(viewer), cited["round"])
    card = body[body.index(f'id="proposal-{cited["proposal"].pk}"') :]
    card = card[: card.index("</article>")]
    assert "2 failed episodes in this evaluation; error labels: tool error ×2" in card
    failed_run = reverse("trajectory-detail", args=[cited["failed"].pk])
    assert f'<a href="{failed_run}"' in card  # the failed run of the cited task, not the pass
    assert f'href="{reverse("task-detail", args=[cited["lone"].pk])}"' in card
    assert "task 999999" in card and 'href="/tasks/999999/"' not in card
    passed_run = reverse("trajectory-detail", args=[cited["passed"].pk])
    assert f'href="{passed_run}" title="replay of trajectory' in card
    assert "tool error at step 2" in card
    # Viewers: no explanation (it may quote gold values) and no raw JSON.
    assert "SECRET-QUOTE" not in card
    assert "raw data" not in card and '"failed_episodes"' not in card and "<pre" not in card


def test_reviewers_read_the_explanation_and_may_expand_the_raw_data(cited, reviewer):
    body = round_page(signed_in(reviewer), cited["round"])
    card = body[body.index(f'id="proposal-{cited["proposal"].pk}"') :]
    card = card[: card.index("</article>")]
    assert "place_order refused quantity 7 of the SECRET-QUOTE" in card
    assert '<details class="raw-data">' in card and "&quot;failed_episodes&quot;: 2" in card
    assert "Asks for:" in card and "count <b>8</b>" in card


def test_a_rejected_proposal_says_what_it_changes(cited, reviewer):
    client = signed_in(reviewer)
    for proposal in (cited["proposal"], cited["second_proposal"]):
        client.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "reject"})
    body = round_page(client, cited["round"])
    assert 'id="rejection-rule"' in body and "its earlier training tasks are not replayed" in body
    assert '<span id="left-out-of-replay">bookstore</span>' in body
    assert "Rejected: not applied, no task created; bookstore is left out" in body
