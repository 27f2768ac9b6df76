"""A stand-in for the JobContext a round's steps receive, for calling a step directly."""

from __future__ import annotations


class QuietJobContext:
    """The slice of a JobContext the round steps use (evaluate, diagnose, expand), saying
    nothing and saving nothing: the step under test runs as the job would run it."""

    job = None
    saved: dict = {}

    def progress(self, fraction: float, message: str = "") -> None:
        return None

    def checkpoint(self, **values) -> None:
        return None

    def log(self, line: str) -> None:
        return None
