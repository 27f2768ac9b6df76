"""One training run, top to bottom: tasks, gold trajectories, SFT warm-up, GRPO, evaluation.

The caller (a Celery job, the CLI) passes ``on_metrics(step, dict)`` and ``on_checkpoint(path)``
to record metrics and checkpoints as they happen; everything is also written under
``config.output_dir`` (metrics.jsonl, result.json, checkpoint directories).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from training.grpo.callbacks import (
    CheckpointCallback,
    CheckpointHook,
    MetricsCallback,
    MetricsHook,
    emit_metrics,
)
from training.grpo.config import TrainingConfig

log = logging.getLogger(__name__)


@dataclass
class TrainingResult:
    """What a run produced; ``final_checkpoint`` is the policy version to record."""

    output_dir: str
    final_checkpoint: str
    checkpoints: list[str] = field(default_factory=list)
    gold: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] | None = None
    grpo: dict[str, Any] = field(default_factory=dict)
    eval_before: dict[str, Any] | None = None
    eval_after_sft: dict[str, Any] | None = None
    eval_after: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_tasks(config: TrainingConfig, packages: dict[str, Any], pool: Any) -> list[Any]:
    """Tasks from ``tasks_path`` (JSONL of TaskSpec dicts) or synthesised from the packages."""
    from tasks.synthesis.task_spec import TaskSpec

    if config.tasks_path:
        lines = Path(config.tasks_path).read_text().splitlines()
        tasks = [TaskSpec.from_dict(json.loads(line)) for line in lines if line.strip()]
    else:
        from tasks.synthesis.graph_tasks import Difficulty, synthesize_graph_tasks

        difficulty = Difficulty(steps=config.max_chain_length, distractors=1, min_steps=1)
        tasks = []
        from tasks.synthesis.programmatic_tasks import synthesize_programmatic_tasks

        for package in packages.values():
            tasks += synthesize_graph_tasks(
                package, pool, config.tasks_per_environment, difficulty, config.seed, llm=None
            )
            if config.programmatic_tasks_per_environment:
                tasks += synthesize_programmatic_tasks(
                    package,
                    pool,
                    config.programmatic_tasks_per_environment,
                    seed=config.seed,
                    llm=None,
                )
    kept = [
        t
        for t in tasks
        if t.environment in packages and len(t.gold_chain) <= config.max_chain_length
    ]
    if not kept:
        raise ValueError("no training tasks: none match the packages and max_chain_length")
    return kept


def _evaluate(model_dir: str, tasks, packages, pool, config: TrainingConfig) -> dict[str, Any]:
    from training.policies.local_hf import LocalHFPolicy
    from training.rollout.agent_loop import RolloutSettings
    from training.rollout.evaluation import evaluate_policy

    device = "cpu" if config.use_cpu else None
    policy = LocalHFPolicy.from_pretrained(
        model_dir, device=device or _default_device(), max_new_tokens=config.eval_max_new_tokens
    )
    summary, _ = evaluate_policy(
        policy,
        tasks,
        packages,
        pool,
        concurrency=2,
        settings=RolloutSettings(step_budget=config.eval_step_budget),
    )
    return summary


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def require_vllm() -> None:
    """Fail a run that asks for vLLM on a machine without it, before any work is done."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise RuntimeError(
            "use_vllm is set but vLLM is not installed: install the GPU extra "
            "(pip install '.[gpu]') on a machine with a CUDA GPU, or unset use_vllm"
        )


def grpo_config(config: TrainingConfig, output_dir: Path) -> Any:
    """The TRL GRPOConfig for a run (vLLM server mode passed through when asked)."""
    from trl import GRPOConfig

    kwargs: dict[str, Any] = {
        "output_dir": str(output_dir),
        "max_steps": config.grpo_steps,
        "learning_rate": config.learning_rate,
        "num_generations": config.num_generations,
        "per_device_train_batch_size": config.per_device_train_batch_size,
        "gradient_accumulation_steps": config.gradient_accumulation_steps,
        "max_completion_length": config.max_completion_length,
        "temperature": config.temperature,
        "beta": config.beta,
        "logging_steps": config.logging_steps,
        "save_strategy": "steps",
        "save_steps": config.checkpoint_every,
        "save_only_model": True,
        "report_to": "none",
        "seed": config.seed,
        "use_cpu": config.use_cpu,
        "bf16": config.bf16,
        "gradient_checkpointing": config.gradient_checkpointing,
        "disable_tqdm": True,
    }
    if config.use_vllm:
        require_vllm()
        kwargs.update(use_vllm=True, vllm_mode=config.vllm_mode)
        if config.vllm_server_base_url:
            kwargs["vllm_server_base_url"] = config.vllm_server_base_url
    return GRPOConfig(**kwargs)


def run_grpo(
    config: TrainingConfig,
    model_dir: str,
    tasks: list[Any],
    packages: dict[str, Any],
    pool: Any,
    on_metrics: MetricsHook | None,
    on_checkpoint: CheckpointHook | None,
    metrics_path: Path | None,
    callbacks: list[Any] | None = None,
    generator_factory: Any = None,
) -> tuple[str, dict[str, Any]]:
    """GRPO whose rollouts our own agent loop plays (``training.grpo.rollouts``); returns
    (final dir, summary). ``generator_factory(trainer)`` replaces the trainer's own generation
    (a scripted policy in tests)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import AutoTokenizer, PrinterCallback
    from trl import GRPOTrainer

    from training.grpo.dataset import build_dataset
    from training.grpo.lora import merged, peft_config
    from training.grpo.rollouts import AgentWorldRollouts, TrainerGenerator, agent_world_reward
    from training.rollout.agent_loop import RolloutSettings, package_manifest

    manifests = {name: package_manifest(p) for name, p in packages.items()}
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    budget = token_budget(config)
    rollouts = AgentWorldRollouts(
        tasks,
        packages,
        pool,
        tokenizer,
        RolloutSettings(step_budget=config.step_budget, tool_result_chars=config.tool_result_chars),
        budget,
        generator_factory=generator_factory or TrainerGenerator,
        learnability_filter=config.learnability_filter,
    )
    dataset = build_dataset(tasks, manifests, config.seed)
    output_dir = Path(config.output_dir) / "grpo"
    trainer = GRPOTrainer(
        model=model_dir,
        reward_funcs=[agent_world_reward],
        args=grpo_config(config, output_dir),
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollouts,
        peft_config=peft_config(config),
        callbacks=[
            MetricsCallback(on_metrics, metrics_path),
            CheckpointCallback(on_checkpoint),
            *(callbacks or []),
        ],
    )
    if on_metrics is not None:  # the hook has every log; the printed dicts would repeat them
        trainer.remove_callback(PrinterCallback)
    started = time.perf_counter()
    output = trainer.train()
    seconds = time.perf_counter() - started
    final_dir = Path(config.output_dir) / "final"
    # A plain causal LM with its generation cache on: loadable by evaluation and the registry.
    model = merged(trainer.accelerator.unwrap_model(trainer.model))
    model.config.use_cache = True
    if trainer.accelerator.is_main_process:
        model.save_pretrained(str(final_dir))
        tokenizer.save_pretrained(final_dir)
    trainer.accelerator.wait_for_everyone()
    history = [h for h in trainer.state.log_history if "loss" in h]
    summary = {
        "steps": trainer.state.global_step,
        "seconds": round(seconds, 2),
        "train_loss": output.training_loss,
        "environments": sorted({task_fields_environment(t) for t in tasks}),
        "rows": len(dataset),
        "reward_first": history[0].get("reward") if history else None,
        "reward_last": history[-1].get("reward") if history else None,
        "unlearnable_tasks": len(rollouts.unlearnable),
        "substituted_groups": rollouts.substituted,
    }
    return str(final_dir), summary


def token_budget(config: TrainingConfig) -> Any:
    """The per-episode token budget of a run (completion and context lengths)."""
    from training.rollout.token_loop import TokenBudget

    return TokenBudget(
        max_completion_tokens=config.max_completion_length,
        max_context_tokens=config.max_context_length,
    )


def task_fields_environment(task: Any) -> str:
    from training.rollout.agent_loop import task_fields

    return task_fields(task)[1]


def held_out(eval_tasks: list[Any], tasks: list[Any]) -> list[Any]:
    """The evaluation tasks that are not training tasks (by id and by instruction)."""
    from training.rollout.agent_loop import task_fields

    seen_ids = {task_fields(t)[0] for t in tasks}
    seen_text = {(task_fields(t)[1], task_fields(t)[2]) for t in tasks}
    return [
        t
        for t in eval_tasks
        if task_fields(t)[0] not in seen_ids
        and (task_fields(t)[1], task_fields(t)[2]) not in seen_text
    ]


def _read_tasks(path: str) -> list[Any]:
    from tasks.synthesis.task_spec import TaskSpec

    lines = Path(path).read_text().splitlines()
    return [TaskSpec.from_dict(json.loads(line)) for line in lines if line.strip()]


def run_training(
    config: TrainingConfig,
    tasks: list[Any] | None = None,
    on_metrics: MetricsHook | None = None,
    on_checkpoint: CheckpointHook | None = None,
    callbacks: list[Any] | None = None,
    eval_tasks: list[Any] | None = None,
    generator_factory: Any = None,
) -> TrainingResult:
    """The whole run. ``tasks`` overrides ``config.tasks_path`` / synthesis; ``eval_tasks``
    (else ``config.eval_tasks_path``) are the held-out tasks evaluated before and after, with
    any training task removed; ``callbacks`` are extra transformers TrainerCallbacks for the
    GRPO phase; ``generator_factory`` replaces the model's generation in GRPO rollouts."""
    from accelerate import PartialState
    from transformers import AutoTokenizer

    from environments.runtime import SandboxPool, load_package
    from training.grpo.sft import sft_conversations, sft_warmup
    from training.policies.tiny_model import build_tiny_policy
    from training.rollout import GoldChainPolicy, rollout_many
    from training.rollout.agent_loop import package_manifest
    from training.rollout.evaluation import score_trajectories

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2))
    metrics_path = out / "metrics.jsonl"
    checkpoints: list[str] = []

    def checkpoint(path: str) -> None:
        checkpoints.append(path)
        if on_checkpoint is not None:
            on_checkpoint(path)

    loaded = [load_package(Path(p)) for p in config.packages]
    packages = {p.name: p for p in loaded}
    with SandboxPool(workers=config.sandbox_workers) as pool:
        tasks = [t for t in (tasks or load_tasks(config, packages, pool))]
        if eval_tasks is None and config.eval_tasks_path:
            eval_tasks = _read_tasks(config.eval_tasks_path)
        evaluation = held_out(
            [t for t in eval_tasks or [] if task_fields_environment(t) in packages], tasks
        )
        evaluate = config.eval_before_after and bool(evaluation)
        # Gold trajectories: the SFT data, and the check that sandbox and reward agree.
        gold = rollout_many(GoldChainPolicy(tasks), tasks, packages, concurrency=4, pool=pool)
        gold_summary = score_trajectories(tasks, gold)
        emit_metrics(0, {"phase": "gold", **gold_summary}, on_metrics, metrics_path)
        good = [t for t in gold if t.reward is not None and t.reward.success]

        # Under `accelerate launch` only the main process builds and evaluates; the others wait
        # and then load the same directories. SFT runs on every process (SFTTrainer shards the
        # gold conversations across them) and the main process saves its model.
        state = PartialState(cpu=config.use_cpu)
        model_dir = config.model_path or str(out / "initial")
        result = TrainingResult(output_dir=str(out), final_checkpoint=model_dir, gold=gold_summary)
        if state.is_main_process:
            if not config.model_path:
                build_tiny_policy(
                    model_dir,
                    [package_manifest(p) for p in loaded],
                    [t.to_dict() for t in tasks],
                    seed=config.seed,
                )
            if evaluate:
                result.eval_before = _evaluate(model_dir, evaluation, packages, pool, config)
                emit_metrics(
                    0, {"phase": "eval_before", **result.eval_before}, on_metrics, metrics_path
                )
        state.wait_for_everyone()
        if config.sft_epochs > 0:
            sft_dir = out / "sft"
            result.sft = sft_warmup(
                model_dir,
                AutoTokenizer.from_pretrained(model_dir),
                sft_conversations(good),
                config,
                output_dir=sft_dir,
                save_dir=sft_dir,
                on_step=(
                    (lambda step, values: emit_metrics(step, values, on_metrics, metrics_path))
                    if state.is_main_process
                    else None
                ),
            )
            state.wait_for_everyone()
            model_dir = str(sft_dir)
            checkpoint(model_dir)
            if state.is_main_process:
                emit_metrics(0, {"phase": "sft", **result.sft}, on_metrics, metrics_path)
                if evaluate and config.grpo_steps > 0:
                    result.eval_after_sft = _evaluate(model_dir, evaluation, packages, pool, config)
                    emit_metrics(
                        0,
                        {"phase": "eval_after_sft", **result.eval_after_sft},
                        on_metrics,
                        metrics_path,
                    )
            state.wait_for_everyone()

        if config.grpo_steps > 0:
            final_dir, result.grpo = run_grpo(
                config,
                model_dir,
                tasks,
                packages,
                pool,
                on_metrics,
                checkpoint,
                metrics_path,
                callbacks,
                generator_factory,
            )
            checkpoint(final_dir)
            model_dir = final_dir
        result.final_checkpoint = model_dir
        result.checkpoints = checkpoints

        if evaluate and state.is_main_process:
            result.eval_after = _evaluate(model_dir, evaluation, packages, pool, config)
            emit_metrics(
                result.grpo.get("steps", 0),
                {"phase": "eval_after", **result.eval_after},
                on_metrics,
                metrics_path,
            )
    if state.is_main_process:
        (out / "result.json").write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return result
