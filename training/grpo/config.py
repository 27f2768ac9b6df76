"""Everything a training run is configured by, named and documented once (TRL style)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class TrainingConfig:
    """A multi-environment GRPO run: SFT warm-up on gold trajectories, then GRPO steps."""

    # --- data ---
    packages: list[str] = field(
        default_factory=list,
        metadata={"help": "Environment package directories (one immutable version each)."},
    )
    tasks_path: str | None = field(
        default=None,
        metadata={
            "help": "JSONL file of TaskSpec dicts to train on. When unset, tasks are synthesised "
            "from the packages with tasks.synthesis (graph walks)."
        },
    )
    tasks_per_environment: int = field(
        default=8, metadata={"help": "Tasks synthesised per environment when tasks_path is unset."}
    )
    programmatic_tasks_per_environment: int = field(
        default=0,
        metadata={
            "help": "Programmatic tasks (a verified program's goal) synthesised per environment "
            "beside the graph tasks when tasks_path is unset; max_chain_length applies to their "
            "gold runs too."
        },
    )
    max_chain_length: int = field(
        default=1,
        metadata={"help": "Longest gold chain kept (1 = single-call tasks, the easiest)."},
    )
    # --- model ---
    model_path: str | None = field(
        default=None,
        metadata={
            "help": "A saved causal LM directory (checkpoint). When unset a tiny Qwen2 policy is "
            "built from scratch with a tokenizer trained on the environments."
        },
    )
    output_dir: str = field(
        default="var/training/run", metadata={"help": "Checkpoints, metrics and logs go here."}
    )
    seed: int = field(default=0, metadata={"help": "Seed for data mixing, init and sampling."})
    # --- SFT warm-up ---
    sft_epochs: int = field(
        default=0, metadata={"help": "Epochs of SFT on gold trajectories before GRPO (0 = skip)."}
    )
    sft_learning_rate: float = field(
        default=3e-3,
        metadata={
            "help": "SFT peak learning rate (linear decay to 0). 3e-3 suits the tiny policy "
            "trained from scratch; a pretrained model wants far less."
        },
    )
    sft_batch_size: int = field(
        default=8, metadata={"help": "SFT conversations per device per micro-batch."}
    )
    sft_gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "SFT micro-batches accumulated per optimiser step."}
    )
    sft_max_length: int = field(
        default=8192,
        metadata={
            "help": "Longest SFT conversation in tokens. A longer one is cut after its last "
            "assistant turn that fits (the system prompt and instruction are never cut), or "
            "dropped when even its first assistant turn does not fit; both are counted."
        },
    )
    # --- GRPO ---
    max_steps: int = field(default=10, metadata={"help": "GRPO optimiser steps."})
    learning_rate: float = field(default=1e-5, metadata={"help": "GRPO learning rate."})
    num_generations: int = field(
        default=4, metadata={"help": "Completions sampled per prompt (the GRPO group size)."}
    )
    per_device_train_batch_size: int = field(
        default=4, metadata={"help": "Completions per device per step; divisible by the group."}
    )
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "Micro-batches accumulated per optimiser step."}
    )
    max_completion_length: int = field(
        default=1024,
        metadata={
            "help": "Token budget of a whole multi-turn completion (the model's turns and the "
            "tool results inserted between them). A call whose result would not fit is not run."
        },
    )
    max_context_length: int | None = field(
        default=None,
        metadata={"help": "Prompt + completion tokens at most (the model's window); None: no cap."},
    )
    tool_result_chars: int = field(
        default=4000, metadata={"help": "A tool result shown to the model is cut to this."}
    )
    step_budget: int = field(
        default=40, metadata={"help": "Tool-calling turns allowed per rollout."}
    )
    learnability_filter: bool = field(
        default=True,
        metadata={
            "help": "Replace tasks whose group rewards had zero variance (no GRPO signal) with "
            "learnable ones from the next step on."
        },
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature."})
    beta: float = field(
        default=0.04, metadata={"help": "KL coefficient against the reference model (0 = none)."}
    )
    logging_steps: int = field(default=1, metadata={"help": "Log metrics every N steps."})
    save_steps: int = field(default=10, metadata={"help": "Save a checkpoint every N steps."})
    sandbox_workers: int = field(default=2, metadata={"help": "Warm sandbox worker processes."})
    # --- hardware and generation backend ---
    use_cpu: bool = field(default=False, metadata={"help": "Train on the CPU (tests, no GPU)."})
    bf16: bool = field(
        default=False, metadata={"help": "bfloat16 mixed precision, SFT and GRPO (GPU)."}
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata={"help": "Trade compute for memory on large models (SFT and GRPO)."},
    )
    use_lora: bool = field(
        default=False,
        metadata={
            "help": "Train LoRA adapters instead of every weight in the SFT warm-up (one "
            "LoraConfig, training/grpo/lora.py::peft_config, for GRPO to share). The adapter is "
            "merged into the weights before the SFT checkpoint is saved: a plain causal LM."
        },
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA scaling (alpha / r)."})
    lora_dropout: float = field(default=0.05, metadata={"help": "Dropout on the LoRA input."})
    lora_target_modules: list[str] | str = field(
        default="all-linear",
        metadata={
            "help": "Modules given adapters: 'all-linear' (every linear layer but the output "
            "head) or a list of module names such as ['q_proj', 'v_proj']."
        },
    )
    use_vllm: bool = field(
        default=False, metadata={"help": "Generate with vLLM instead of transformers."}
    )
    vllm_mode: str = field(
        default="server",
        metadata={"help": "'server' (a running `trl vllm-serve`) or 'colocate' (same GPUs)."},
    )
    vllm_server_base_url: str | None = field(
        default=None, metadata={"help": "URL of the vLLM server in server mode."}
    )
    # --- evaluation ---
    eval_before_after: bool = field(
        default=True,
        metadata={
            "help": "Roll out the policy on held-out tasks (eval_tasks_path, or tasks passed to "
            "run_training) before and after training; never on the training tasks."
        },
    )
    eval_tasks_path: str | None = field(
        default=None, metadata={"help": "JSONL of held-out TaskSpec dicts to evaluate on."}
    )
    eval_max_new_tokens: int = field(
        default=96, metadata={"help": "Generation budget per turn when evaluating."}
    )
    eval_step_budget: int = field(
        default=4, metadata={"help": "Turns per evaluation episode (short: tasks are simple)."}
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown training config fields: {unknown}")
        return cls(**data)

    @classmethod
    def from_json(cls, path: str | Path) -> TrainingConfig:
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def help(cls) -> dict[str, str]:
        """Field name -> help text (for the console's run form and the CLI)."""
        return {f.name: f.metadata.get("help", "") for f in fields(cls)}
