"""Live episodes for the HTTP episode API: one sandbox pool per server process, with limits.

External trainers create an episode (reset), call tools, read the diff and finish it (reward).
Episodes live in this process's memory, so the episode API is served by one long-lived process
(the web server in the embedded default; a dedicated `gunicorn --workers 1 --threads N` in a
deployment).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from environments.runtime import Episode, SandboxPool
from serving.episode_scoring import TaskRun


class EpisodeLimitReached(Exception):
    pass


class EpisodeNotFound(Exception):
    pass


@dataclass
class LiveEpisode:
    key: str
    episode: Episode
    owner_id: int
    environment_id: int
    task_id: int | None
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    calls: list[dict[str, Any]] = field(default_factory=list)
    run: TaskRun | None = None  # a task episode's run (its calls, submission)


class EpisodeService:
    """Creates, finds and closes live episodes under global and per-user limits."""

    IDLE_SECONDS = 1800

    def __init__(self, workers: int = 2):
        self._workers = workers
        self._pool: SandboxPool | None = None
        self._episodes: dict[str, LiveEpisode] = {}
        self._lock = threading.Lock()

    @property
    def pool(self) -> SandboxPool:
        with self._lock:
            if self._pool is None:
                self._pool = SandboxPool(workers=self._workers)
            return self._pool

    def create(
        self,
        package_path: str,
        owner_id: int,
        environment_id: int,
        task_id: int | None,
        task: Any = None,
    ) -> LiveEpisode:
        """A live episode; ``task`` (a TaskSpec) makes it a task episode with a TaskRun."""
        self.expire_idle()
        with self._lock:
            if len(self._episodes) >= settings.AW_MAX_EPISODES:
                raise EpisodeLimitReached(
                    f"the server holds its limit of {settings.AW_MAX_EPISODES} episodes"
                )
            mine = sum(1 for live in self._episodes.values() if live.owner_id == owner_id)
            if mine >= settings.AW_MAX_EPISODES_PER_USER:
                raise EpisodeLimitReached(
                    f"you hold {mine} open episodes, the per-user limit; finish some first"
                )
        episode = self.pool.start_episode(package_path)
        live = LiveEpisode(uuid.uuid4().hex, episode, owner_id, environment_id, task_id)
        if task is not None:
            live.run = TaskRun(task, calls=live.calls)
        with self._lock:
            self._episodes[live.key] = live
        return live

    def get(self, key: str, owner_id: int) -> LiveEpisode:
        with self._lock:
            live = self._episodes.get(key)
        if live is None or live.owner_id != owner_id:
            raise EpisodeNotFound(f"no open episode {key!r} of yours")
        live.last_used = time.monotonic()
        return live

    def close(self, key: str, owner_id: int) -> LiveEpisode:
        live = self.get(key, owner_id)
        with self._lock:
            self._episodes.pop(key, None)
        live.episode.close()
        return live

    def expire_idle(self) -> int:
        cutoff = time.monotonic() - self.IDLE_SECONDS
        with self._lock:
            stale = [key for key, live in self._episodes.items() if live.last_used < cutoff]
            dropped = [self._episodes.pop(key) for key in stale]
        for live in dropped:
            live.episode.close()
        return len(dropped)

    def count(self) -> int:
        with self._lock:
            return len(self._episodes)

    def shutdown(self) -> None:
        with self._lock:
            live_episodes = list(self._episodes.values())
            self._episodes.clear()
            pool, self._pool = self._pool, None
        for live in live_episodes:
            live.episode.close()
        if pool is not None:
            pool.close()


_service: EpisodeService | None = None
_service_lock = threading.Lock()


def episode_service() -> EpisodeService:
    global _service
    with _service_lock:
        if _service is None:
            _service = EpisodeService()
        return _service
