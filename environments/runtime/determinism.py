"""A frozen clock and seeded randomness for tool code that stamps the time and makes ids.

Released tools call `datetime.utcnow()`, `time.time()`, `uuid.uuid4()` and `random` inside the
call. Replay, the verifier audit and the reward need the same calls to give the same results
and the same final state, so while `FrozenWorld.active(epoch, seed)` is entered:

- the clock reads `epoch` (fixed per environment version): `time.time`, `time.time_ns`,
  `time.gmtime/localtime/ctime/asctime/strftime` without a time, `datetime.datetime.now/
  utcnow/today`, `datetime.date.today`; `time.monotonic`/`perf_counter` stand still and
  `time.sleep` returns at once (a frozen clock cannot advance);
- randomness comes from `random.Random(seed)`: the `random` module's functions, `os.urandom`,
  `uuid.uuid4`, `uuid.uuid1`, and SystemRandom and `secrets` through random's urandom.

The worker enters it per call with a seed made of the environment's seed and the number of
successful calls so far, so a failed call (rolled back) changes nothing later calls see, and a
replay of the journal on a fresh worker gives the same ids. Everything is restored on exit; the
worker's own timers use time.monotonic outside the block.

Standard library only: it runs inside the sandbox worker.
"""

from __future__ import annotations

import datetime as _datetime
import os as _os
import random as _random
import time as _time
import uuid as _uuid
from collections.abc import Iterator
from contextlib import contextmanager

_REAL_DATETIME = _datetime.datetime
_REAL_DATE = _datetime.date
_UUID_EPOCH_OFFSET = 0x01B21DD213814000  # 100-ns intervals from 1582-10-15 to 1970-01-01


class _Frozen:
    """What the patched functions read: the epoch of the block being run."""

    epoch = 0.0


class FrozenDateTime(_REAL_DATETIME):
    """datetime.datetime whose now/utcnow/today read the frozen epoch (naive = UTC)."""

    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        if tz is None:
            return cls.utcfromtimestamp(_Frozen.epoch)
        return cls.fromtimestamp(_Frozen.epoch, tz)

    @classmethod
    def utcnow(cls):  # type: ignore[override]
        return cls.utcfromtimestamp(_Frozen.epoch)

    @classmethod
    def today(cls):  # type: ignore[override]
        return cls.utcfromtimestamp(_Frozen.epoch)


class FrozenDate(_REAL_DATE):
    @classmethod
    def today(cls):  # type: ignore[override]
        day = _REAL_DATETIME.utcfromtimestamp(_Frozen.epoch)
        return cls(day.year, day.month, day.day)


class FrozenWorld:
    """Patches the clock and randomness for the duration of `active` (not re-entrant)."""

    def __init__(self) -> None:
        self._real_time = {
            name: getattr(_time, name)
            for name in (
                "time",
                "time_ns",
                "gmtime",
                "localtime",
                "ctime",
                "asctime",
                "strftime",
                "monotonic",
                "monotonic_ns",
                "perf_counter",
                "perf_counter_ns",
                "sleep",
            )
        }
        self._random_names = [
            name
            for name in dir(_random)
            if getattr(getattr(_random, name), "__self__", None) is _random._inst
        ]

    @contextmanager
    def active(self, epoch: float, seed: str) -> Iterator[_random.Random]:
        """Run the block under the frozen clock `epoch` (seconds) and randomness from `seed`."""
        rng = _random.Random(seed)
        saved_random = {name: getattr(_random, name) for name in self._random_names}
        saved = (
            _datetime.datetime,
            _datetime.date,
            _os.urandom,
            _random._urandom,  # what SystemRandom (and so `secrets`) reads
            _uuid.uuid4,
            _uuid.uuid1,
        )
        _Frozen.epoch = float(epoch)
        try:
            self._patch_time(float(epoch))
            for name in self._random_names:
                setattr(_random, name, getattr(rng, name))
            _datetime.datetime = FrozenDateTime
            _datetime.date = FrozenDate
            _os.urandom = rng.randbytes
            _random._urandom = rng.randbytes
            _uuid.uuid4 = lambda: _uuid.UUID(bytes=rng.randbytes(16), version=4)
            _uuid.uuid1 = lambda node=None, clock_seq=None: _uuid1(rng, epoch, node, clock_seq)
            yield rng
        finally:
            for name, function in self._real_time.items():
                setattr(_time, name, function)
            for name, function in saved_random.items():
                setattr(_random, name, function)
            (
                _datetime.datetime,
                _datetime.date,
                _os.urandom,
                _random._urandom,
                _uuid.uuid4,
                _uuid.uuid1,
            ) = saved

    def _patch_time(self, epoch: float) -> None:
        real = self._real_time
        still = 0.0

        def at(seconds: float | None) -> float:
            return epoch if seconds is None else seconds

        _time.time = lambda: epoch
        _time.time_ns = lambda: int(epoch * 1_000_000_000)
        _time.gmtime = lambda seconds=None: real["gmtime"](at(seconds))
        _time.localtime = lambda seconds=None: real["gmtime"](at(seconds))  # the worker is UTC
        _time.ctime = lambda seconds=None: real["ctime"](at(seconds))
        _time.asctime = lambda t=None: real["asctime"](real["gmtime"](epoch) if t is None else t)
        _time.strftime = lambda fmt, t=None: real["strftime"](
            fmt, real["gmtime"](epoch) if t is None else t
        )
        _time.monotonic = lambda: still
        _time.monotonic_ns = lambda: 0
        _time.perf_counter = lambda: still
        _time.perf_counter_ns = lambda: 0
        _time.sleep = lambda seconds: None


def _uuid1(
    rng: _random.Random, epoch: float, node: int | None, clock_seq: int | None
) -> _uuid.UUID:
    """A version-1 uuid from the frozen clock and the seeded generator (no host node, no
    process-wide last-timestamp state)."""
    timestamp = int(epoch * 10_000_000) + _UUID_EPOCH_OFFSET
    clock_seq = rng.getrandbits(14) if clock_seq is None else clock_seq
    node = rng.getrandbits(48) | (1 << 40) if node is None else node
    return _uuid.UUID(
        fields=(
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            (timestamp >> 48) & 0x0FFF,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        ),
        version=1,
    )
