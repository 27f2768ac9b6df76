"""The parameters of each expansion-proposal kind, defined once.

The proposer builds them, the model validates them on save, the API and the console show them,
and the applier reads them: one class per kind, every field has an effect on what is applied
(see ``arena.steps.apply_proposal``). Unknown fields are refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Tier = Literal["explicit", "goal", "goal_hard"]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    focus: str = Field("", max_length=64, description="The capability the expansion trains.")


class MoreTasksParams(_Params):
    """New training tasks in one environment (its newest verified version)."""

    task_kind: Literal["graph", "programmatic"] = Field(
        "graph", description="Graph walks over the tools, or programmatic tasks with code."
    )
    count: int = Field(20, ge=1, le=500, description="Tasks to create.")
    min_walk_length: int = Field(1, ge=1, le=40, description="Shortest walk (graph tasks).")
    max_walk_length: int | None = Field(
        None, ge=1, le=40, description="Longest walk; None: min_walk_length + 2."
    )
    write_steps: int = Field(0, ge=0, le=20, description="Writes per task (graph tasks).")
    tier: Tier = Field("goal", description="Instruction tier of the new tasks.")
    tools: list[str] = Field(
        default_factory=list, description="Target tools: each new task uses at least one."
    )

    @model_validator(mode="after")
    def _lengths(self) -> MoreTasksParams:
        if self.max_walk_length is not None and self.max_walk_length < self.min_walk_length:
            raise ValueError("max_walk_length is below min_walk_length")
        return self

    @property
    def longest(self) -> int:
        return self.max_walk_length or self.min_walk_length + 2


class ComplexifyParams(_Params):
    """A new version of one environment with edge rows in the tables of the targeted tools,
    then tasks on it that use those tools."""

    tools: list[str] = Field(default_factory=list, description="Tools whose tables get edge rows.")
    rows_per_table: int = Field(25, ge=1, le=2000, description="Derived rows added per table.")
    rounds: int = Field(1, ge=1, le=5, description="Complexification rounds.")
    tasks: int = Field(10, ge=0, le=500, description="Tasks synthesized on the new version.")
    tier: Tier = Field("goal", description="Instruction tier of those tasks.")


class NewEnvironmentParams(_Params):
    """A new environment in a weak category: from an imported theme there, else an unbuilt
    built-in source, else (with an LLM) the research agent."""

    subcategory: str = Field("", max_length=200, description="The weak subcategory.")
    exclude: list[str] = Field(default_factory=list, description="Environments already there.")
    theme: int | None = Field(None, ge=1, description="Build from this theme (id).")
    count: int = Field(1, ge=1, le=5, description="Environments to build.")
    tasks: int = Field(10, ge=0, le=500, description="Tasks synthesized on each new one.")
    tier: Tier = Field("goal", description="Instruction tier of those tasks.")


PARAMS_BY_KIND: dict[str, type[_Params]] = {
    "more_tasks": MoreTasksParams,
    "complexify_database": ComplexifyParams,
    "new_environment": NewEnvironmentParams,
}


def params_for(kind: str, params: dict[str, Any] | None) -> Any:
    """The typed parameters of a proposal of ``kind``; raises ValueError naming the field."""
    try:
        model = PARAMS_BY_KIND[kind]
    except KeyError:
        raise ValueError(f"unknown proposal kind {kind!r}") from None
    try:
        return model.model_validate(params or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or kind}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"{kind} parameters: {problems}") from exc
