"""Reading a release of environments in the Agent-World format into typed records.

Nothing here runs the release's code: tool sources are parsed with `ast` only (a tool whose code
does not parse is refused, the environment is not). Everything else that is malformed refuses
the environment with a `ReleaseError` naming what, where and why: a missing checkpoint, a
checkpoint that is not JSON, a missing collection folder, an environment id that would leave
the release folder, a collection file that is not JSON or is a link.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.package import TOOL_NAME, PackageError, check_tool_schema
from environments.python_source import parse_python, python_name

MIX_FOLDER = "environment_mix"
CHECKPOINT_SUFFIX = "_step4_checkpoint.json"
QUESTIONS_FOLDER = "questions"
README = "README.md"
# A plain folder name: no separators, no "..", nothing hidden.
ENV_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
JSON_FILE_LITERAL = re.compile(r"""["']([A-Za-z0-9][A-Za-z0-9_.-]*\.json)["']""")


class ReleaseError(ValueError):
    """The release (or one environment of it) cannot be imported; the message says what is
    wrong, where and why."""


@dataclass(frozen=True)
class ReleaseTaxonomy:
    """The release's own three levels (kept as released; mapped onto ours by taxonomy.py)."""

    l1_id: str = ""
    l1: str = ""
    l2_id: str = ""
    l2: str = ""
    l3: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "L1_id": self.l1_id,
            "L1": self.l1,
            "L2_id": self.l2_id,
            "L2": self.l2,
            "L3": self.l3,
        }


@dataclass(frozen=True)
class Collection:
    """One JSON file of the environment's database: a list of rows, or one document."""

    name: str  # the file name without .json, as the tools name it minus the suffix
    data: Any

    @property
    def filename(self) -> str:
        return f"{self.name}.json"

    @property
    def kind(self) -> str:
        return "rows" if isinstance(self.data, list) else "document"

    @property
    def row_count(self) -> int:
        return len(self.data) if isinstance(self.data, list) else 1


@dataclass(frozen=True)
class ReleaseTool:
    """A released tool: its schema as released and its Python source, unmodified."""

    name: str
    description: str
    parameters: dict[str, Any]
    source: str

    @property
    def function(self) -> str:
        return python_name(self.name)

    def reads_files(self) -> list[str]:
        """The collection files its source names ("orders.json"), for the missing-file note."""
        return sorted(set(JSON_FILE_LITERAL.findall(self.source)))


@dataclass(frozen=True)
class ToolRefusal:
    """A released tool refused before it ran, and why in words."""

    name: str
    reason: str


@dataclass(frozen=True)
class ChainStep:
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ReleaseQuestion:
    """One released question: its task, reference answer and rubric, as released."""

    task: str
    reference_answer: Any
    success_criteria: tuple[str, ...]
    chain: tuple[ChainStep, ...]


@dataclass(frozen=True)
class ReleaseEnvironment:
    """One released environment, read and checked (its tools not yet run)."""

    env_id: str
    name: str
    description: str
    taxonomy: ReleaseTaxonomy
    readme: str
    collections: tuple[Collection, ...]
    tools: tuple[ReleaseTool, ...]
    refused_tools: tuple[ToolRefusal, ...] = ()
    questions: tuple[ReleaseQuestion, ...] = ()
    question_problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    directory: Path = Path()
    questions_path: Path | None = None  # questions/<env_id>.json, when the release has one

    @property
    def row_count(self) -> int:
        return sum(c.row_count for c in self.collections)

    def collection(self, name: str) -> Collection | None:
        return next((c for c in self.collections if c.name == name), None)


# --- the release folder ----------------------------------------------------------------------


def mix_directory(path: str | Path) -> Path:
    """The folder that holds the environments: PATH itself or PATH/environment_mix."""
    root = Path(path)
    if not root.is_dir():
        raise ReleaseError(f"{root}: no such folder (give a release checkout or its {MIX_FOLDER}/)")
    if any(root.glob(f"*{CHECKPOINT_SUFFIX}")):
        return root
    nested = root / MIX_FOLDER
    if nested.is_dir():
        return nested
    raise ReleaseError(
        f"{root}: not an Agent-World release: no {MIX_FOLDER}/ folder and no "
        f"*{CHECKPOINT_SUFFIX} files in it"
    )


def environment_ids(mix: Path) -> list[str]:
    """Every environment id the release names, by checkpoint or by folder."""
    ids = {p.name[: -len(CHECKPOINT_SUFFIX)] for p in mix.glob(f"*{CHECKPOINT_SUFFIX}")}
    ids |= {p.name for p in mix.iterdir() if p.is_dir() and p.name != QUESTIONS_FOLDER}
    return sorted(i for i in ids if ENV_ID.fullmatch(i))


def check_env_id(env_id: str) -> str:
    """Refuse an id that is not a plain folder name (it would read outside the release)."""
    if not isinstance(env_id, str) or not ENV_ID.fullmatch(env_id) or ".." in env_id:
        raise ReleaseError(
            f"environment id {env_id!r}: not a plain folder name (letters, digits, '_', '-', "
            "'.'; no '/' and no '..'): a path that leaves the release folder is refused"
        )
    return env_id


def read_environment(mix: str | Path, env_id: str) -> ReleaseEnvironment:
    """One environment of the release at `mix` (its environment_mix/ folder), read and checked."""
    mix = Path(mix)
    check_env_id(env_id)
    where = f"environment {env_id}"
    checkpoint_path = mix / f"{env_id}{CHECKPOINT_SUFFIX}"
    if not checkpoint_path.is_file():
        raise ReleaseError(f"{where}: no checkpoint {checkpoint_path.name} in {mix}")
    checkpoint = _read_json(checkpoint_path, f"{where}: checkpoint {checkpoint_path.name}")
    if not isinstance(checkpoint, dict):
        raise ReleaseError(f"{where}: checkpoint {checkpoint_path.name} is not a JSON object")
    metadata = checkpoint.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ReleaseError(f"{where}: checkpoint metadata is not a JSON object")
    named = str(metadata.get("env_id") or env_id)
    if named != env_id:
        raise ReleaseError(
            f"{where}: checkpoint {checkpoint_path.name} says it is environment {named!r}"
        )
    folder = mix / env_id
    if not folder.is_dir() or folder.is_symlink():
        raise ReleaseError(f"{where}: collection folder {env_id}/ is missing from {mix}")
    collections, notes = _read_collections(folder, where)
    listed = _listed_files(checkpoint, env_id)
    missing = sorted(set(listed) - {c.filename for c in collections} - {README})
    if missing:
        raise ReleaseError(
            f"{where}: the checkpoint lists {', '.join(missing)}, missing from {env_id}/ "
            "(a tool reading it would see an empty collection)"
        )
    if not collections:
        raise ReleaseError(f"{where}: {env_id}/ holds no JSON collection")
    tools, refused = _read_tools(checkpoint, where)
    shipped = {c.filename for c in collections}
    for tool in tools:
        for filename in tool.reads_files():
            if filename not in shipped:
                notes.append(
                    f"tool {tool.name} names {filename}, which {env_id}/ does not hold (it reads "
                    "as empty)"
                )
    readme_path = folder / README
    readme = (
        readme_path.read_text(encoding="utf-8", errors="replace") if readme_path.is_file() else ""
    )
    questions, problems = read_questions(mix, env_id)
    return ReleaseEnvironment(
        env_id=env_id,
        name=str(metadata.get("name") or env_id)[:200],
        description=str(metadata.get("description") or "")[:2000],
        taxonomy=_taxonomy(metadata.get("taxonomy")),
        readme=readme,
        collections=tuple(collections),
        tools=tuple(tools),
        refused_tools=tuple(refused),
        questions=tuple(questions),
        question_problems=tuple(problems),
        notes=tuple(notes),
        metadata={k: v for k, v in metadata.items() if k != "taxonomy"},
        directory=folder,
        questions_path=mix / QUESTIONS_FOLDER / f"{env_id}.json" if questions or problems else None,
    )


def read_questions(mix: Path, env_id: str) -> tuple[list[ReleaseQuestion], list[str]]:
    """The environment's released questions (none when it has no file), and why any was left
    out."""
    path = mix / QUESTIONS_FOLDER / f"{check_env_id(env_id)}.json"
    if not path.is_file():
        return [], []
    try:
        data = _read_json(path, f"questions/{path.name}")
    except ReleaseError as exc:
        return [], [str(exc)]
    return parse_questions(data, f"questions/{path.name}")


def parse_questions(data: Any, where: str) -> tuple[list[ReleaseQuestion], list[str]]:
    """Questions from a questions file's JSON ({"tasks": [...]}), and why any was left out."""
    tasks = data.get("tasks") if isinstance(data, dict) else data
    if not isinstance(tasks, list):
        return [], [f"{where}: no list of tasks"]
    questions, problems = [], []
    for index, item in enumerate(tasks):
        try:
            questions.append(_question(item))
        except ValueError as exc:
            problems.append(f"{where} task {index}: {exc}")
    return questions, problems


# --- pieces ----------------------------------------------------------------------------------


def _read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReleaseError(f"{what}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ReleaseError(f"{what}: cannot be read ({exc.strerror})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReleaseError(
            f"{what}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc


def _read_collections(folder: Path, where: str) -> tuple[list[Collection], list[str]]:
    collections, notes = [], []
    for path in sorted(folder.iterdir()):
        if path.is_symlink():
            raise ReleaseError(f"{where}: {folder.name}/{path.name} is a link; links are refused")
        if path.name == README or path.is_dir():
            continue
        if path.suffix != ".json":
            notes.append(f"{folder.name}/{path.name} is not a JSON collection; left out")
            continue
        name = path.name[: -len(".json")]
        if not COLLECTION_NAME.fullmatch(name):
            raise ReleaseError(f"{where}: collection file name {path.name!r} is not a plain name")
        data = _read_json(path, f"{where}: collection {folder.name}/{path.name}")
        collections.append(Collection(name, data))
    return collections, notes


def _listed_files(checkpoint: dict[str, Any], env_id: str) -> list[str]:
    listed = checkpoint.get("file_list")
    if not isinstance(listed, list):
        return []
    return [Path(str(item)).name for item in listed if str(item).endswith(".json")]


def _read_tools(
    checkpoint: dict[str, Any], where: str
) -> tuple[list[ReleaseTool], list[ToolRefusal]]:
    design = (
        (checkpoint.get("data") or {}).get("ToolDesignAgent")
        if isinstance(checkpoint.get("data"), dict)
        else None
    )
    schemas = design.get("tool_schemas") if isinstance(design, dict) else None
    if not isinstance(schemas, list) or not schemas:
        raise ReleaseError(f"{where}: the checkpoint has no data.ToolDesignAgent.tool_schemas")
    tools: list[ReleaseTool] = []
    refused: list[ToolRefusal] = []
    seen: set[str] = set()
    for index, entry in enumerate(schemas):
        name = entry.get("name") if isinstance(entry, dict) else None
        label = name if isinstance(name, str) and name else f"tool_schemas[{index}]"
        problem = _tool_problem(entry, name, seen)
        if problem:
            refused.append(ToolRefusal(label, problem))
            continue
        seen.add(name)
        tools.append(
            ReleaseTool(
                name=name,
                description=str(entry.get("description") or ""),
                parameters=entry.get("parameters") or {"type": "object", "properties": {}},
                source=entry["implementation"],
            )
        )
    return tools, refused


def _tool_problem(entry: Any, name: Any, seen: set[str]) -> str | None:
    """Why a released tool cannot be taken, or None."""
    if not isinstance(entry, dict):
        return "its schema is not a JSON object"
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        return f"its name {name!r} is not a tool name (letters, digits, '_', '-', at most 64)"
    if name in seen:
        return "a second tool of the same name"
    parameters = entry.get("parameters") or {"type": "object", "properties": {}}
    schema = {"type": "function", "function": {"name": name, "parameters": parameters}}
    schema["function"]["description"] = str(entry.get("description") or "")
    try:
        check_tool_schema(schema, 0)
    except PackageError as exc:  # "manifest.json: tool 'x': parameters ..." -> the rule alone
        return "its schema is refused: " + str(exc).split(": ", 2)[-1]
    source = entry.get("implementation")
    if not isinstance(source, str) or not source.strip():
        return "it has no implementation"
    try:
        module = parse_python(source, f"{name}.py")
    except SyntaxError as exc:
        return f"its code does not parse: line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes
        return f"its code does not parse: {exc}"
    function = python_name(name)
    if not any(isinstance(n, ast.FunctionDef) and n.name == function for n in module.body):
        return f"its code defines no top-level function {function}()"
    return None


def _taxonomy(raw: Any) -> ReleaseTaxonomy:
    raw = raw if isinstance(raw, dict) else {}
    return ReleaseTaxonomy(
        l1_id=str(raw.get("L1_id") or ""),
        l1=str(raw.get("L1_name") or ""),
        l2_id=str(raw.get("L2_id") or ""),
        l2=str(raw.get("L2_name") or ""),
        l3=str(raw.get("L3_name") or ""),
    )


def _question(item: Any) -> ReleaseQuestion:
    if not isinstance(item, dict) or not isinstance(item.get("task"), str) or not item["task"]:
        raise ValueError("no task text")
    rubric = item.get("grading_rubric") or {}
    if not isinstance(rubric, dict):
        raise ValueError("grading_rubric is not an object")
    chain = rubric.get("verified_tool_chain") or []
    if not isinstance(chain, list) or not chain:
        raise ValueError("no verified_tool_chain")
    steps = []
    for step in chain:
        if not isinstance(step, dict) or not isinstance(step.get("tool"), str):
            raise ValueError("a chain step names no tool")
        args = step.get("args") or {}
        if not isinstance(args, dict):
            raise ValueError(f"the args of step {step['tool']} are not an object")
        steps.append(ChainStep(step["tool"], args))
    criteria = rubric.get("success_criteria") or []
    if not isinstance(criteria, list):
        criteria = [str(criteria)]
    return ReleaseQuestion(
        task=item["task"],
        reference_answer=item.get("reference_answer"),
        success_criteria=tuple(str(c) for c in criteria),
        chain=tuple(steps),
    )
