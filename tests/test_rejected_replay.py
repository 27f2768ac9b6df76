"""What a rejection changes is true in the next training set: an environment whose every
proposal of the round was rejected contributes no replayed task (arena.rejections)."""

from __future__ import annotations

import pytest

from arena import steps
from arena.models import ExpansionProposal
from arena.rejections import rejected_environments
from arena.steps import round_training_set
from tasks.models import Task
from tests.support import factories
from training.models import TrainingRun


class Context:
    job = None

    def progress(self, fraction: float, message: str = "") -> None:
        return None

    def log(self, line: str) -> None:
        self.lines = [*getattr(self, "lines", []), line]


def train_tasks(environment, count: int, **fields) -> list[Task]:
    return [
        factories.make_task(environment, split=Task.Split.TRAIN, instruction=f"t{i}", **fields)
        for i in range(count)
    ]


def proposal(evolution_round, environment, status, **fields) -> ExpansionProposal:
    return factories.make_proposal(
        evolution_round, environment=environment, status=status, **fields
    )


@pytest.fixture
def reviewed_round(db):
    """Evaluated in four environments: approved (applied, 3 new tasks), rejected (all its
    proposals), mixed (one rejected, one approved but failed) and untouched (no proposal)."""
    evolution_round = factories.make_round(status="training", seed=3)
    evolution_round.config = {"replay_ratio": 4.0}  # 12 asked, 9 exist: every one
    evolution_round.save()
    envs = {n: factories.make_environment(n, tasks=0) for n in ("approved", "rejected", "mixed")}
    envs["untouched"] = factories.make_environment("untouched", tasks=0)
    factories.make_evaluation(evolution_round).environments.set(envs.values())
    replayable = {name: train_tasks(env, 3) for name, env in envs.items()}
    new = train_tasks(envs["approved"], 3, round_number=evolution_round.number)
    proposal(
        evolution_round,
        envs["approved"],
        ExpansionProposal.Status.APPLIED,
        result={"tasks": [t.pk for t in new], "tasks_created": 3},
    )
    proposal(evolution_round, envs["rejected"], ExpansionProposal.Status.REJECTED)
    proposal(evolution_round, envs["rejected"], ExpansionProposal.Status.REJECTED)
    proposal(evolution_round, envs["mixed"], ExpansionProposal.Status.REJECTED)
    proposal(evolution_round, envs["mixed"], ExpansionProposal.Status.FAILED)
    return {"round": evolution_round, "envs": envs, "replayable": replayable, "new": new}


def test_only_environments_with_every_proposal_rejected_are_left_out(reviewed_round):
    assert rejected_environments(reviewed_round["round"]) == {"rejected"}


def test_the_training_set_replays_no_task_of_a_rejected_environment(reviewed_round):
    evolution_round = reviewed_round["round"]
    run = TrainingRun.objects.create(base_policy=evolution_round.policy)
    links = round_training_set(evolution_round, run)
    expansion = {link.task_id for link in links if link.source == "expansion"}
    replayed = {link.task.environment.name for link in links if link.source == "replay"}
    assert expansion == {t.pk for t in reviewed_round["new"]}
    assert replayed == {"approved", "mixed", "untouched"}  # every replayable task but rejected's
    rejected_ids = {t.pk for t in reviewed_round["replayable"]["rejected"]}
    assert not rejected_ids & {link.task_id for link in links}
    assert len(links) == 3 + 3 * 3


def test_without_expansions_the_fallback_replay_also_skips_rejected(reviewed_round):
    evolution_round = reviewed_round["round"]
    evolution_round.proposals.filter(status="applied").update(status="rejected")
    run = TrainingRun.objects.create(base_policy=evolution_round.policy)
    environments = {link.task.environment.name for link in round_training_set(evolution_round, run)}
    assert environments == {"mixed", "untouched"}


def test_a_round_with_nothing_left_to_train_skips_training(db, monkeypatch):
    """Every evaluated environment rejected: no fall back to training on every environment."""
    evolution_round = factories.make_round(status="training")
    only = factories.make_environment("only", tasks=0)
    factories.make_evaluation(evolution_round).environments.set([only])
    train_tasks(only, 3)
    factories.make_environment("elsewhere", tasks=0)
    proposal(evolution_round, only, ExpansionProposal.Status.REJECTED)

    def must_not_train(*args, **kwargs):
        raise AssertionError("trained although every proposal was rejected")

    monkeypatch.setattr(steps, "train_policy", must_not_train)
    ctx = Context()
    result = steps.train(evolution_round, ctx)
    assert "nothing to train on: every proposal of only was rejected" in result["skipped"]
    assert ctx.lines == [result["skipped"]]
    assert not TrainingRun.objects.exists()
    evolution_round.refresh_from_db()
    assert evolution_round.training_run is None
