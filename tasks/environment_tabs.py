"""The environment page's tabs that read tasks: the tool dependency graph and the task table.

environments renders its page from a tab registry (environments/page_tabs.py) and never imports
tasks; ``register_environment_tabs`` adds these two when the tasks app loads (tasks/apps.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.models import Count
from django.utils.safestring import mark_safe

from aw_site import charts
from aw_site.console import page_of
from environments.models import Environment, Tool
from environments.page_tabs import register_tab

TASKS_PER_PAGE = 25


def tool_graph_data(environment: Environment) -> tuple[dict[str, Any], str]:
    """Nodes and edges of the tool dependency graph, and where they came from.

    The synthesis graph is built from the package when it is on disk; otherwise the graph the
    manifest recorded at publication is used; otherwise tools are drawn without edges.
    """
    source_error = ""
    if environment.package_path and Path(environment.package_path).is_dir():
        try:
            from tasks.synthesis.tool_graph import build_tool_graph

            data = build_tool_graph(environment.package_path).to_dict()
            if data.get("nodes"):
                return data, "built from the package by tasks.synthesis.tool_graph"
        except Exception as exc:  # a broken package must not break the page
            source_error = f"{type(exc).__name__}: {exc}"
    manifest = environment.manifest if isinstance(environment.manifest, dict) else {}
    recorded = manifest.get("tool_graph")
    if isinstance(recorded, dict) and recorded.get("nodes"):
        return recorded, "recorded in the manifest"
    kinds = manifest.get("tool_kinds", {}) if isinstance(manifest.get("tool_kinds"), dict) else {}
    names = [
        t.get("function", {}).get("name")
        for t in manifest.get("tools", [])
        if isinstance(t, dict) and t.get("function", {}).get("name")
    ] or list(Tool.objects.filter(environment=environment).values_list("name", flat=True))
    note = "no dependency data; tools shown without edges"
    if source_error:
        note += f" (graph build failed: {source_error})"
    return {"nodes": [{"id": n, "kind": kinds.get(n, "read")} for n in names], "edges": []}, note


def graph_tab(request, environment: Environment) -> dict[str, Any]:
    data, source = tool_graph_data(environment)
    nodes = [n for n in data.get("nodes", []) if isinstance(n, dict)]
    edges = [e for e in data.get("edges", []) if isinstance(e, dict)]
    return {
        "graph_svg": mark_safe(charts.tool_graph(nodes, edges)),
        "graph_source": source,
        "graph_edges": edges,
        "graph_node_count": len(nodes),
    }


def tasks_tab(request, environment: Environment) -> dict[str, Any]:
    tasks = environment.tasks.all()
    split = request.GET.get("split", "")
    if split:
        tasks = tasks.filter(split=split)
    # The table lists instruction and counts only: gold data stays on the task page, which
    # hides it from viewers on evaluation tasks.
    page = page_of(request, tasks, TASKS_PER_PAGE)
    by_kind = tasks.order_by().values_list("difficulty", "kind").annotate(n=Count("id"))
    by_tier = tasks.order_by().values_list("difficulty", "tier").annotate(n=Count("id"))
    by_level = tasks.order_by().values_list("structure__level").annotate(n=Count("id")).order_by()
    audit = environment.task_audit or {}
    audited = int(audit.get("audited") or 0)
    discarded = sorted((audit.get("discarded") or {}).items(), key=lambda item: -item[1])
    levels = dict(by_level)
    return {
        "task_page": page,
        "split": split,
        "difficulty_chart": mark_safe(
            charts.difficulty_chart(by_kind, title="Tasks by gold-run length, by kind")
        ),
        "tier_chart": mark_safe(
            charts.difficulty_chart(
                [(n, tier or "untiered", k) for n, tier, k in by_tier],
                title="Tasks by gold-run length, by instruction tier",
            )
        ),
        "levels": [(name, levels.get(name, 0)) for name in ("easy", "medium", "hard", "expert")],
        "audit": {
            "audited": audited,
            "kept": int(audit.get("kept") or 0),
            # Every synthesis run adds to the audit; a kept task is stored once (duplicates of a
            # stored task and those past the number asked for are not), so the two differ.
            "stored": environment.task_count,  # the number the page header shows
            "kept_percent": round(100 * int(audit.get("kept") or 0) / audited) if audited else 0,
            "discarded": [
                {"check": name, "count": count, "percent": round(100 * count / audited)}
                for name, count in discarded
            ],
        },
    }


def register_environment_tabs() -> None:
    """Between the environment's own Tools (30) and MCP (60) tabs."""
    register_tab("graph", "Tool graph", graph_tab, "environments/tabs/graph.html", position=40)
    register_tab("tasks", "Tasks", tasks_tab, "environments/tabs/tasks.html", position=50)
