"""A released question's success criteria judge its answer when an LLM is configured; without
one, or when the LLM replies out of form, the reward stays the executable one."""

from __future__ import annotations

import json

import pytest

import tasks.reward as reward
from tasks.answer_contract import contract_for
from tasks.reward import MemoryJudgeCache, score
from tasks.rubric_judge import read_verdict
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Step, ToolCall, Trajectory
from tests.support.openai_server import ScriptedOpenAIServer, in_order, text_reply

BOOK = {"found": True, "book": {"id": "bk_001", "title": "Cien años de soledad", "copies": 2}}
CRITERIA = ["names Cien años de soledad", "says 2 copies"]
PROSE = "We hold Cien años de soledad, with 2 copies on the shelf."


def question() -> TaskSpec:
    """A released question as tasks.released_questions stores it."""
    return TaskSpec(
        kind="graph",
        environment="aw_0100000",
        instruction="Which novel do we hold, and how many copies are on the shelf?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": "bk_001"}, "kind": "read"}],
        reference_answer=BOOK,
        expected_state_hash="initial",
        metadata={"source": "agent_world", "success_criteria": list(CRITERIA)},
        answer_contract=contract_for(BOOK).to_dict(),
        signature="released-question",
    )


def run(answer: str | None) -> Trajectory:
    call = Step(index=0, role="assistant", tool_call=ToolCall("get_book", {"book_id": "bk_001"}))
    return Trajectory(
        task_id="",
        environment="aw_0100000",
        steps=[call],
        final_answer=answer,
        final_state_hash="initial",
        finished_reason="answer",
    )


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(reward, "JUDGE_CACHE", MemoryJudgeCache())


def test_without_an_llm_the_reward_is_the_executable_one(monkeypatch):
    monkeypatch.delenv("AW_LLM_BASE_URL", raising=False)
    assert score(question(), run(json.dumps({"answer": BOOK}))).success
    prose = score(question(), run(PROSE))
    assert not prose.success and prose["answer"].reason.startswith("answer unusable")


def test_the_llm_reads_the_answer_against_each_criterion(monkeypatch):
    met = text_reply(json.dumps({"met": [True, True], "reason": "both named"}))
    half = text_reply(json.dumps({"met": [True, False], "reason": "no count"}))
    with ScriptedOpenAIServer(in_order(met, half)) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        solved = score(question(), run(PROSE))
        assert solved.success and solved.total > 0.9, solved
        assert solved["answer"].reason.startswith("LLM judge on the success criteria: 2 of 2")
        prompt = server.requests[0]["messages"][-1]["content"]
        assert "1. names Cien años de soledad\n2. says 2 copies" in prompt and PROSE in prompt

        short = score(question(), run('{"answer": "Cien años de soledad"}'))
        assert not short.success and short["answer"].score == 0.5
        assert "1 of 2 met; no count" in short["answer"].reason

        again = score(question(), run(PROSE))  # judged once per (task, answer)
        assert again.success and "(cached)" in again["answer"].reason
        # the executable answer needs no judge
        assert score(question(), run(json.dumps({"answer": BOOK}))).success
        assert len(server.requests) == 2


def test_a_reply_out_of_form_leaves_the_executable_reward(monkeypatch, caplog):
    replies = in_order(
        text_reply("the answer looks right to me"),  # not JSON
        text_reply(json.dumps({"met": [True], "reason": "one"})),  # one of two criteria
    )
    with ScriptedOpenAIServer(replies) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        for _ in range(2):
            breakdown = score(question(), run(PROSE))
            assert not breakdown.success
            assert breakdown["answer"].reason.startswith("answer unusable")
        assert len(server.requests) == 2
    assert "judges 1 criteria where the task has 2" in caplog.text


def test_tasks_without_criteria_never_ask_the_judge(monkeypatch):
    task = question()
    task.metadata = {"source": "agent_world", "success_criteria": []}
    with ScriptedOpenAIServer(lambda body: text_reply('{"met": []}')) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        assert not score(task, run(PROSE)).success
        assert server.requests == []


def test_verdicts_are_read_strictly():
    assert read_verdict({"met": [True, False], "reason": "x"}, 2).share == 0.5
    assert read_verdict({"met": ["yes", True]}, 2) == "the reply's `met` is not a list of booleans"
    assert read_verdict([True], 1) == "the reply is list, not an object with `met`"
