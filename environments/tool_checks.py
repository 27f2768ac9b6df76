"""What verification actually ran for each tool, for the Tools tab: its tests' outcomes, the
cross-check against the other generator's tests, and why it was kept or refused.

Three records may know: the tool's ToolTest rows (one outcome per test, recorded with the
package), the tool's own verification result (`Tool.verification`, a verdict of the verify
stage) and the environment's verification report (every verdict; environments recorded before
the registry read that report's shape have only this one). A count no record holds is said to be
unknown, never shown as 0 of N.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from environments.models import Environment, Tool
from environments.registry import failed_test_names, tool_results

PASSED, FAILED, UNKNOWN = "passed", "failed", "not recorded"


@dataclass
class TestOutcome:
    name: str
    outcome: str  # passed | failed | not recorded
    source: str = ""
    error: str = ""


@dataclass
class ContractRow:
    """One check of the tool against its document (parameters, response schema, effect)."""

    name: str
    passed: bool
    detail: str


@dataclass
class ToolChecks:
    """One tool's verification as the page says it."""

    known: bool  # some record says how the tool's tests went
    verified: bool
    passed: int | None = None
    run: int | None = None
    cross_passed: int | None = None
    cross_run: int | None = None
    reasons: list[str] = field(default_factory=list)
    tests: list[TestOutcome] = field(default_factory=list)
    contract: list[ContractRow] = field(default_factory=list)  # empty: no contract was run

    @property
    def contract_summary(self) -> str:
        """ "document contract: parameters 5/5 accepted, response schema valid, effect: ..." """
        if not self.contract:
            return ""
        return "document contract: " + ", ".join(c.detail for c in self.contract)

    @property
    def contract_passed(self) -> bool:
        return all(c.passed for c in self.contract)

    @property
    def badge(self) -> str:
        if not self.known:
            return "no verification recorded"
        return "verified" if self.verified else "not verified"

    @property
    def summary(self) -> str:
        """ "tests 4/4 passed · cross-check 3/3", or what is not known."""
        if self.run is None:
            written = len(self.tests)
            return f"{written} test{'s' if written != 1 else ''} written, outcomes not recorded"
        text = f"tests {self.passed}/{self.run} passed"
        if self.cross_run:
            text += f" · cross-check {self.cross_passed}/{self.cross_run}"
        return text


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tool_checks(tool: Tool, report_results: dict[str, dict[str, Any]]) -> ToolChecks:
    """``report_results``: the environment report's per-tool results (`tool_results`)."""
    rows = list(tool.tests.all())
    result = tool.verification if isinstance(tool.verification, dict) else {}
    if _count(result.get("passed")) is None:
        result = report_results.get(tool.name) or result
    failed_names = failed_test_names(result) if result else set()
    verdict_known = _count(result.get("passed")) is not None

    tests = []
    for row in rows:
        if row.passed is not None:
            outcome = PASSED if row.passed else FAILED
        elif verdict_known:
            outcome = FAILED if row.name in failed_names else PASSED
        else:
            outcome = UNKNOWN
        tests.append(TestOutcome(row.name, outcome, row.source, row.error))

    checks = ToolChecks(known=False, verified=bool(result.get("verified", tool.verified)))
    checks.tests = tests
    checks.reasons = [str(r) for r in result.get("reasons") or []]
    if verdict_known:
        checks.passed = _count(result.get("passed"))
        checks.run = checks.passed + (_count(result.get("failed")) or 0)
        cross_passed = _count(result.get("cross_passed")) or 0
        cross_run = cross_passed + (_count(result.get("cross_failed")) or 0)
        checks.cross_passed, checks.cross_run = cross_passed, cross_run
    elif any(t.outcome != UNKNOWN for t in tests):
        recorded = [t for t in tests if t.outcome != UNKNOWN]
        checks.passed = sum(1 for t in recorded if t.outcome == PASSED)
        checks.run = len(recorded)
    checks.known = checks.run is not None
    checks.contract = _contract_rows(result.get("contract"))
    return checks


def _contract_rows(record: Any) -> list[ContractRow]:
    """The contract checks a verdict recorded (`theme_contract.ToolContract.as_dict`)."""
    if not isinstance(record, dict) or not isinstance(record.get("checks"), list):
        return []
    return [
        ContractRow(str(c.get("name", "")), bool(c.get("passed")), str(c.get("detail", "")))
        for c in record["checks"]
        if isinstance(c, dict)
    ]


def environment_tool_checks(environment: Environment, tools: list[Tool]) -> dict[int, ToolChecks]:
    """Each tool's checks by primary key; the environment's report is read once."""
    report = environment.verification_report
    results = tool_results(report if isinstance(report, dict) else {})
    return {tool.pk: tool_checks(tool, results) for tool in tools}
