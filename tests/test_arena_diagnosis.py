"""Diagnosis labels each failure from executable evidence and aggregates where the policy fails."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from arena.diagnosis import EvaluatedEpisode, diagnose, diagnose_episode, is_success
from arena.error_taxonomy import ERROR_LABELS, compare_state_diffs, label_failure
from tasks.reward_breakdown import RewardBreakdown, RewardComponent
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Step, ToolCall, Trajectory

TOOL_KINDS = {"get_airport": "read", "list_flights": "read", "create_booking": "write"}
CATEGORY = {"primary": "Travel & Transportation", "secondary": "Flights", "tertiary": "Airports"}
GOLD_HASH = "hash-after-gold-run"


def booking_task() -> TaskSpec:
    return TaskSpec(
        kind="graph",
        environment="airports",
        instruction="Book the first flight out of JFK for Ada and tell me the booking id.",
        gold_chain=[
            {"tool": "get_airport", "arguments": {"icao": "KJFK"}},
            {"tool": "list_flights", "arguments": {"origin": "KJFK"}},
            {"tool": "create_booking", "arguments": {"flight_id": 7, "passenger": "Ada"}},
        ],
        reference_answer="1",
        expected_state_hash=GOLD_HASH,
        expected_diff={
            "booking": {
                "added": [{"id": 1, "flight_id": 7, "passenger": "Ada"}],
                "removed": [],
                "changed": [],
            }
        },
        difficulty={"walk_length": 3},
    )


def call_step(index, name, arguments, result=None, error=None, error_kind=None) -> Step:
    return Step(
        index=index,
        role="assistant",
        tool_call=ToolCall(name, arguments),
        tool_result=result,
        error=error,
        error_kind=error_kind,
        duration_ms=3,
        tokens=12,
    )


def answer_step(index, content) -> Step:
    return Step(index=index, role="assistant", content=content, tokens=5)


def solved_trajectory() -> Trajectory:
    return Trajectory(
        task_id="t-booking",
        environment="airports",
        steps=[
            call_step(0, "get_airport", {"icao": "KJFK"}, {"icao": "KJFK", "city": "New York"}),
            call_step(1, "list_flights", {"origin": "KJFK"}, [{"flight_id": 7}]),
            call_step(2, "create_booking", {"flight_id": 7, "passenger": "Ada"}, {"id": 1}),
            answer_step(3, "1"),
        ],
        final_answer="1",
        final_state_hash=GOLD_HASH,
        state_diff=copy.deepcopy(booking_task().expected_diff),
        finished_reason="answer",
    )


def reward(answer=1.0, state=1.0, fmt=1.0, efficiency=1.0, reasons=None) -> RewardBreakdown:
    reasons = reasons or {}
    parts = {"answer": answer, "state": state, "format": fmt, "efficiency": efficiency}
    components = {
        name: RewardComponent(score, 1.0, reasons.get(name, "")) for name, score in parts.items()
    }
    return RewardBreakdown(
        total=round(sum(parts.values()) / 4, 4),
        success=answer >= 1.0 and state >= 1.0,
        components=components,
    )


def failed_state(trajectory, state_diff):
    trajectory.final_state_hash = "other-hash"
    trajectory.state_diff = state_diff
    return trajectory


def labels_of(trajectory, task=None, score=None):
    return {
        label.kind: label
        for label in label_failure(
            trajectory, task or booking_task(), score or reward(), TOOL_KINDS
        )
    }


def episode(trajectory, score, environment="airports", category=CATEGORY, task=None):
    return EvaluatedEpisode(
        trajectory=trajectory,
        task=task or booking_task(),
        reward=score,
        environment=environment,
        category=category,
        tool_kinds=TOOL_KINDS,
    )


def test_successful_trajectory_has_no_labels():
    ep = episode(solved_trajectory(), reward())
    assert is_success(ep)
    assert label_failure(ep.trajectory, ep.task, ep.reward, TOOL_KINDS) == []
    assert diagnose_episode(ep) is None


def test_invalid_tool_call_from_unknown_tool_and_bad_json():
    trajectory = solved_trajectory()
    trajectory.steps[1:1] = [
        call_step(
            10, "find_airport", {"code": "JFK"}, error="no such tool", error_kind="unknown_tool"
        ),
        dataclasses.replace(
            answer_step(11, ""), raw_tool_call='{"name": "list_flights", "arguments": "{orig'
        ),
    ]
    labels = labels_of(trajectory, score=reward(answer=0.0))
    label = labels["invalid_tool_call"]
    assert label.steps == (10, 11)
    assert "unknown_tool" in label.explanation and "unparseable" in label.explanation
    assert label.details["tools"] == ["?", "find_airport"]


def test_tool_error_when_tool_raised():
    trajectory = solved_trajectory()
    trajectory.steps[0] = call_step(
        0,
        "get_airport",
        {"icao": "JFK"},
        error="LookupError: no airport JFK",
        error_kind="tool_error",
    )
    label = labels_of(trajectory, score=reward(answer=0.0))["tool_error"]
    assert label.steps == (0,)
    assert "no airport JFK" in label.explanation
    assert label.details["tools"] == ["get_airport"]


def test_wrong_arguments_against_gold_chain():
    trajectory = solved_trajectory()
    trajectory.steps[1] = call_step(1, "list_flights", {"origin": "KLGA"}, [{"flight_id": 9}])
    label = labels_of(trajectory, score=reward(answer=0.0))["wrong_arguments"]
    assert label.steps == (1,)
    assert "origin" in label.explanation
    (mismatch,) = label.details["mismatches"]
    assert mismatch["expected"] == {"origin": "KJFK"} and mismatch["called"] == {"origin": "KLGA"}


def test_a_write_with_other_arguments_is_a_wrong_state_update_not_wrong_arguments():
    # One failure, one label: the wrong write shows in the final state; the step comparison
    # names the write and its differing argument as the state label's evidence.
    trajectory = failed_state(
        solved_trajectory(),
        {"booking": {"added": [{"id": 1, "flight_id": 7, "passenger": "Bob"}]}},
    )
    trajectory.steps[2] = call_step(
        2, "create_booking", {"flight_id": 7, "passenger": "Bob"}, {"id": 1}
    )
    labels = labels_of(trajectory, score=reward(state=0.0))
    assert set(labels) == {"wrong_state_update"}
    assert labels["wrong_state_update"].details["write_arguments"] == [
        {"tool": "create_booking", "step": 2, "keys": ["passenger"]}
    ]


def _chain_with_results() -> dict:
    task = booking_task()
    task.gold_chain.append({"tool": "list_flights", "arguments": {"origin": "KJFK"}})
    for step, result in zip(
        task.gold_chain, ({"icao": "KJFK"}, [{"flight_id": 7}], {"id": 1}, []), strict=True
    ):
        step["result"] = result
    return task


def test_gold_results_expose_an_observation_that_drifted_after_a_write():
    task = _chain_with_results()
    trajectory = solved_trajectory()
    trajectory.steps[0].tool_result = {"icao": "KJFK"}
    trajectory.steps[3:3] = [call_step(3, "list_flights", {"origin": "KJFK"}, [{"flight_id": 8}])]
    trajectory.steps[4].index = 4
    # the final state is right, yet a gold read after the write saw another state
    label = labels_of(trajectory, task=task, score=reward())["wrong_state_update"]
    assert label.steps == (3,)
    assert label.details["observation_drift"] == [
        {"tool": "list_flights", "step": 3, "gold_step": 3}
    ]
    # the same gold arguments seeing the gold result: nothing to report
    trajectory.steps[3].tool_result = []
    assert labels_of(trajectory, task=task, score=reward()) == {}


def test_a_differing_observation_before_any_write_is_no_wrong_argument():
    # Gold arguments, another result and no write of the agent's before it: the arguments were
    # right and nothing the agent did explains the result (a stale gold run): no label.
    task = _chain_with_results()
    trajectory = solved_trajectory()
    trajectory.steps[1].tool_result = [{"flight_id": 8}]
    assert "wrong_arguments" not in labels_of(trajectory, task=task, score=reward(answer=0.0))


def test_argument_comparison_tolerates_case_and_number_types():
    trajectory = solved_trajectory()
    trajectory.steps[0] = call_step(0, "get_airport", {"icao": "kjfk "}, {"icao": "KJFK"})
    trajectory.steps[2] = call_step(2, "create_booking", {"flight_id": "7", "passenger": "ada"})
    assert "wrong_arguments" not in labels_of(trajectory, score=reward(answer=0.0))


def test_missing_state_update_when_gold_write_never_happened():
    trajectory = failed_state(solved_trajectory(), {})
    del trajectory.steps[2]
    labels = labels_of(trajectory, score=reward(state=0.0))
    label = labels["missing_state_update"]
    assert "1 of 1 gold write" in label.explanation and "booking" in label.explanation
    assert label.details["missing"][0]["expected"]["passenger"] == "Ada"
    assert "wrong_state_update" not in labels


def test_wrong_state_update_for_wrong_values_and_extra_writes():
    trajectory = failed_state(
        solved_trajectory(),
        {
            "booking": {"added": [{"id": 1, "flight_id": 9, "passenger": "Ada"}]},
            "flight": {"changed": [{"key": [7], "before": {"seats": 3}, "after": {"seats": 0}}]},
        },
    )
    label = labels_of(trajectory, score=reward(state=0.0))["wrong_state_update"]
    assert label.steps == (2,)  # the successful write step
    assert len(label.details["wrong"]) == 1 and len(label.details["extra"]) == 1
    assert "booking" in label.explanation and "flight" in label.explanation


def test_state_diff_matching_ignores_autoincrement_id():
    expected = {"booking": {"added": [{"id": 1, "flight_id": 7}]}}
    actual = {"booking": {"added": [{"id": 42, "flight_id": 7}]}}
    assert compare_state_diffs(expected, actual) == {"missing": [], "wrong": [], "extra": []}


def test_premature_answer_before_required_tools():
    trajectory = failed_state(solved_trajectory(), {})
    trajectory.steps = [trajectory.steps[0], answer_step(1, "1")]
    label = labels_of(trajectory, score=reward(state=0.0))["premature_answer"]
    assert label.steps == (1,)
    assert label.details["missing_tools"] == ["list_flights", "create_booking"]
    assert "1 of 3 required tools" in label.explanation


def test_premature_answer_for_programmatic_task_reads_solution_calls():
    task = TaskSpec(
        kind="programmatic",
        environment="airports",
        instruction="How many flights leave JFK?",
        solution="def solve(call):\n    a = call('get_airport', icao='KJFK')\n"
        "    return len(call('list_flights', origin=a['icao']))\n",
        reference_answer=3,
        expected_diff={},
    )
    trajectory = Trajectory(
        task_id="",
        environment="airports",
        steps=[answer_step(0, "3")],
        final_answer="3",
        finished_reason="answer",
        state_diff={},
    )
    label = labels_of(trajectory, task=task, score=reward(answer=1.0))["premature_answer"]
    assert label.details["required_tools"] == ["get_airport", "list_flights"]


def test_step_budget_exhausted():
    trajectory = failed_state(solved_trajectory(), {})
    trajectory.steps = [call_step(i, "get_airport", {"icao": f"K{i}"}) for i in range(6)]
    trajectory.finished_reason = "step_budget"
    trajectory.final_answer = None
    label = labels_of(trajectory, score=reward(answer=0.0, state=0.0))["step_budget_exhausted"]
    assert label.steps == (5,)
    assert label.details == {"steps": 6, "tool_calls": 6}


def test_wrong_answer_uses_answer_component():
    trajectory = solved_trajectory()
    trajectory.steps[3] = answer_step(3, "booking 2")
    trajectory.final_answer = "booking 2"
    score = reward(answer=0.0, reasons={"answer": "normalized answer differs"})
    labels = labels_of(trajectory, score=score)
    assert set(labels) == {"wrong_answer"}
    label = labels["wrong_answer"]
    assert label.steps == (3,)
    assert "'booking 2'" in label.explanation and "normalized answer differs" in label.explanation


def test_format_error_on_malformed_assistant_output():
    trajectory = solved_trajectory()
    trajectory.steps = trajectory.steps[:2] + [
        dataclasses.replace(answer_step(2, "<tool_call>{create_booking"), error_kind="format_error")
    ]
    trajectory.finished_reason = "format_error"
    score = reward(answer=0.0, state=0.0, fmt=0.0, reasons={"format": "no parsable message"})
    label = labels_of(trajectory, score=score)["format_error"]
    assert label.steps == (2,)
    assert "malformed" in label.explanation and "no parsable message" in label.explanation


def test_repeated_call_loop_three_identical_calls_in_a_row():
    trajectory = failed_state(solved_trajectory(), {})
    loop = [call_step(i, "list_flights", {"origin": "KJFK"}, []) for i in range(1, 5)]
    trajectory.steps = [trajectory.steps[0], *loop]
    trajectory.finished_reason = "step_budget"
    label = labels_of(trajectory, score=reward(answer=0.0, state=0.0))["repeated_call_loop"]
    assert label.steps == (1, 2, 3, 4)
    assert "list_flights called 4 times" in label.explanation


def test_two_identical_calls_are_not_a_loop():
    trajectory = solved_trajectory()
    trajectory.steps.insert(1, call_step(9, "get_airport", {"icao": "KJFK"}))
    assert "repeated_call_loop" not in labels_of(trajectory, score=reward(answer=0.0))


def test_every_taxonomy_label_is_covered_by_a_detector_test():
    covered = {
        "invalid_tool_call",
        "tool_error",
        "wrong_arguments",
        "missing_state_update",
        "wrong_state_update",
        "premature_answer",
        "step_budget_exhausted",
        "wrong_answer",
        "format_error",
        "repeated_call_loop",
    }
    assert covered == set(ERROR_LABELS)


def round_episodes() -> list[EvaluatedEpisode]:
    """Two environments in two categories: airports fails at planning, recipes at answers."""
    early = failed_state(solved_trajectory(), {})
    early.steps = [early.steps[0], answer_step(1, "1")]
    wrong = solved_trajectory()
    wrong.final_answer = "2"
    food = {"primary": "Food & Drink", "secondary": "Recipes"}
    return [
        episode(solved_trajectory(), reward()),
        episode(copy.deepcopy(early), reward(state=0.0)),
        episode(copy.deepcopy(early), reward(state=0.0)),
        episode(solved_trajectory(), reward(), environment="recipes", category=food),
        episode(wrong, reward(answer=0.0), environment="recipes", category=food),
    ]


def test_diagnose_aggregates_per_environment_category_and_capability():
    summary = diagnose(round_episodes(), llm=None)
    assert summary.episodes == 5 and summary.failure_count == 3
    assert summary.by_environment == {
        "airports": {"missing_state_update": 2, "premature_answer": 2},
        "recipes": {"wrong_answer": 1},
    }
    assert summary.by_category == {
        "Food & Drink": {"wrong_answer": 1},
        "Travel & Transportation": {"missing_state_update": 2, "premature_answer": 2},
    }
    assert summary.label_counts == {
        "missing_state_update": 2,
        "premature_answer": 2,
        "wrong_answer": 1,
    }
    weakest = summary.weakest_environments()
    assert [s.name for s in weakest] == ["airports", "recipes"]
    assert weakest[0].success_rate == pytest.approx(1 / 3)
    assert weakest[0].top_errors == ["missing_state_update", "premature_answer"]
    assert summary.weakest_categories()[0].name == "Travel & Transportation"
    caps = {c.capability: c for c in summary.capability_scores}
    assert caps["multi-step planning"].score == pytest.approx(0.6)
    assert caps["state updates"].score == pytest.approx(0.6)
    assert caps["answer synthesis"].score == pytest.approx(0.8)
    assert caps["argument grounding"].score == 1.0
    assert [c.capability for c in summary.weakest_capabilities()] == [
        "multi-step planning",
        "state updates",
        "answer synthesis",
    ]
    data = summary.to_dict()
    assert data["weakest_environments"] == ["airports", "recipes"]
    first = data["failures"][0]
    assert [lab["kind"] for lab in first["labels"]] == ["missing_state_update", "premature_answer"]
    assert first["labels"][1]["steps"] == [1]
    assert first["labels"][1]["capability"] == "multi-step planning"
    assert first["gold_chain_length"] == 3 and first["gold_write_count"] == 1


def test_offline_analysis_is_deterministic_and_grounded_in_counts():
    first = diagnose(round_episodes(), llm=None)
    second = diagnose(round_episodes(), llm=None)
    assert first.analysis == second.analysis
    assert first.analysis_source == "offline"
    assert "3 failed" in first.analysis
    assert "premature answer (2)" in first.analysis  # labels in words, not identifiers
    assert "Environment airports: success 33.3%" in first.analysis
    assert "multi-step planning (score 0.60)" in first.analysis


def test_diagnose_without_llm_configured_uses_offline_path(monkeypatch):
    monkeypatch.delenv("AW_LLM_BASE_URL", raising=False)
    summary = diagnose(round_episodes())
    assert summary.analysis_source == "offline"


def test_llm_analysis_is_grounded_in_sampled_labelled_failures(monkeypatch):
    from tests.support.openai_server import ScriptedOpenAIServer, text_reply

    with ScriptedOpenAIServer(
        lambda body: text_reply("Planning is the weak spot in airports.")
    ) as srv:
        monkeypatch.setenv("AW_LLM_BASE_URL", srv.base_url)
        summary = diagnose(round_episodes(), sample_size=2, seed=3)
        prompt = srv.requests[0]["messages"][1]["content"]
    assert summary.analysis_source == "llm"
    assert summary.analysis == "Planning is the weak spot in airports."
    assert "premature_answer" in prompt and "wrong_answer" in prompt
    assert "answered after using 1 of 3 required tools" in prompt


def test_llm_failure_falls_back_to_offline_summary(monkeypatch):
    from tests.support.openai_server import ScriptedOpenAIServer

    def broken(body):
        raise RuntimeError("model overloaded")

    with ScriptedOpenAIServer(broken) as srv:
        monkeypatch.setenv("AW_LLM_BASE_URL", srv.base_url)
        summary = diagnose(round_episodes())
    assert summary.analysis_source == "offline"
    assert "LLM analysis unavailable" in summary.analysis
    assert "premature answer (2)" in summary.analysis


def test_an_answer_without_the_write_is_a_missing_update_not_a_premature_answer():
    trajectory = failed_state(solved_trajectory(), {})
    del trajectory.steps[2]
    labels = labels_of(trajectory, score=reward(state=0.0))
    assert set(labels) == {"missing_state_update"}


def test_a_required_tool_that_raised_was_still_called():
    trajectory = solved_trajectory()
    trajectory.steps[1] = call_step(
        1, "list_flights", {"origin": "KJFK"}, error="boom", error_kind="tool_error"
    )
    labels = labels_of(trajectory, score=reward(answer=0.0))
    assert "tool_error" in labels and "premature_answer" not in labels


def test_an_unknown_tool_is_an_invalid_call_not_also_a_format_error():
    trajectory = solved_trajectory()
    trajectory.steps.insert(
        1, call_step(9, "lookup_everything", {}, error="no such tool", error_kind="unknown_tool")
    )
    score = reward(fmt=0.75, reasons={"format": "3/4 tool calls well-formed"})
    assert set(labels_of(trajectory, score=score)) == {"invalid_tool_call"}


def test_a_write_the_tool_refused_is_judged_by_its_arguments():
    trajectory = failed_state(solved_trajectory(), {})
    trajectory.steps[2] = call_step(
        2,
        "create_booking",
        {"flight_id": 99, "passenger": "Ada"},
        error="no flight 99",
        error_kind="tool_error",
    )
    labels = labels_of(trajectory, score=reward(state=0.0))
    assert set(labels) == {"tool_error", "wrong_arguments", "missing_state_update"}
    assert labels["wrong_arguments"].details["mismatches"][0]["keys"] == ["flight_id"]
