"""Live job pages, training runs with reward curves, and the home overview."""

from __future__ import annotations

import pytest
from django.urls import reverse

from aw_site.models import Job
from tests.support import factories
from training.models import TrainingRun


@pytest.fixture
def signed_in(client, viewer):
    client.force_login(viewer)
    return client


@pytest.mark.django_db
def test_job_list_shows_progress_and_log_tail_of_running_jobs(signed_in):
    running = factories.make_job("environments.mine", progress=0.3, log="[12:00:00] mined 40 rows")
    done = factories.make_job("tasks.synthesize", state=Job.State.SUCCEEDED, progress=1.0)
    body = signed_in.get(reverse("job-list")).content.decode()
    assert f'hx-get="/jobs/{running.pk}/progress/"' in body
    assert f'hx-get="/jobs/{done.pk}/progress/"' not in body  # finished jobs do not poll
    assert "mined 40 rows" in body and 'aria-valuenow="30"' in body


@pytest.mark.django_db
def test_job_list_filters(signed_in):
    factories.make_job("environments.mine")
    factories.make_job("tasks.synthesize", state=Job.State.FAILED, error="boom")
    kinds = lambda **p: [j.kind for j in signed_in.get(reverse("job-list"), p).context["page"]]  # noqa: E731
    assert kinds(state="active") == ["environments.mine"]
    assert kinds(state="failed") == ["tasks.synthesize"]
    assert kinds(kind="environments.mine") == ["environments.mine"]


@pytest.mark.django_db
def test_progress_fragment_follows_the_job_until_it_finishes(signed_in):
    job = factories.make_job(progress=0.1)
    url = reverse("job-progress", args=[job.pk])
    first = signed_in.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in first and "10%" in first
    Job.objects.filter(pk=job.pk).update(
        progress=0.65, message="halfway", log_tail="line one\nline two"
    )
    second = signed_in.get(url).content.decode()
    assert "65%" in second and "halfway" in second and "line two" in second
    Job.objects.filter(pk=job.pk).update(state=Job.State.FAILED, error="RuntimeError: lost")
    last = signed_in.get(url).content.decode()
    assert "hx-trigger" not in last and "RuntimeError: lost" in last
    assert "line two" not in signed_in.get(url, {"log": "0"}).content.decode()


@pytest.mark.django_db
def test_job_detail(signed_in, client, reviewer):
    job = factories.make_job(
        arguments={"round": 3, "output_dir": "/srv/aw/runs/3"}, target="round:3"
    )
    body = signed_in.get(reverse("job-detail", args=[job.pk])).content.decode()
    # Arguments as a table of plain names and values; a server path by its last part only.
    assert "round:3" in body and '<th scope="row">round</th><td>3</td>' in body
    assert '<th scope="row">output dir</th><td>…/3</td>' in body and "/srv/aw" not in body
    client.force_login(reviewer)
    raw = client.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert "<details" in raw and "&quot;output_dir&quot;: &quot;/srv/aw/runs/3&quot;" in raw


@pytest.mark.django_db
def test_a_training_job_says_whether_a_gpu_or_the_cpu_runs_it(signed_in, monkeypatch):
    from aw_site.templatetags import console

    job = factories.make_job("training.run", queue=Job.Queue.GPU)
    factories.make_job("tasks.synthesize")
    console._has_gpu.cache_clear()
    monkeypatch.setattr(console, "_has_gpu", lambda: False)
    listed = signed_in.get(reverse("job-list")).content.decode()
    assert '<span class="badge" data-queue="gpu">training (CPU)</span>' in listed
    assert '<span class="badge" data-queue="default">general</span>' in listed
    monkeypatch.setattr(console, "_has_gpu", lambda: True)
    detail = signed_in.get(reverse("job-detail", args=[job.pk])).content.decode()
    assert '<dd data-queue="gpu">training (GPU)</dd>' in detail


@pytest.mark.django_db
def test_training_run_pages_draw_reward_curves(signed_in):
    run = factories.make_training_run(metrics=6)
    assert f"/training/{run.pk}/" in signed_in.get(reverse("training-run-list")).content.decode()
    body = signed_in.get(reverse("training-run-detail", args=[run.pk])).content.decode()
    assert 'data-series="reward_mean"' in body and 'data-series="success_rate"' in body
    assert 'data-series="kl"' in body and 'data-series="loss"' in body
    assert "1.6k" in body  # tokens per second of the last step
    # GRPO signal: groups without reward variance, tool calls per rollout, budget cuts.
    assert 'data-series="frac_reward_zero_std"' in body
    assert 'data-series="tools/call_frequency"' in body
    assert 'data-latest="frac_reward_zero_std">25%' in body  # 0.75 - 0.1 * 5
    assert 'hx-get="/training/' not in body  # a finished run does not poll


@pytest.mark.django_db
def test_running_training_run_polls_its_metrics(signed_in):
    job = factories.make_job("training.grpo", progress=0.2)
    run = factories.make_training_run(metrics=2, status=TrainingRun.Status.RUNNING, job=job)
    url = reverse("training-run-metrics", args=[run.pk])
    body = signed_in.get(url).content.decode()
    assert f'hx-get="{url}"' in body and 'data-metric-count="2"' in body
    factories.add_metric(run, 2)
    assert 'data-metric-count="3"' in signed_in.get(url).content.decode()


@pytest.mark.django_db
def test_home_overview(signed_in):
    scene = factories.make_review_scene()
    factories.make_job("environments.mine", progress=0.5)
    body = signed_in.get(reverse("home")).content.decode()
    assert f"Round {scene['round'].number}" in body
    assert "environments.mine" in body


@pytest.mark.django_db
def test_a_reviewer_starts_a_training_run_from_the_console(client, reviewer, viewer):
    policy = factories.make_policy(kind="local_hf")
    environment = factories.make_environment()
    url = reverse("training-run-new")
    client.force_login(viewer)
    assert client.get(url).status_code == 403
    client.force_login(reviewer)
    form = client.get(url).content.decode()
    for name in ("max_completion_length", "use_lora", "bf16", "use_vllm", "vllm_mode"):
        assert f'name="{name}"' in form
    bad = client.post(url, {"base_policy": policy.pk, "num_generations": "1", "use_vllm": "on"})
    assert bad.status_code == 400 and TrainingRun.objects.count() == 0
    page = bad.content.decode()
    assert "num_generations" in page and "greater than or equal to 2" in page
    replay = factories.make_policy(kind="fault_injection")
    refused = client.post(url, {"base_policy": replay.pk, "environments": [environment.pk]})
    assert refused.status_code == 400 and TrainingRun.objects.count() == 0
    assert "has no weights to train" in refused.content.decode()
    good = client.post(
        url,
        {
            "base_policy": policy.pk,
            "environments": [environment.pk],
            "max_completion_length": "2048",
            "learning_rate": "3e-6",
            "gradient_checkpointing": "on",
            "eval_before_after": "on",
            "learnability_filter": "on",
        },
    )
    run = TrainingRun.objects.get()
    assert good.status_code == 302 and good["Location"] == f"/training/{run.pk}/"
    assert run.config == {
        "max_completion_length": 2048,
        "learning_rate": 3e-6,
        "gradient_checkpointing": True,
    }
    assert list(run.environments.all()) == [environment]
    assert run.job.kind == "training.train" and run.base_policy == policy
