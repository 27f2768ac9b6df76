"""Tool verification: compile, run every tool's tests in the sandbox, cross-validate, decide.

A tool is verified when it compiles, passes the static safety check (LLM tools), never touches
anything the sandbox refuses, and its test accuracy (passed / run) reaches the threshold (paper:
0.5). Where the LLM and the schema generator both wrote a tool of the same name, each one's tests
also run against the other's function; the LLM version is kept only when it passes the schema
tests too. An environment is verified with at least `min_tools` verified tools, and only verified
tools are ever published.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.python_source import compile_python

from .code_safety import UnsafeCode, check_tool_source
from .tool_generator import ToolSet

Progress = Callable[[float, str], None]
ESCAPE_MARKERS = (
    "not allowed in the sandbox",
    "not allowed outside",
    "only the episode directory is writable",
    "network access is not allowed",
    "sandbox_violation",
)


def _quiet(fraction: float, message: str) -> None:
    return None


@dataclass
class ToolVerdict:
    name: str
    origin: str  # schema | llm
    compiled: bool = True
    passed: int = 0
    failed: int = 0
    cross_passed: int = 0
    cross_failed: int = 0
    escaped: bool = False
    verified: bool = False
    reasons: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed_tests: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        run = self.passed + self.failed
        return self.passed / run if run else 0.0

    @property
    def cross_accuracy(self) -> float | None:
        run = self.cross_passed + self.cross_failed
        return self.cross_passed / run if run else None


@dataclass
class VerificationReport:
    environment: str
    threshold: float
    min_tools: int
    verdicts: list[ToolVerdict] = field(default_factory=list)
    verified: bool = False
    summary: str = ""

    @property
    def verified_tools(self) -> list[str]:
        return [v.name for v in self.verdicts if v.verified]

    def explain(self) -> str:
        """Human-readable: one line per rejected tool saying why."""
        lines = [self.summary]
        for v in self.verdicts:
            if not v.verified:
                lines.append(f"- {v.name} ({v.origin}): {'; '.join(v.reasons)}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for verdict, raw in zip(self.verdicts, data["verdicts"], strict=True):
            raw["accuracy"] = verdict.accuracy
            raw["cross_accuracy"] = verdict.cross_accuracy
        data["verified_tools"] = self.verified_tools
        return data


def _suffix_tests(tests: list[str], tool: str, tag: str) -> list[str]:
    """Rename `def test_<tool>__<case>(` to `...__<tag>_<case>(` so both sets can coexist
    (the tool's own name may hold "__": it is matched whole, not split at the first)."""
    from environments.python_source import python_name

    prefix = f"def test_{python_name(tool)}__"
    out = []
    for source in tests:
        if source.startswith(prefix):
            out.append(f"{prefix}{tag}_{source[len(prefix) :]}")
            continue
        head, _, rest = source.partition("(")
        tool_part, _, case = head.partition("__")
        out.append(f"{tool_part}__{tag}_{case}({rest}")
    return out


def _manifest(name: str, tools: ToolSet, names: list[str], category: dict) -> dict:
    return {
        "name": name,
        "version": 1,
        "title": name,
        "description": "verification candidate",
        "category": category,
        "tools": tools.manifest_tools(names),
        "tool_kinds": {n: tools.kinds[n] for n in names},
    }


def _run_candidate(pool, db_path: Path, name: str, tools: ToolSet, category: dict) -> dict:
    from environments.package import write_package

    names = tools.names()
    with tempfile.TemporaryDirectory(prefix="aw-verify-") as root:
        path = write_package(
            root,
            _manifest(name, tools, names, category),
            db_path,
            tools.tools_source(names),
            tools.tests_source(names),
            [],
        )
        return pool.run_tool_tests(path)


def verify_tools(
    name: str,
    db_path: Path | str,
    schema_tools: ToolSet,
    llm_tools: ToolSet | None = None,
    *,
    pool=None,
    threshold: float = 0.5,
    min_tools: int = 5,
    category: dict | None = None,
    progress: Progress = _quiet,
) -> tuple[VerificationReport, ToolSet]:
    """Verify tools against the database in the sandbox; return the report and the kept tools."""
    from environments.runtime import SandboxPool

    category = category or {"primary": "", "secondary": "", "tertiary": ""}
    db_path = Path(db_path)
    report = VerificationReport(name, threshold, min_tools)
    verdicts: dict[tuple[str, str], ToolVerdict] = {}
    llm_tools = llm_tools or ToolSet(prelude=schema_tools.prelude)

    progress(0.05, "compile check")
    schema_ok = ToolSet(prelude=schema_tools.prelude, imports=list(schema_tools.imports))
    for tool in schema_tools.names():
        verdict = verdicts[(tool, "schema")] = ToolVerdict(tool, "schema")
        try:
            compile_python(schema_tools.functions[tool], f"{tool}.py")
        except SyntaxError as exc:
            verdict.compiled = False
            verdict.reasons.append(f"does not compile: {exc.msg} (line {exc.lineno})")
            continue
        schema_ok.merge(_only(schema_tools, tool), replace=True)
        schema_ok.origin[tool] = "schema"
    llm_ok = ToolSet(prelude=schema_tools.prelude, imports=list(llm_tools.imports))
    for tool in llm_tools.names():
        verdict = verdicts[(tool, "llm")] = ToolVerdict(tool, "llm")
        source = "\n".join(llm_tools.imports) + "\n\n" + llm_tools.functions[tool]
        try:
            check_tool_source(source, f"{tool}.py")
        except UnsafeCode as exc:
            verdict.compiled = False
            verdict.reasons.append(f"rejected before running: {exc}")
            continue
        llm_ok.merge(_only(llm_tools, tool), replace=True)

    shared = [t for t in llm_ok.names() if t in schema_ok.functions]
    own_pool = pool is None
    pool = pool or SandboxPool(workers=1)
    try:
        # Run A: schema functions with their tests, plus the LLM tests of shared names.
        run_a = _copy(schema_ok)
        for tool in shared:
            run_a.tests[tool] = run_a.tests[tool] + _suffix_tests(llm_ok.tests[tool], tool, "x_llm")
        progress(0.2, f"running tests of {len(run_a.names())} schema tools in the sandbox")
        results_a = _run_candidate(pool, db_path, name, run_a, category) if run_a.names() else {}
        # Run B: LLM functions (over the schema ones) with their tests plus the schema tests.
        results_b: dict = {}
        if llm_ok.names():
            run_b = _copy(schema_ok)
            run_b.imports = sorted(set(run_b.imports) | set(llm_ok.imports))
            run_b.merge(llm_ok, replace=True)
            for tool in run_b.names():
                if tool not in llm_ok.functions:
                    run_b.tests[tool] = []
            for tool in shared:
                run_b.tests[tool] = llm_ok.tests[tool] + _suffix_tests(
                    schema_ok.tests[tool], tool, "x_schema"
                )
            progress(0.6, f"running tests of {len(llm_ok.names())} LLM tools in the sandbox")
            results_b = _run_candidate(pool, db_path, name, run_b, category)
    finally:
        if own_pool:
            pool.close()

    progress(0.9, "scoring")
    _score(verdicts, results_a, "schema", schema_ok, "x_llm")
    _score(verdicts, results_b, "llm", llm_ok, "x_schema")
    kept = ToolSet(prelude=schema_tools.prelude, imports=list(schema_tools.imports))
    for tool in schema_ok.names():
        _decide(verdicts[(tool, "schema")], threshold, cross_required=False)
    for tool in llm_ok.names():
        _decide(verdicts[(tool, "llm")], threshold, cross_required=tool in shared)
    for tool in schema_ok.names():
        llm_verdict = verdicts.get((tool, "llm"))
        if llm_verdict is not None and llm_verdict.verified:
            continue
        if verdicts[(tool, "schema")].verified:
            kept.merge(_only(schema_ok, tool), replace=True)
    for tool in llm_ok.names():
        if verdicts[(tool, "llm")].verified:
            kept.merge(_only(llm_ok, tool), replace=True)
            kept.imports = sorted(set(kept.imports) | set(llm_ok.imports))
            schema_verdict = verdicts.get((tool, "schema"))
            if schema_verdict is not None and schema_verdict.verified:
                schema_verdict.verified = False
                schema_verdict.reasons.append("superseded by the verified LLM tool of this name")
    for tool in kept.names():
        failing = set(verdicts[(tool, kept.origin[tool])].failed_tests)
        kept.tests[tool] = [t for t in kept.tests[tool] if _test_name(t) not in failing]
    report.verdicts = list(verdicts.values())
    count = len(kept.names())
    report.verified = count >= min_tools
    report.summary = (
        f"{name}: {count} of {len(verdicts)} tools verified (threshold {threshold}); "
        + ("environment verified" if report.verified else f"needs at least {min_tools}")
    )
    progress(1.0, report.summary)
    return report, kept


def _test_name(source: str) -> str:
    return source.split("(", 1)[0].replace("def ", "", 1).strip()


def _only(tools: ToolSet, name: str) -> ToolSet:
    one = ToolSet(prelude=tools.prelude, imports=list(tools.imports))
    one.functions[name] = tools.functions[name]
    one.schemas[name] = tools.schemas[name]
    one.kinds[name] = tools.kinds[name]
    one.tests[name] = list(tools.tests.get(name, []))
    one.origin[name] = tools.origin.get(name, "schema")
    return one


def _copy(tools: ToolSet) -> ToolSet:
    out = ToolSet(prelude=tools.prelude, imports=list(tools.imports))
    out.merge(tools, replace=True)
    return out


def _score(verdicts, results: dict, origin: str, tools: ToolSet, cross_tag: str) -> None:
    for tool in tools.names():
        verdict = verdicts[(tool, origin)]
        result = results.get(tool)
        if result is None:
            continue
        errors = list(result.get("errors", []))
        total = result.get("passed", 0) + result.get("failed", 0)
        own_total = len(tools.tests.get(tool, []))
        cross_total = total - own_total
        cross_errors = [e for e in errors if f"__{cross_tag}_" in e.split(":", 1)[0]]
        own_errors = [e for e in errors if e not in cross_errors]
        verdict.failed = len(own_errors)
        verdict.passed = own_total - verdict.failed
        verdict.cross_failed = len(cross_errors)
        verdict.cross_passed = cross_total - verdict.cross_failed
        verdict.errors = errors[:10]
        verdict.failed_tests = [e.split(":", 1)[0] for e in own_errors]
        if any(marker in e for e in errors for marker in ESCAPE_MARKERS):
            verdict.escaped = True


def _decide(verdict: ToolVerdict, threshold: float, cross_required: bool) -> None:
    if not verdict.compiled:
        return
    if verdict.escaped:
        verdict.reasons.append("tried to escape the sandbox: " + _first_escape(verdict.errors))
        return
    if verdict.passed + verdict.failed == 0:
        verdict.reasons.append("has no tests")
        return
    if verdict.accuracy < threshold:
        first = verdict.errors[0] if verdict.errors else ""
        verdict.reasons.append(
            f"test accuracy {verdict.accuracy:.2f} below {threshold} "
            f"({verdict.failed} of {verdict.passed + verdict.failed} failed; first: {first[:200]})"
        )
        return
    cross = verdict.cross_accuracy
    if cross_required and cross is not None and cross < threshold:
        verdict.reasons.append(
            f"cross-validation accuracy {cross:.2f} below {threshold}: it disagrees with the "
            "schema generator's tests for the same tool"
        )
        return
    verdict.verified = True


def _first_escape(errors: list[str]) -> str:
    for error in errors:
        if any(marker in error for marker in ESCAPE_MARKERS):
            return error[:200]
    return ""
