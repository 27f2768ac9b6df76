"""The Tools tab shows the checks verification actually ran: each test's outcome from the verify
stage's report, the cross-check, and "not recorded" (never 0 of N) where no record knows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from environments.discovery.verification import ToolVerdict, VerificationReport
from environments.models import Tool, ToolTest
from environments.package import load_package
from environments.registry import record_package
from tests.support.sample_package import build_sample_package


def _verify_stage_report(path) -> dict:
    """The report the verify stage stores (`VerificationReport.as_dict`) for the sample package:
    every own test passed except get_book's "missing" case; get_book's schema tests also ran
    against an LLM version, which was refused."""
    package = load_package(path)
    report = VerificationReport("bookstore", threshold=0.5, min_tools=1, verified=True)
    for tool, tests in package.tool_tests.items():
        failed = ["test_get_book__missing"] if tool == "get_book" else []
        report.verdicts.append(
            ToolVerdict(
                tool,
                "schema",
                passed=len(tests) - len(failed),
                failed=len(failed),
                cross_passed=2 if tool == "get_book" else 0,
                verified=True,
                errors=[f"{name}: AssertionError: expected None" for name in failed],
                failed_tests=failed,
            )
        )
    report.verdicts.append(
        ToolVerdict(
            "get_book",
            "llm",
            passed=0,
            failed=2,
            reasons=["test accuracy 0.00 below 0.5"],
        )
    )
    return report.as_dict()


def _tools_tab(client, environment) -> str:
    url = reverse("environment-tab", args=[environment.pk, "tools"])
    return client.get(url).content.decode()


def _tool(body: str, name: str) -> str:
    start = body.index(f'data-tool="{name}"')
    end = body.find('<details class="tool"', start)
    return body[start : end if end != -1 else len(body)]


@pytest.mark.django_db
def test_a_verified_tool_shows_the_outcomes_its_tests_had(client, viewer, tmp_path):
    path = build_sample_package(tmp_path)
    environment = record_package(path, verification=_verify_stage_report(path))
    client.force_login(viewer)
    body = _tools_tab(client, environment)

    get_book = _tool(body, "get_book")
    assert 'data-verification="verified"' in get_book
    assert "tests 1/2 passed · cross-check 2/2" in get_book
    assert 'data-test="test_get_book__existing"' in get_book
    assert get_book.count(">passed<") == 1 and get_book.count(">failed<") == 1
    assert "tests 1/1 passed" in _tool(body, "place_order")
    assert "not recorded" not in body and "not run" not in body
    # The refused LLM version does not stand in for the published schema tool.
    assert Tool.objects.get(environment=environment, name="get_book").test_accuracy == 0.5


@pytest.mark.django_db
def test_an_environment_recorded_before_the_report_was_read_shows_its_report(
    client, viewer, tmp_path
):
    path = build_sample_package(tmp_path)
    environment = record_package(path, verification=_verify_stage_report(path))
    # What the registry stored before it understood the verify stage's report.
    Tool.objects.filter(environment=environment).update(verification={}, test_accuracy=None)
    ToolTest.objects.filter(tool__environment=environment).update(passed=None)
    client.force_login(viewer)
    body = _tools_tab(client, environment)
    assert "tests 1/2 passed · cross-check 2/2" in _tool(body, "get_book")
    assert "tests 1/1 passed" in _tool(body, "search_books")
    assert "not recorded" not in body


@pytest.mark.django_db
def test_a_tool_without_any_verification_record_says_so(client, viewer, tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    client.force_login(viewer)
    body = _tools_tab(client, environment)
    get_book = _tool(body, "get_book")
    assert 'data-verification="no verification recorded"' in get_book
    assert "2 tests written, outcomes not recorded" in get_book
    assert "tests 0/" not in body and 'data-verification="verified"' not in body
