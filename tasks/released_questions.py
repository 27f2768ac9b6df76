"""The questions a release ships with an environment become its tasks (held out by default).

Each question is replayed at import on a fresh episode: its verified tool chain is called in
order, and its reference answer (the JSON of the last step's output, as the release recorded
it) must match what the last call returns here, volatile fields aside: the release recorded
its answers under a real clock and real uuids, we replay under the version's frozen clock and
seeded ids, so timestamps, generated ids and timings may differ and nothing else may. A
question that does not reproduce, or whose chain names a tool that was not verified or fails,
is kept out and counted with the reason.

A kept question is a task: instruction = the question's `task`, gold chain = its chain (with
each tool's kind), reference answer = the replayed last output, answer contract inferred from
it, expected state hash and diff from the replay, and the rubric's success criteria kept in
its metadata for an LLM judge.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.agent_world.package import QUESTIONS_FILE
from environments.agent_world.release import ReleaseQuestion, parse_questions
from environments.models import Environment
from environments.package import EnvironmentPackage, load_package
from environments.runtime.collection_episode import COLLECTIONS_DIR
from environments.runtime.json_state import read_collections
from tasks.answer_contract import answer_instruction, contract_for
from tasks.models import Task
from tasks.records import record_tasks
from tasks.synthesis.task_spec import TaskSpec, canonical_signature

TIMESTAMP = re.compile(
    r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$"
)
GENERATED_ID = re.compile(r"^([A-Za-z]+[_-])*[0-9a-fA-F-]{8,}$")
TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
VOLATILE_NUMBER_KEYS = ("latency", "elapsed", "duration", "_ms", "_ts", "timestamp", "time")


@dataclass
class QuestionImport:
    """What an import of released questions did: tasks made and questions kept out, why."""

    questions: int = 0
    imported: int = 0
    kept_out: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # questions the file itself spoiled

    def kept_out_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.kept_out:
            counts[item["reason_kind"]] = counts.get(item["reason_kind"], 0) + 1
        return dict(sorted(counts.items()))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "kept_out_by_reason": self.kept_out_by_reason()}


class KeptOut(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


def released_questions(package: EnvironmentPackage) -> tuple[list[ReleaseQuestion], list[str]]:
    path = Path(package.path) / QUESTIONS_FILE
    if not path.is_file():
        return [], []
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        return [], [f"{QUESTIONS_FILE}: not JSON ({exc})"]
    return parse_questions(data, QUESTIONS_FILE)


def import_released_questions(
    environment: Environment, pool: Any = None, split: str = Task.Split.HELDOUT
) -> QuestionImport:
    """Replay the environment's released questions and store those that reproduce as tasks."""
    package = load_package(environment.package_path)
    questions, problems = released_questions(package)
    outcome = QuestionImport(questions=len(questions) + len(problems), problems=problems)
    if not questions:
        return outcome
    if pool is None:
        from environments.runtime import SandboxPool

        with SandboxPool(workers=1) as own:
            return import_released_questions(environment, own, split)
    specs = []
    for index, question in enumerate(questions):
        try:
            specs.append(replay_question(pool, package, question, index))
        except KeptOut as kept:
            outcome.kept_out.append(
                {
                    "index": index,
                    "task": question.task[:200],
                    "reason_kind": kept.kind,
                    "reason": kept.reason,
                }  # fmt: skip
            )
    created = record_tasks(environment, specs, split=split)
    outcome.imported = len(created)
    return outcome


def replay_question(
    pool: Any, package: EnvironmentPackage, question: ReleaseQuestion, index: int
) -> TaskSpec:
    """The question as a task, from its chain replayed on a fresh episode; KeptOut says why
    it cannot be one."""
    for step in question.chain:
        if package.tool_schema(step.tool) is None:
            raise KeptOut(
                "tool not verified", f"its chain calls {step.tool}, which was not verified"
            )
    initial = strings_in(read_collections(package.path / COLLECTIONS_DIR))
    chain: list[tuple[str, dict[str, Any]]] = []
    with pool.start_episode(package) as episode:
        result, outputs = None, []
        for number, step in enumerate(question.chain, start=1):
            arguments = carried_ids(step.args, outputs, initial)
            called = episode.call_tool(step.tool, arguments)
            if not called.ok:
                raise KeptOut(
                    "chain fails", f"step {number} ({step.tool}) failed here: {called.error}"
                )
            result = called.result
            outputs.append(result)
            chain.append((step.tool, arguments))
        state_hash, diff = episode.state_hash(), episode.state_diff()
    reference = _parsed(question.reference_answer)
    given = set().union(set(), *(strings_in(arguments) for _, arguments in chain))
    made = frozenset(strings_in(result) - initial - given)  # what the replay generated
    if not same_answer(reference, result, made=made):
        raise KeptOut(
            "does not reproduce",
            "the chain's last output differs from the released reference answer beyond "
            f"timestamps and generated ids: {_difference(reference, result, made=made)}",
        )
    gold_chain = [
        {"tool": tool, "arguments": arguments, "kind": package.tool_kind(tool)}
        for tool, arguments in chain
    ]
    writes = sum(1 for s in gold_chain if s["kind"] == "write")
    release = package.manifest.get("release") or {}
    contract = contract_for(result)
    spec = TaskSpec(
        kind=Task.Kind.GRAPH,  # a gold tool chain, as graph tasks have
        environment=package.name,
        environment_version=package.version,
        # the released request as written, then the answer's shape every task states
        instruction=f"{question.task}\n{answer_instruction(contract)}",
        gold_chain=gold_chain,
        reference_answer=result,
        expected_state_hash=state_hash,
        expected_diff=diff,
        difficulty={"steps": len(gold_chain), "writes": writes},
        tools=sorted({s["tool"] for s in gold_chain}),
        metadata={
            "source": "agent_world",
            "env_id": release.get("env_id", ""),
            "question": index,
            "success_criteria": list(question.success_criteria),
        },
        answer_contract=contract.to_dict(),
    )
    spec.signature = canonical_signature(
        ["agent_world", package.name, package.version, question.task, gold_chain]
    )
    return spec


def carried_ids(arguments: dict[str, Any], outputs: list[Any], initial: set[str]) -> dict:
    """The step's arguments, with an id an earlier step of the release's run generated replaced
    by the one the same step generated here: the release recorded its chains under real uuids,
    so a step that fetches what an earlier step created names an id this replay never made
    (`get_key("key_df0a...")` after `create_key`). An argument is replaced only when it looks
    generated, is in neither the initial collections nor an earlier output, and exactly one id
    of the same shape (prefix and length) that an earlier step returned is new here."""
    earlier = set().union(*(strings_in(o) for o in outputs)) if outputs else set()
    made = {v for o in outputs for v in ids_in(o) if v not in initial}
    carried = dict(arguments)
    for name, value in arguments.items():
        if (
            not isinstance(value, str)
            or value in initial
            or value in earlier
            or not GENERATED_ID.match(value)
        ):
            continue
        same_shape = sorted(v for v in made if _shape(v) == _shape(value))
        if len(same_shape) == 1:
            carried[name] = same_shape[0]
    return carried


def strings_in(value: Any) -> set[str]:
    """Every string anywhere in a JSON value, keys aside."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(set(), *(strings_in(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(set(), *(strings_in(v) for v in value))
    return set()


def ids_in(value: Any, key: str = "") -> set[str]:
    """The strings under id keys (`id`, `*_id`, `*Id`) anywhere in a JSON value."""
    if isinstance(value, dict):
        return set().union(set(), *(ids_in(v, str(k)) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(set(), *(ids_in(v, key) for v in value))
    is_id = key == "id" or key.endswith(("_id", "Id"))
    return {value} if is_id and isinstance(value, str) and GENERATED_ID.match(value) else set()


def _shape(value: str) -> tuple[str, int]:
    prefix = re.match(r"^([A-Za-z]+[_-])*", value)
    return (prefix.group(0) if prefix else "", len(value))


def same_answer(
    reference: Any, replayed: Any, key: str = "", made: frozenset[str] = frozenset()
) -> bool:
    """Equal JSON, except where both sides hold a volatile value: a timestamp, a generated id
    (under an `id` key), or a timing number."""
    if isinstance(reference, dict) and isinstance(replayed, dict):
        return reference.keys() == replayed.keys() and all(
            same_answer(reference[k], replayed[k], str(k), made) for k in reference
        )
    if isinstance(reference, list) and isinstance(replayed, list):
        return len(reference) == len(replayed) and all(
            same_answer(a, b, key, made) for a, b in zip(reference, replayed, strict=True)
        )
    if reference == replayed and type(reference) is type(replayed):
        return True
    if isinstance(replayed, str) and replayed in made and _random_tokens(reference, replayed):
        return True  # a secret, hash or prefix the tool drew from randomness, on both sides
    return _volatile(reference, replayed, key)


def _random_tokens(reference: Any, replayed: str) -> bool:
    """Both strings random-looking tokens of one shape: the same prefix (`ts_`) and length,
    and a body of at least 5 characters mixing two of lower case, upper case and digits."""
    if not isinstance(reference, str) or _shape(reference) != _shape(replayed):
        return False
    return all(
        TOKEN.match(text) and _mixed(text[len(_shape(text)[0]) :]) for text in (reference, replayed)
    )


def _mixed(body: str) -> bool:
    kinds = (str.islower, str.isupper, str.isdigit)
    return len(body) >= 5 and sum(any(kind(c) for c in body) for kind in kinds) >= 2


def _volatile(reference: Any, replayed: Any, key: str) -> bool:
    if isinstance(reference, str) and isinstance(replayed, str):
        if TIMESTAMP.match(reference) and TIMESTAMP.match(replayed):
            return True
        is_id = key == "id" or key.endswith(("_id", "Id"))
        return is_id and bool(GENERATED_ID.match(reference) and GENERATED_ID.match(replayed))
    numbers = (int, float)
    if isinstance(reference, numbers) and isinstance(replayed, numbers):
        return any(word in key.lower() for word in VOLATILE_NUMBER_KEYS)
    return False


def _parsed(reference: Any) -> Any:
    if isinstance(reference, str):
        try:
            return json.loads(reference)
        except ValueError:
            return reference
    return reference


def _difference(
    reference: Any, replayed: Any, path: str = "", made: frozenset[str] = frozenset()
) -> str:
    """Where the two first differ, in words (`book.title: 'Late Spring' != '東京物語ノート'`)."""
    if isinstance(reference, dict) and isinstance(replayed, dict):
        for k in sorted(set(reference) | set(replayed), key=str):
            where = f"{path}.{k}" if path else str(k)
            if k not in reference or k not in replayed:
                return f"{where}: present on one side only"
            if not same_answer(reference[k], replayed[k], str(k), made):
                return _difference(reference[k], replayed[k], where, made)
    if (
        isinstance(reference, list)
        and isinstance(replayed, list)
        and len(reference) == len(replayed)
    ):
        for i, (a, b) in enumerate(zip(reference, replayed, strict=True)):
            if not same_answer(a, b, path.rsplit(".", 1)[-1], made):
                return _difference(a, b, f"{path}[{i}]", made)
    shown = (
        json.dumps(reference, ensure_ascii=False)[:80],
        json.dumps(replayed, ensure_ascii=False)[:80],
    )
    return f"{path or 'the answer'}: {shown[0]} released, {shown[1]} here"
