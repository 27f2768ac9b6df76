"""A failed run's replay says why it failed in words, and shows a viewer no server path and no
label evidence as raw JSON."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.models import FailureLabel
from tests.support import factories

PATH = "/srv/agent-world/environments/runtime/sandbox_worker.py"


@pytest.fixture
def policy_error_run(db):
    task = factories.make_task(factories.make_environment("warehouse"), split="arena")
    run = factories.make_trajectory(
        task,
        factories.make_policy(kind="local_hf"),
        steps=[
            {"role": "assistant", "content": ""},
            {
                "role": "assistant",
                "content": "Calling the tool.",
                "error": f'Traceback: File "{PATH}", line 12: RuntimeError',
                "error_kind": "tool_error",
            },
        ],
        reward={"answer": {"score": 0.0, "reason": "answer 'x' differs"}, "total": 0.0},
        finished_reason="policy_error",
        final_answer="",
    )
    FailureLabel.objects.create(
        trajectory=run, label="tool_error", evidence={"steps": [2], "capability": "tool use"}
    )
    return run


def replay(client, user, run) -> str:
    client.force_login(user)
    return client.get(reverse("trajectory-detail", args=[run.pk])).content.decode()


def test_viewer_reads_why_in_words_without_server_paths_or_raw_evidence(
    client, viewer, policy_error_run
):
    body = replay(client, viewer, policy_error_run)
    assert "Why this run failed" in body
    assert "The policy failed while producing a step (policy error)." in body
    assert "The model answered with an empty message at step 1." in body
    assert "The final answer did not match the expected answer." in body
    assert PATH not in body and "File &quot;[server path]&quot;, line 12" in body
    assert "at step 2 · capability: tool use" in body and "&quot;capability&quot;" not in body


def test_reviewer_sees_the_path_and_the_raw_evidence(client, reviewer, policy_error_run):
    body = replay(client, reviewer, policy_error_run)
    assert "Why this run failed" in body and PATH in body
    assert "&quot;capability&quot;: &quot;tool use&quot;" in body


def test_a_solved_run_has_no_failure_summary(client, viewer, db):
    task = factories.make_task(factories.make_environment("shop"), split="train")
    solved = factories.make_trajectory(task, success=True)
    assert "Why this run failed" not in replay(client, viewer, solved)
