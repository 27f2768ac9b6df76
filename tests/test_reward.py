"""The reward cannot be gamed: success gates it, doing nothing earns nothing, hedges fail."""

from __future__ import annotations

import json

import pytest

from tasks.answer_contract import AnswerContract, read_submission
from tasks.reward import MemoryJudgeCache, RewardSettings, score
from tasks.state_changes import compare_diffs, row_pairs
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Step, ToolCall, Trajectory
from tests.support.openai_server import ScriptedOpenAIServer, text_reply

CALL = Step(index=0, role="assistant", tool_call=ToolCall("count"))


def read_task(reference=1234, contract=None) -> TaskSpec:
    return TaskSpec(
        kind="graph",
        environment="airports",
        instruction="How many airports are there?",
        gold_chain=[{"tool": "count", "arguments": {}}],
        reference_answer=reference,
        expected_state_hash="initial",
        answer_contract=(contract or AnswerContract("scalar", "integer")).to_dict(),
        signature="read-task",
    )


def run(answer=None, steps=(CALL,), state_hash="initial", diff=None, **extra) -> Trajectory:
    return Trajectory(
        task_id="",
        environment="shop",
        steps=list(steps),
        final_answer=answer,
        final_state_hash=state_hash,
        state_diff=diff or {},
        finished_reason="answer",
        **extra,
    )


def table(added=(), removed=(), changed=(), references=None, surrogate=True) -> dict:
    return {
        "added": list(added),
        "removed": list(removed),
        "changed": list(changed),
        "key": ["id"],
        "surrogate": surrogate,
        "references": references or {},
    }


GOLD_DIFF = {
    "orders": table(added=[{"id": 11, "item": "tea"}, {"id": 12, "item": "cake"}]),
    "lines": table(added=[{"id": 5, "order_id": 11, "qty": 2}], references={"order_id": "orders"}),
    "stock": table(
        changed=[{"key": {"id": 3}, "before": {"id": 3, "left": 9}, "after": {"id": 3, "left": 7}}]
    ),
}


def write_task() -> TaskSpec:
    return TaskSpec(
        kind="graph",
        environment="shop",
        instruction="Order tea and cake, two teas on the line, and take them from stock.",
        gold_chain=[{"tool": "create_order", "arguments": {}, "kind": "write"}] * 3,
        expected_state_hash="after-gold",
        expected_diff=GOLD_DIFF,
        answer_contract=AnswerContract("none").to_dict(),
        signature="write-task",
    )


# --- the no-op floor is zero --------------------------------------------------------------


@pytest.mark.parametrize("answer", [None, "", "garbage", '{"answer": null}'])
def test_doing_nothing_earns_nothing_on_a_read_task(answer):
    breakdown = score(read_task(), run(answer, steps=()))
    assert not breakdown.success
    assert breakdown.total == 0.0
    assert "no valid tool call" in breakdown.gate


def test_doing_nothing_earns_nothing_on_a_write_task():
    breakdown = score(write_task(), run(None, steps=(), state_hash="initial"))
    assert (breakdown.success, breakdown.total) == (False, 0.0)


def test_a_correct_guess_without_a_tool_call_is_not_solved():
    assert score(read_task(), run('{"answer": 1234}', steps=())).total == 0.0


def test_only_malformed_calls_count_as_no_call():
    bad = Step(index=0, role="assistant", tool_call=ToolCall("cnt"), error_kind="unknown_tool")
    assert score(read_task(), run('{"answer": 1234}', steps=(bad,))).total == 0.0


def test_submitting_the_answer_is_not_a_tool_call():
    submit = Step(index=0, role="assistant", tool_call=ToolCall("submit_answer"))
    assert score(read_task(), run('{"answer": 1234}', steps=(submit,))).total == 0.0


# --- the answer contract ------------------------------------------------------------------


def test_gold_run_scores_one():
    breakdown = score(read_task(), run(json.dumps({"answer": 1234})))
    assert breakdown.success and breakdown.total == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        '{"answer": "1,234 airports"}',  # a unit and a thousands separator inside the value
        'There are many.\n```json\n{"answer": 1234}\n```\nHope that helps!',  # prose around
        "1234",  # a bare JSON value
    ],
)
def test_structured_answers_are_read_whatever_prose_surrounds_them(answer):
    assert score(read_task(), run(answer)).success


@pytest.mark.parametrize(
    "answer",
    [
        '{"answer": [1234, 1235]}',  # two candidates where one is asked
        '{"answer": "1234 or 1235"}',  # two numbers in one value
        "Step 1 returned 1234 airports.",  # prose only: no structured answer
        '{"answer": 1235}',
    ],
)
def test_hedged_ambiguous_and_wrong_answers_are_not_solved(answer):
    breakdown = score(read_task(), run(answer))
    assert not breakdown.success
    assert breakdown.total <= RewardSettings().partial_cap
    if "1234" not in answer:  # reasons quote the agent's answer, never the reference
        assert "1234" not in json.dumps(breakdown.to_dict())


def test_a_hedged_list_fails_an_entity_answer():
    contract = AnswerContract("entity", "string", entity="airport", field="name")
    task = read_task("Heathrow", contract)
    assert score(task, run('{"answer": "heathrow"}')).success
    assert not score(task, run('{"answer": ["Heathrow", "Gatwick"]}')).success
    assert not score(task, run('{"answer": "Heathrow or Gatwick"}')).success


def test_lists_need_every_item_once_and_earn_capped_partial_credit():
    contract = AnswerContract("list", "string", field="name")
    task = read_task(["Oslo", "Bergen", "Tromsø"], contract)
    assert score(task, run('{"answer": ["tromsø", "Oslo", "Bergen"]}')).success
    superset = score(task, run('{"answer": ["Oslo", "Bergen", "Tromsø", "Bodø"]}'))
    assert not superset.success and 0 < superset.total <= 0.2
    assert not score(task, run('{"answer": "Oslo, Bergen, Tromsø"}')).success  # not a list


def test_numbers_compare_at_the_declared_precision():
    task = read_task(12.3456, AnswerContract("scalar", "number", precision=2))
    assert score(task, run('{"answer": 12.35}')).success
    assert not score(task, run('{"answer": 12.4}')).success


def test_whole_numbers_compare_exactly_and_a_typographic_minus_reads():
    task = read_task(1234567890)
    assert not score(task, run('{"answer": 1234567000}')).success
    assert score(task, run('{"answer": "1,234,567,890"}')).success
    below = read_task(-3)
    assert score(below, run('{"answer": "\u22123"}')).success


def test_a_key_the_task_gave_is_content_not_a_surrogate():
    created = {"tickets": table(added=[{"id": 1778, "title": "Printer on fire"}])}
    task = write_task()
    task.expected_diff = created
    task.gold_chain = [{"tool": "create_ticket", "arguments": {"id": 1778}, "kind": "write"}]
    other_id = {"tickets": table(added=[{"id": 9999, "title": "Printer on fire"}])}
    assert score(task, run(None, state_hash="same", diff=created)).success
    assert not score(task, run(None, state_hash="x", diff=other_id)).success


def test_read_submission_explains_what_is_wrong():
    contract = AnswerContract("scalar", "number")
    assert read_submission(contract, {"answer": [1, 2]}).hedged
    assert "no structured answer" in read_submission(contract, "about five").problem
    assert read_submission(contract, {"answer": "$1,250.50"}).value == 1250.5


# --- state: requested writes only, order and surrogate ids ignored ------------------------------


def test_creates_in_the_other_order_still_solve_the_task():
    swapped = {
        "orders": table(added=[{"id": 11, "item": "cake"}, {"id": 12, "item": "tea"}]),
        "lines": table(
            added=[{"id": 9, "order_id": 12, "qty": 2}], references={"order_id": "orders"}
        ),
        "stock": GOLD_DIFF["stock"],
    }
    calls = [CALL] * 3
    breakdown = score(write_task(), run(None, steps=calls, state_hash="other", diff=swapped))
    assert breakdown.success and breakdown.total == 1.0


def test_a_line_on_the_wrong_new_order_is_a_wrong_write():
    wrong = {
        "orders": GOLD_DIFF["orders"],
        "lines": table(
            added=[{"id": 5, "order_id": 12, "qty": 2}], references={"order_id": "orders"}
        ),
        "stock": GOLD_DIFF["stock"],
    }
    breakdown = score(write_task(), run(None, steps=[CALL] * 3, state_hash="x", diff=wrong))
    assert not breakdown.success
    assert 0 < breakdown.total <= 0.2
    pairs = row_pairs(GOLD_DIFF, wrong)
    assert [p["table"] for p in pairs["wrong"]] == ["lines"]


def test_partial_state_credit_counts_requested_writes_and_is_capped():
    half = {"orders": GOLD_DIFF["orders"]}
    breakdown = score(write_task(), run(None, steps=[CALL] * 2, state_hash="x", diff=half))
    assert not breakdown.success
    assert breakdown["state"].score == pytest.approx(2 / 4)
    assert breakdown.total == pytest.approx(0.2 * 2 / 4)


def test_a_read_task_earns_nothing_for_leaving_the_state_alone_and_fails_on_a_write():
    wrong_answer = score(read_task(), run('{"answer": 1}'))
    assert wrong_answer.total == 0.0  # the state part is no progress on a read-only task
    extra = {"stock": GOLD_DIFF["stock"]}
    written = score(read_task(), run('{"answer": 1234}', state_hash="x", diff=extra))
    assert not written.success


def test_diffs_recorded_before_diffs_carried_keys_still_ignore_surrogate_ids():
    old = {"orders": {"added": [{"id": 1, "item": "a"}, {"id": 2, "item": "b"}], "changed": []}}
    new = {"orders": {"added": [{"id": 7, "item": "b"}, {"id": 8, "item": "a"}], "changed": []}}
    assert compare_diffs(old, new).same


# --- programmatic tasks: the verification script decides the answer ------------------------


def test_programmatic_tasks_are_judged_by_their_verification_verdict():
    task = read_task(7)
    task.kind, task.verification = "programmatic", "def verify(answer, call): ..."
    passed = run('{"answer": 7}', verification={"passed": True, "error": None})
    rejected = run('{"answer": 7}', verification={"passed": False, "error": None})
    assert score(task, passed).success
    assert not score(task, rejected).success


# --- free text: the LLM judge, cached per (task, answer) ------------------------------------


def test_free_text_answers_are_judged_once_per_task_and_answer(monkeypatch):
    import tasks.reward as reward

    monkeypatch.setattr(reward, "JUDGE_CACHE", MemoryJudgeCache())
    task = read_task("The hub moved to terminal 5.", AnswerContract("text", "string"))
    verdict = text_reply(json.dumps({"correct": True, "reason": "same fact"}))
    with ScriptedOpenAIServer(lambda body: verdict) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        answer = '{"answer": "They now use T5."}'
        first, second = score(task, run(answer)), score(task, run(answer))
        assert first.success and second.success
        assert len(server.requests) == 1
        assert "cached" in second["answer"].reason


def test_free_text_without_an_llm_needs_the_same_text(monkeypatch):
    monkeypatch.delenv("AW_LLM_BASE_URL", raising=False)
    task = read_task("Terminal 5", AnswerContract("text", "string"))
    assert score(task, run('{"answer": "terminal 5"}')).success
    assert not score(task, run('{"answer": "T5"}')).success
