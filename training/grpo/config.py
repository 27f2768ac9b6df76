"""Everything a training run is configured by, named and documented once (TRL style).

:class:`TrainingConfig` is the researcher's :class:`~training.run_options.RunOptions` (each field
defined there once, with its one default and help text) plus what the training job or a
``run.json`` sets: packages, paths, devices and the trainer's finer knobs. The job builds it with
:meth:`TrainingConfig.from_options`; ``python -m training.grpo.run --config run.json`` reads it
with :meth:`TrainingConfig.from_json`. Unknown fields are refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, StrictBool

from training.run_options import RunOptions

# A run.json written before the options and the trainer config became one model.
LEGACY_FIELD_NAMES = {"max_steps": "grpo_steps"}


class TrainingConfig(RunOptions):
    """A multi-environment GRPO run: SFT warm-up on gold trajectories, then GRPO steps."""

    model_config = ConfigDict(extra="forbid")

    # --- data ---
    packages: list[str] = Field(
        default_factory=list,
        description="Environment package directories (one immutable version each).",
    )
    tasks_path: str | None = Field(
        None,
        description="JSONL file of TaskSpec dicts to train on. When unset (and no tasks are "
        "passed to run_training), tasks are synthesised from the packages with tasks.synthesis "
        "(graph walks).",
    )
    programmatic_tasks_per_environment: int = Field(
        0,
        ge=0,
        description="Programmatic tasks (a verified program's goal) synthesised per environment "
        "beside the graph tasks when tasks_path is unset; max_chain_length applies to their "
        "gold runs too.",
    )
    max_chain_length: int = Field(
        1,
        ge=1,
        description="Longest gold chain kept when synthesising (1 = single-call tasks, the "
        "easiest).",
    )
    # --- model ---
    model_path: str | None = Field(
        None,
        description="A saved causal LM directory (checkpoint). When unset a tiny Qwen2 policy is "
        "built from scratch with a tokenizer trained on the environments.",
    )
    output_dir: str = Field(
        "var/training/run", description="Checkpoints, metrics and logs go here."
    )
    # --- SFT warm-up ---
    sft_learning_rate: float = Field(
        3e-3,
        gt=0,
        description="SFT peak learning rate (linear decay to 0). 3e-3 suits the tiny policy "
        "trained from scratch; a pretrained model wants far less.",
    )
    sft_batch_size: int = Field(
        8, ge=1, description="SFT conversations per device per micro-batch."
    )
    sft_gradient_accumulation_steps: int = Field(
        1, ge=1, description="SFT micro-batches accumulated per optimiser step."
    )
    sft_max_length: int = Field(
        8192,
        ge=8,
        description="Longest SFT conversation in tokens. A longer one is cut after its last "
        "assistant turn that fits (the system prompt and instruction are never cut), or "
        "dropped when even its first assistant turn does not fit; both are counted.",
    )
    # --- GRPO ---
    per_device_train_batch_size: int = Field(
        4, ge=1, description="Completions per device per step; divisible by the group."
    )
    gradient_accumulation_steps: int = Field(
        1, ge=1, description="Micro-batches accumulated per optimiser step."
    )
    tool_result_chars: int = Field(
        4000, ge=1, description="A tool result shown to the model is cut to this."
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature.")
    beta: float = Field(
        0.04, ge=0, description="KL coefficient against the reference model (0 = none)."
    )
    logging_steps: int = Field(1, ge=1, description="Log metrics every N steps.")
    save_steps: int | None = Field(
        None,
        ge=1,
        description="Save a GRPO checkpoint every N steps; None: once, after the last step.",
    )
    sandbox_workers: int = Field(2, ge=1, description="Warm sandbox worker processes.")
    # --- hardware and generation backend ---
    use_cpu: StrictBool = Field(False, description="Train on the CPU (tests, no GPU).")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="Dropout on the LoRA input.")
    lora_target_modules: list[str] | str = Field(
        "all-linear",
        description="Modules given adapters: 'all-linear' (every linear layer but the output "
        "head) or a list of module names such as ['q_proj', 'v_proj'].",
    )
    # --- evaluation ---
    eval_tasks_path: str | None = Field(
        None,
        description="JSONL of held-out TaskSpec dicts to evaluate on (the command line; a run "
        "in the app passes its held-out tasks).",
    )
    eval_max_new_tokens: int = Field(
        96, ge=1, description="Generation budget per turn when evaluating."
    )
    eval_step_budget: int = Field(
        4, ge=1, description="Turns per evaluation episode (short: tasks are simple)."
    )

    @property
    def checkpoint_every(self) -> int:
        """GRPO steps between checkpoints (``save_steps``, else once at the end)."""
        return self.save_steps or max(1, self.grpo_steps)

    @classmethod
    def from_options(cls, options: RunOptions, **job_fields: Any) -> TrainingConfig:
        """The trainer's config of a run: the researcher's options and what the job sets
        (``packages``, paths, devices); no field is copied by hand."""
        return cls.model_validate({**options.model_dump(), **job_fields})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        """A config from a ``run.json``'s fields (a legacy ``max_steps`` read as ``grpo_steps``)."""
        data = dict(data)
        for old, new in LEGACY_FIELD_NAMES.items():
            if old in data and new not in data:
                data[new] = data.pop(old)
        unknown = sorted(set(data) - set(cls.model_fields))
        if unknown:
            raise ValueError(f"unknown training config fields: {unknown}")
        return cls.model_validate(data)

    @classmethod
    def from_json(cls, path: str | Path) -> TrainingConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text (for the CLI's --print-fields)."""
        return {name: info.description or "" for name, info in cls.model_fields.items()}
