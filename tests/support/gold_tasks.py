"""Bookstore tasks with a real gold run, for the interfaces that score an episode.

``read_task`` asks for Dune's title (an entity answer, no writes); ``write_task`` sells out
Solaris and asks for its price (a number answer, one requested write). Their expected state
hash and diff come from replaying the gold chain in a sandbox, as synthesis records them.
"""

from __future__ import annotations

from typing import Any

from tasks.answer_contract import AnswerContract
from tasks.synthesis.replay import run_calls
from tasks.synthesis.task_spec import TaskSpec

READ_CHAIN = [{"tool": "get_book", "arguments": {"book_id": 1}}]
WRITE_CHAIN = [
    {"tool": "get_book", "arguments": {"book_id": 4}},
    {"tool": "update_stock", "arguments": {"book_id": 4, "stock": 0}},
]
READ_CONTRACT = AnswerContract("entity", value_type="string", entity="book", field="title")
WRITE_CONTRACT = AnswerContract("scalar", value_type="number", unit="USD", precision=2)


def gold_task(
    pool: Any,
    package: Any,
    *,
    instruction: str,
    gold_chain: list[dict[str, Any]],
    reference_answer: Any,
    contract: AnswerContract,
    signature: str,
) -> TaskSpec:
    """A graph task whose expected state is what its gold chain leaves."""
    gold = run_calls(pool, package, gold_chain)
    assert all(step.error is None for step in gold.steps), gold.steps
    return TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction=instruction,
        gold_chain=gold_chain,
        reference_answer=reference_answer,
        expected_state_hash=gold.final_state_hash,
        expected_diff=gold.state_diff,
        signature=signature,
        answer_contract=contract.to_dict(),
    )


def read_task(pool: Any, package: Any) -> TaskSpec:
    return gold_task(
        pool,
        package,
        instruction="What is the title of book 1? " + READ_CONTRACT.describe(),
        gold_chain=READ_CHAIN,
        reference_answer="Dune",
        contract=READ_CONTRACT,
        signature="gold-read-title-of-book-1",
    )


def write_task(pool: Any, package: Any) -> TaskSpec:
    return gold_task(
        pool,
        package,
        instruction="Solaris (book 4) is sold out: set its stock to 0, then report its price. "
        + WRITE_CONTRACT.describe(),
        gold_chain=WRITE_CHAIN,
        reference_answer=11.25,
        contract=WRITE_CONTRACT,
        signature="gold-write-sell-out-solaris",
    )
