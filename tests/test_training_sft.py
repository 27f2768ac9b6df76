"""SFT warm-up on conversations longer than its window: the targets are kept, an example with
nothing to learn is dropped, and no step is taken on a NaN loss (it would ruin every weight and
PostgreSQL's jsonb refuses NaN in the metrics)."""

from __future__ import annotations

import math

import torch

from tests.support.sample_package import TOOLS
from training.grpo.sft import IGNORE_INDEX, SFTExample, fit_to_length, sft_warmup
from training.policies.tiny_model import build_tiny_policy, load_policy_dir
from training.service import _jsonable

QUESTION = {"role": "user", "content": "Which title has book 3? " * 5}
ANSWER = {"role": "assistant", "content": "Dune Messiah"}


def test_a_long_conversation_keeps_its_targets_and_a_targetless_one_is_dropped(tmp_path):
    path = build_tiny_policy(tmp_path / "tiny", [{"name": "b", "tools": TOOLS}], [])
    model, tokenizer = load_policy_dir(path)
    conversations = [
        {"messages": [QUESTION, ANSWER], "tools": TOOLS},  # the tool list alone overflows
        {"messages": [QUESTION], "tools": []},  # no assistant turn: nothing to learn
    ]
    result = sft_warmup(model, tokenizer, conversations, epochs=2, batch_size=1, max_length=64)
    assert (result["examples"], result["truncated"], result["dropped"]) == (1, 2, 1)
    assert result["steps"] == 2 and result["skipped_steps"] == 0
    assert math.isfinite(result["loss_first"]) and math.isfinite(result["loss_last"])
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_fit_to_length_keeps_the_end():
    example = SFTExample(list(range(10)), [IGNORE_INDEX] * 7 + [7, 8, 9])
    fitted = fit_to_length(example, 4)
    assert fitted.input_ids == [6, 7, 8, 9] and fitted.labels == [IGNORE_INDEX, 7, 8, 9]
    assert fit_to_length(example, 10) is example


def test_metrics_never_carry_nan_or_infinity():
    values = {"loss": float("nan"), "reward": torch.tensor(float("inf")), "steps": 3, "ok": 0.5}
    assert _jsonable(values) == {"loss": None, "reward": None, "steps": 3, "ok": 0.5}
