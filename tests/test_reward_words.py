"""Why a run failed, said in words that quote no gold value (tasks/reward_words.py)."""

from __future__ import annotations

from tasks.reward_words import component_words, failure_summary, reward_words

GOLD = "ZEBRA-4417"
REWARD = {
    "total": 0.12,
    "success": False,
    "gate": "not solved: answer and final state wrong; partial credit only",
    "components": {
        "answer": {"score": 0.0, "weight": 1.0, "reason": f"answer {GOLD!r} differs"},
        "state": {
            "score": 0.5,
            "weight": 1.0,
            "reason": "final state differs from the gold run's: 1/2 requested writes made, "
            f"missing: crate(note={GOLD}), 3 writes not requested: crate(note=x)",
        },
        "format": {"score": 1.0, "weight": 0.0, "reason": "2/2 tool calls well-formed"},
        "efficiency": {"score": 0.0, "reason": "not solved (2 calls)", "applicable": False},
    },
}


def test_components_are_said_from_scores_and_counts_without_gold_values():
    words = reward_words(REWARD)
    assert words == {
        "answer": "the final answer did not match the expected answer",
        "state": "the final state did not match: 1 requested change missing, "
        "3 changes not requested",
        "format": "2 of 2 tool calls well-formed",
        "efficiency": "not counted: only a solved run is scored for efficiency",
    }
    assert not any(GOLD in text for text in words.values())


def test_answer_wording_follows_the_score():
    assert component_words("answer", {"score": 1.0}) == (
        "the final answer matched the expected answer"
    )
    assert component_words("answer", {"score": 0.25}) == (
        "the final answer was partly right (25% of it matched)"
    )
    assert component_words("answer", {"score": 0.0, "applicable": False}) == (
        "the task asks for no answer"
    )
    assert component_words("state", {"score": 0.0, "reason": "the run made 1 writes"}) == (
        "the task asks for no changes, but the run made 1 change"
    )


def test_flat_stored_rewards_are_read_too():
    flat = {"answer": {"score": 0.0, "reason": f"expected {GOLD}"}, "total": 0.1}
    assert reward_words(flat) == {"answer": "the final answer did not match the expected answer"}


def test_summary_says_how_the_run_ended_the_empty_output_and_what_fell_short():
    summary = failure_summary(REWARD, "step_budget", [1, 3])
    assert summary == [
        "The run ran out of steps: the step budget ended it before the task was done.",
        "The model answered with an empty message at steps 1, 3.",
        "Not solved: answer and final state wrong; partial credit only.",
        "The final answer did not match the expected answer.",
        "The final state did not match: 1 requested change missing, 3 changes not requested.",
    ]
    assert not any(GOLD in sentence for sentence in summary)


def test_summary_of_a_run_without_a_valid_tool_call():
    reward = {"gate": "not solved: no valid tool call, so no credit", "components": {}}
    assert failure_summary(reward, "format_error") == [
        "The model's output could not be read as a tool call or an answer (format error).",
        "The model made no valid tool call, so the run earns no credit.",
    ]


def test_summary_of_a_run_without_a_recorded_reward_says_so():
    assert failure_summary({}, "answer") == [
        "The run ended with the model's final answer.",
        "No reward breakdown was recorded for this run, so there is no scored reason.",
    ]
