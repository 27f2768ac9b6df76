"""Episodes for synthesis: reuse one while the state is untouched, start fresh after a write."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tasks.synthesis.task_spec import canonical_json

# Reads answered from memory per synthesizer at most; a walk explores few distinct calls.
READ_CACHE_LIMIT = 50_000


class EpisodeLease:
    """Hands out an episode whose state equals the package's initial state.

    Read-only walks share one episode (cheap); once a write succeeds the episode is dirty and
    the next ``clean()`` starts a fresh one. A read on the initial state always returns the
    same thing, so its result is remembered: walks explore the same lookups again and again,
    and each repeat would otherwise cost a round trip into the sandbox worker.
    """

    def __init__(self, pool: Any, package: Any):
        self.pool = pool
        self.package = package
        self._episode = None
        self.dirty = False
        self.initial_hash: str | None = None
        self._initial_reads: dict[tuple[str, str], tuple[Any, str]] = {}
        self.cached_reads = 0

    def clean(self):
        if self._episode is None or self.dirty:
            self.close()
            self._episode = self.pool.start_episode(self.package)
            self.dirty = False
            if self.initial_hash is None:
                self.initial_hash = self._episode.state_hash()
        return self._episode

    def call(self, tool: str, arguments: dict[str, Any], kind: str):
        remembered = kind == "read" and not self.dirty
        key = (tool, canonical_json(arguments)) if remembered else None
        if key is not None and key in self._initial_reads:
            self.cached_reads += 1
            known, text = self._initial_reads[key]
            # A fresh copy per caller (walks annotate results); JSON is what the worker sent.
            return dataclasses.replace(known, arguments=dict(arguments), result=json.loads(text))
        outcome = self.clean_or_current().call_tool(tool, arguments)
        if outcome.ok and kind == "write":
            self.dirty = True
        if key is not None and outcome.ok and len(self._initial_reads) < READ_CACHE_LIMIT:
            self._initial_reads[key] = (outcome, json.dumps(outcome.result))
        return outcome

    def clean_or_current(self):
        return self._episode if self._episode is not None else self.clean()

    def fresh(self):
        """A brand-new episode the caller owns (and must close)."""
        return self.pool.start_episode(self.package)

    def close(self) -> None:
        if self._episode is not None:
            try:
                self._episode.close()
            finally:
                self._episode = None
