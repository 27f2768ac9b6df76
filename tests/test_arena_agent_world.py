"""An arena round on an imported Agent-World environment: the round samples it, synthesizes
fresh held-out tasks on its JSON collections, a scripted endpoint policy plays them over real
HTTP, the shared reward scores them, and diagnosis labels the failures from the trajectories'
evidence and proposes expansions for the environment. The same fresh tasks replayed by the gold
policy score full marks, so the failures are the agent's, not the tasks'."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from arena.models import FailureLabel
from arena.steps import diagnose, evaluate
from environments.models import Environment
from environments.runtime import SandboxPool
from tasks.gold_tools import gold_tools
from tasks.models import Task
from tests.support import factories
from tests.support.agent_world_release import SHOP, write_shop_release
from tests.support.job_context import QuietJobContext
from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply
from training.models import Policy, Trajectory
from training.service import evaluate_tasks


def scripted_agent(body: dict) -> dict:
    """Calls a tool the environment does not have, then a real one on an order that does not
    exist, then answers without the data."""
    turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if turns == 0:
        return tool_call_reply("refund_order", {"order_id": "o_101"})
    if turns == 1:
        return tool_call_reply("get_order", {"order_id": "o_999"})
    return text_reply('{"answer": "no idea"}')


@pytest.mark.django_db(transaction=True)
def test_a_round_evaluates_and_diagnoses_fresh_tasks_on_an_imported_environment(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    release = write_shop_release(tmp_path / "release")
    call_command("build_environment", agent_world=str(release), env=[SHOP], stdout=StringIO())
    shop = Environment.objects.get(name=f"aw_{SHOP}", status="verified")
    assert shop.origin == "agent_world"

    with ScriptedOpenAIServer(scripted_agent) as server:
        policy = factories.make_policy(
            kind=Policy.Kind.OPENAI, base_url=server.base_url, model_name="scripted"
        )
        evolution_round = factories.make_round(
            policy=policy,
            status="evaluating",
            seed=7,
            scores={},
            config={
                "tasks_per_environment": 3,
                "max_walk_length": 3,
                "programmatic_share": 0.34,
                "train": False,
            },
        )
        evaluated = evaluate(evolution_round, QuietJobContext())
    assert evaluated["episodes"] == 3 and evaluated["success_rate"] == 0.0, evaluated

    evaluation = evolution_round.evaluations.get()
    assert list(evaluation.environments.all()) == [shop]
    tasks = list(Task.objects.filter(environment=shop, split="arena"))
    assert len(tasks) == 3 and {t.round_number for t in tasks} == {evolution_round.number}
    assert "programmatic" in {t.kind for t in tasks}, [t.kind for t in tasks]
    trajectories = list(Trajectory.objects.filter(task__in=tasks))
    assert len(trajectories) == 3 and not any(t.success for t in trajectories)
    category = shop.manifest["category"]["primary"]
    assert set(evaluation.results["category"]) == {category}

    with SandboxPool(workers=1) as pool:
        gold = evaluate_tasks(factories.make_policy(kind=Policy.Kind.GOLD), tasks, pool)
    assert all(trajectory.reward.success for _task, trajectory in gold), [
        (task.instruction, trajectory.reward) for task, trajectory in gold
    ]

    diagnosed = diagnose(evolution_round, QuietJobContext())
    report = evolution_round.diagnoses.get()
    labelled = FailureLabel.objects.filter(report=report)
    assert labelled.values("trajectory").distinct().count() == 3 == diagnosed["failures"]
    by_label = report.distribution["episodes_by_label"]
    assert by_label["invalid_tool_call"] == 3, by_label
    unknown = labelled.filter(label="invalid_tool_call").first().evidence
    assert "refund_order" in str(unknown), unknown
    assert by_label["premature_answer"] == by_label["wrong_answer"] == 3, by_label
    writes = [t for t in tasks if "update_order_status" in gold_tools({"gold_chain": t.gold_chain})]
    assert writes and by_label.get("missing_state_update", 0) == len(writes), by_label
    (scores,) = report.weakest["environment_scores"]
    assert (scores["name"], scores["episodes"], scores["success_rate"]) == (shop.name, 3, 0.0)
    assert report.weakest["environments"] == [shop.name]
    proposals = list(evolution_round.proposals.all())
    assert proposals and diagnosed["proposals"] == len(proposals)
    more = [p for p in proposals if p.kind == "more_tasks"]
    assert more and {p.environment_id for p in more} == {shop.pk}, proposals
    released = set(shop.tools.values_list("name", flat=True))
    assert {tool for p in more for tool in p.params["tools"]} <= released
