"""Episodes for synthesis: reuse one while the state is untouched, start fresh after a write."""

from __future__ import annotations

from typing import Any


class EpisodeLease:
    """Hands out an episode whose state equals the package's initial state.

    Read-only walks share one episode (cheap); once a write succeeds the episode is dirty and
    the next ``clean()`` starts a fresh one.
    """

    def __init__(self, pool: Any, package: Any):
        self.pool = pool
        self.package = package
        self._episode = None
        self.dirty = False
        self.initial_hash: str | None = None

    def clean(self):
        if self._episode is None or self.dirty:
            self.close()
            self._episode = self.pool.start_episode(self.package)
            self.dirty = False
            if self.initial_hash is None:
                self.initial_hash = self._episode.state_hash()
        return self._episode

    def call(self, tool: str, arguments: dict[str, Any], kind: str):
        outcome = self.clean_or_current().call_tool(tool, arguments)
        if outcome.ok and kind == "write":
            self.dirty = True
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
