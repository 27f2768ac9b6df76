"""A local Hugging Face causal LM as a policy: chat template with tools in, ``<tool_call>`` out."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from training.policies.base import Message, PolicyError, PolicyTurn, ToolSchema
from training.policies.tool_call_parser import parse_assistant_text


def to_template_messages(messages: list[Message]) -> list[Message]:
    """OpenAI messages -> what HF chat templates expect (tool call arguments as dicts)."""
    converted = []
    for message in messages:
        message = dict(message)
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call.get("function", call))
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    try:
                        function["arguments"] = json.loads(arguments)
                    except json.JSONDecodeError:
                        function["arguments"] = {}
                calls.append({"type": "function", "function": function})
            message["tool_calls"] = calls
        if message.get("content") is None:
            message["content"] = ""
        converted.append(message)
    return converted


class LocalHFPolicy:
    """Generates with a local model; one generation at a time (a model is not thread safe)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        device: str | None = None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.device = device or str(next(model.parameters()).device)
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str = "cpu", **kwargs: Any) -> LocalHFPolicy:
        """Load a saved model directory (a checkpoint or the tiny model)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_pretrained(str(path)).to(device)
        model.eval()
        return cls(model, tokenizer, device=device, **kwargs)

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        import torch

        try:
            prompt_ids = self.tokenizer.apply_chat_template(
                to_template_messages(messages),
                tools=tools or None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
        except Exception as exc:
            raise PolicyError(f"chat template failed: {exc}") from exc
        input_ids = torch.tensor([list(prompt_ids)], device=self.device)
        sampling = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature}
        with self._lock, torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=self.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.tokenizer.eos_token_id,
                **sampling,
            )
        new_ids = output[0, input_ids.shape[1] :].tolist()
        raw_text = self.tokenizer.decode(new_ids, skip_special_tokens=False)
        parsed = parse_assistant_text(raw_text)
        return PolicyTurn(
            content=parsed.content,
            tool_calls=parsed.tool_calls,
            raw_text=raw_text,
            tokens_in=input_ids.shape[1],
            tokens_out=len(new_ids),
            format_error=parsed.format_error,
        )
