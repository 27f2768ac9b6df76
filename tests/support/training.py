"""Training settings small enough for a CPU: tests and the fault benchmark train with these."""

from __future__ import annotations

QUICK_TRAINING = {
    "sft_epochs": 2,
    "grpo_steps": 1,
    "num_generations": 2,
    "max_completion_length": 24,
    "tasks_per_environment": 4,
}
