"""Build a small Qwen2 policy from scratch, with no download: random weights and a BPE
tokenizer trained in-process on text drawn from our own environments and tasks.

The result is saved with ``save_pretrained`` and loaded back through the ordinary
``AutoModelForCausalLM`` / ``AutoTokenizer`` path, so tests and CPU training exercise exactly the
code a real checkpoint would go through. The chat template is TRL's copy of the Qwen 2.5
template (tools in the system prompt, ``<tool_call>`` JSON out), so TRL recognises it and can
parse tool calls during GRPO.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

IM_START, IM_END, END_OF_TEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# Fixed text the model sees in every conversation, so the tokenizer learns it as few tokens.
_PROTOCOL_TEXT = [
    "You may call one or more functions to assist with the user query.",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "For each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>",
    "You are an agent acting in a tool environment. Call tools to gather what you need, then "
    "reply with the final answer and no tool call.",
    '{"type": "function", "function": {"name": "", "description": "", "parameters": '
    '{"type": "object", "properties": {}, "required": []}}}',
    "system user assistant tool error result answer true false null",
]


def qwen_chat_template() -> str:
    """The Qwen 2.5 chat template as shipped with TRL (recognised by its response parser)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def corpus_from_environments(
    manifests: Iterable[dict[str, Any]] = (), tasks: Iterable[Any] = ()
) -> list[str]:
    """Tokenizer training text: tool schemas, names, task instructions, gold calls, answers."""
    texts = list(_PROTOCOL_TEXT)
    for manifest in manifests:
        texts.append(json.dumps(manifest.get("tools", []), ensure_ascii=False))
        texts.append(f"{manifest.get('name', '')} {manifest.get('description', '')}")
        for tool in manifest.get("tools", []):
            function = tool.get("function", {})
            texts.append(f"{function.get('name', '')}: {function.get('description', '')}")
    for task in tasks:
        data = task if isinstance(task, dict) else task.to_dict()
        texts.append(str(data.get("instruction", "")))
        for call in data.get("gold_chain") or []:
            body = {"name": call.get("tool"), "arguments": call.get("arguments", {})}
            texts.append(f"<tool_call>\n{json.dumps(body, ensure_ascii=False)}\n</tool_call>")
            if "result" in call:
                texts.append(json.dumps(call["result"], ensure_ascii=False, default=str))
        texts.append(json.dumps(data.get("reference_answer"), ensure_ascii=False, default=str))
    return texts


def train_tokenizer(texts: list[str], vocab_size: int = 2048) -> Any:
    """A byte-level BPE tokenizer (any text encodes) wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[END_OF_TEXT, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # Repeat the short protocol text so its merges survive on a small corpus.
    core.train_from_iterator(texts + _PROTOCOL_TEXT * 20, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=IM_END,
        pad_token=END_OF_TEXT,
        padding_side="left",
        model_max_length=32768,
    )
    tokenizer.add_tokens(TOOL_TOKENS)
    tokenizer.chat_template = qwen_chat_template()
    return tokenizer


def build_policy_dir(
    out_dir: str | Path,
    texts: list[str] | None = None,
    *,
    vocab_size: int = 2048,
    hidden_size: int = 64,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 4,
    num_key_value_heads: int = 2,
    intermediate_size: int | None = None,
    max_position_embeddings: int = 8192,
    seed: int = 0,
    architecture: str = "qwen2",
    head_dim: int | None = None,
    embedding_rows: int | None = None,
) -> Path:
    """Write a randomly initialised Qwen2 (or Qwen3: ``architecture="qwen3"``) causal LM and its
    tokenizer to ``out_dir``. ``embedding_rows`` pads the embedding to a real model's vocabulary
    size (the shape a GPU benchmark should measure) while the tokenizer stays small."""
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2Config,
        Qwen2ForCausalLM,
        Qwen3Config,
        Qwen3ForCausalLM,
    )

    families = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "qwen3": (Qwen3Config, Qwen3ForCausalLM)}
    if architecture not in families:
        raise ValueError(f"architecture must be one of {sorted(families)}")
    config_class, model_class = families[architecture]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(texts or list(_PROTOCOL_TEXT), vocab_size=vocab_size)
    extra = {"head_dim": head_dim} if head_dim else {}
    config = config_class(
        **extra,
        vocab_size=max(len(tokenizer), embedding_rows or 0),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or hidden_size * 2,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids(IM_START),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = model_class(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_tiny_policy(
    out_dir: str | Path,
    manifests: Iterable[dict[str, Any]] = (),
    tasks: Iterable[Any] = (),
    seed: int = 0,
) -> Path:
    """The CPU test policy: hidden 64, 2 layers, tokenizer trained on these environments."""
    return build_policy_dir(out_dir, corpus_from_environments(manifests, tasks), seed=seed)


def load_policy_dir(path: str | Path, device: str = "cpu") -> tuple[Any, Any]:
    """Load (model, tokenizer) the way any saved checkpoint is loaded."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path)).to(device)
    return model, tokenizer
