"""The tabs of the environment page: environments' own, and those the apps above it register.

environments sits below tasks, so a tab that reads tasks (the task table, the tool graph that
tasks.synthesis builds) cannot live here: its app registers it when it loads
(``TasksConfig.ready``), and the page (environments/views.py) renders whatever is registered,
in ``position`` order, without importing the app that registered it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.http import HttpRequest

    from environments.models import Environment

# (request, environment) -> what the tab's template needs, added to the page context.
TabContext = Callable[["HttpRequest", "Environment"], dict[str, Any]]


@dataclass(frozen=True)
class PageTab:
    name: str  # the URL slug (?tab=NAME, /environments/<pk>/tabs/NAME/)
    label: str  # the text of the tab
    context: TabContext
    template: str  # included in the tab panel
    position: int  # tabs are shown in ascending position


_TABS: dict[str, PageTab] = {}


def register_tab(
    name: str, label: str, context: TabContext, template: str, *, position: int
) -> PageTab:
    """Add a tab to the environment page (registering a name again replaces it)."""
    tab = PageTab(name=name, label=label, context=context, template=template, position=position)
    _TABS[name] = tab
    return tab


def page_tabs() -> list[PageTab]:
    """The registered tabs in the order they are shown."""
    return sorted(_TABS.values(), key=lambda tab: (tab.position, tab.name))


def tab_names() -> tuple[str, ...]:
    return tuple(tab.name for tab in page_tabs())


def page_tab(name: str) -> PageTab | None:
    return _TABS.get(name)
