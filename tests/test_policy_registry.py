"""Policies as a user has them: the AW_POLICY_* endpoint registered where the app starts and
lists policies, the checkpoint an endpoint serves (API, console), training an endpoint policy,
and failures of a configured endpoint or LLM that are never silent."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.urls import reverse

from arena.rounds import default_policy
from aw_site.jobs import execute_job, job
from aw_site.llm import LLMSettings
from aw_site.models import Job
from environments.discovery.classify import classify_with_llm
from environments.runtime import SandboxPool
from tests.support.factories import make_environment, make_package_environment, make_task
from tests.support.openai_server import ScriptedOpenAIServer, error_reply
from training import signals
from training.models import Policy, TrainingRun
from training.policies import PolicyError
from training.service import ensure_env_policy, evaluate_tasks

pytestmark = pytest.mark.django_db

ENDPOINT = "http://vllm.internal:8000/v1"


@pytest.fixture
def env_policy(monkeypatch):
    monkeypatch.setenv("AW_POLICY_BASE_URL", ENDPOINT)
    monkeypatch.setenv("AW_POLICY_MODEL", "Qwen/Qwen2.5-0.5B-Instruct")
    monkeypatch.setenv("AW_POLICY_CHECKPOINT", "Qwen/Qwen2.5-0.5B-Instruct")
    monkeypatch.delenv("AW_POLICY_NAME", raising=False)


def test_the_env_policy_is_registered_once_and_listed(env_policy, viewer_api, monkeypatch):
    listed = viewer_api.get("/api/policies/").json()["results"]  # listing registers it
    assert [(p["name"], p["version"], p["kind"]) for p in listed] == [
        ("qwen25-05b-instruct", 1, "openai")
    ]
    assert listed[0]["base_url"] == ENDPOINT
    assert listed[0]["model_name"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert listed[0]["serves_checkpoint"] == "Qwen/Qwen2.5-0.5B-Instruct"
    first = Policy.objects.get()
    assert ensure_env_policy() == first
    signals.on_worker_ready()  # a Celery worker starting
    signals.after_migrate(using="default")  # manage.py migrate
    assert Policy.objects.count() == 1 and default_policy() == first

    # Pointing the variables at another checkpoint registers the next version, once.
    monkeypatch.setenv("AW_POLICY_CHECKPOINT", "/srv/checkpoints/run-7")
    second = ensure_env_policy()
    assert (second.name, second.version, second.serves_checkpoint) == (
        first.name,
        2,
        "/srv/checkpoints/run-7",
    )
    assert ensure_env_policy() == second and Policy.objects.count() == 2


def test_without_the_variables_nothing_is_registered(monkeypatch, viewer_api):
    monkeypatch.delenv("AW_POLICY_BASE_URL", raising=False)
    assert ensure_env_policy() is None
    assert viewer_api.get("/api/policies/").json()["count"] == 0


def test_the_api_sets_the_served_checkpoint(reviewer_api):
    response = reviewer_api.post(
        "/api/policies/",
        {
            "name": "served",
            "kind": "openai",
            "base_url": ENDPOINT,
            "serves_checkpoint": "org/model-7b",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["serves_checkpoint"] == "org/model-7b"
    again = reviewer_api.post(
        "/api/policies/",
        {"name": "served", "kind": "openai", "base_url": ENDPOINT, "serves_checkpoint": "/ckpt/2"},
        format="json",
    )
    assert again.status_code == 201 and again.json()["version"] == 2  # the next version
    refused = reviewer_api.post(
        "/api/policies/",
        {"name": "local", "kind": "local_hf", "serves_checkpoint": "org/model-7b"},
        format="json",
    )
    assert refused.status_code == 400
    assert "only an endpoint (openai) policy serves a checkpoint" in refused.json()["error"]


@pytest.mark.parametrize(
    "address, accepted",
    [
        ("http://vllm:8000/v1", True),  # a compose or cluster service name
        ("https://api.example.org/v1", True),
        ("http://10.1.2.3:8000/v1", True),
        ("ftp://vllm/v1", False),
        ("http://:8000/v1", False),
        ("http://vllm:port/v1", False),
        ("vllm:8000", False),
    ],
)
def test_endpoint_addresses_with_single_label_hosts_are_accepted(reviewer_api, address, accepted):
    response = reviewer_api.post(
        "/api/policies/",
        {"name": "remote", "kind": "openai", "base_url": address, "model_name": "m"},
        format="json",
    )
    assert (response.status_code == 201) is accepted, response.content
    if not accepted:
        assert "base_url" in str(response.json()), response.json()


def test_the_console_form_registers_an_endpoint_policy(client, reviewer, viewer, env_policy):
    client.force_login(reviewer)
    page = client.get(reverse("policy-list"))
    assert page.status_code == 200
    assert b"qwen25-05b-instruct" in page.content and b'id="new-policy"' in page.content
    form = {
        "name": "my-vllm",
        "base_url": "http://127.0.0.1:8001/v1",
        "model_name": "mine",
        "serves_checkpoint": "/srv/ckpt",
    }
    response = client.post(reverse("policy-create"), form)
    assert response.status_code == 302
    made = Policy.objects.get(name="my-vllm")
    assert (made.kind, made.serves_checkpoint, made.version) == ("openai", "/srv/ckpt", 1)
    bad = client.post(reverse("policy-create"), {**form, "base_url": ""})
    assert bad.status_code == 400 and b"needs a base_url" in bad.content
    client.force_login(viewer)
    assert b'id="new-policy"' not in client.get(reverse("policy-list")).content
    assert client.post(reverse("policy-create"), form).status_code == 403


# --- training an endpoint policy ------------------------------------------------------------


def training_run(policy: Policy) -> TrainingRun:
    environment = make_environment("bookstore")
    make_task(environment, split="train")
    run = TrainingRun.objects.create(base_policy=policy, config={"grpo_steps": 1})
    run.environments.set([environment])
    return run


def test_training_an_endpoint_policy_without_a_checkpoint_fails_clearly():
    policy = Policy.objects.create(name="remote", kind=Policy.Kind.OPENAI, base_url=ENDPOINT)
    run = training_run(policy)
    record = Job.objects.create(kind="training.train", arguments={"run": run.pk})
    assert execute_job(record.pk, "gpu-worker") == Job.State.FAILED
    record.refresh_from_db()
    run.refresh_from_db()
    assert "names no checkpoint it serves" in record.error
    assert "AW_POLICY_CHECKPOINT" in record.error
    assert run.status == "failed" and "names no checkpoint it serves" in run.failure_reason


def test_training_an_endpoint_policy_trains_the_checkpoint_it_serves(
    env_policy, settings, tmp_path
):
    from training.service import train

    settings.STORAGE_ROOT = tmp_path
    seen = {}

    def fake_training(config, tasks=None, on_metrics=None, on_checkpoint=None, **more):
        seen["model_path"] = config.model_path
        final = tmp_path / "final"
        final.mkdir()
        on_checkpoint(str(final))
        return SimpleNamespace(
            final_checkpoint=str(final),
            gold={},
            sft=None,
            grpo={},
            eval_before=None,
            eval_after=None,
        )

    base = ensure_env_policy()
    run = train(training_run(base), trainer=fake_training)
    assert seen["model_path"] == "Qwen/Qwen2.5-0.5B-Instruct"
    trained = run.output_policy
    assert (trained.name, trained.version, trained.kind) == (base.name, 2, "local_hf")
    assert trained.parent == base and trained.checkpoint_path == str(tmp_path / "final")
    assert f"from endpoint policy {base}" in trained.description
    assert ensure_env_policy() == base  # the trained local version is not the endpoint's


# --- failures of a configured endpoint or LLM are visible -----------------------------------


def test_an_endpoint_that_fails_fails_the_evaluation_with_its_message(tmp_path, monkeypatch):
    monkeypatch.setenv("AW_POLICY_MAX_ATTEMPTS", "2")
    environment = make_package_environment(tmp_path)
    task = make_task(
        environment,
        instruction="What is the title of book 1?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}}],
        reference_answer="Dune",
        write_steps=0,
    )
    down = error_reply(503, "no healthy upstream")
    too_long = error_reply(400, "This model's maximum context length is 4096 tokens.")
    with SandboxPool(workers=1) as pool:
        with ScriptedOpenAIServer(lambda body: down) as server:
            policy = Policy.objects.create(
                name="remote", kind=Policy.Kind.OPENAI, base_url=server.base_url
            )
            with pytest.raises(PolicyError) as caught:
                evaluate_tasks(policy, [task], pool)
        assert "remote v1 failed in 1 of 1 episodes" in str(caught.value)
        assert "after 2 attempts: HTTP 503: no healthy upstream" in str(caught.value)

        # A conversation too long for the model fails its episode, not the evaluation.
        with ScriptedOpenAIServer(lambda body: too_long) as server:
            policy.base_url = server.base_url
            [(_, trajectory)] = evaluate_tasks(policy, [task], pool)
        assert trajectory.finished_reason == "policy_error"
        assert not trajectory.reward.success


@job("tests.classify_theme")
def classify_theme_job(ctx, base_url: str) -> dict:
    settings = LLMSettings(base_url, "m", "k", max_attempts=1)
    theme = {"name": "flights", "title": "Flight search", "description": "Airports and routes."}
    return {"method": classify_with_llm(theme, settings).method}


def test_a_job_records_the_llm_failures_it_carried_on_without():
    down = error_reply(500, "model overloaded")
    with ScriptedOpenAIServer(lambda body: down) as server:
        record = Job.objects.create(
            kind="tests.classify_theme", arguments={"base_url": server.base_url}
        )
        assert execute_job(record.pk, "worker") == Job.State.SUCCEEDED
    record.refresh_from_db()
    assert record.result["method"] != "llm"
    [warning] = record.result["llm_warnings"]
    assert warning.startswith("theme classification of flights: LLM request to")
    assert "HTTP 500: model overloaded" in warning
    assert "warning: the LLM failed and the job went on without it" in record.log_tail
