"""A programmatic task's verification script, run on an episode's state in the sandbox."""

from __future__ import annotations

import json
from typing import Any


def verification_program(verification: str, answer: Any) -> str:
    """The verification script plus an entry that feeds it the answer to check."""
    return (
        f"{verification}\n\n\ndef __check__(call):\n"
        "    import json as _json\n\n"
        f"    return bool(verify(_json.loads({json.dumps(answer)!r}), call))\n"
    )


def run_verification(
    episode: Any, verification: str, answer: Any, recycle: bool | None = None
) -> dict[str, Any]:
    """Run ``verify(answer, call)`` on the episode's current state: {"passed", "error"}.
    ``recycle=False`` only where both the script and the answer are this project's own (the
    verifier audit of a template task); an agent's answer keeps the pool's setting."""
    if recycle is None:
        check = episode.run_program(verification_program(verification, answer), "__check__")
    else:
        check = episode.run_program(
            verification_program(verification, answer), "__check__", recycle=recycle
        )
    if not check.ok:
        return {"passed": False, "error": f"{check.error_kind}: {check.error}"[:300]}
    return {"passed": check.value is True, "error": None}
