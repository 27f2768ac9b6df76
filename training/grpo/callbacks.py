"""Trainer callbacks that hand metrics and checkpoints to the caller (the lead stores them)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

MetricsHook = Callable[[int, dict[str, Any]], None]
CheckpointHook = Callable[[str], None]

# TRL's log keys -> the names the console and DB use.
_RENAMES = {
    "reward": "reward_mean",
    "rewards/agent_world_reward/mean": "reward_mean",
    "success_rate": "success_rate",
    "kl": "kl",
    "loss": "loss",
}


class MetricsCallback(TrainerCallback):
    """Calls ``on_metrics(step, metrics)`` at each log, adding tokens/s, and appends JSONL."""

    def __init__(self, on_metrics: MetricsHook | None, jsonl_path: Path | None = None):
        self.on_metrics = on_metrics
        self.jsonl_path = jsonl_path
        self._last_time: float | None = None
        self._last_tokens = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_time = time.perf_counter()
        self._last_tokens = 0.0

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = dict(logs or {})
        metrics: dict[str, Any] = {"phase": "grpo"}
        for key, value in logs.items():
            metrics[_RENAMES.get(key, key)] = value
        now = time.perf_counter()
        tokens = float(logs.get("num_tokens", self._last_tokens) or 0.0)
        if self._last_time is not None and now > self._last_time and tokens > self._last_tokens:
            metrics["tokens_per_s"] = round(
                (tokens - self._last_tokens) / (now - self._last_time), 1
            )
        self._last_time, self._last_tokens = now, tokens
        emit_metrics(state.global_step, metrics, self.on_metrics, self.jsonl_path)


class CheckpointCallback(TrainerCallback):
    """Calls ``on_checkpoint(path)`` for every checkpoint directory the trainer saves."""

    def __init__(self, on_checkpoint: CheckpointHook | None):
        self.on_checkpoint = on_checkpoint

    def on_save(self, args, state, control, **kwargs):
        path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if path.is_dir() and self.on_checkpoint is not None:
            self.on_checkpoint(str(path))


def emit_metrics(
    step: int,
    metrics: dict[str, Any],
    hook: MetricsHook | None,
    jsonl_path: Path | None,
) -> None:
    """One metrics record to the hook and to the run's metrics.jsonl."""
    if hook is not None:
        hook(step, metrics)
    if jsonl_path is not None:
        with jsonl_path.open("a") as handle:
            handle.write(json.dumps({"step": step, **metrics}, default=str) + "\n")
