"""What the build stages hand each other: one typed result per stage, and the outcome.

Kept apart from the runner (stages.py) so that a stage's own module (publish.py) can name its
result without importing the runner that calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.discovery.tool_generator import ToolSet

from .request import CategoryPath

Progress = Callable[[float, str], None]


def quiet(fraction: float, message: str = "") -> None:
    """A progress callback that reports nothing (bulk builds, tests)."""
    return None


@dataclass
class IngestResult:
    db_path: Path
    provenance: list[dict[str, Any]]
    facts: dict[str, Any]  # the ingest yield


@dataclass
class SchemaResult:
    category: CategoryPath
    facts: dict[str, Any]


@dataclass
class ToolsResult:
    toolset: ToolSet  # the origin's own tools (schema tools, theme tools)
    llm_toolset: ToolSet | None  # the LLM's tools, when one was asked
    facts: dict[str, Any]


@dataclass
class VerifyResult:
    report: dict[str, Any]  # the verification report as stored on the environment
    explanation: str
    kept: ToolSet  # the verified tools, in publishing order
    rejected_tools: list[dict[str, str]] | None = None  # origins that list why tools fell


@dataclass
class PublishResult:
    path: str
    version: int


@dataclass
class BuildOutcome:
    path: str
    report: dict[str, Any]
    explanation: str
    category: dict[str, str]
    build_yield: dict[str, Any] = field(default_factory=dict)
