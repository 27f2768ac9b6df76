"""What a researcher may set on a training run: the settable part of the trainer's config.

Every training field is defined once, with one default and one help text. The fields a
researcher may set live here in :class:`RunOptions`; the trainer's
:class:`~training.grpo.config.TrainingConfig` extends it with what the training job or a
``run.json`` sets (packages, paths, devices, trainer knobs), so the two share each field rather
than copy it. The REST API validates a run's ``config`` with :class:`RunOptions`, the console's
"new training run" form is generated from its fields, and an evolution round's ``training``
config is one. Unknown keys, keys only the job may set and out-of-range values are refused with a
message naming the field.

The defaults are what a run started in the app (API, console, round) does; ``python -m
training.grpo.run`` reads the same defaults, so a ``run.json`` that wants another behaviour (no
SFT warm-up, more GRPO steps) says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

__all__ = ["RunOptions", "ValidationError", "option_errors"]


class RunOptions(BaseModel):
    """A training run's settings a researcher chooses (data, SFT warm-up, GRPO, token budgets,
    hardware, evaluation); every other trainer field is set by the job (``TrainingConfig``)."""

    model_config = ConfigDict(extra="forbid")

    # --- data ---
    tasks_per_environment: int = Field(
        6,
        ge=1,
        le=10_000,
        description="Training tasks per environment: a run in the app takes this many train-split "
        "tasks of each environment; the command line without tasks_path synthesises this many.",
    )
    heldout_per_environment: int = Field(
        4,
        ge=0,
        le=10_000,
        description="Held-out tasks per environment evaluated before and after (0: no "
        "evaluation). A run in the app only; the command line reads eval_tasks_path.",
    )
    seed: int = Field(0, ge=0, description="Seed for data mixing, init and sampling.")
    task_kinds: list[Literal["graph", "programmatic"]] = Field(
        default_factory=lambda: ["graph", "programmatic"],
        min_length=1,
        description="Kinds of tasks to train on, taken in turns (a run in the app; the command "
        "line uses programmatic_tasks_per_environment).",
    )
    exclude_uniform: StrictBool = Field(
        False,
        description="Leave out tasks a policy's rollouts always or never solved (no signal; a "
        "run in the app).",
    )
    # --- SFT warm-up ---
    sft_epochs: int = Field(
        20,
        ge=0,
        le=1000,
        description="Epochs of SFT on gold trajectories before GRPO (0: skip). The command line "
        "warms up too unless its run.json sets 0.",
    )
    # --- GRPO ---
    grpo_steps: int = Field(
        2,
        ge=0,
        le=100_000,
        description="GRPO optimiser steps (0: SFT only). A run.json may still name it max_steps.",
    )
    num_generations: int = Field(
        4, ge=2, le=256, description="Completions sampled per task (the GRPO group size)."
    )
    learning_rate: float = Field(1e-5, gt=0, le=1.0, description="GRPO learning rate.")
    max_completion_length: int = Field(
        1024,
        ge=8,
        le=131_072,
        description="Token budget of a whole multi-turn completion (the model's turns and the "
        "tool results inserted between them). A call whose result would not fit is not run.",
    )
    max_context_length: int | None = Field(
        None,
        ge=64,
        le=1_048_576,
        description="Prompt + completion tokens at most (the model's window); None: no cap.",
    )
    step_budget: int = Field(40, ge=1, le=400, description="Tool-calling turns per rollout.")
    learnability_filter: StrictBool = Field(
        True,
        description="Replace tasks whose group rewards had zero variance (no GRPO signal) with "
        "learnable ones from the next step on.",
    )
    # --- hardware and generation backend ---
    bf16: StrictBool = Field(False, description="bfloat16 mixed precision, SFT and GRPO (GPU).")
    gradient_checkpointing: StrictBool = Field(
        False, description="Trade compute for memory on large models (SFT and GRPO)."
    )
    use_lora: StrictBool = Field(
        False,
        description="Train LoRA adapters (peft) instead of every weight in the SFT warm-up (one "
        "LoraConfig, training/grpo/lora.py::peft_config, for GRPO to share). The adapter is "
        "merged into the weights before the SFT checkpoint is saved: a plain causal LM.",
    )
    lora_r: int = Field(16, ge=1, le=1024, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, le=4096, description="LoRA scaling (alpha / r).")
    use_vllm: StrictBool = Field(
        False,
        description="Generate GRPO rollouts with vLLM instead of transformers "
        "(pip install .[gpu]).",
    )
    vllm_mode: Literal["colocate", "server"] = Field(
        "colocate",
        description="vLLM in the training process on the same GPUs ('colocate'), or a running "
        "`trl vllm-serve` ('server', with vllm_server_base_url). A run.json that wants a server "
        "says so.",
    )
    vllm_server_base_url: str | None = Field(
        None, max_length=500, description="URL of the vLLM server (server mode)."
    )
    # --- evaluation ---
    eval_before_after: StrictBool = Field(
        True,
        description="Roll out the policy on held-out tasks before and after training (never on "
        "the training tasks); skipped when there are none.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> RunOptions:
        if self.use_vllm and self.vllm_mode == "server" and not self.vllm_server_base_url:
            raise ValueError("vllm_mode 'server' needs vllm_server_base_url")
        if self.vllm_server_base_url and self.vllm_mode == "colocate":
            raise ValueError(
                "vllm_server_base_url names a vLLM server, but vllm_mode is 'colocate' "
                "(the default): set vllm_mode to 'server' to use it, or drop the URL"
            )
        if (
            self.max_context_length is not None
            and self.max_context_length <= self.max_completion_length // 8
        ):
            raise ValueError("max_context_length leaves no room for the completion")
        return self

    @classmethod
    def form_fields(cls) -> list[dict[str, Any]]:
        """(name, kind, default, help, choices) of every option, for the console form."""
        rows = []
        for name, info in cls.model_fields.items():
            annotation = info.annotation
            kind = "number"
            choices: list[str] = []
            if annotation in (bool, StrictBool):
                kind = "checkbox"
            elif getattr(annotation, "__origin__", None) is Literal:
                kind, choices = "select", list(annotation.__args__)
            elif getattr(annotation, "__origin__", None) is list:
                kind, choices = "multiple", list(annotation.__args__[0].__args__)
            elif annotation in (str, str | None):
                kind = "text"
            rows.append(
                {
                    "name": name,
                    "kind": kind,
                    "default": info.get_default(call_default_factory=True),
                    "help": info.description or "",
                    "choices": choices,
                    "step": "any" if annotation is float else "1",
                }
            )
        return rows


def option_errors(error: ValidationError) -> dict[str, str]:
    """{field: message} of a validation error (``__all__`` for cross-field ones)."""
    errors: dict[str, str] = {}
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "__all__"
        message = str(item["msg"]).removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown option; known: " + ", ".join(RunOptions.model_fields)
        errors.setdefault(field, message)
    return errors
