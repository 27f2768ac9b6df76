"""LoRA, configured once for every trainer of a run (SFT and GRPO take the same object).

``peft_config(config)`` is what a TRL trainer's ``peft_config`` argument gets: a
``peft.LoraConfig`` when ``config.use_lora`` is set, else None (full fine-tuning). peft is only
imported when LoRA is asked for.

Checkpoints stay plain causal LMs: ``merged(model)`` folds the adapter into the base weights
(``merge_and_unload``) before a model is saved, so every saved directory loads with
``AutoModelForCausalLM.from_pretrained`` (evaluation, the next phase, the policy registry) and
nothing downstream needs peft.
"""

from __future__ import annotations

from typing import Any


def peft_config(config: Any) -> Any:
    """The run's ``peft.LoraConfig`` (causal LM, no bias), or None when LoRA is off."""
    if not config.use_lora:
        return None
    try:
        from peft import LoraConfig
    except ImportError as exc:  # pragma: no cover - peft is a declared dependency
        raise ImportError("use_lora needs the `peft` package (pip install peft)") from exc
    target = config.lora_target_modules
    return LoraConfig(
        task_type="CAUSAL_LM",
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(target) if isinstance(target, list | tuple) else target,
        bias="none",
    )


def merged(model: Any) -> Any:
    """``model`` with any LoRA adapter merged into its weights (the model itself otherwise)."""
    try:
        from peft import PeftModel
    except ImportError:
        return model
    if isinstance(model, PeftModel):
        return model.merge_and_unload()
    return model
