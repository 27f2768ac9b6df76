"""A training run's page: metric cards filled from what the trainer stored, checkpoints by name."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.support import factories
from training.models import Checkpoint, TrainingMetric, TrainingRun


def _card(body: str, name: str) -> tuple[str, str]:
    """(value, source) of one metric card."""
    match = re.search(
        rf'data-card="{re.escape(name)}"><div class="value" data-latest="{re.escape(name)}">'
        r"([^<]*)</div><div class=\"label\">[^<]*</div><div class=\"muted small\" "
        r"data-card-source>([^<]*)</div>",
        body,
    )
    assert match, f"no card {name}"
    return match.group(1), match.group(2)


def _sft_only_run() -> TrainingRun:
    """A run stored the way `training.service.train` stores one without GRPO: the gold and
    held-out summaries at step 0, then one row per SFT step (a loss only), then the SFT summary,
    then the held-out evaluation after training; the run's summary holds each phase."""
    run = factories.make_training_run(metrics=0, config={"grpo_steps": 0})
    rows = [
        ("gold", 0, {"episodes": 6, "reward_mean": 1.0, "success_rate": 1.0, "tool_calls": 12}),
        ("eval_before", 0, {"episodes": 4, "reward_mean": 0.05, "success_rate": 0.0}),
        *(("sft_step", step, {"loss": 2.0 / step, "steps_total": 24}) for step in range(1, 25)),
        ("sft", 0, {"steps": 24, "loss_last": 0.4, "tokens_per_s": 1896.5, "seconds": 30.1}),
        (
            "eval_after",
            0,
            {
                "episodes": 4,
                "reward_mean": 0.375,
                "success_rate": 0.25,
                "tool_calls": 6,
                "finished": {"answer": 3, "token_budget": 1},
            },
        ),
    ]
    for phase, step, values in rows:
        TrainingMetric.objects.create(run=run, phase=phase, step=step, values=values)
    run.summary = {"sft": {"tokens_per_s": 1896.5, "steps": 24}, "grpo": None, "tasks": 6}
    run.save(update_fields=["summary"])
    return run


@pytest.mark.django_db
def test_a_run_without_grpo_fills_its_cards_from_the_rows_it_stored(client, viewer):
    run = _sft_only_run()
    client.force_login(viewer)
    body = client.get(reverse("training-run-detail", args=[run.pk])).content.decode()
    assert _card(body, "reward_mean") == ("0.38", "held-out, after training")
    assert _card(body, "success_rate") == ("25%", "held-out, after training")
    assert _card(body, "tokens_per_s") == ("1.9k", "SFT warm-up")
    assert _card(body, "tool_calls") == ("1.50", "held-out, after training")
    assert _card(body, "token_budget_ended") == ("25%", "held-out, after training")
    # What only GRPO measures says so instead of a bare dash.
    assert _card(body, "kl") == ("–", "no GRPO phase in this run")
    assert _card(body, "frac_reward_zero_std") == ("–", "no GRPO phase in this run")


@pytest.mark.django_db
def test_a_grpo_run_shows_its_newest_grpo_step(client, viewer):
    run = factories.make_training_run(metrics=6)
    client.force_login(viewer)
    body = client.get(reverse("training-run-detail", args=[run.pk])).content.decode()
    assert _card(body, "reward_mean") == ("0.70", "GRPO step 5")
    assert _card(body, "kl") == ("0.05", "GRPO step 5")
    assert _card(body, "tokens_per_s") == ("1.6k", "GRPO step 5")
    assert _card(body, "unlearnable_tasks") == ("5", "GRPO step 5")


@pytest.mark.django_db
def test_a_run_with_only_a_summary_reads_its_cards_from_the_summary(client, viewer):
    run = factories.make_training_run(metrics=0, summary={"sft": {"tokens_per_s": 1896.5}})
    client.force_login(viewer)
    body = client.get(reverse("training-run-detail", args=[run.pk])).content.decode()
    assert _card(body, "tokens_per_s") == ("1.9k", "run summary, SFT warm-up")


@pytest.mark.django_db
def test_a_queued_run_says_its_cards_are_not_measured_yet(client, viewer):
    run = factories.make_training_run(metrics=0, status=TrainingRun.Status.QUEUED)
    client.force_login(viewer)
    body = client.get(reverse("training-run-metrics", args=[run.pk])).content.decode()
    assert _card(body, "reward_mean") == ("–", "not measured yet")


@pytest.mark.django_db
def test_checkpoints_show_a_viewer_their_names_and_a_reviewer_their_paths(client, viewer, reviewer):
    run = factories.make_training_run(metrics=1)
    policy = factories.make_policy(kind="local_hf")
    root = "/srv/agent-world/var/storage/training/run-7"
    for step, path in enumerate((f"{root}/sft", f"{root}/grpo/checkpoint-40", f"{root}/final")):
        Checkpoint.objects.create(policy=policy, run=run, step=step, path=path)
    url = reverse("training-run-detail", args=[run.pk])

    client.force_login(viewer)
    body = client.get(url).content.decode()
    section = body[body.index('id="checkpoints"') :]
    for text in ("after the SFT warm-up", "GRPO step 40", "final model", "checkpoint-40"):
        assert text in section
    assert "/srv/agent-world" not in body

    client.force_login(reviewer)
    assert f"{root}/grpo/checkpoint-40" in client.get(url).content.decode()


@pytest.mark.django_db
def test_the_training_set_is_on_the_page_not_in_its_title(client, viewer):
    run = factories.make_training_run(metrics=1)
    client.force_login(viewer)
    body = client.get(reverse("training-run-detail", args=[run.pk])).content.decode()
    title = body[body.index("<title>") : body.index("</title>")]
    assert title == f"<title>Training run #{run.pk} · Agent-World"
    assert 'id="training-set"' in body[body.index("</title>") :]


@pytest.mark.django_db
def test_configuration_and_summary_read_as_a_table_with_the_raw_data_for_reviewers(
    client, viewer, reviewer
):
    run = factories.make_training_run(
        metrics=0,
        config={"learning_rate": 1e-5, "task_kinds": ["graph", "programmatic"]},
        summary={"tasks": 8, "eval_after": {"reward_mean": 0.5}, "checkpoint": "/srv/aw/ck/run-4"},
    )
    url = reverse("training-run-detail", args=[run.pk])
    client.force_login(viewer)
    body = client.get(url).content.decode()
    config = body.split('id="run-config"', 1)[1].split("</table>", 1)[0]
    assert '<th scope="row">learning rate</th><td>1e-05</td>' in config
    assert '<th scope="row">task kinds</th><td>graph, programmatic</td>' in config
    summary = body.split('id="run-summary"', 1)[1].split("</table>", 1)[0]
    assert '<th scope="row">held-out, after training: mean reward</th><td>0.5</td>' in summary
    assert "<td>…/run-4</td>" in summary and "/srv/aw" not in body
    assert "&quot;learning_rate&quot;" not in body  # no raw JSON for a viewer
    client.force_login(reviewer)
    raw = client.get(url).content.decode()
    assert "<details" in raw and "&quot;learning_rate&quot;: 1e-05" in raw
