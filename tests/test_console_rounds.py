"""Rounds: scores and error charts, diagnosis, proposals, reviews and starting the next round."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.models import EvolutionRound, ExpansionProposal
from arena.views import pipeline, scores_chart
from aw_site.models import Job
from tests.support import factories


@pytest.fixture
def scene(db):
    return factories.make_review_scene()


@pytest.fixture
def as_reviewer(client, reviewer):
    client.force_login(reviewer)
    return client


@pytest.fixture
def as_viewer(client, viewer):
    client.force_login(viewer)
    return client


@pytest.mark.django_db
def test_round_list_charts_scores_across_rounds(as_viewer, scene):
    response = as_viewer.get(reverse("round-list"))
    body = response.content.decode()
    assert response.status_code == 200
    assert 'data-series="Shopping"' in body and 'data-series="Travel"' in body
    assert f'data-round="{scene["round"].number}"' in body


@pytest.mark.django_db
def test_round_detail_shows_scores_errors_diagnosis_and_proposals(as_viewer, scene):
    evolution_round = scene["round"]
    response = as_viewer.get(reverse("round-detail", args=[evolution_round.number]))
    body = response.content.decode()
    assert response.status_code == 200
    # per-category scores with the change since the previous round
    rows = {row["category"]: row for row in response.context["scores"]}
    assert rows["Shopping"]["delta"] == pytest.approx(0.15)
    assert "+15%" in body
    # success per category with its Wilson interval (9 of 20 in Shopping)
    assert rows["Shopping"]["episodes"] == 20 and rows["Shopping"]["low"] < 0.45
    assert "45%" in body and f"{rows['Shopping']['low']:.0%}" in body
    # error distribution as bars
    assert 'data-label="tool_error" data-value="5"' in body
    assert 'data-label="Shopping" data-value="6"' in body
    assert 'data-label="bookstore@v1" data-value="6"' in body
    assert "skips the stock check" in body
    assert f'id="proposal-{scene["proposal"].pk}"' in body
    assert f'id="proposal-{scene["second_proposal"].pk}"' in body


@pytest.mark.django_db
def test_reviewer_sees_review_forms_with_csrf(as_reviewer, scene):
    body = as_reviewer.get(reverse("round-detail", args=[scene["round"].number])).content.decode()
    # One approve per proposal card (the bulk forms' buttons say "Approve selected" / "all N").
    assert body.count('name="decision" value="approve">Approve</button>') == 2
    assert "csrfmiddlewaretoken" in body
    assert f'hx-post="/proposals/{scene["proposal"].pk}/review/"' in body


@pytest.mark.django_db
def test_reviewer_approves_with_a_note(as_reviewer, reviewer, scene):
    proposal = scene["proposal"]
    response = as_reviewer.post(
        reverse("proposal-review", args=[proposal.pk]),
        {"decision": "approve", "note": "focus on stock"},
    )
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.APPROVED
    assert proposal.reviewer == reviewer and proposal.review_note == "focus on stock"


@pytest.mark.django_db
def test_htmx_review_returns_the_updated_card(as_reviewer, scene):
    proposal = scene["proposal"]
    response = as_reviewer.post(
        reverse("proposal-review", args=[proposal.pk]),
        {"decision": "reject", "note": "not now"},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'data-status="rejected"' in body and "not now" in body
    assert 'name="decision"' not in body  # no buttons once decided
    again = as_reviewer.post(
        reverse("proposal-review", args=[proposal.pk]),
        {"decision": "approve"},
        HTTP_HX_REQUEST="true",
    )
    assert "already rejected" in again.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.REJECTED


@pytest.mark.django_db
def test_reviewing_the_last_proposal_moves_the_round_on(as_reviewer, scene):
    for proposal in (scene["proposal"], scene["second_proposal"]):
        as_reviewer.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "approve"})
    scene["round"].refresh_from_db()
    assert scene["round"].status == EvolutionRound.Status.EXPANDING


@pytest.mark.django_db
def test_bad_decision_is_refused_without_change(as_reviewer, scene):
    proposal = scene["proposal"]
    as_reviewer.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "maybe"})
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.PENDING


@pytest.mark.django_db
def test_start_round_calls_start_round_with_the_form(as_reviewer, reviewer, monkeypatch):
    from arena import rounds

    policy = factories.make_policy("base")
    calls = []

    def fake_start_round(user, **options):
        calls.append((user, options))
        return factories.make_round(policy=policy, status=EvolutionRound.Status.EVALUATING)

    monkeypatch.setattr(rounds, "start_round", fake_start_round)
    response = as_reviewer.post(
        reverse("round-start"),
        {
            "_form": "1",
            "policy": policy.pk,
            "environments_per_category": "3",
            "tasks_per_environment": "5",
            "train": "on",
            "seed": "7",
            "max_walk_length": "40",
            "programmatic_percent": "50",
            "instruction_tier": "goal_hard",
            "replay_ratio": "0.5",
            "training": '{"sft_epochs": 2}',
        },
    )
    assert response.status_code == 302 and response["Location"] == "/rounds/1/"
    user, options = calls[0]
    assert user == reviewer
    assert options == {
        "policy": policy,
        "auto_approve": False,
        "environments_per_category": 3,
        "tasks_per_environment": 5,
        "train": True,
        "seed": 7,
        "max_walk_length": 40,
        "programmatic_share": 0.5,
        "instruction_tier": "goal_hard",
        "replay_ratio": 0.5,
        "training": {"sft_epochs": 2},
    }


@pytest.mark.django_db
def test_start_form_refuses_out_of_range_values_by_name_instead_of_clamping(as_reviewer, scene):
    before = EvolutionRound.objects.count()
    response = as_reviewer.post(
        reverse("round-start"),
        {"_form": "1", "max_walk_length": "99", "replay_ratio": "9", "training": "{oops"},
        follow=True,
    )
    page = response.content.decode()
    assert "Could not start a round" in page
    assert "max_walk_length" in page and "replay_ratio" in page and "training" in page
    assert EvolutionRound.objects.count() == before


@pytest.mark.django_db
def test_start_round_for_real_enqueues_the_evaluation(as_reviewer, scene):
    EvolutionRound.objects.update(status=EvolutionRound.Status.DONE)
    response = as_reviewer.post(reverse("round-start"), {"_form": "1", "train": "on"})
    newest = EvolutionRound.objects.order_by("-number").first()
    assert response["Location"] == f"/rounds/{newest.number}/"
    assert newest.current_job is not None and newest.current_job.kind == "arena.evaluate"


@pytest.mark.django_db
def test_start_round_refusal_is_shown(as_reviewer, scene):
    response = as_reviewer.post(reverse("round-start"), {"_form": "1"}, follow=True)
    assert "Could not start a round" in response.content.decode()


@pytest.mark.django_db
def test_progress_fragment_polls_while_the_round_works(as_viewer):
    job = factories.make_job("arena.evaluate", progress=0.42, log="evaluating bookstore")
    evolution_round = factories.make_round(status=EvolutionRound.Status.EVALUATING, job=job)
    url = reverse("round-progress", args=[evolution_round.number])
    body = as_viewer.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in body and "42%" in body and "evaluating bookstore" in body
    # a status change since the page was drawn reloads the whole page
    changed = as_viewer.get(url, {"seen": "training"}, HTTP_HX_REQUEST="true")
    assert changed.status_code == 204 and changed["HX-Refresh"] == "true"
    Job.objects.filter(pk=job.pk).update(state=Job.State.SUCCEEDED, progress=1.0)
    EvolutionRound.objects.filter(pk=evolution_round.pk).update(status=EvolutionRound.Status.DONE)
    assert "hx-trigger" not in as_viewer.get(url).content.decode()


def test_pipeline_marks_done_current_and_skipped_stages():
    evolution_round = EvolutionRound(status="expanding", auto_approve=True)
    states = {s["name"]: s["state"] for s in pipeline(evolution_round)}
    assert states == {
        "evaluating": "done",
        "diagnosing": "done",
        "awaiting_approval": "skipped",
        "expanding": "current",
        "training": "todo",
        "done": "todo",
    }


def test_pipeline_marks_the_stage_a_round_failed_in():
    failed = EvolutionRound(
        status="failed", failure_reason="ValueError: no weights (while training)"
    )
    states = {s["name"]: s["state"] for s in pipeline(failed)}
    assert states["evaluating"] == states["expanding"] == "done"
    assert states["training"] == "failed" and states["done"] == "todo"
    unknown = {s["name"]: s["state"] for s in pipeline(EvolutionRound(status="failed"))}
    assert unknown["evaluating"] == "failed" and unknown["diagnosing"] == "todo"


def test_scores_chart_draws_one_line_per_category():
    rounds = [
        EvolutionRound(number=1, scores={"A": 0.2, "B": 0.5}),
        EvolutionRound(number=2, scores={"A": 0.4}),
    ]
    svg = scores_chart(rounds)
    assert svg.count("<polyline") == 2 and 'data-series="A"' in svg


@pytest.mark.django_db
def test_round_page_compares_labels_and_each_proposal_with_the_next_round(as_viewer, scene):
    evolution_round, proposal = scene["round"], scene["proposal"]
    category = factories.make_category("Shopping", "Books", "Bookstore")
    type(proposal).objects.filter(pk=proposal.pk).update(
        status="applied",
        category=category,
        result={"version": 2, "tasks": [1, 2], "tasks_created": 2},
    )
    following = factories.make_round(
        evolution_round.number + 1, policy=evolution_round.policy, scores={"Shopping": 0.7}
    )
    factories.make_evaluation(
        following,
        results={
            "category": {
                "Shopping": {"success_rate": 0.7, "success_interval": [0.4, 0.89], "episodes": 10}
            }
        },
    )
    factories.make_diagnosis(
        following, distribution={"by_label": {"tool_error": 1, "wrong_arguments": 3}}
    )
    body = as_viewer.get(reverse("round-detail", args=[evolution_round.number])).content.decode()
    # tool_error was 5 of 9 labelled failures, then 1 of 4
    assert (
        '<tr data-label="tool_error"><td>tool error</td><td class="num">56%</td><td class="num">25%</td>'
        in body
    )
    effect = body.split("data-proposal-effect>", 1)[1].split("</p>", 1)[0]
    assert effect == (
        "Shopping: success 45% [26%–66%, 20 episodes] this round"
        " → 70% [40%–89%, 10 episodes] in the next round"
    ), effect
    assert "2 training tasks created" in body and "environment version v2" in body


@pytest.mark.django_db
def test_a_calibration_round_is_compared_with_nothing_and_skipped_by_agent_rounds(client, viewer):
    from arena.lineage import following_round, previous_evaluation, score_history

    agent = factories.make_policy("agent", kind="local_hf")
    trained = factories.make_policy("agent-trained", kind="local_hf")
    first = factories.make_round(
        1, policy=agent, status="done", scores={"Shopping": 0.2}, trained_policy=trained
    )
    calibration = factories.make_round(
        2,
        policy=factories.make_policy("faults", kind="fault_injection"),
        status="done",
        scores={"Shopping": 0.9},
        config={"train": False},
    )
    third = factories.make_round(3, policy=trained, status="done", scores={"Shopping": 0.5})
    evaluations = {r.number: factories.make_evaluation(r) for r in (first, calibration, third)}
    assert previous_evaluation(third) == evaluations[1]
    assert previous_evaluation(calibration) is None
    assert following_round(first) == third and following_round(calibration) is None
    assert [r.number for r in score_history(third)] == [1, 3]
    client.force_login(viewer)
    page = client.get(reverse("round-detail", args=[3]))
    (row,) = page.context["scores"]
    assert row["delta"] == pytest.approx(0.3)  # against round 1, not the calibration round
    calibrating = client.get(reverse("round-detail", args=[2]))
    assert calibrating.context["scores"][0]["delta"] is None
    stages = {s["name"]: s["state"] for s in calibrating.context["stages"]}
    assert stages["training"] == "skipped"
    label_mix_after = client.get(reverse("round-detail", args=[1])).context["next_round"]
    assert label_mix_after == third
