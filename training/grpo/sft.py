"""SFT warm-up: teach the policy the tool-calling format on gold trajectories.

A plain loop (no framework inside the framework): render each conversation with the chat
template, compute the loss on the assistant's tokens only, step AdamW. The assistant spans are
found by rendering the conversation's prefixes, which is exact for a prefix-preserving template.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from training.policies.local_hf import to_template_messages

IGNORE_INDEX = -100


@dataclass
class SFTExample:
    input_ids: list[int]
    labels: list[int]


def sft_conversations(trajectories: list[Any]) -> list[dict[str, Any]]:
    """Conversations ({"messages", "tools"}) of trajectories that ended with an answer."""
    return [
        {"messages": t.messages, "tools": t.tools}
        for t in trajectories
        if t.finished_reason == "answer" and t.messages
    ]


def tokenize_conversation(tokenizer: Any, messages: list[dict], tools: list[dict]) -> SFTExample:
    """Token ids of the whole conversation, labels only on the assistant's own tokens."""
    messages = to_template_messages(messages)

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
        start = len(render(index, True))
        end = len(render(index + 1, False))
        spans.append((start, end))
    encoded = tokenizer(full, return_offsets_mapping=True, add_special_tokens=False)
    labels = []
    for token_id, (char_start, _char_end) in zip(
        encoded["input_ids"], encoded["offset_mapping"], strict=True
    ):
        inside = any(start <= char_start < end for start, end in spans)
        labels.append(token_id if inside else IGNORE_INDEX)
    return SFTExample(list(encoded["input_ids"]), labels)


def sft_warmup(
    model: Any,
    tokenizer: Any,
    conversations: list[dict[str, Any]],
    epochs: int = 10,
    learning_rate: float = 3e-3,
    batch_size: int = 8,
    seed: int = 0,
    max_length: int = 4096,
) -> dict[str, Any]:
    """Train in place; returns {"steps", "loss_first", "loss_last", "seconds", "tokens_per_s",
    "examples", "truncated", "dropped", "skipped_steps"}."""
    import torch

    examples = [tokenize_conversation(tokenizer, c["messages"], c["tools"]) for c in conversations]
    truncated = sum(len(e.input_ids) > max_length for e in examples)
    examples = [fit_to_length(e, max_length) for e in examples]
    usable = [e for e in examples if any(label != IGNORE_INDEX for label in e.labels)]
    counts = {
        "examples": len(usable),
        "truncated": truncated,
        "dropped": len(examples) - len(usable),
    }
    if not usable:
        return {"steps": 0, "loss_first": None, "loss_last": None, "seconds": 0.0, **counts}
    examples = usable
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    rng = random.Random(seed)
    model.train()
    losses: list[float] = []
    tokens = skipped = 0
    started = time.perf_counter()
    for _epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for batch_start in range(0, len(order), batch_size):
            batch = [examples[i] for i in order[batch_start : batch_start + batch_size]]
            width = max(len(e.input_ids) for e in batch)
            pad = tokenizer.pad_token_id
            input_ids = torch.tensor(
                [e.input_ids + [pad] * (width - len(e.input_ids)) for e in batch], device=device
            )
            labels = torch.tensor(
                [e.labels + [IGNORE_INDEX] * (width - len(e.labels)) for e in batch], device=device
            )
            attention = torch.tensor(
                [[1] * len(e.input_ids) + [0] * (width - len(e.input_ids)) for e in batch],
                device=device,
            )
            loss = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss
            if not torch.isfinite(loss):
                skipped += 1  # a step on a NaN or infinite loss would ruin every weight
                continue
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(float(loss.detach()))
            tokens += int(attention.sum())
    model.eval()
    seconds = time.perf_counter() - started
    return {
        "steps": len(losses),
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
        "skipped_steps": skipped,
        **counts,
    }


def fit_to_length(example: SFTExample, max_length: int) -> SFTExample:
    """At most `max_length` tokens, keeping the end: the assistant's turns (the targets) come
    last, while a long tool list at the start of the system prompt is what overflows."""
    if len(example.input_ids) <= max_length:
        return example
    return SFTExample(example.input_ids[-max_length:], example.labels[-max_length:])
