"""One trajectory record: its JSON shape round-trips, and a stored row reads back as it."""

from __future__ import annotations

from tasks.reward import score
from tasks.reward_breakdown import RewardBreakdown
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Step, ToolCall, Trajectory
from tests.support import factories


def test_the_stored_json_shape_round_trips():
    trajectory = Trajectory(task_id="t1", environment="bookstore")
    trajectory.add_step("assistant", tool_call=ToolCall("get_book", {"book_id": 1}), tool_result=1)
    trajectory.add_step("assistant", content="Dune")
    data = trajectory.to_dict()
    assert data["steps"][0]["tool_call"] == {"name": "get_book", "arguments": {"book_id": 1}}
    assert data["steps"][1]["tool_call"] is None
    assert Trajectory.from_dict(data) == trajectory


def test_a_stored_reward_reads_back_as_its_breakdown():
    task = TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="Title of book 1?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}}],
        reference_answer="Dune",
    )
    trajectory = Trajectory(
        task_id="t1",
        environment="bookstore",
        steps=[Step(0, "assistant", tool_call=ToolCall("get_book", {"book_id": 1}))],
        final_answer='{"answer": "Emma"}',
    )
    breakdown = score(task, trajectory)
    assert RewardBreakdown.from_dict(breakdown.to_dict()) == breakdown
    assert RewardBreakdown.from_dict({}).success is False


def test_a_stored_trajectory_reads_back_as_the_record(db):
    task = factories.make_task(factories.make_environment("bookstore"))
    row = factories.make_trajectory(task)  # searches, orders 20 (tool error), answers
    record = row.to_record()
    assert record.task_id == str(task.pk) and record.environment == "bookstore"
    search, order, answer = record.steps
    assert search.tool_call == ToolCall("search_books", {"title_contains": "Dune"})
    assert (order.tool_name, order.error_kind) == ("place_order", "tool_error")
    assert answer.tool_call is None and answer.error is None and answer.raw_tool_call is None
