"""A local Hugging Face causal LM as a policy: chat template with tools in, ``<tool_call>`` out.

Many episodes call ``act`` at once from executor threads; a micro-batcher gathers the pending
requests (until the batch is full or ``batch_wait_ms`` passed) and runs one left-padded
``generate`` for all of them, each caller getting its own turn back. ``cached_policy`` keeps
one loaded model per checkpoint in the process, so a job that evaluates in chunks loads it once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aw_site.openai_chat import split_reasoning
from training.policies.base import Message, PolicyError, PolicyTurn, ToolSchema
from training.policies.tool_call_parser import parse_assistant_text

DEFAULT_BATCH_SIZE = 8
DEFAULT_BATCH_WAIT_MS = 5.0


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


def default_device() -> str:
    """``AW_POLICY_DEVICE``, else the GPU when there is one, else the CPU."""
    chosen = os.environ.get("AW_POLICY_DEVICE", "").strip()
    if chosen:
        return chosen
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not a number") from exc


@dataclass
class _Request:
    prompt_ids: list[int]
    output_ids: list[int] | None = None
    error: BaseException | None = None
    done: bool = False


class LocalHFPolicy:
    """Generates with a local model, batching the turns of concurrent episodes.

    One ``generate`` runs at a time (a model is not thread safe); the requests that arrive
    meanwhile form the next batch. ``batch_sizes`` counts the batches run, by size.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 256,
        temperature: float = 0.0,
        device: str | None = None,
        max_batch_size: int | None = None,
        batch_wait_ms: float | None = None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.device = device or str(next(model.parameters()).device)
        if max_batch_size is None:
            max_batch_size = int(_env_number("AW_POLICY_BATCH_SIZE", DEFAULT_BATCH_SIZE))
        if batch_wait_ms is None:
            batch_wait_ms = _env_number("AW_POLICY_BATCH_WAIT_MS", DEFAULT_BATCH_WAIT_MS)
        self.max_batch_size = max(1, max_batch_size)
        self.batch_wait = max(0.0, batch_wait_ms) / 1000
        self.batch_sizes: Counter[int] = Counter()
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._generating = False

    @classmethod
    def from_pretrained(
        cls, path: str | Path, device: str | None = None, **kwargs: Any
    ) -> LocalHFPolicy:
        """Load a saved model directory (a checkpoint or the tiny model)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or default_device()
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        load: dict[str, Any] = {"dtype": "auto"} if device.startswith("cuda") else {}
        model = AutoModelForCausalLM.from_pretrained(str(path), **load).to(device)
        model.eval()
        return cls(model, tokenizer, device=device, **kwargs)

    # --- one turn -------------------------------------------------------------------------

    def prompt_ids(self, messages: list[Message], tools: list[ToolSchema]) -> list[int]:
        try:
            ids = self.tokenizer.apply_chat_template(
                to_template_messages(messages),
                tools=tools or None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
        except Exception as exc:
            raise PolicyError(f"chat template failed: {exc}") from exc
        return list(ids)

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        prompt = self.prompt_ids(messages, tools)
        request = _Request(prompt)
        self._wait_for(request)
        if request.error is not None:
            raise PolicyError(f"generation failed: {request.error}") from request.error
        return self.turn(prompt, request.output_ids or [])

    def turn(self, prompt_ids: list[int], new_ids: list[int]) -> PolicyTurn:
        """The PolicyTurn of generated ids (reasoning kept apart from content and raw text)."""
        raw_text = self.tokenizer.decode(new_ids, skip_special_tokens=False)
        parsed = parse_assistant_text(raw_text)
        return PolicyTurn(
            content=parsed.content,
            tool_calls=parsed.tool_calls,
            raw_text=split_reasoning(raw_text).content if parsed.reasoning else raw_text,
            tokens_in=len(prompt_ids),
            tokens_out=len(new_ids),
            format_error=parsed.format_error,
            reasoning=parsed.reasoning,
        )

    # --- the micro-batcher ----------------------------------------------------------------

    def _wait_for(self, request: _Request) -> None:
        """Queue the request; whoever finds no batch running gathers and runs the next one."""
        with self._cond:
            self._pending.append(request)
            self._cond.notify_all()
            while not request.done:
                if self._generating:
                    self._cond.wait()
                    continue
                self._generating = True
                deadline = time.monotonic() + self.batch_wait
                while len(self._pending) < self.max_batch_size:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = self._pending[: self.max_batch_size]
                del self._pending[: self.max_batch_size]
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._generating = False
                    self._cond.notify_all()

    def _run(self, batch: list[_Request]) -> None:
        try:
            outputs = self.generate_batch([r.prompt_ids for r in batch])
        except BaseException as exc:  # every caller of the batch gets the failure
            for request in batch:
                request.error, request.done = exc, True
            if not isinstance(exc, Exception):
                raise
            return
        self.batch_sizes[len(batch)] += 1
        for request, output in zip(batch, outputs, strict=True):
            request.output_ids, request.done = output, True

    def _eos_ids(self) -> set[int]:
        eos = self.tokenizer.eos_token_id
        if eos is None:
            eos = getattr(self.model.generation_config, "eos_token_id", None)
        if eos is None:
            return set()
        return set(eos) if isinstance(eos, list | tuple) else {int(eos)}

    def generate_batch(self, prompts: list[list[int]]) -> list[list[int]]:
        """New token ids for each prompt, from one left-padded ``generate``; each row ends at
        its first end-of-sequence token (inclusive), as an unbatched generation would."""
        import torch

        eos_ids = self._eos_ids()
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = min(eos_ids) if eos_ids else 0
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        sampling: dict[str, Any] = {"do_sample": False}
        if self.temperature > 0:
            sampling = {"do_sample": True, "temperature": self.temperature}
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                max_new_tokens=self.max_new_tokens,
                pad_token_id=pad_id,
                eos_token_id=self.tokenizer.eos_token_id,
                **sampling,
            )
        results = []
        for row in output[:, width:].tolist():
            cut = next((i + 1 for i, token in enumerate(row) if token in eos_ids), len(row))
            results.append(row[:cut])
        return results


# --- one loaded model per checkpoint --------------------------------------------------------

_CACHE: OrderedDict[tuple[Any, ...], LocalHFPolicy] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _fingerprint(path: Path) -> tuple[Any, ...]:
    """What changes when the directory's weights are rewritten (a retried run reuses it)."""
    entries = []
    for entry in sorted(path.iterdir()):
        if entry.is_file():
            stat = entry.stat()
            entries.append((entry.name, stat.st_size, stat.st_mtime_ns))
    return tuple(entries)


def cached_policy(
    path: str | Path,
    device: str | None = None,
    max_new_tokens: int = 256,
    temperature: float = 0.0,
) -> LocalHFPolicy:
    """The policy of a checkpoint directory, loaded once per process while its files stay the
    same; at most ``AW_POLICY_CACHE_SIZE`` (default 1) models stay loaded."""
    directory = Path(path).resolve()
    device = device or default_device()
    key = (str(directory), device, max_new_tokens, temperature, _fingerprint(directory))
    with _CACHE_LOCK:
        policy = _CACHE.get(key)
        if policy is not None:
            _CACHE.move_to_end(key)
            return policy
        policy = LocalHFPolicy.from_pretrained(
            directory, device=device, max_new_tokens=max_new_tokens, temperature=temperature
        )
        _CACHE[key] = policy
        limit = max(1, int(_env_number("AW_POLICY_CACHE_SIZE", 1)))
        while len(_CACHE) > limit:
            _CACHE.popitem(last=False)
        return policy


def release_cached_policies() -> None:
    """Drop every cached model (before training, so its memory goes to the trainer)."""
    with _CACHE_LOCK:
        _CACHE.clear()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
