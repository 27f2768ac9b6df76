"""A round's settings are one typed contract: start_round stores them, every step reads them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from arena.models import EvolutionRound
from arena.round_config import RoundConfig
from arena.rounds import start_round
from tests.support import factories


def test_a_stored_round_reads_back_as_attributes_with_one_set_of_defaults():
    old = EvolutionRound(config={"train": False})  # a round stored before newer settings
    assert old.settings.train is False
    assert old.settings.max_walk_length == RoundConfig().max_walk_length == 12
    assert old.settings.training.sft_epochs == 20 and not old.settings.training_sets("sft_epochs")
    capped = EvolutionRound(config={"training": {"tasks_per_environment": 3}})
    assert capped.settings.training_sets("tasks_per_environment")
    assert capped.settings.training_run_config() == {"tasks_per_environment": 3}


def test_a_stored_round_outside_todays_contract_still_reads_with_defaults_for_what_broke():
    old = EvolutionRound(
        config={
            "retired_option": 1,
            "max_walk_length": 400,
            "replay_ratio": 0.5,
            "training": {"grpo_steps": -3, "sft_epochs": 2, "gone": True},
        }
    )
    settings = old.settings
    assert settings.max_walk_length == RoundConfig().max_walk_length  # out of range: default
    assert settings.replay_ratio == 0.5  # what was valid is kept
    assert settings.training.sft_epochs == 2
    assert settings.training.grpo_steps == RoundConfig().training.grpo_steps
    assert not settings.training_sets("gone")


def test_the_stored_shape_keeps_only_the_training_options_a_round_sets():
    stored = RoundConfig.model_validate({"training": {"grpo_steps": 5}}).stored()
    assert stored["training"] == {"grpo_steps": 5}
    assert set(stored) == set(RoundConfig.model_fields)
    assert RoundConfig.from_stored(stored) == RoundConfig.model_validate(stored)


@pytest.mark.django_db
def test_start_round_refuses_unknown_and_out_of_range_settings_by_name():
    policy = factories.make_policy(kind="local_hf")
    for options, named in (
        ({"max_walk_lenght": 4}, "max_walk_lenght: unknown round option"),
        ({"programmatic_share": 2}, "programmatic_share"),
        ({"training": {"output_dir": "/tmp/x"}}, "training.output_dir: unknown option"),
        ({"training": "not JSON"}, "training: must be a JSON object"),
    ):
        with pytest.raises(ValidationError, match=named):
            start_round(policy=policy, **options)
    assert not EvolutionRound.objects.exists()
    started = start_round(policy=policy, train=False, training={"sft_epochs": 2})
    assert started.config["training"] == {"sft_epochs": 2}
    assert started.settings.tasks_per_environment == 4 and started.settings.train is False
