"""What an evolution round is configured by, defined once.

:class:`RoundConfig` is the contract of ``EvolutionRound.config``: ``start_round`` validates the
options it is given against it (the API and the console refuse unknown keys and out-of-range
values by name), stores :meth:`RoundConfig.stored` in the JSON field as before, and every step
reads it back as attributes through ``EvolutionRound.settings``. Its ``training`` part is the
training-run options (:class:`~training.run_options.RunOptions`); only the options a round sets are
stored there, so a run of the round keeps every other option at its one default.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer

from tasks.service import ARENA_MAX_WALK_LENGTH
from training.run_options import RunOptions, option_errors

__all__ = ["MAX_REPLAY_RATIO", "RoundConfig", "ValidationError", "round_config_errors"]

MAX_REPLAY_RATIO = 4.0
MAX_STORED_REPAIRS = 3  # a model error lists every bad field; nested ones may need a second pass
logger = logging.getLogger(__name__)


class RoundConfig(BaseModel):
    """An evolution round's settings: its arena tasks, its training set and its training run."""

    model_config = ConfigDict(extra="forbid")

    # --- the arena ---
    environments_per_category: int = Field(
        2, ge=1, le=50, description="Verified environments sampled per category for the arena."
    )
    tasks_per_environment: int = Field(
        4, ge=1, le=200, description="Fresh held-out arena tasks per sampled environment."
    )
    instruction_tier: Literal["explicit", "goal", "goal_hard"] = Field(
        "goal", description="Instruction tier of the round's fresh arena tasks."
    )
    max_walk_length: int = Field(
        ARENA_MAX_WALK_LENGTH,
        ge=1,
        le=40,
        description="Longest dependent walk of the round's fresh graph tasks (12 by default, up "
        "to 40; each environment reaches what its graph allows).",
    )
    programmatic_share: float = Field(
        0.25, ge=0.0, le=1.0, description="Share of the round's fresh tasks that are programmatic."
    )
    # --- training ---
    train: bool = Field(
        True,
        description="Train a new policy at the end of the round (false: evaluate, diagnose and "
        "expand only).",
    )
    replay_ratio: float = Field(
        1.0,
        ge=0.0,
        le=MAX_REPLAY_RATIO,
        description="Earlier training tasks replayed per task the round's expansions create.",
    )
    training: RunOptions = Field(
        default_factory=RunOptions,
        description="Training-run options of the round's train step (the fields of POST "
        "/api/training-runs/ config); unset ones keep their default.",
    )

    @field_serializer("training")
    def _only_set_options(self, training: RunOptions) -> dict[str, Any]:
        return training.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_stored(cls, config: Mapping[str, Any] | None) -> RoundConfig:
        """The settings of a stored round (a key an older round did not store: its default).

        A stored round was validated when it started; a key or value that today's contract no
        longer accepts (an option since removed, a range since narrowed) is dropped with a
        warning and takes its default, so an old round still reads and resumes."""
        stored = copy.deepcopy(dict(config or {}))
        for _ in range(MAX_STORED_REPAIRS):
            try:
                return cls.model_validate(stored)
            except ValidationError as error:
                for problem in error.errors():
                    _drop(stored, problem["loc"])
                logger.warning("a stored round config was read with defaults for: %s", error)
        return cls.model_validate(stored)

    def stored(self) -> dict[str, Any]:
        """The JSON ``EvolutionRound.config`` holds (``training``: the options the round sets)."""
        return self.model_dump(mode="json")

    def training_run_config(self) -> dict[str, Any]:
        """The ``TrainingRun.config`` of the round's run: the training options it sets."""
        return self.stored()["training"]

    def training_sets(self, name: str) -> bool:
        """Whether the round's training options set ``name`` (else the run's default applies)."""
        return name in self.training.model_fields_set


def _drop(config: dict[str, Any], location: tuple[Any, ...]) -> None:
    """Remove the key a validation error points at (its first two levels: option, training
    option), so the field takes its default."""
    if not location:
        config.clear()
        return
    head = location[0]
    if head == "training" and len(location) > 1 and isinstance(config.get("training"), dict):
        config["training"].pop(location[1], None)
        return
    config.pop(head, None)


def round_config_errors(error: ValidationError) -> dict[str, str]:
    """{field: message} of a round config's validation error; training options are named
    ``training.<option>``, unknown round options ``unknown round option``."""
    errors = option_errors(error)
    for item in error.errors():
        if item["type"] == "extra_forbidden" and len(item["loc"]) == 1:
            errors[str(item["loc"][0])] = "unknown round option"
        elif item["loc"] == ("training",):
            errors["training"] = "must be a JSON object of training-run options"
    return errors
