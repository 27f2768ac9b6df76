"""Training-run options are one typed contract: API, console, rounds and the trainer share it."""

from __future__ import annotations

import pytest

from arena.models import EvolutionRound
from tests.support import factories
from training.grpo.config import TrainingConfig
from training.run_options import RunOptions, ValidationError, option_errors


def test_defaults_suit_a_real_model_and_map_onto_the_trainer_config():
    options = RunOptions()
    assert options.max_completion_length >= 1024 and options.learnability_filter
    config = TrainingConfig.from_options(
        RunOptions(grpo_steps=3, max_context_length=4096), packages=["p"], output_dir="out"
    )
    assert (config.grpo_steps, config.max_context_length, config.packages) == (3, 4096, ["p"])
    assert config.max_completion_length == options.max_completion_length


def test_bad_options_are_named_field_by_field():
    with pytest.raises(ValidationError) as caught:
        RunOptions.model_validate({"num_generations": 1, "vllm_mode": "remote", "zzz": 1})
    errors = option_errors(caught.value)
    assert set(errors) == {"num_generations", "vllm_mode", "zzz"}
    assert errors["zzz"].startswith("unknown option")
    with pytest.raises(ValidationError, match="needs vllm_server_base_url"):
        RunOptions(use_vllm=True, vllm_mode="server")
    # A run.json from before the defaults were unified named a server without the mode.
    with pytest.raises(ValidationError, match="set vllm_mode to 'server'"):
        RunOptions(use_vllm=True, vllm_server_base_url="http://127.0.0.1:8001")
    assert RunOptions(
        use_vllm=True, vllm_mode="server", vllm_server_base_url="http://127.0.0.1:8001"
    ).vllm_server_base_url


@pytest.mark.django_db
def test_a_round_refuses_bad_training_options_before_it_starts(reviewer_api):
    policy = factories.make_policy()
    bad = reviewer_api.post(
        "/api/rounds/start/",
        {"policy": policy.pk, "training": {"grpo_steps": -1}},
        format="json",
    )
    assert bad.status_code == 400 and "training.grpo_steps" in bad.json()["error"]
    assert not EvolutionRound.objects.exists()


def test_a_round_refuses_unknown_options_and_huge_seeds_by_name(reviewer_api):
    gold = factories.make_policy(kind="gold")
    refused = reviewer_api.post("/api/rounds/start/", {"policy": gold.pk}, format="json")
    assert refused.status_code == 400 and "no weights to train" in str(refused.json())
    assert "train: false" in str(refused.json())  # a round that trains needs weights
    policy = factories.make_policy(kind="local_hf")
    for body, field in (
        ({"max_walk_lenght": 4}, "max_walk_lenght"),  # a typo must not start a default round
        ({"seed": 2**70}, "seed"),
        ({"replay_ratio": -1}, "replay_ratio"),
    ):
        bad = reviewer_api.post("/api/rounds/start/", {"policy": policy.pk, **body}, format="json")
        assert bad.status_code == 400 and field in str(bad.json()), bad.json()
    assert not EvolutionRound.objects.exists()
    started = reviewer_api.post(
        "/api/rounds/start/", {"policy": policy.pk, "replay_ratio": 0.25}, format="json"
    )
    assert started.status_code == 202, started.json()
    assert EvolutionRound.objects.get().config["replay_ratio"] == 0.25


def test_vllm_without_the_gpu_extra_fails_clearly(tmp_path):
    import importlib.util

    from training.grpo.trainer import grpo_config

    if importlib.util.find_spec("vllm") is not None:  # a GPU machine with the extra installed
        pytest.skip("vLLM is installed here")
    config = TrainingConfig.from_options(
        RunOptions(use_vllm=True), packages=[], output_dir=str(tmp_path)
    )
    with pytest.raises(RuntimeError, match=r"pip install '\.\[gpu\]'"):
        grpo_config(config, tmp_path)


def test_each_option_is_one_field_of_the_trainer_config_with_one_default_and_help():
    trainer = TrainingConfig()
    for name, info in RunOptions.model_fields.items():
        assert TrainingConfig.model_fields[name] is not None and info.description
        assert getattr(trainer, name) == getattr(RunOptions(), name), name
    assert all(info.description for info in TrainingConfig.model_fields.values())
    assert trainer.sft_epochs == RunOptions().sft_epochs == 20  # what a run in the app does


def test_fields_only_the_job_sets_are_refused_as_options_by_name():
    with pytest.raises(ValidationError) as caught:
        RunOptions.model_validate({"output_dir": "/tmp/elsewhere", "grpo_steps": 3})
    assert set(option_errors(caught.value)) == {"output_dir"}


def test_a_legacy_run_json_naming_max_steps_still_loads(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"max_steps": 7, "sft_epochs": 0, "packages": ["p"]}')
    config = TrainingConfig.from_json(path)
    assert (config.grpo_steps, config.sft_epochs, config.checkpoint_every) == (7, 0, 7)
    with pytest.raises(ValueError, match="unknown training config fields"):
        TrainingConfig.from_dict({"bogus": 1})
