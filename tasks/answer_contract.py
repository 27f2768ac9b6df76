"""The answer contract: what shape a task's answer has, and how an agent's answer is read.

Every task declares its answer: nothing (a pure state task), one scalar (with unit and
precision), one entity key, a list, an object, or free text. The agent answers through the
``submit_answer`` tool whose JSON schema comes from the contract, or (clients without tools) a
final JSON block. Prose around a structured answer is ignored, so it neither helps nor hurts;
an answer that offers several candidates where one is asked is a hedge and never counts.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SUBMIT_ANSWER = "submit_answer"

AnswerKind = Literal["none", "scalar", "entity", "list", "object", "text"]
ValueType = Literal["number", "integer", "string", "boolean", "object", "any"]

KINDS: tuple[str, ...] = ("none", "scalar", "entity", "list", "object", "text")
VALUE_TYPES: tuple[str, ...] = ("number", "integer", "string", "boolean", "object", "any")


class ContractError(ValueError):
    """A contract that cannot describe an answer (unknown kind, bad precision)."""


@dataclass(frozen=True)
class AnswerContract:
    """The shape of one task's answer; stored on the task and shown to the agent."""

    kind: AnswerKind
    value_type: ValueType = "any"  # type of the scalar, or of each list item
    unit: str | None = None  # e.g. "km", "USD": said in the instruction, never required
    precision: int | None = None  # decimals a number is compared at
    entity: str | None = None  # table whose row the answer names (entity, list of entities)
    field: str | None = None  # the column reported for that row
    ordered: bool = False  # list answers: does the order count
    fields: tuple[str, ...] = ()  # object answers: the keys that must be present

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ContractError(f"unknown answer kind {self.kind!r}; kinds: {', '.join(KINDS)}")
        if self.value_type not in VALUE_TYPES:
            raise ContractError(f"unknown value type {self.value_type!r}")
        if self.precision is not None and not 0 <= self.precision <= 12:
            raise ContractError("precision must be between 0 and 12 decimals")

    @property
    def expects_answer(self) -> bool:
        return self.kind != "none"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["fields"] = list(self.fields)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerContract:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["fields"] = tuple(known.get("fields") or ())
        return cls(**known)

    # -- what the agent is shown ---------------------------------------------------------------

    def item_schema(self) -> dict[str, Any]:
        """JSON schema of one value (the scalar, or one list item)."""
        if self.value_type == "number":
            return {"type": "number"}
        if self.value_type == "integer":
            return {"type": "integer"}
        if self.value_type == "boolean":
            return {"type": "boolean"}
        if self.value_type == "string":
            return {"type": "string"}
        if self.value_type == "object":
            return {"type": "object"}
        return {"type": ["string", "number", "integer", "boolean"]}

    def answer_schema(self) -> dict[str, Any]:
        """JSON schema of the ``answer`` argument of ``submit_answer``."""
        description = self.describe()
        if self.kind == "none":
            return {"type": "null", "description": description}
        if self.kind == "list":
            return {"type": "array", "items": self.item_schema(), "description": description}
        if self.kind == "object":
            return {
                "type": "object",
                "properties": {name: {} for name in self.fields},
                "required": list(self.fields),
                "description": description,
            }
        if self.kind == "text":
            return {"type": "string", "description": description}
        if self.kind == "entity":
            return {"type": ["string", "integer"], "description": description}
        return {**self.item_schema(), "description": description}

    def tool_schema(self) -> dict[str, Any]:
        """The ``submit_answer`` tool in OpenAI function format (also served over MCP)."""
        answer_required = self.kind != "none"
        return {
            "type": "function",
            "function": {
                "name": SUBMIT_ANSWER,
                "description": (
                    "Submit your final answer and end the task. Call it once, after the tool "
                    "calls the task needs. " + self.describe()
                ),
                "parameters": {
                    "type": "object",
                    "properties": {"answer": self.answer_schema()},
                    "required": ["answer"] if answer_required else [],
                    "additionalProperties": False,
                },
            },
        }

    def describe(self) -> str:
        """One sentence for the instruction: the answer's shape, never its value."""
        unit = f" in {self.unit}" if self.unit else ""
        decimals = (
            f", rounded to {self.precision} decimal{'s' if self.precision != 1 else ''}"
            if self.precision is not None and self.value_type == "number"
            else ""
        )
        if self.kind == "none":
            return "No answer value is needed: submit null once the changes are made."
        if self.kind == "scalar":
            noun = {
                "number": "a single number",
                "integer": "a single whole number",
                "boolean": "true or false",
                "string": "a single text value",
            }.get(self.value_type, "a single value")
            return f"The answer is {noun}{unit}{decimals}."
        if self.kind == "entity":
            what = f"the {_words(self.field)}" if self.field else "the key"
            of = f" of one {_words(self.entity)}" if self.entity else ""
            return f"The answer is {what}{of}, exactly as the data gives it."
        if self.kind == "list":
            items = f"the {_words(self.field)} values" if self.field else "the values"
            order = "in the order asked" if self.ordered else "in any order"
            return f"The answer is a JSON list of {items}{unit}, one per row found, {order}."
        if self.kind == "object":
            return "The answer is a JSON object with the keys " + ", ".join(self.fields) + "."
        return "The answer is a short free-text reply."


def answer_instruction(contract: AnswerContract) -> str:
    """The sentence every instruction ends with: the answer's shape and how to submit it."""
    how = f'Submit it with the {SUBMIT_ANSWER} tool, or end with a JSON block {{"answer": ...}}.'
    if not contract.expects_answer:
        return (
            f"No answer value is needed: once the changes are made, call {SUBMIT_ANSWER} with null."
        )
    return f"{contract.describe()} {how}"


def _words(name: str | None) -> str:
    return (name or "").replace("_", " ")


# --- deriving a contract from a gold answer ---------------------------------------------------


def value_type_of(value: Any) -> ValueType:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "any"


def _precision_of(value: Any) -> int | None:
    if isinstance(value, float) and not value.is_integer():
        decimals = len(repr(value).split(".")[-1]) if "e" not in repr(value) else 6
        return min(decimals, 2)
    return None


def contract_for(
    reference: Any, spec: dict[str, Any] | None = None, entity: str | None = None
) -> AnswerContract:
    """The contract of a synthesized answer: the answer spec the instruction asks for
    (shape scalar | value | list | object | none, the field reported) plus the gold value."""
    spec = spec or {}
    shape = spec.get("shape")
    reported = spec.get("field")
    if shape == "none" or (shape is None and reference is None):
        return AnswerContract("none")
    if isinstance(reference, list):
        types = {value_type_of(v) for v in reference}
        if types == {"integer", "number"}:
            types = {"number"}
        item = types.pop() if len(types) == 1 else "any"
        numbers = [v for v in reference if isinstance(v, float)]
        precision = max((_precision_of(v) or 0 for v in numbers), default=None)
        return AnswerContract(
            "list",
            value_type=item,
            precision=precision or None,
            entity=entity if reported else None,
            field=reported,
            ordered=bool(spec.get("ordered")),
        )
    if isinstance(reference, dict):
        return AnswerContract("object", value_type="object", fields=tuple(sorted(reference)))
    kind = value_type_of(reference)
    if kind == "string" and reported and entity:
        return AnswerContract("entity", value_type="string", entity=entity, field=reported)
    if spec.get("precision") is not None and kind in ("integer", "number"):
        # The instruction fixed the rounding: a whole gold value is still a rounded number.
        return AnswerContract("scalar", value_type="number", precision=int(spec["precision"]))
    return AnswerContract("scalar", value_type=kind, precision=_precision_of(reference))


def task_contract(task: Any) -> AnswerContract:
    """A task's declared contract (TaskSpec or its dict form); tasks stored before contracts
    get one from their answer spec and reference answer."""
    get = task.get if isinstance(task, dict) else lambda name: getattr(task, name, None)
    if get("answer_contract"):
        return AnswerContract.from_dict(get("answer_contract"))
    spec = (get("metadata") or {}).get("answer") or {}
    return contract_for(get("reference_answer"), spec)


# --- reading what the agent submitted ---------------------------------------------------------


@dataclass
class Submission:
    """The agent's answer as read against the contract: the value, or why it is unusable."""

    given: bool  # did the agent give any answer at all
    value: Any = None  # the structured value (valid only when ``problem`` is None)
    problem: str | None = None  # why the answer cannot count (missing, malformed, hedged)
    hedged: bool = False
    source: str = ""  # "submit_answer", "json_block", "bare_json"
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.given and self.problem is None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def structured_answer(final: Any) -> tuple[bool, Any, str]:
    """(found, value, source) from what the agent ended with.

    ``final`` is the ``submit_answer`` arguments (a dict with ``answer``), the JSON text the
    episode recorded, or a final message: a fenced JSON block, a message that is JSON as a
    whole, or a trailing ``{"answer": ...}`` object. Prose alone is no structured answer.
    """
    if isinstance(final, dict) and "answer" in final:
        return True, final["answer"], SUBMIT_ANSWER
    if final is None:
        return False, None, ""
    if not isinstance(final, str):
        return True, final, "value"
    text = final.strip()
    if not text:
        return False, None, ""
    blocks = _FENCE.findall(text)
    candidates = [(b.strip(), "json_block") for b in reversed(blocks)]
    candidates.append((text, "bare_json"))
    brace = text.rfind('{"answer"')
    if brace >= 0:
        candidates.append((text[brace:], "json_block"))
    for candidate, source in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict) and set(value) == {"answer"}:
            return True, value["answer"], source
        return True, value, source
    return False, None, ""


_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def read_number(value: Any) -> tuple[float | None, str | None]:
    """A number from a structured value: a JSON number, or a string holding exactly one
    number (thousands separators, a currency sign or a unit around it are fine)."""
    if isinstance(value, bool):
        return None, "a boolean where a number is asked"
    if isinstance(value, int | float):
        return (float(value), None) if math.isfinite(value) else (None, "not a finite number")
    if isinstance(value, str):
        found = _NUMBER.findall(value.replace("\u2212", "-"))  # a typographic minus sign
        if len(found) == 1:
            return float(found[0].replace(",", "")), None
        if not found:
            return None, f"no number in {value[:60]!r}"
        return None, f"several numbers in {value[:60]!r}: one is asked"
    if isinstance(value, list):
        return None, "a list where one number is asked (hedged)"
    return None, f"{type(value).__name__} where a number is asked"


def read_submission(contract: AnswerContract, final: Any) -> Submission:
    """Validate what the agent submitted against the contract."""
    found, value, source = structured_answer(final)
    if not contract.expects_answer:
        return Submission(True, None, None, source=source or "none")
    if not found:
        given = final is not None and str(final).strip() != ""
        reason = "no structured answer (use submit_answer or a final JSON block)"
        return Submission(given, None, reason if given else "no answer given", source=source)
    if value is None:
        return Submission(True, None, "the answer is null", source=source)
    checked, problem, hedged = _check(contract, value)
    return Submission(True, checked, problem, hedged, source)


def _check(contract: AnswerContract, value: Any) -> tuple[Any, str | None, bool]:
    """(value as compared, problem, hedged)."""
    if contract.kind in ("scalar", "entity"):
        if isinstance(value, list | tuple):
            if len(value) == 1:
                value = value[0]
            else:
                return None, f"{len(value)} candidates where one answer is asked", True
        if isinstance(value, dict):
            return None, "an object where one value is asked", False
        return _check_item(contract, value)
    if contract.kind == "list":
        if not isinstance(value, list):
            return None, "a list is asked", False
        items = []
        for item in value:
            checked, problem, _ = _check_item(contract, item)
            if problem:
                return None, f"list item {item!r}: {problem}", False
            items.append(checked)
        return items, None, False
    if contract.kind == "object":
        if not isinstance(value, dict):
            return None, "an object is asked", False
        missing = [name for name in contract.fields if name not in value]
        if missing:
            return None, f"object lacks keys {missing}", False
        return value, None, False
    if contract.kind == "text":
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            return None, "a text answer is asked", False
        return str(value), None, False
    return value, None, False


def _check_item(contract: AnswerContract, value: Any) -> tuple[Any, str | None, bool]:
    if contract.value_type in ("number", "integer"):
        number, problem = read_number(value)
        return number, problem, bool(problem and "hedged" in problem)
    if contract.value_type == "boolean":
        if isinstance(value, bool):
            return value, None, False
        word = normalise_text(value)
        if word in ("true", "yes"):
            return True, None, False
        if word in ("false", "no"):
            return False, None, False
        return None, "true or false is asked", False
    if contract.value_type == "object":
        return (value, None, False) if isinstance(value, dict) else (None, "an object", False)
    if isinstance(value, dict | list):
        return None, "one value is asked", False
    return value, None, False


# --- comparing a valid submission with the reference -------------------------------------------


def normalise_text(value: Any) -> str:
    text = unicodedata.normalize("NFKC", str(value)).casefold().strip()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" \t\"'`.;:!")


def values_equal(contract: AnswerContract, reference: Any, got: Any) -> bool:
    """One reference value against one submitted value, by the contract's rules."""
    if isinstance(reference, bool) or isinstance(got, bool):
        return isinstance(got, bool) and isinstance(reference, bool) and got is reference
    if isinstance(reference, int | float):
        number, _ = read_number(got)
        if number is None:
            return False
        if isinstance(reference, int) and contract.precision is None:
            return number == reference  # counts and keys: exact, never within a tolerance
        if contract.precision is not None:
            return round(float(reference), contract.precision) == round(number, contract.precision)
        return math.isclose(float(reference), number, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(reference, dict):
        return isinstance(got, dict) and all(
            k in got and values_equal(contract, v, got[k]) for k, v in reference.items()
        )
    if reference is None:
        return got is None
    if isinstance(got, int | float) and not isinstance(got, bool):
        number, _ = read_number(reference)
        if number is not None:
            return math.isclose(number, float(got), rel_tol=1e-9)
    return normalise_text(reference) == normalise_text(got)


@dataclass
class AnswerCheck:
    """How a valid submission compares with the reference: solved, plus partial progress."""

    correct: bool
    partial: float  # in [0, 1]: list F1 or object key share; 0 or 1 for single values
    reason: str


def compare(contract: AnswerContract, reference: Any, got: Any) -> AnswerCheck:
    """Compare without quoting the reference (reasons reach agents and viewers)."""
    if contract.kind == "list":
        return _compare_list(contract, list(reference or []), list(got or []))
    if contract.kind == "object":
        keys = list(reference) if isinstance(reference, dict) else []
        right = [k for k in keys if k in got and values_equal(contract, reference[k], got[k])]
        if keys and len(right) == len(keys):
            return AnswerCheck(True, 1.0, "object matches on every key")
        wrong = sorted(set(keys) - set(right))
        return AnswerCheck(False, len(right) / max(1, len(keys)), f"object differs on {wrong[:5]}")
    if values_equal(contract, reference, got):
        return AnswerCheck(True, 1.0, "answer matches the reference")
    return AnswerCheck(False, 0.0, f"answer {str(got)[:80]!r} differs from the reference")


def _compare_list(contract: AnswerContract, reference: list, got: list) -> AnswerCheck:
    if contract.ordered:
        same = sum(1 for a, b in zip(reference, got, strict=False) if values_equal(contract, a, b))
        if same == len(reference) == len(got):
            return AnswerCheck(True, 1.0, "list matches in order")
        return AnswerCheck(False, same / max(1, len(reference), len(got)), f"{same} items in place")
    left = list(got)
    matched = 0
    for item in reference:
        hit = next((i for i, g in enumerate(left) if values_equal(contract, item, g)), None)
        if hit is not None:
            left.pop(hit)
            matched += 1
    missing = len(reference) - matched
    if not missing and not left:
        return AnswerCheck(True, 1.0, f"list matches ({len(reference)} items, order ignored)")
    precision = matched / len(got) if got else 0.0
    recall = matched / len(reference) if reference else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return AnswerCheck(
        False, f1, f"list has {matched} of the expected items, {missing} missing, {len(left)} extra"
    )
