"""The scoreboard aggregates rewards per group and shows the change since the last round."""

from __future__ import annotations

import pytest

from arena.diagnosis import EvaluatedEpisode
from arena.scoreboard import EpisodeResult, Scoreboard, build_scoreboard, compare
from tasks.reward_breakdown import RewardBreakdown, RewardComponent
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Trajectory


def result(category, env, reward, success, kind="graph", difficulty="3"):
    return EpisodeResult(env, category, kind, difficulty, reward, success)


def previous_round():
    return build_scoreboard(
        [
            result("Travel", "airports", 0.2, False),
            result("Travel", "airports", 0.6, False),
            result("Finance", "ledger", 1.0, True, kind="programmatic", difficulty="2"),
            result("Health", "clinic", 0.5, False),
        ]
    )


def current_round():
    return build_scoreboard(
        [
            result("Travel", "airports", 1.0, True),
            result("Travel", "airports", 0.6, False),
            result("Finance", "ledger", 0.5, False, kind="programmatic", difficulty="2"),
            result("Food", "recipes", 1.0, True),
        ]
    )


def test_aggregates_per_category_environment_kind_and_difficulty():
    board = current_round().to_dict()
    assert board["overall"] == {
        "episodes": 4,
        "successes": 2,
        "success_rate": 0.5,
        "success_interval": [0.15, 0.85],  # Wilson 95% of 2 in 4
        "mean_reward": 0.775,
    }
    assert board["category"]["Travel"]["mean_reward"] == 0.8
    assert board["environment"]["ledger"]["success_rate"] == 0.0
    assert board["task_kind"]["graph"]["episodes"] == 3
    assert board["difficulty"]["2"]["episodes"] == 1


def test_category_deltas_against_previous_round():
    deltas = compare(current_round(), previous_round())
    travel = deltas["category"]["Travel"]
    assert travel["mean_reward"] == pytest.approx(0.4)
    assert travel["success_rate"] == pytest.approx(0.5)
    assert deltas["category"]["Finance"]["success_rate"] == pytest.approx(-1.0)
    assert deltas["category"]["Food"]["mean_reward"] is None  # new this round
    assert deltas["category"]["Health"]["current_episodes"] == 0  # dropped, still listed
    assert deltas["overall"]["mean_reward"] == pytest.approx(0.775 - 0.575)


def test_comparison_survives_storage_round_trip():
    stored = Scoreboard.from_dict(previous_round().to_dict())
    assert compare(current_round(), stored) == compare(current_round(), previous_round())


def test_first_round_has_no_deltas():
    deltas = compare(current_round(), None, dimension="environment")
    assert all(d["mean_reward"] is None for d in deltas["environment"].values())


def test_builds_from_evaluated_episodes():
    episode = EvaluatedEpisode(
        trajectory=Trajectory(task_id="", environment="airports", finished_reason="answer"),
        task=TaskSpec(
            kind="graph", environment="airports", instruction="", difficulty={"walk_length": 4}
        ),
        reward=RewardBreakdown(
            total=0.9,
            success=True,
            components={
                "answer": RewardComponent(1.0, 1.0, ""),
                "state": RewardComponent(1.0, 1.0, ""),
            },
        ),
        environment="airports",
        category={"primary": "Travel"},
    )
    board = build_scoreboard([episode]).to_dict()
    assert board["difficulty"] == {
        "4": {
            "episodes": 1,
            "successes": 1,
            "success_rate": 1.0,
            "success_interval": [0.2065, 1.0],
            "mean_reward": 0.9,
        }
    }
    assert board["category"]["Travel"]["successes"] == 1


def test_wilson_interval_is_honest_at_the_edges():
    from aw_site.stats import wilson_interval

    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.15 < high < 0.17  # no success in 20 still allows ~16%
    low, high = wilson_interval(200, 400)
    assert 0.45 < low < 0.5 < high < 0.55
