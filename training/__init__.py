"""Training: policies, the rollout engine and multi-environment GRPO (TRL + Accelerate)."""
