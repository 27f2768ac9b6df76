"""GPU check of the real training path: SFT (TRL SFTTrainer) then GRPO (TRL GRPOTrainer with
our rollout_func) with vLLM colocated and bf16, on a model of Qwen3-0.6B shape.

No download: the model is randomly initialised from a Qwen3 config shaped like Qwen3-0.6B
(hidden 1024, 28 layers, 16 heads of 128, 8 KV heads, intermediate 3072, embedding 151,936 rows)
with a tokenizer trained on the environments; the environments are two bookstore-style packages
run in the real sandbox. Prints SFT and GRPO step times, tokens/s and peak memory, and writes them
to $OUT/gpu_grpo.json when $OUT is set. vLLM is used when installed (pip install '.[gpu]'),
else transformers generation (said in the report).

    python benchmarks/gpu_grpo.py            # on a GPU machine, about 3-5 minutes
    python benchmarks/gpu_grpo.py --no-vllm  # transformers generation
    python benchmarks/gpu_grpo.py --cpu      # tiny shapes on the CPU, a smoke test
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformers import TrainerCallback  # noqa: E402

from environments.runtime import SandboxPool, load_package  # noqa: E402
from tests.support.sample_package import build_sample_package  # noqa: E402
from training.grpo.config import TrainingConfig  # noqa: E402
from training.grpo.trainer import load_tasks, run_training  # noqa: E402
from training.policies.tiny_model import build_policy_dir, corpus_from_environments  # noqa: E402


class TimeBudget(TrainerCallback):
    """Stop GRPO cleanly once the wall-clock budget is spent."""

    def __init__(self, seconds: float):
        self.deadline = time.perf_counter() + seconds

    def on_step_end(self, args, state, control, **kwargs):
        if time.perf_counter() > self.deadline:
            control.should_training_stop = True


def parameter_count(model_dir: Path) -> int:
    from safetensors import safe_open

    total = 0
    for shard in model_dir.glob("*.safetensors"):
        with safe_open(str(shard), framework="pt") as handle:
            for name in handle.keys():
                numel = 1
                for size in handle.get_slice(name).get_shape():
                    numel *= size
                total += numel
    return total


def two_environments(root: Path) -> list[Path]:
    first = build_sample_package(root / "a", name="bookstore")
    second = build_sample_package(root / "b", name="library")
    manifest = json.loads((second / "manifest.json").read_text())
    manifest["category"] = {"primary": "Education", "secondary": "Libraries", "tertiary": "Books"}
    (second / "manifest.json").write_text(json.dumps(manifest))
    return [first, second]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="Tiny shapes on the CPU.")
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps.")
    parser.add_argument("--hidden", type=int, default=None, help="Hidden size.")
    parser.add_argument("--layers", type=int, default=None, help="Decoder layers.")
    parser.add_argument("--budget-s", type=float, default=300.0, help="Stop GRPO after this.")
    parser.add_argument("--out", default=None, help="Work directory (default: a temp dir).")
    parser.add_argument("--no-vllm", action="store_true", help="Generate with transformers.")
    args = parser.parse_args()

    import importlib.util

    import torch

    cpu = args.cpu or not torch.cuda.is_available()
    if cpu:
        shape = {
            "hidden_size": args.hidden or 64,
            "num_hidden_layers": args.layers or 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "architecture": "qwen3",
        }
        steps, generations, batch, completion = args.steps or 2, 2, 4, 256
    else:
        hidden = args.hidden or 1024  # Qwen3-0.6B
        shape = {
            "hidden_size": hidden,
            "num_hidden_layers": args.layers or 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "intermediate_size": hidden * 3,
            "embedding_rows": 151_936,
            "architecture": "qwen3",
            "max_position_embeddings": 40_960,
        }
        steps, generations, batch, completion = args.steps or 6, 8, 16, 1024
    use_vllm = not cpu and not args.no_vllm and importlib.util.find_spec("vllm") is not None

    work = Path(args.out or tempfile.mkdtemp(prefix="gpu_grpo_"))
    started = time.perf_counter()
    packages = two_environments(work / "envs")
    config = TrainingConfig(
        packages=[str(p) for p in packages],
        output_dir=str(work / "run"),
        tasks_per_environment=8,
        use_cpu=cpu,
        bf16=not cpu,
        sft_epochs=3 if cpu else 10,
        sft_learning_rate=3e-3 if cpu else 5e-4,
        grpo_steps=steps,
        learning_rate=1e-6 if not cpu else 1e-5,
        num_generations=generations,
        per_device_train_batch_size=batch,
        max_completion_length=completion,
        save_steps=10_000,
        eval_before_after=False,
        sandbox_workers=4,
        gradient_checkpointing=not cpu,
        use_vllm=use_vllm,
        vllm_mode="colocate",
    )
    # Tasks first, so the tokenizer is trained on them as well as on the tools.
    loaded = [load_package(p) for p in packages]
    with SandboxPool(workers=2) as pool:
        tasks = load_tasks(config, {p.name: p for p in loaded}, pool)
    texts = corpus_from_environments([p.manifest for p in loaded], [t.to_dict() for t in tasks])
    build_started = time.perf_counter()
    model_dir = build_policy_dir(work / "model", texts, vocab_size=4096, **shape)
    config.model_path = str(model_dir)
    build_seconds = time.perf_counter() - build_started

    grpo_steps: list[dict] = []

    def on_metrics(step: int, metrics: dict) -> None:
        if metrics.get("phase") == "grpo" and "loss" in metrics:
            grpo_steps.append({"step": step, **metrics})
            print(
                f"step {step}: {metrics.get('step_time', 0):.2f}s  "
                f"tokens/s {metrics.get('tokens_per_s', 0)}  reward {metrics.get('reward_mean')}  "
                f"kl {metrics.get('kl')}  tool calls/completion {metrics.get('tools/call_frequency')}",
                flush=True,
            )
        elif metrics.get("phase") == "sft":
            print(f"sft: {metrics}", flush=True)

    if not cpu:
        torch.cuda.reset_peak_memory_stats()
    result = run_training(
        config, tasks=tasks, on_metrics=on_metrics, callbacks=[TimeBudget(args.budget_s)]
    )
    total = time.perf_counter() - started
    step_times = [s["step_time"] for s in grpo_steps if s.get("step_time") is not None]
    rates = [s["tokens_per_s"] for s in grpo_steps if s.get("tokens_per_s")]
    from transformers import AutoConfig

    model_config = AutoConfig.from_pretrained(model_dir)
    report = {
        "device": "cpu" if cpu else torch.cuda.get_device_name(0),
        "generation": "vllm colocate" if use_vllm else "transformers",
        "shape": shape,
        "vocab_size": model_config.vocab_size,
        "parameters_m": round(parameter_count(model_dir) / 1e6, 1),
        "tasks": len(tasks),
        "build_seconds": round(build_seconds, 1),
        "sft": result.sft,
        "grpo_steps": len(grpo_steps),
        "step_seconds": [round(t, 2) for t in step_times],
        "step_seconds_mean_after_first": round(sum(step_times[1:]) / max(1, len(step_times) - 1), 2)
        if len(step_times) > 1
        else None,
        "tokens_per_s": rates,
        "peak_memory_gib": None if cpu else round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "total_seconds": round(total, 1),
        "final_checkpoint": result.final_checkpoint,
    }
    print(json.dumps(report, indent=2, default=str))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_grpo.json").write_text(
            json.dumps(report, indent=2, default=str)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
