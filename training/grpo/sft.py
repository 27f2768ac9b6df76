"""SFT warm-up: teach the policy the tool-calling format on gold trajectories, with TRL's
``SFTTrainer`` and the loss on the agent's own turns only.

Data. The gold trajectories' conversations (``sft_conversations``: messages and tool schemas
exactly as the one agent view, ``tasks/agent_view.py``, rendered them) become a
``datasets.Dataset`` of ``{"messages", "tools"}``. Tool-call arguments and schemas differ in
shape from tool to tool, which Arrow structs cannot hold (they would union the keys and fill the
missing ones with null), so both columns are stored with the ``Json()`` feature type, as TRL's
dataset docs advise for tool calling.

Which tokens are trained (assistant-only loss), in order of preference:

1. ``generation_markers``: the chat template has ``{% generation %}`` markers, or TRL ships a
   training variant of it (``trl.chat_template_utils.get_training_chat_template``: Qwen 2.5,
   the tiny policy's template, Qwen 3, Llama 3, Gemma, Phi 3, ...). ``SFTConfig(
   assistant_only_loss=True)``; SFTTrainer renders each conversation with that template and
   trains exactly the tokens inside the markers: every assistant turn, tool calls and the final
   answer, with its end-of-turn token. System, user and tool-result tokens get label -100.
2. ``prefix_render``: a template TRL does not know. Each assistant turn's span is found by
   rendering the conversation's prefixes with the model's own template: from the end of
   ``messages[:i]`` plus the generation prompt to the end of ``messages[:i + 1]``. This is exact
   for a prefix-preserving template and checked on every conversation: a template that renders
   an earlier turn differently once later turns follow raises ValueError (give the tokenizer a
   template with generation markers instead). The data then go to SFTTrainer pre-tokenized,
   ``input_ids`` plus ``assistant_masks``, which it folds into the labels.

Path 1 also falls back to pre-tokenized data (same template, same masks, computed here with
``apply_chat_template(return_assistant_tokens_mask=True)`` as SFTTrainer would) when a
conversation does not survive Arrow's ``Json()`` storage unchanged: ``datasets`` stores it with
pandas' ujson, which writes floats with 10 decimals and reads them back imprecisely, and a
rounded tool-call argument would train the policy on a call it never made. The summary's ``format`` says which ("messages" or "tokens").

Over-long conversations (longer than ``config.sft_max_length`` tokens). The system prompt (rules,
tool list) and the instruction are never cut: without them the assistant's turns are targets with
no question. A conversation is cut from the right after its last assistant turn that fits, so
every trained turn is whole, end-of-turn token included, and the early calls, which teach the
format, are kept; one whose first assistant turn does not fit is dropped. Both are counted
(``truncated``, ``dropped``); a conversation with no assistant turn is dropped too.

Non-finite losses. A step whose gradients are NaN or infinite is skipped (its gradients dropped
before the optimizer step, ``skipped_steps``) rather than poisoning every weight, and the summary
holds no NaN: PostgreSQL's jsonb refuses it (``training/service.py::_jsonable`` also nulls any).

LoRA (``config.use_lora``): SFTTrainer wraps the model with ``training/grpo/lora.py::
peft_config(config)``; before saving, the adapter is merged into the weights (``merge_and_unload``)
so the saved directory loads with ``AutoModelForCausalLM.from_pretrained`` and needs no peft.
(The merge needs whole weights on each process: fine under the shipped DDP configs, not under
FSDP or DeepSpeed ZeRO-3.)

Distributed: SFTTrainer is Accelerate-aware, so under ``accelerate launch`` every process calls
``sft_warmup`` with the same conversations; each trains on its shard and the main process writes
the saved directory.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import PrinterCallback, TrainerCallback

from training.policies.local_hf import to_template_messages

log = logging.getLogger(__name__)

GENERATION_MARKERS = "generation_markers"
PREFIX_RENDER = "prefix_render"


def sft_conversations(trajectories: list[Any]) -> list[dict[str, Any]]:
    """Conversations ({"messages", "tools"}) of trajectories that ended with an answer."""
    return [
        {"messages": t.messages, "tools": t.tools}
        for t in trajectories
        if t.finished_reason == "answer" and t.messages
    ]


# --- which tokens are trained -------------------------------------------------------------


def training_chat_template(tokenizer: Any) -> str | None:
    """The chat template whose ``{% generation %}`` markers mark the assistant's tokens: the
    tokenizer's own when it has them, else TRL's training variant of it; None when TRL does
    not know the template (then ``prefix_render`` masking applies)."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise ValueError("the tokenizer has no chat template: SFT renders conversations with it")
    if has_generation_markers(template):
        return template
    try:
        return get_training_chat_template(tokenizer) or template
    except ValueError:
        return None


def encode_with_template(
    tokenizer: Any, messages: list[dict], tools: list[dict], template: str
) -> tuple[list[int], list[int]]:
    """(input_ids, assistant_masks) of a conversation rendered with a template that has
    generation markers: the call SFTTrainer makes for a conversational example."""
    encoded = tokenizer.apply_chat_template(
        messages,
        tools=tools,
        chat_template=template,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    return list(encoded["input_ids"]), list(encoded["assistant_masks"])


def encode_by_prefixes(
    tokenizer: Any, messages: list[dict], tools: list[dict]
) -> tuple[list[int], list[int]]:
    """(input_ids, assistant_masks) with the model's own template, each assistant turn's span
    found by rendering the prefixes before and after it. Raises ValueError when the template
    is not prefix-preserving on this conversation (the spans would be wrong)."""

    def render(upto: int, generation_prompt: bool) -> str:
        return tokenizer.apply_chat_template(
            messages[:upto],
            tools=tools or None,
            tokenize=False,
            add_generation_prompt=generation_prompt,
        )

    full = render(len(messages), False)
    spans = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before, through = render(index, True), render(index + 1, False)
        if not (full.startswith(before) and full.startswith(through)) or len(before) > len(through):
            raise ValueError(
                "the chat template is not prefix-preserving (an earlier turn renders differently "
                "once later turns follow), so the assistant's tokens cannot be found exactly; "
                "TRL has no training variant of it either: give the tokenizer a chat template "
                "with {% generation %} markers"
            )
        spans.append((len(before), len(through)))
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("prefix-render masking needs a fast tokenizer (offset mapping)")
    encoded = tokenizer(full, return_offsets_mapping=True, add_special_tokens=False)
    masks = [
        int(any(start <= char_start < end for start, end in spans))
        for char_start, _char_end in encoded["offset_mapping"]
    ]
    return list(encoded["input_ids"]), masks


def fit_conversation(
    messages: list[dict], max_length: int, length: Any
) -> tuple[list[dict] | None, bool]:
    """(messages, truncated): the whole conversation when it fits ``max_length`` tokens, else
    the prefix through its last assistant turn that fits (system prompt and instruction
    included), else None. ``length(messages)`` counts tokens."""
    ends = [i + 1 for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not ends:
        return None, False
    if length(messages) <= max_length:
        return messages, False
    kept = None
    for end in ends:  # token counts grow with the prefix: stop at the first that overflows
        if length(messages[:end]) > max_length:
            break
        kept = end
    if kept is None:
        return None, False
    return messages[:kept], True


# --- the dataset --------------------------------------------------------------------------


def sft_dataset(
    tokenizer: Any, conversations: list[dict[str, Any]], max_length: int
) -> tuple[Any, dict[str, Any]]:
    """(Dataset or None, info): the conversations that fit, as ``{"messages", "tools"}`` rows
    (format "messages") or as ``{"input_ids", "assistant_masks"}`` rows (format "tokens"); info
    holds masking, format, examples, truncated, dropped."""
    from datasets import Dataset, Features, Json, List

    template = training_chat_template(tokenizer)
    masking = GENERATION_MARKERS if template is not None else PREFIX_RENDER

    def encode(messages: list[dict], tools: list[dict]) -> tuple[list[int], list[int]]:
        if template is not None:
            return encode_with_template(tokenizer, messages, tools, template)
        return encode_by_prefixes(tokenizer, messages, tools)

    rows: list[dict[str, Any]] = []
    truncated = dropped = 0
    for conversation in conversations:
        messages = to_template_messages(conversation["messages"])
        tools = list(conversation.get("tools") or [])
        kept, was_cut = fit_conversation(
            messages, max_length, lambda m, tools=tools: len(encode(m, tools)[0])
        )
        if kept is None:
            dropped += 1
            continue
        truncated += was_cut
        rows.append({"messages": kept, "tools": tools})
    info: dict[str, Any] = {
        "masking": masking,
        "format": "messages",
        "examples": len(rows),
        "truncated": truncated,
        "dropped": dropped,
    }
    if dropped:
        log.warning(
            "SFT: %d conversation(s) dropped (no assistant turn fits %d tokens)",
            dropped,
            max_length,
        )
    if not rows:
        return None, info
    if masking == GENERATION_MARKERS:
        features = Features({"messages": List(Json()), "tools": List(Json())})
        dataset = Dataset.from_list(rows, features=features)
        if all(stored == row for stored, row in zip(dataset, rows, strict=True)):
            return dataset, info
        log.warning("SFT: a conversation does not survive Json() storage exactly; pre-tokenizing")
    encoded = [encode(row["messages"], row["tools"]) for row in rows]
    info["format"] = "tokens"
    dataset = Dataset.from_dict(
        {"input_ids": [ids for ids, _ in encoded], "assistant_masks": [m for _, m in encoded]}
    )
    return dataset, info


# --- training ---------------------------------------------------------------------------


def sft_config(config: Any, output_dir: str | Path, assistant_only_loss: bool) -> Any:
    """The TRL SFTConfig of a run's warm-up (fields of ``TrainingConfig``)."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir),
        num_train_epochs=config.sft_epochs,
        learning_rate=config.sft_learning_rate,
        per_device_train_batch_size=config.sft_batch_size,
        gradient_accumulation_steps=config.sft_gradient_accumulation_steps,
        max_length=config.sft_max_length,  # conversations are fitted before: a safety net
        assistant_only_loss=assistant_only_loss,
        weight_decay=0.0,
        max_grad_norm=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=config.seed,
        use_cpu=config.use_cpu,
        bf16=config.bf16,
        gradient_checkpointing=config.gradient_checkpointing,
        disable_tqdm=True,
    )


class SkipNonFiniteSteps(TrainerCallback):
    """Drops the gradients of a step that has a NaN or infinite one, so the optimizer leaves
    every weight as it was, and counts such steps (``skipped``)."""

    def __init__(self) -> None:
        self.skipped = 0

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        import torch

        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if grads and not bool(torch.stack([torch.isfinite(g).all() for g in grads]).all()):
            for parameter in model.parameters():
                parameter.grad = None
            self.skipped += 1


class SFTProgress(TrainerCallback):
    """Reports every SFT log (step, total steps, loss) to ``hook``: long warm-ups show their
    progress and loss curve while they run, not only when they end."""

    def __init__(self, hook: Callable[[int, dict[str, Any]], None]) -> None:
        self.hook = hook

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = _finite((logs or {}).get("loss"))
        if loss is not None:
            self.hook(
                state.global_step,
                {"phase": "sft_step", "loss": loss, "steps_total": state.max_steps},
            )


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def sft_trainer(
    model: Any,
    tokenizer: Any,
    conversations: list[dict[str, Any]],
    config: Any,
    output_dir: str | Path,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """(SFTTrainer or None when no conversation fits, dataset info). ``model`` is a
    PreTrainedModel (trained in place) or a model directory; ``on_step`` hears every log."""
    from training.grpo.lora import peft_config

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import SFTTrainer

    dataset, info = sft_dataset(tokenizer, conversations, config.sft_max_length)
    if dataset is None:
        return None, info
    args = sft_config(config, output_dir, info["format"] == "messages")
    if isinstance(model, str | Path):
        model = str(model)  # SFTTrainer loads it (float32, placed on the training device)
        if config.use_cpu:
            args.model_init_kwargs = {"device_map": None}
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config(config),
        callbacks=[SkipNonFiniteSteps(), *([SFTProgress(on_step)] if on_step else [])],
    )
    if on_step:  # the hook reports each step; the trainer's own printed log dicts would repeat it
        trainer.remove_callback(PrinterCallback)
    return trainer, info


def sft_warmup(
    model: Any,
    tokenizer: Any,
    conversations: list[dict[str, Any]],
    config: Any,
    output_dir: str | Path,
    save_dir: str | Path | None = None,
    on_step: Callable[[int, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` (a PreTrainedModel, trained in place, or a model directory) on the
    conversations with SFTTrainer; when ``save_dir`` is given the trained model (LoRA merged)
    and tokenizer are saved there, by the main process. Returns {"steps", "loss_first",
    "loss_last", "seconds", "tokens_per_s", "examples", "truncated", "dropped",
    "skipped_steps", "masking", "format", "lora"} with no NaN."""
    from accelerate import PartialState

    from training.grpo.lora import merged

    trainer, info = sft_trainer(model, tokenizer, conversations, config, output_dir, on_step)
    summary: dict[str, Any] = {
        "steps": 0,
        "loss_first": None,
        "loss_last": None,
        "seconds": 0.0,
        "tokens_per_s": None,
        "skipped_steps": 0,
        **info,
        "lora": bool(config.use_lora),
    }
    main = PartialState().is_main_process
    if trainer is None:  # nothing to learn: the saved model is the one given
        if save_dir is not None and main:
            if isinstance(model, str | Path):
                shutil.copytree(model, save_dir, dirs_exist_ok=True)
            else:
                model.save_pretrained(save_dir)
                tokenizer.save_pretrained(save_dir)
        return summary

    guard = next(c for c in trainer.callback_handler.callbacks if isinstance(c, SkipNonFiniteSteps))
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    history = trainer.state.log_history
    losses = [_finite(h["loss"]) for h in history if "loss" in h]
    losses = [loss for loss in losses if loss is not None]
    tokens = max((h.get("num_tokens", 0) for h in history), default=0)
    summary.update(
        steps=trainer.state.global_step,
        loss_first=losses[0] if losses else None,
        loss_last=losses[-1] if losses else None,
        seconds=round(seconds, 3),
        tokens_per_s=_finite(round(tokens / seconds, 1)) if seconds and tokens else None,
        skipped_steps=guard.skipped,
    )
    trained = merged(trainer.model)  # LoRA: the adapter folded into the weights
    trained.eval()
    trained.config.use_cache = True  # Trainer turned the KV cache off; generation wants it
    if save_dir is not None:
        if config.use_lora:
            if main:
                trained.save_pretrained(save_dir)
                tokenizer.save_pretrained(save_dir)
        else:
            trainer.save_model(str(save_dir))  # every process calls it; the main one writes
    trainer.accelerator.free_memory()  # the next phase (GRPO) gets the memory back
    return summary
