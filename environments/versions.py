"""Which version of an environment is current: a complexified version supersedes its parent.

Arena sampling, a round's training set and training runs that name no environments all take
the current versions only."""

from __future__ import annotations

from typing import Any

from environments.models import Environment


def current_versions(environments) -> list[Environment]:
    """The newest of each name: a complexified version supersedes its parent for sampling and
    training."""
    newest: dict[str, Environment] = {}
    for environment in environments:
        kept = newest.get(environment.name)
        if kept is None or environment.version > kept.version:
            newest[environment.name] = environment
    return sorted(newest.values(), key=lambda e: e.name)


def _verified(name: Any):
    """Verified versions of a name (a value, or an OuterRef in a subquery)."""
    return Environment.objects.filter(name=name, status=Environment.Status.VERIFIED)


def current_version(environment: Environment | None) -> Environment:
    if environment is None:
        raise ValueError("the proposal names no environment")
    return _verified(environment.name).order_by("-version").first() or environment


def successor(environment: Environment) -> Environment | None:
    """The newest verified version newer than ``environment``, if one supersedes it."""
    newer = _verified(environment.name).filter(version__gt=environment.version)
    return newer.order_by("-version").first()


def with_superseded(queryset):
    """Annotate ``superseded``: a newer verified version of the same name exists (sampling and
    training take that one instead). One EXISTS per row, no extra queries."""
    from django.db.models import Exists, OuterRef

    newer = _verified(OuterRef("name")).filter(version__gt=OuterRef("version"))
    return queryset.annotate(superseded=Exists(newer))
