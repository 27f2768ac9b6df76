"""Expansion proposals follow from a diagnosis and carry the failures that justify them."""

from __future__ import annotations

import copy

import pytest

from arena.diagnosis import diagnose
from arena.proposals import Proposal, ProposalPolicy, propose_expansions
from tests.test_arena_diagnosis import (
    answer_step,
    call_step,
    episode,
    failed_state,
    reward,
    solved_trajectory,
)

FOOD = {"primary": "Food & Drink", "secondary": "Recipes"}


def premature():
    trajectory = failed_state(solved_trajectory(), {})
    trajectory.steps = [trajectory.steps[0], answer_step(1, "1")]
    return trajectory


def tool_error():
    trajectory = failed_state(solved_trajectory(), {})
    trajectory.steps[2] = call_step(
        2,
        "create_booking",
        {"flight_id": 99, "passenger": "Ada"},
        error="LookupError: no flight 99",
        error_kind="tool_error",
    )
    return trajectory


def wrong_answer():
    trajectory = solved_trajectory()
    trajectory.final_answer = "2"
    return trajectory


def round_summary():
    episodes = [
        episode(premature(), reward(state=0.0)),
        episode(premature(), reward(state=0.0)),
        episode(premature(), reward(state=0.0)),
        episode(tool_error(), reward(state=0.0)),
        episode(tool_error(), reward(state=0.0)),
        episode(solved_trajectory(), reward(), environment="recipes", category=FOOD),
        episode(wrong_answer(), reward(answer=0.0), environment="recipes", category=FOOD),
        episode(wrong_answer(), reward(answer=0.0), environment="recipes", category=FOOD),
    ]
    return diagnose(episodes, llm=None)


def by_focus(proposals):
    return {(p.kind, p.environment, p.params.get("focus")): p for p in proposals}


def test_planning_failures_propose_longer_chains_with_evidence():
    proposals = by_focus(propose_expansions(round_summary()))
    planning = proposals[("more_tasks", "airports", "multi-step planning")]
    assert planning.params["min_walk_length"] == 4  # longest failed gold chain (3) + 1
    assert planning.params["count"] == 20
    assert planning.params["max_walk_length"] == 7 and planning.params["tier"] == "goal"
    # the tool-error episodes did call create_booking (it raised): not an early answer
    assert planning.evidence["labels"] == {"premature_answer": 3}
    assert planning.evidence["failed_episodes"] == 3
    example = planning.evidence["examples"][0]
    assert example["label"] == "premature_answer" and example["steps"] == [1]
    assert "premature_answer x3" in planning.rationale


def test_state_failures_propose_write_heavy_tasks():
    proposals = by_focus(propose_expansions(round_summary()))
    state = proposals[("more_tasks", "airports", "state updates")]
    assert state.params["write_steps"] == 2
    assert state.evidence["labels"] == {"missing_state_update": 5}


def test_tool_errors_propose_database_complexification_around_the_tool():
    proposals = by_focus(propose_expansions(round_summary()))
    complexify = proposals[("complexify_database", "airports", "argument grounding")]
    assert complexify.params["tools"] == ["create_booking"]
    assert complexify.params["rows_per_table"] == 25 and complexify.params["tasks"] == 20
    assert complexify.evidence["labels"] == {"tool_error": 2, "wrong_arguments": 2}
    assert "no flight 99" in complexify.evidence["examples"][0]["explanation"]


def test_weakest_subcategory_gets_a_new_environment():
    proposals = propose_expansions(round_summary())
    (new_env,) = [p for p in proposals if p.kind == "new_environment"]
    assert new_env.environment is None
    assert new_env.category["secondary"] == "Flights"
    assert new_env.params["subcategory"] == "Travel & Transportation / Flights"
    assert new_env.params["exclude"] == ["airports"]
    assert new_env.evidence["success_rate"] == 0.0
    assert new_env.evidence["failed_episodes"] == 5


def test_proposals_are_deterministic_ordered_by_evidence_and_capped():
    first = [p.to_dict() for p in propose_expansions(round_summary())]
    assert first == [p.to_dict() for p in propose_expansions(round_summary())]
    counts = [p["evidence"]["failed_episodes"] for p in first]
    assert counts == sorted(counts, reverse=True)
    capped = propose_expansions(round_summary(), ProposalPolicy(max_proposals=2))
    assert [p.to_dict() for p in capped] == first[:2]


def test_single_failures_below_threshold_propose_nothing():
    summary = diagnose(
        [episode(copy.deepcopy(wrong_answer()), reward(answer=0.0), environment="solo")], llm=None
    )
    assert propose_expansions(summary) == []
    (only,) = [
        p
        for p in propose_expansions(summary, ProposalPolicy(min_failures=1))
        if p.kind == "more_tasks"
    ]
    assert only.params["focus"] == "answer synthesis"


def test_unknown_proposal_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown proposal kind"):
        Proposal("retrain_everything", None, "", {}, "")


def test_every_proposal_kind_round_trips_through_its_typed_parameters():
    """Proposer and applier share one class per kind: what the proposer writes validates, an
    unknown or out-of-range field is refused with its name."""
    from arena.proposal_params import PARAMS_BY_KIND, params_for

    proposals = propose_expansions(round_summary())
    assert {p.kind for p in proposals} == set(PARAMS_BY_KIND)
    for proposal in proposals:
        typed = params_for(proposal.kind, proposal.params)
        assert typed.model_dump() == proposal.params
    with pytest.raises(ValueError, match="extra_rows"):
        params_for("complexify_database", {"extra_rows": 5})
    with pytest.raises(ValueError, match="count"):
        params_for("more_tasks", {"count": 0})
    with pytest.raises(ValueError, match="max_walk_length is below"):
        params_for("more_tasks", {"min_walk_length": 5, "max_walk_length": 2})


def test_failed_bulk_programs_propose_programs_not_giant_walks():
    """A program that loops over rows makes many calls and writes; more programmatic tasks
    train that, where a graph walk as long as its call count (with as many writes) would not."""
    from tests.test_arena_diagnosis import booking_task

    bulk = booking_task()
    bulk.kind = "programmatic"
    bulk.gold_chain = bulk.gold_chain * 6  # 18 calls
    bulk.expected_diff["booking"]["added"] *= 18  # 18 writes
    episodes = [episode(premature(), reward(state=0.0), task=copy.deepcopy(bulk)) for _ in range(3)]
    proposals = by_focus(propose_expansions(diagnose(episodes, llm=None)))
    planning = proposals[("more_tasks", "airports", "multi-step planning")]
    assert planning.params["task_kind"] == "programmatic"
    assert planning.params["min_walk_length"] == ProposalPolicy().min_walk_length
    state = proposals[("more_tasks", "airports", "state updates")]
    assert state.params["task_kind"] == "programmatic"
    assert state.params["write_steps"] <= ProposalPolicy().max_write_steps
