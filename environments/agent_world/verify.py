"""Verifying released tools the way every tool here is verified: in the sandbox, on real rows.

Each tool is called in fresh episodes of a candidate package (every tool whose code parses,
no log collection declared yet) with arguments from the release's own question chains first,
then drawn from the collections (a `book_id` takes the ids of `books`, a field of the same
name takes its values, an enum its options). A tool is verified when:

- its code loads;
- at least one call succeeds: no exception, and no error answered as a result
  (`{"error": ...}`, `{"found": false}`, `{"success": false}`, `{"ok": false}`);
- a tool named as a read (get, list, search, ...) changes nothing but log collections and
  the timestamps it stamps on rows it used (`last_used_at`, `updated_at`);
- a tool named as a write (create, update, delete, ...) changes the collections in at least one
  successful call (its writes persist);
- the same call, made twice in fresh episodes, gives the same result and the same state.

A tool none of whose calls succeeded is called again with arguments drawn from the rows alone
(a question's step called out of its chain may need what the earlier steps did) and with its
optional parameters filled too (an update whose fields are all optional answers an error
without one). Otherwise it is
rejected with the reason in words. A tool that needs the network fails every
call with the sandbox's refusal and is rejected as needing the network.

Log collections are found from the same calls (`log_collections`): a collection is a log when
every change any call made to it was an append, at least two tools appended to it, each of them
on every call it completed, and it was written where nothing calls for a write: by a tool named
as a read, or by a call that answered an error. Such a collection is left out of state
comparison (a loans collection only the lending tool appends to, on success, is not a log).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.discovery.naming import singular

from .release import ReleaseEnvironment, ReleaseTool, ToolRefusal

CANDIDATES_PER_TOOL = 3
READ_VERBS = frozenset(
    "get list search find fetch lookup look describe count check show view read query browse "
    "retrieve inspect summarize summarise validate preview resolve compute calculate convert "
    "estimate".split()
)
WRITE_VERBS = frozenset(
    "create add update delete remove set insert cancel book register submit upload assign "
    "approve reject close archive restore mark move rename reset revoke rotate post send edit "
    "modify put patch save store record enroll enrol schedule reschedule complete confirm "
    "start stop pause resume unlink link attach detach transfer refund".split()
)
NETWORK_WORDS = ("network", "socket", "ssl", "connect", "getaddrinfo")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


@dataclass
class Probe:
    """One call made to verify a tool, in its own fresh episode."""

    arguments: dict[str, Any]
    completed: bool  # the call returned (it raised nothing, the sandbox refused nothing)
    result: Any = None
    error: str = ""  # the exception or refusal, in words
    error_kind: str = ""
    answered_error: str = ""  # an error the tool answered as its result
    diff: dict[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.completed and not self.answered_error


@dataclass
class ToolVerdict:
    name: str
    verified: bool
    kind: str = ""  # read | write (from what its calls did)
    reason: str = ""  # why it was rejected
    reason_kind: str = ""  # the rejection, as counted per release
    probes: int = 0
    succeeded: int = 0
    changed: list[str] = field(default_factory=list)
    example: dict[str, Any] = field(default_factory=dict)  # arguments of a successful call

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["accuracy"] = round(self.succeeded / self.probes, 3) if self.probes else 0.0
        return data


@dataclass
class ReleaseVerification:
    verdicts: list[ToolVerdict]
    log_collections: list[str]

    @property
    def verified_tools(self) -> list[str]:
        return [v.name for v in self.verdicts if v.verified]

    def rejected(self) -> list[dict[str, str]]:
        return [{"tool": v.name, "reason": v.reason} for v in self.verdicts if not v.verified]

    def rejected_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for verdict in self.verdicts:
            if not verdict.verified:
                counts[verdict.reason_kind] = counts.get(verdict.reason_kind, 0) + 1
        return dict(sorted(counts.items()))

    def report(self, min_tools: int) -> dict[str, Any]:
        """The verification report stored on the environment (registry.tool_results reads its
        verdicts)."""
        verified = self.verified_tools
        return {
            "verified": len(verified) >= min_tools,
            "verified_tools": verified,
            "verdicts": [v.as_dict() for v in self.verdicts],
            "log_collections": self.log_collections,
            "rejected_by_reason": self.rejected_by_reason(),
            "min_tools": min_tools,
            "summary": self.summary(min_tools),
        }

    def summary(self, min_tools: int) -> str:
        words = f"{len(self.verified_tools)} of {len(self.verdicts)} released tools verified"
        if self.rejected_by_reason():
            rejected = ", ".join(f"{n} {k}" for k, n in self.rejected_by_reason().items())
            words += f"; rejected: {rejected}"
        if len(self.verified_tools) < min_tools:
            words += f"; {min_tools} needed"
        return words

    def explain(self) -> str:
        lines = [self.summary(0)]
        if self.log_collections:
            lines.append(f"log collections (left out of state): {', '.join(self.log_collections)}")
        lines += [f"- {v.name}: {v.reason}" for v in self.verdicts if not v.verified]
        return "\n".join(lines)


def refused_verdict(refusal: ToolRefusal) -> ToolVerdict:
    """A tool refused before it ran (its code does not parse, its schema is broken)."""
    kind = "code does not parse" if "does not parse" in refusal.reason else "refused as released"
    return ToolVerdict(refusal.name, False, reason=refusal.reason, reason_kind=kind)


def verify_release_tools(
    environment: ReleaseEnvironment, package_path: str | Path, pool: Any
) -> ReleaseVerification:
    """Run every tool of the candidate package at `package_path` in `pool`; see the module
    docstring for what verifies a tool and what makes a log collection."""
    with pool.start_episode(package_path) as first:
        load_problems = first.load_problems()
    probes: dict[str, list[Probe]] = {}
    for tool in environment.tools:
        if tool.name in load_problems:
            continue
        probes[tool.name] = [
            probe_call(pool, package_path, tool.name, arguments)
            for arguments in candidate_arguments(tool, environment)
        ]
        if not any(p.succeeded for p in probes[tool.name]):
            tried = [p.arguments for p in probes[tool.name]]
            for arguments in fallback_arguments(tool, environment):
                if arguments not in tried:
                    tried.append(arguments)
                    probes[tool.name].append(probe_call(pool, package_path, tool.name, arguments))
    logs = log_collections(probes)
    verdicts = []
    for tool in environment.tools:
        if tool.name in load_problems:
            reason = load_problems[tool.name].replace(
                "its code raised", "its code does not load:", 1
            )
            verdicts.append(
                ToolVerdict(tool.name, False, reason=reason, reason_kind="does not load")
            )
            continue
        verdict = judge(tool.name, probes[tool.name], logs)
        if verdict.verified:
            recheck_determinism(pool, package_path, verdict, probes[tool.name], logs)
        verdicts.append(verdict)
    verdicts += [refused_verdict(r) for r in environment.refused_tools]
    return ReleaseVerification(verdicts, sorted(logs))


def probe_call(pool: Any, package_path: str | Path, tool: str, arguments: dict) -> Probe:
    with pool.start_episode(package_path) as episode:
        called = episode.call_tool(tool, arguments)
        if not called.ok:
            return Probe(
                arguments, False, error=called.error or "", error_kind=called.error_kind or ""
            )
        return Probe(
            arguments,
            True,
            result=called.result,
            answered_error=answered_error(called.result),
            diff=episode.state_diff(),
        )


def answered_error(result: Any) -> str:
    """The error a tool answered as its result, in its words ("" for none)."""
    if not isinstance(result, dict):
        return ""
    error = result.get("error")
    if error:
        if isinstance(error, dict):
            return str(error.get("message") or error.get("code") or error)[:300]
        return str(error)[:300]
    for flag in ("found", "success", "ok"):
        if result.get(flag) is False:
            return str(result.get("message") or f"{flag}: false")[:300]
    return ""


def log_collections(probes: dict[str, list[Probe]]) -> set[str]:
    """The collections tools append to on every call (see the module docstring)."""
    touched = {name for calls in probes.values() for p in calls for name in p.diff}
    logs = set()
    for name in touched:
        changes = [p.diff[name] for calls in probes.values() for p in calls if name in p.diff]
        if any(c["removed"] or c["changed"] or not c["added"] for c in changes):
            continue
        appenders = {tool for tool, calls in probes.items() if any(name in p.diff for p in calls)}
        every_call = all(name in p.diff for tool in appenders for p in probes[tool] if p.completed)
        uncalled_for = any(_verb(tool) in READ_VERBS for tool in appenders) or any(
            name in p.diff and p.answered_error for tool in appenders for p in probes[tool]
        )
        if every_call and len(appenders) >= 2 and uncalled_for:
            logs.add(name)
    return logs


def judge(tool: str, calls: list[Probe], logs: set[str]) -> ToolVerdict:
    """The verdict on one tool from its calls, log collections aside."""
    verdict = ToolVerdict(tool, False, probes=len(calls))
    succeeded = [p for p in calls if p.succeeded]
    verdict.succeeded = len(succeeded)
    if not succeeded:
        failed = [p for p in calls if not p.completed]
        if failed and len(failed) == len(calls) and all(_needs_network(p) for p in failed):
            verdict.reason = f"it needs the network, which the sandbox refuses ({failed[-1].error})"
            verdict.reason_kind = "needs the network"
        elif failed and len(failed) == len(calls):
            verdict.reason = f"every call failed on real rows: {failed[-1].error}"
            verdict.reason_kind = "always fails"
        else:
            answered = next(p for p in calls if p.answered_error)
            verdict.reason = (
                f"it answered every call on real rows with an error: {answered.answered_error}"
            )
            verdict.reason_kind = "answers only errors"
        return verdict
    verb = _verb(tool)
    changed = sorted({name for p in succeeded for name in p.diff if name not in logs})
    if verb in READ_VERBS:  # a read may stamp when a row was last used; that is no write
        changed = [
            name
            for name in changed
            if not all(only_stamps(p.diff[name]) for p in succeeded if name in p.diff)
        ]
    verdict.changed = changed
    verdict.kind = "write" if changed else "read"
    verdict.example = succeeded[0].arguments
    if verb in READ_VERBS and changed:
        verdict.reason = f"its name says it reads, yet it changed {', '.join(changed)}"
        verdict.reason_kind = "a read that writes"
        return verdict
    if verb in WRITE_VERBS and not changed:
        verdict.reason = (
            "its writes do not persist: every successful call left the collections as they were"
        )
        verdict.reason_kind = "writes do not persist"
        return verdict
    verdict.verified = True
    return verdict


def only_stamps(change: dict[str, Any]) -> bool:
    """Whether a collection's change only rewrote timestamps of existing rows (`last_used_at`,
    `updated_at`): no row added or removed, and every field that changed holds a timestamp
    after it (before it, a timestamp or nothing)."""
    if change.get("added") or change.get("removed") or not change.get("changed"):
        return False
    for row in change["changed"]:
        before, after = row.get("before"), row.get("after")
        if not isinstance(before, dict) or not isinstance(after, dict):
            return False
        for field_name in set(before) | set(after):
            old, new = before.get(field_name), after.get(field_name)
            if old == new:
                continue
            if not _is_timestamp(new) or not (old is None or _is_timestamp(old)):
                return False
    return True


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, str) and bool(TIMESTAMP.match(value))


def recheck_determinism(
    pool: Any, package_path: str | Path, verdict: ToolVerdict, calls: list[Probe], logs: set[str]
) -> None:
    """The first successful call once more in a fresh episode: the same result and state."""
    first = next(p for p in calls if p.succeeded)
    again = probe_call(pool, package_path, verdict.name, first.arguments)
    same_state = {k: v for k, v in again.diff.items() if k not in logs} == {
        k: v for k, v in first.diff.items() if k not in logs
    }
    if again.result != first.result or not same_state:
        verdict.verified = False
        verdict.reason = (
            "the same call gave a different result or state the second time, under the "
            f"frozen clock and seeded ids (arguments {first.arguments})"
        )
        verdict.reason_kind = "nondeterministic"


# --- arguments -------------------------------------------------------------------------------


def candidate_arguments(tool: ReleaseTool, environment: ReleaseEnvironment) -> list[dict]:
    """Up to CANDIDATES_PER_TOOL argument sets: the release's question chains first, then
    values drawn from the collections for the required parameters."""
    found: list[dict] = []
    for question in environment.questions:
        for step in question.chain:
            if step.tool == tool.name and step.args not in found:
                found.append(dict(step.args))
    properties = tool.parameters.get("properties") or {}
    required = [p for p in tool.parameters.get("required") or [] if p in properties]
    for index in range(CANDIDATES_PER_TOOL):
        arguments = {
            name: value_for(name, properties[name], environment, index) for name in required
        }
        if arguments not in found:
            found.append(arguments)
        if not required:
            break
    return found[:CANDIDATES_PER_TOOL]


def fallback_arguments(tool: ReleaseTool, environment: ReleaseEnvironment) -> list[dict]:
    """The calls tried when none of the first ones succeeded: the required parameters drawn
    from the real rows (a question's step, called alone, may need what its earlier steps did:
    a send through an integration the chain enabled first), then every parameter, optional ones
    too (an update whose fields to set are all optional answers an error without one)."""
    properties = tool.parameters.get("properties") or {}
    required = [p for p in tool.parameters.get("required") or [] if p in properties]
    drawn = [{name: value_for(name, properties[name], environment, 0) for name in required}]
    if set(properties) - set(required):
        drawn.append(
            {
                name: value_for(name, schema if isinstance(schema, dict) else {}, environment, 0)
                for name, schema in properties.items()
            }
        )
    return drawn


def value_for(name: str, schema: dict, environment: ReleaseEnvironment, index: int) -> Any:
    """A value for parameter `name` from the real rows where one fits, else a plain one."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][index % len(schema["enum"])]
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    values = [v for v in field_values(name, environment) if _fits(v, kinds)]
    if index < len(values):
        return values[index]
    if values:  # fewer real values than calls: one nearby, so a write has something to change
        return _nearby(values[index % len(values)], index)
    if "integer" in kinds:
        return max(1, int(schema.get("minimum", 1)))
    if "number" in kinds:
        return float(schema.get("minimum", 1))
    if "boolean" in kinds:
        return True
    if "array" in kinds:
        return []
    if "object" in kinds:
        return {}
    return "sample"


def field_values(name: str, environment: ReleaseEnvironment) -> list[Any]:
    """Scalar values of fields named `name` in the collections; for `<thing>_id`, the ids of
    the collection named for the thing (`book_id` -> books)."""
    owned: list[Any] = []  # the ids of the collection named for the thing, first
    values: list[Any] = []
    stem = name[: -len("_id")] if name.endswith("_id") else ""
    for collection in environment.collections:
        rows = collection.data if isinstance(collection.data, list) else [collection.data]
        owner = bool(stem) and singular(collection.name).endswith(stem)
        for row in rows:
            if not isinstance(row, dict):
                continue
            if name in row and _scalar(row[name]):
                values.append(row[name])
            if owner and _scalar(row.get("id")):
                owned.append(row["id"])
    values = owned + values
    unique = []
    for value in values:
        if value not in unique:
            unique.append(value)
    return unique


def _nearby(value: Any, index: int) -> Any:
    if isinstance(value, int | float):
        return value + index
    return f"{value} {index + 1}"


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _fits(value: Any, kinds: list[str]) -> bool:
    if not kinds:
        return True
    checks = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
    }
    return any(checks.get(kind, False) for kind in kinds)


def _verb(tool: str) -> str:
    words = [
        w for w in re.split(r"[^a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", tool).lower()) if w
    ]
    return words[0] if words else ""


def _needs_network(probe: Probe) -> bool:
    return probe.error_kind == "sandbox_violation" and any(
        word in probe.error.lower() for word in NETWORK_WORDS
    )
