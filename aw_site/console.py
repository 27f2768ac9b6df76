"""Console guards every app's pages use, and the paging and poll settings they share.

Reading any console page needs a signed-in user with at least the viewer role; actions that
change something (approve, start a round) are POST-only and need the reviewer role, so a forged
POST from a viewer is refused with 403 whatever the page showed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.views.decorators.http import require_GET, require_POST

from aw_site.roles import REVIEWER, VIEWER, role_required

JOB_POLL = "every 1s"  # how often a page showing a running job asks for its progress


def console_page(view: Callable) -> Callable:
    """A read-only console page: signed in, viewer role or above, GET only."""
    return login_required(role_required(VIEWER)(require_GET(view)))


def console_action(needed: str = REVIEWER) -> Callable:
    """A state-changing console action: signed in, POST only, the given role or above."""

    def decorate(view: Callable) -> Callable:
        return login_required(require_POST(role_required(needed)(view)))

    return decorate


def page_of(request, items, per_page: int):
    """The requested page of a queryset or list (out-of-range pages give the last page)."""
    return Paginator(items, per_page).get_page(request.GET.get("page"))


def pretty_json(value: Any, sort_keys: bool = False) -> str:
    """Indented JSON for a page's raw-data block; empty values show nothing."""
    if value in (None, "", {}, []):
        return ""
    return json.dumps(value, indent=2, sort_keys=sort_keys, ensure_ascii=False, default=str)


def whole_number(value: str | None) -> int | None:
    """A query or form value read as an integer id or number; None when it is not one."""
    try:
        return int(value or "")
    except ValueError:
        return None
