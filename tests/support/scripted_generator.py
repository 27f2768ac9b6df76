"""A scripted stand-in for a model's generation, for the token-level agent loop and GRPO.

It reads the task from the prompt, replays the gold chain one call per turn, then answers,
right or (with probability ``wrong_rate``) wrong, so rewards vary within a GRPO group while the
model being trained still learns from these exact tokens.
"""

from __future__ import annotations

import random
from typing import Any

from tasks.agent_view import answer_text
from training.policies.tool_call_parser import render_tool_call


class ScriptedGenerator:
    def __init__(
        self, tokenizer: Any, tasks: list[Any], wrong_rate: float = 0.5, seed: int = 0
    ) -> None:
        self.tokenizer = tokenizer
        self.tasks = {t.instruction: t for t in tasks}
        self.wrong_rate = wrong_rate
        self.rng = random.Random(seed)
        self.batches: list[int] = []
        self.overrides: dict[str, list[str]] = {}  # instruction -> the turns to write instead

    def _task(self, text: str) -> Any:
        return next(t for instruction, t in self.tasks.items() if instruction in text)

    def turn_text(self, text: str) -> str:
        task = self._task(text)
        done = text.count("<tool_response>")
        script = self.overrides.get(task.instruction)
        if script is not None:
            return script[min(done, len(script) - 1)]
        if done < len(task.gold_chain):
            call = task.gold_chain[done]
            return render_tool_call(call["tool"], call["arguments"])
        if self.rng.random() < self.wrong_rate:
            return answer_text("certainly not this")
        return answer_text(task.reference_answer)

    def generate(self, sequences: list[list[int]]) -> list[tuple[list[int], None]]:
        self.batches.append(len(sequences))
        outputs = []
        for ids in sequences:
            text = self.tokenizer.decode(ids, skip_special_tokens=False)
            body = self.turn_text(text)
            new = self.tokenizer(body, add_special_tokens=False)["input_ids"]
            outputs.append((list(new) + [self.tokenizer.eos_token_id], None))
        return outputs

    def __call__(self, trainer: Any) -> ScriptedGenerator:
        """As a ``generator_factory``: write with the trained model's own tokenizer."""
        self.tokenizer = trainer.processing_class
        return self
