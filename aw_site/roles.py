"""Roles: viewer < reviewer < admin, held as Django groups.

Viewers read everything; reviewers also start work and approve or reject expansions; admins
also retire environments and manage users. Superusers count as admins.
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

VIEWER, REVIEWER, ADMIN = "viewer", "reviewer", "admin"
ROLE_ORDER = (VIEWER, REVIEWER, ADMIN)


def ensure_role_groups() -> None:
    for name in ROLE_ORDER:
        Group.objects.get_or_create(name=name)


def role_of(user: Any) -> str | None:
    """The highest role a user holds, or None."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return None
    if user.is_superuser:
        return ADMIN
    cached = getattr(user, "_aw_role", "unset")
    if cached != "unset":
        return cached
    names = set(user.groups.values_list("name", flat=True))
    role = next((r for r in reversed(ROLE_ORDER) if r in names), None)
    user._aw_role = role
    return role


def has_role(user: Any, needed: str) -> bool:
    role = role_of(user)
    return role is not None and ROLE_ORDER.index(role) >= ROLE_ORDER.index(needed)


def grant_role(user: Any, role: str) -> None:
    if role not in ROLE_ORDER:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLE_ORDER)}")
    ensure_role_groups()
    user.groups.set([Group.objects.get(name=role)])
    if hasattr(user, "_aw_role"):
        del user._aw_role


def role_required(needed: str):
    """View decorator: login is checked by the caller's login_required; the role here."""

    def decorate(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if not has_role(request.user, needed):
                raise PermissionDenied(f"this action needs the {needed} role")
            return view(request, *args, **kwargs)

        return guarded

    return decorate


def role_context(request) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {
        "aw_role": role_of(user),
        "can_review": has_role(user, REVIEWER),
        "can_admin": has_role(user, ADMIN),
    }


class _RolePermission(BasePermission):
    read_role = VIEWER
    write_role = REVIEWER

    def has_permission(self, request, view) -> bool:
        needed = self.read_role if request.method in SAFE_METHODS else self.write_role
        needed = getattr(view, "required_roles", {}).get(getattr(view, "action", None), needed)
        allowed = has_role(request.user, needed)
        if not allowed and request.user.is_authenticated:
            self.message = f"this action needs the {needed} role"
        return allowed


class HasViewerRole(_RolePermission):
    """Default: viewers read; writes need a reviewer; per-action overrides via required_roles."""


class HasReviewerRole(_RolePermission):
    read_role = REVIEWER


class HasAdminRole(_RolePermission):
    read_role = ADMIN
    write_role = ADMIN
