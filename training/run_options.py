"""What a researcher may set on a training run, defined once.

The REST API validates a run's ``config`` with :class:`RunOptions`, the console's "new training
run" form is generated from its fields, an evolution round's ``training`` config goes through it,
and the training job turns it into the trainer's :class:`~training.grpo.config.TrainingConfig`
with :meth:`RunOptions.training_config`. Unknown keys and out-of-range values are refused with a
message naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator

__all__ = ["RunOptions", "ValidationError", "option_errors"]


class RunOptions(BaseModel):
    """A training run's settings (SFT warm-up, GRPO, token budgets, hardware, evaluation)."""

    model_config = ConfigDict(extra="forbid")

    # --- data ---
    tasks_per_environment: int = Field(
        6, ge=1, le=10_000, description="Training tasks taken per environment."
    )
    heldout_per_environment: int = Field(
        4,
        ge=0,
        le=10_000,
        description="Held-out tasks per environment evaluated before and after (0: no evaluation).",
    )
    seed: int = Field(0, ge=0, description="Seed for data mixing, init and sampling.")
    task_kinds: list[Literal["graph", "programmatic"]] = Field(
        default_factory=lambda: ["graph", "programmatic"],
        min_length=1,
        description="Kinds of tasks to train on, taken in turns.",
    )
    exclude_uniform: StrictBool = Field(
        False,
        description="Leave out tasks a policy's rollouts always or never solved (no signal).",
    )
    # --- SFT warm-up ---
    sft_epochs: int = Field(
        20, ge=0, le=1000, description="Epochs of SFT on gold trajectories (0: skip)."
    )
    # --- GRPO ---
    grpo_steps: int = Field(2, ge=0, le=100_000, description="GRPO optimiser steps (0: SFT only).")
    num_generations: int = Field(4, ge=2, le=256, description="Rollouts per task (the GRPO group).")
    learning_rate: float = Field(1e-5, gt=0, le=1.0, description="GRPO learning rate.")
    max_completion_length: int = Field(
        1024,
        ge=8,
        le=131_072,
        description="Tokens of a whole multi-turn completion (turns and tool results).",
    )
    max_context_length: int | None = Field(
        None,
        ge=64,
        le=1_048_576,
        description="Prompt + completion tokens at most (the model's window).",
    )
    step_budget: int = Field(40, ge=1, le=400, description="Tool-calling turns per rollout.")
    learnability_filter: StrictBool = Field(
        True,
        description="Replace tasks whose group rewards have zero variance from the next step on.",
    )
    # --- hardware and generation backend ---
    bf16: StrictBool = Field(False, description="bfloat16 mixed precision (GPU).")
    gradient_checkpointing: StrictBool = Field(False, description="Trade compute for memory.")
    use_lora: StrictBool = Field(
        False, description="Train LoRA adapters (peft) instead of all weights."
    )
    lora_r: int = Field(16, ge=1, le=1024, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, le=4096, description="LoRA alpha.")
    use_vllm: StrictBool = Field(
        False, description="Generate GRPO rollouts with vLLM (pip install .[gpu])."
    )
    vllm_mode: Literal["colocate", "server"] = Field(
        "colocate", description="vLLM in the training process, or a running `trl vllm-serve`."
    )
    vllm_server_base_url: str | None = Field(
        None, max_length=500, description="URL of the vLLM server (server mode)."
    )
    # --- evaluation ---
    eval_before_after: StrictBool = Field(
        True, description="Evaluate on held-out tasks before and after."
    )

    @model_validator(mode="after")
    def _consistent(self) -> RunOptions:
        if self.use_vllm and self.vllm_mode == "server" and not self.vllm_server_base_url:
            raise ValueError("vllm_mode 'server' needs vllm_server_base_url")
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

    def training_config(self, **fields: Any) -> Any:
        """The trainer's config for these options (``fields``: packages, paths, devices)."""
        from training.grpo.config import TrainingConfig

        return TrainingConfig(
            seed=self.seed,
            sft_epochs=self.sft_epochs,
            max_steps=self.grpo_steps,
            num_generations=self.num_generations,
            learning_rate=self.learning_rate,
            max_completion_length=self.max_completion_length,
            max_context_length=self.max_context_length,
            step_budget=self.step_budget,
            learnability_filter=self.learnability_filter,
            bf16=self.bf16,
            gradient_checkpointing=self.gradient_checkpointing,
            use_lora=self.use_lora,
            lora_r=self.lora_r,
            lora_alpha=self.lora_alpha,
            use_vllm=self.use_vllm,
            vllm_mode=self.vllm_mode,
            vllm_server_base_url=self.vllm_server_base_url,
            eval_before_after=self.eval_before_after and self.heldout_per_environment > 0,
            save_steps=max(1, self.grpo_steps),
            **fields,
        )


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
