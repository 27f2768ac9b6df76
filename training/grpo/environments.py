"""One TRL environment class per Agent-World environment package.

TRL's ``environment_factory`` turns an environment's public methods into tools (schema from
signature + docstring) and calls ``reset(**row)`` before each rollout. Our tools come from the
package manifest, so each package gets a class built at run time whose methods carry the
manifest's parameters as a real signature; every call crosses into a sandbox episode and is
recorded, so the reward sees the same evidence a rollout trajectory holds. ``submit_answer`` is
a tool of every class: it checks the answer against the task's answer contract and records it
(no sandbox call); the reward then reads that submission rather than the final message.

The tools of a class are the tools its tasks offer (``tasks.tool_subset.offered_tools``): one
class per (package, tool subset), see :func:`environment_classes`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import keyword
import logging
import re
from collections.abc import Callable
from typing import Any

from environments.runtime.episode import ToolCallResult
from tasks.answer_contract import SUBMIT_ANSWER
from tasks.tool_subset import not_offered_message, offered_tools, tool_name
from training.rollout.trajectory import Trajectory

log = logging.getLogger(__name__)

_JSON_TO_PYTHON = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}
_RESERVED = {"reset", "get_reward", SUBMIT_ANSWER}


class ToolCallFailed(ValueError):
    """Raised to TRL so it counts the call as failed; the message is what the model sees."""


def _python_type(spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if kinds else "string"
    if kind == "array":
        item = _python_type(spec.get("items") or {"type": "string"})
        return list[item]
    return _JSON_TO_PYTHON.get(kind, str)


def _one_line(text: str, fallback: str) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    # "(choices: ...)" at the end of a description means an enum to transformers' parser.
    text = re.sub(r"\(choices:.*\)$", "", text).strip()
    return text or fallback


def tool_method(schema: dict[str, Any]) -> Callable[..., str] | None:
    """A method whose signature and docstring reproduce one manifest tool schema.

    Returns None for a tool Python cannot name (a keyword, a reserved or private name).
    """
    function = schema.get("function", schema)
    name = function.get("name", "")
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    bad_names = [p for p in properties if not p.isidentifier() or keyword.iskeyword(p)]
    if (
        not name.isidentifier()
        or keyword.iskeyword(name)
        or name.startswith("_")
        or name in _RESERVED
        or bad_names
    ):
        log.warning("tool %r cannot be exposed to TRL (unusable name)", name)
        return None

    def method(self: AgentWorldEnvironment, **arguments: Any) -> str:
        return self._call_tool(name, arguments)

    signature_params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    doc_args = []
    for param, spec in properties.items():
        hint = _python_type(spec)
        if param in required:
            default = inspect.Parameter.empty
        else:
            hint, default = hint | None, None
        annotations[param] = hint
        signature_params.append(
            inspect.Parameter(
                param, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint
            )
        )
        doc_args.append(f"    {param}: {_one_line(spec.get('description', ''), f'the {param}')}")
    annotations["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(signature_params, return_annotation=str)
    method.__annotations__ = annotations
    description = _one_line(function.get("description", ""), f"Call {name}.")
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(doc_args) if doc_args else "")
    return method


class AgentWorldEnvironment:
    """Base of the per-package classes: one sandbox episode per rollout.

    Only ``reset`` and ``submit_answer`` are public here; TRL exposes every public method but
    ``reset`` as a tool.
    """

    _package: Any = None
    _environment: str = ""
    _pool: Any = None
    _tasks: dict[str, Any] = {}
    _key: str = ""  # environment_key of the class's tasks
    _offered: frozenset[str] = frozenset()  # the tool methods of the class
    _instances: list[AgentWorldEnvironment] = []

    def __init__(self) -> None:
        self._episode: Any = None
        self._task: Any = None
        self._trajectory: Trajectory | None = None
        self._submission: dict[str, Any] | None = None
        type(self)._instances.append(self)

    def reset(self, **row: Any) -> None:
        """Start a fresh episode for the row's task (the prompt already holds the instruction)."""
        self._close_episode()
        task = self._tasks[row["task_id"]]
        key = environment_key(self._environment, task, _manifest_tools(self._package))
        if key != self._key:  # a row routed to the class of another tool subset
            raise ValueError(f"task {row['task_id']} belongs to class {key!r}, not {self._key!r}")
        self._task = task
        self._episode = self._pool.start_episode(self._package)
        self._trajectory = Trajectory(task_id=row["task_id"], environment=self._environment)
        self._submission = None
        return None

    def submit_answer(self, answer: str) -> str:
        """Submit your final answer and end the task. Call it once, after the tool calls the task needs.

        Args:
            answer: The answer in the shape the task asks for, as JSON (a number, a quoted string, a list or an object), or plain text.
        """
        from tasks.answer_contract import task_contract
        from tasks.episode_scoring import check_submission

        value = _parse_answer(answer)
        submission = check_submission(task_contract(self._task), {"answer": value})
        if not submission.valid:
            raise ToolCallFailed(f"invalid_arguments: {submission.problem}")
        self._submission = {"answer": value}
        return "Answer recorded; the task is finished."

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if name in self._offered:
            result = self._episode.call_tool(name, arguments)
        else:  # only reachable by calling _call_tool directly: the class has no such method
            result = ToolCallResult(
                name, arguments, False, None, not_offered_message(name), "unknown_tool"
            )
        self._trajectory.add_step(
            "assistant",
            tool_call={"name": name, "arguments": arguments},
            raw_tool_call=json.dumps({"name": name, "arguments": arguments}, default=str),
            tool_result=result.result if result.ok else None,
            error=None if result.ok else result.error,
            error_kind=None if result.ok else result.error_kind,
            duration_ms=result.duration_ms,
        )
        if not result.ok:
            raise ToolCallFailed(f"{result.error_kind}: {result.error}")
        return json.dumps(result.result, ensure_ascii=False, default=str)[:4000]

    def _finish(self, final_answer: str | None, finished_reason: str) -> Trajectory:
        """Close the rollout's record: answer (the recorded submission, else the final text),
        final state hash and diff, and the verification verdict of a programmatic task."""
        from tasks.episode_outcome import finish_episode, submitted_answer_text

        trajectory = self._trajectory
        if self._submission is not None:
            final_answer = submitted_answer_text(self._submission)
            if finished_reason != "format_error":
                finished_reason = "answer"
        trajectory.final_answer = final_answer
        trajectory.finished_reason = finished_reason
        if final_answer is not None:
            trajectory.add_step("assistant", content=final_answer)
        outcome = finish_episode(self._task, self._episode, final_answer)
        trajectory.final_state_hash = outcome.final_state_hash
        trajectory.state_diff = outcome.state_diff
        trajectory.verification = outcome.verification
        return trajectory

    def _close_episode(self) -> None:
        if self._episode is not None:
            self._episode.close()
            self._episode = None


def _parse_answer(answer: Any) -> Any:
    """A submitted answer: the JSON value when the text is JSON (``{"answer": x}`` gives x),
    else the text itself; a value the trainer already parsed stays as it is."""
    if not isinstance(answer, str):
        return answer
    try:
        value = json.loads(answer)
    except ValueError:
        return answer
    if isinstance(value, dict) and set(value) == {"answer"}:
        return value["answer"]
    return value


def _manifest_tools(package: Any) -> list[dict[str, Any]]:
    from training.rollout.agent_loop import package_manifest

    return list(package_manifest(package).get("tools", []))


def _subset(task: Any, package: Any) -> frozenset[str]:
    """The package tools ``task`` offers (``submit_answer`` aside)."""
    names = {tool_name(t) for t in offered_tools(task, _manifest_tools(package))}
    return frozenset(names - {SUBMIT_ANSWER})


def environment_key(name: str, task: Any, manifest_tools: list[dict[str, Any]]) -> str:
    """The ``environment`` of a task's GRPO row: the name of the class holding its tools.

    ``name`` itself when the task offers every tool of the package (older tasks with no
    ``tools`` list included), else ``name~<hash of the offered names>``.
    """
    offered = {tool_name(t) for t in offered_tools(task, manifest_tools)} - {SUBMIT_ANSWER}
    everything = {tool_name(t) for t in manifest_tools} - {SUBMIT_ANSWER}
    if offered == everything:
        return name
    digest = hashlib.sha256(",".join(sorted(offered)).encode()).hexdigest()[:10]
    return f"{name}~{digest}"


def environment_class(
    name: str,
    package: Any,
    pool: Any,
    tasks: dict[str, Any],
    tools: Any = None,
    key: str | None = None,
) -> type:
    """Build the class for one package and tool subset: those tools as methods (``tools``,
    names; None: every tool of the package), its tasks by id. ``key`` names the class
    (default ``name``)."""
    manifest_tools = _manifest_tools(package)
    wanted = None if tools is None else set(tools)
    members: dict[str, Any] = {
        "_package": package,
        "_environment": name,
        "_key": key or name,
        "_pool": pool,
        "_tasks": tasks,
        "_instances": [],
    }
    offered = set()
    for schema in manifest_tools:
        if wanted is not None and tool_name(schema) not in wanted:
            continue
        method = tool_method(schema)
        if method is not None:
            members[method.__name__] = method
            offered.add(method.__name__)
    members["_offered"] = frozenset(offered)
    class_name = "Env_" + re.sub(r"\W", "_", key or name)
    return type(class_name, (AgentWorldEnvironment,), members)


def environment_classes(name: str, package: Any, pool: Any, tasks: dict[str, Any]) -> dict:
    """{row environment key: class} for one package: one class per tool subset its tasks offer.

    Why a class per (package, subset) rather than one class refusing calls outside the running
    task's subset: TRL renders the tool schemas of the chat template from the class's methods
    (``_env_tools[row["environment"]]``), not from our prompt, so with one class per package
    the model would still be shown every tool of the environment. With a class per subset, the
    template, the system prompt and the callable methods are the same subset; a call to any
    other tool finds no method and TRL answers "Tool X not found." (``_call_tool`` refuses one
    too, should it be reached). ``reset`` refuses a row routed to the wrong subset's class.
    """
    manifest_tools = _manifest_tools(package)
    groups: dict[str, dict[str, Any]] = {}
    for task_id, task in tasks.items():
        groups.setdefault(environment_key(name, task, manifest_tools), {})[task_id] = task
    classes = {}
    for key, group in groups.items():  # every class knows every task, to name a misrouted one
        subset = _subset(next(iter(group.values())), package)
        classes[key] = environment_class(name, package, pool, tasks, tools=subset, key=key)
    return classes


def close_all(classes: list[type]) -> None:
    """Close every episode the training run opened."""
    for cls in classes:
        for instance in cls._instances:
            instance._close_episode()
