"""The synthesized task: what the agent is asked, and the gold run that makes it verifiable."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any


def canonical_json(value: Any) -> str:
    """Stable JSON text (sorted keys, no spaces) used for signatures and hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def canonical_signature(payload: Any) -> str:
    """sha256 of the canonical JSON of ``payload``; equal tasks get equal signatures."""
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


@dataclass
class TaskSpec:
    """One verifiable task (see docs/contracts.md, "Tasks").

    ``gold_chain`` lists the tool calls of the gold run ([{"tool", "arguments", ...}]); for a
    programmatic task it is the trace of the solution's calls. ``expected_state_hash`` is the
    state hash after the gold run (equal to the initial hash for read-only tasks) and
    ``expected_diff`` its row diff against the initial state.
    """

    kind: str
    environment: str
    instruction: str
    gold_chain: list[dict[str, Any]] = field(default_factory=list)
    reference_answer: Any = None
    expected_state_hash: str | None = None
    expected_diff: dict[str, Any] = field(default_factory=dict)
    difficulty: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    environment_version: int | None = None
    tools: list[str] = field(default_factory=list)
    solution: str | None = None
    verification: str | None = None
    signature: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    answer_contract: dict[str, Any] = field(default_factory=dict)  # AnswerContract.to_dict()
    audit: dict[str, Any] = field(default_factory=dict)  # VerifierAudit.to_dict()

    @property
    def task_id(self) -> str:
        """Short id derived from the signature (stable across runs)."""
        return self.signature[:16]

    @property
    def writes(self) -> bool:
        return bool(self.expected_diff)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["task_id"] = self.task_id
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def as_task(task: TaskSpec | dict[str, Any]) -> TaskSpec:
    """Accept a TaskSpec or its dict form (as stored by the lead's models)."""
    return task if isinstance(task, TaskSpec) else TaskSpec.from_dict(task)
