"""Console: the environment catalogue and one environment's tabs.

The catalogue stays a handful of queries however large it grows: the taxonomy is read once and
rolled up in Python, environment counts come from one GROUP BY, and cards use the denormalised
tool/task counts. The database tab reads the package's ``state.sqlite`` read-only, or its JSON
collections (an Agent-World environment: environments/collection_view.py).

The page shows the tabs registered in environments/page_tabs.py: its own (overview, database,
tools, MCP) and those of the apps above it (the tool graph and task tabs: tasks/environment_tabs.py).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods

from aw_site import charts
from aw_site.console import console_page, page_of, pretty_json
from aw_site.roles import REVIEWER, role_required
from environments.models import Category, Environment, Tool
from environments.page_tabs import page_tab, page_tabs, register_tab
from environments.versions import successor

CARDS_PER_PAGE = 24
ROWS_PER_PAGE = 25


class Taxonomy:
    """All categories in memory with environment counts rolled up to their ancestors."""

    def __init__(self, categories: list[Category], direct_counts: dict[int | None, int]):
        self.by_id = {c.pk: c for c in categories}
        self.children: dict[int | None, list[Category]] = {}
        for category in categories:
            self.children.setdefault(category.parent_id, []).append(category)
        self.direct = direct_counts
        self.total: dict[int, int] = {}
        for root in self.children.get(None, []):
            self._roll_up(root)

    @classmethod
    def load(cls, environments) -> Taxonomy:
        counts = {
            row["category"]: row["n"]
            for row in environments.order_by().values("category").annotate(n=Count("id"))
        }
        return cls(list(Category.objects.order_by("level", "name")), counts)

    def _roll_up(self, category: Category) -> int:
        total = self.direct.get(category.pk, 0) + sum(
            self._roll_up(child) for child in self.children.get(category.pk, [])
        )
        self.total[category.pk] = total
        return total

    def descendants(self, pk: int) -> list[int]:
        found, stack = [], [pk]
        while stack:
            current = stack.pop()
            found.append(current)
            stack.extend(child.pk for child in self.children.get(current, []))
        return found

    def path(self, pk: int | None) -> str:
        parts = []
        while pk is not None and pk in self.by_id:
            parts.append(self.by_id[pk].name)
            pk = self.by_id[pk].parent_id
        return " › ".join(reversed(parts))

    def tree(self, selected: int | None) -> list[dict[str, Any]]:
        """Nested nodes for the template: name, count, children, whether on the selected path."""
        open_ids = set()
        node = self.by_id.get(selected) if selected else None
        while node is not None:
            open_ids.add(node.pk)
            node = self.by_id.get(node.parent_id)

        def build(parent: int | None) -> list[dict[str, Any]]:
            return [
                {
                    "category": c,
                    "count": self.total.get(c.pk, 0),
                    "children": build(c.pk),
                    "open": c.pk in open_ids,
                    "selected": c.pk == selected,
                }
                for c in self.children.get(parent, [])
            ]

        return build(None)

    @property
    def uncategorised(self) -> int:
        return self.direct.get(None, 0)


def _int_param(request, name: str) -> int | None:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        return None


@console_page
def catalogue(request):
    environments = Environment.objects.all()
    taxonomy = Taxonomy.load(environments)
    filters: dict[str, Any] = {"q": request.GET.get("q", "").strip()}
    if filters["q"]:
        q = filters["q"]
        environments = environments.filter(
            Q(name__icontains=q) | Q(title__icontains=q) | Q(description__icontains=q)
        )
    category = _int_param(request, "category")
    if category is not None and category in taxonomy.by_id:
        environments = environments.filter(category_id__in=taxonomy.descendants(category))
    filters["category"] = category
    status = request.GET.get("status", "")
    if status in Environment.Status.values:
        environments = environments.filter(status=status)
    filters["status"] = status
    origins = sorted(
        Environment.objects.exclude(origin="")
        .order_by()
        .values_list("origin", flat=True)
        .distinct()
    )
    origin = request.GET.get("origin", "")
    if origin in origins:
        environments = environments.filter(origin=origin)
    filters["origin"] = origin
    for field, model_field in (
        ("min_tools", "tool_count__gte"),
        ("max_tools", "tool_count__lte"),
        ("min_tasks", "task_count__gte"),
        ("max_tasks", "task_count__lte"),
    ):
        value = _int_param(request, field)
        filters[field] = value
        if value is not None:
            environments = environments.filter(**{model_field: value})
    sort = request.GET.get("sort", "name")
    ordering = {
        "name": ("name", "-version"),
        "newest": ("-created_at", "name"),
        "tools": ("-tool_count", "name"),
        "tasks": ("-task_count", "name"),
    }.get(sort, ("name", "-version"))
    filters["sort"] = sort
    environments = environments.order_by(*ordering).only(
        "id",
        "name",
        "version",
        "title",
        "description",
        "status",
        "origin",
        "category_id",
        "tool_count",
        "task_count",
        "table_count",
        "row_count",
        "created_at",
    )
    page = page_of(request, environments, CARDS_PER_PAGE)
    for environment in page.object_list:
        environment.category_path = taxonomy.path(environment.category_id)
    # The difficulty distribution of every task of the matching environments (one grouped
    # query over the reverse relation; the chart is drawn server-side).
    lengths = (
        environments.order_by()
        .filter(tasks__isnull=False)
        .values_list("tasks__difficulty", "tasks__kind")
        .annotate(n=Count("tasks"))
    )
    context = {
        "difficulty_chart": mark_safe(
            charts.difficulty_chart(
                lengths, title="Tasks of these environments by gold-run length, by kind"
            )
        ),
        "page": page,
        "filters": filters,
        "tree": taxonomy.tree(category),
        "uncategorised": taxonomy.uncategorised,
        "total": sum(taxonomy.direct.values()),
        "statuses": Environment.Status.values,
        "origins": origins,
        "selected_category": taxonomy.by_id.get(category) if category else None,
        "selected_path": taxonomy.path(category) if category else "",
    }
    template = (
        "environments/_catalogue_results.html" if request.htmx else "environments/catalogue.html"
    )
    return render(request, template, context)


def _environment(pk: int) -> Environment:
    return get_object_or_404(
        Environment.objects.select_related(
            "category__parent__parent", "theme", "parent", "created_by"
        ),
        pk=pk,
    )


@console_page
def environment_detail(request, pk: int):
    environment = _environment(pk)
    tab = page_tab(request.GET.get("tab", "overview")) or page_tab("overview")
    context = {
        "environment": environment,
        "tabs": page_tabs(),
        "tab": tab.name,
        "tab_template": tab.template,
        "successor": successor(environment),
    }
    context.update(tab.context(request, environment))
    return render(request, "environments/detail.html", context)


@console_page
def environment_tab(request, pk: int, tab: str):
    shown = page_tab(tab)
    if shown is None:
        raise Http404(f"no tab {tab!r}")
    environment = _environment(pk)
    context = {
        "environment": environment,
        "tabs": page_tabs(),
        "tab": shown.name,
        "tab_template": shown.template,
    }
    context.update(shown.context(request, environment))
    return render(request, "environments/_tabs.html", context)


def register_own_tabs() -> None:
    """The tabs that read only environments (EnvironmentsConfig.ready); tasks adds the tool graph
    (40) and the task table (50), serving the MCP connection tab (60)."""
    register_tab("overview", "Overview", _overview, "environments/tabs/overview.html", position=10)
    register_tab("database", "Database", _database, "environments/tabs/database.html", position=20)
    register_tab("tools", "Tools", _tools, "environments/tabs/tools.html", position=30)


def _overview(request, environment: Environment) -> dict[str, Any]:
    versions = Environment.objects.filter(name=environment.name).only(
        "id", "name", "version", "status", "created_at"
    )
    theme = environment.theme
    release = (environment.manifest or {}).get("release")
    return {
        "release": release if isinstance(release, dict) else None,
        "release_category_reason": ((environment.build_yield or {}).get("schema") or {}).get(
            "category_reason", ""
        ),
        "versions": versions,
        "theme": theme,
        "provenance": environment.provenance if isinstance(environment.provenance, list) else [],
        "verification_json": pretty_json(environment.verification_report, sort_keys=True),
        "theme_provenance_json": pretty_json(theme.provenance, sort_keys=True) if theme else "",
        "package_state": package_state(environment),
        "build_yield": yield_rows(environment.build_yield),
        "funnel": _funnel_rows(environment),
        "rejected_tools": _rejected_tools(environment),
        "synthetic": any(
            isinstance(p, dict) and p.get("kind") == "synthetic"
            for p in (environment.provenance if isinstance(environment.provenance, list) else [])
        ),
    }


def _funnel_rows(environment: Environment) -> list[tuple[str, Any]]:
    from environments.build_yield import FUNNEL, LABELS, funnel_of

    counts = funnel_of(environment)
    if counts["origin"] == "unrecorded":
        return []
    return [(LABELS[step], counts[step]) for step in FUNNEL]


def _rejected_tools(environment: Environment) -> list[dict[str, str]]:
    """Tools the build could not implement or verify, with the reason (theme builds)."""
    report = (
        environment.verification_report if isinstance(environment.verification_report, dict) else {}
    )
    found = report.get("rejected_tools")
    if found is None:
        found = ((environment.build_yield or {}).get("verify") or {}).get("rejected_tools")
    if found is None:
        found = ((environment.build_yield or {}).get("ingest") or {}).get("rejected_tools")
    return [r for r in found or [] if isinstance(r, dict)]


def package_state(environment: Environment) -> Path | None:
    """The package's state.sqlite when it exists on disk."""
    if not environment.package_path:
        return None
    path = Path(environment.package_path) / "state.sqlite"
    return path if path.is_file() else None


def open_read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write: the canonical state of a verified version is immutable."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    connection.row_factory = sqlite3.Row
    return connection


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def read_database(path: Path, table: str | None, page_number: int) -> dict[str, Any]:
    """Tables with row counts, and one table's schema and page of rows."""
    connection = open_read_only(path)
    try:
        names = [
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        tables = [
            {
                "name": name,
                "rows": connection.execute(f"SELECT COUNT(*) FROM {_quote(name)}").fetchone()[0],
            }
            for name in names
        ]
        if not names:
            return {"tables": [], "table": None}
        table = table if table in names else names[0]
        columns = [dict(row) for row in connection.execute(f"PRAGMA table_info({_quote(table)})")]
        foreign_keys = {
            row["from"]: f"{row['table']}.{row['to']}"
            for row in connection.execute(f"PRAGMA foreign_key_list({_quote(table)})")
        }
        for column in columns:
            column["references"] = foreign_keys.get(column["name"], "")
        create_sql = connection.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()[0]
        total = next(t["rows"] for t in tables if t["name"] == table)
        pages = max(1, -(-total // ROWS_PER_PAGE))
        page_number = min(max(1, page_number), pages)
        rows = connection.execute(
            f"SELECT * FROM {_quote(table)} LIMIT ? OFFSET ?",
            (ROWS_PER_PAGE, (page_number - 1) * ROWS_PER_PAGE),
        ).fetchall()
        return {
            "tables": tables,
            "table": table,
            "columns": columns,
            "create_sql": create_sql,
            "rows": [[_cell(value) for value in row] for row in rows],
            "total_rows": total,
            "row_page": page_number,
            "row_pages": pages,
            "first_row": (page_number - 1) * ROWS_PER_PAGE + 1 if total else 0,
            "last_row": min(total, page_number * ROWS_PER_PAGE),
        }
    finally:
        connection.close()


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    text = str(value)
    return text if len(text) <= 200 else text[:199] + "…"


def _database(request, environment: Environment) -> dict[str, Any]:
    from environments.collection_view import collection_state

    state = collection_state(environment.manifest)
    if state is not None:
        return _collections(request, environment, state)
    path = package_state(environment)
    if path is None:
        return {"database_error": _missing_package_message(environment)}
    try:
        page_number = int(request.GET.get("page", "1"))
    except ValueError:
        page_number = 1
    try:
        return {"database": read_database(path, request.GET.get("table"), page_number)}
    except sqlite3.Error as exc:
        return {"database_error": f"Could not read {path.name}: {exc}"}


def _collections(request, environment: Environment, state: dict[str, Any]) -> dict[str, Any]:
    """The database tab of a package of JSON collections (an Agent-World environment)."""
    from environments.collection_view import read_collection_view, readme_of, rule_sections

    package = Path(environment.package_path) if environment.package_path else None
    if package is None or not (package / "collections").is_dir():
        return {
            "database_error": _missing_package_message(environment).replace(
                "state.sqlite", "collections/ folder"
            )
        }
    try:
        page_number = int(request.GET.get("page", "1"))
    except ValueError:
        page_number = 1
    readme = readme_of(package)
    try:
        database = read_collection_view(
            package, state, request.GET.get("table"), page_number, ROWS_PER_PAGE
        )
    except OSError as exc:
        return {"database_error": f"Could not read the collections of {package}: {exc.strerror}"}
    return {"database": database, "readme": readme, "rules": rule_sections(readme)}


def _missing_package_message(environment: Environment) -> str:
    if not environment.package_path:
        return "This environment has no package on disk yet."
    return f"The package at {environment.package_path} is missing or has no state.sqlite."


def _tools(request, environment: Environment) -> dict[str, Any]:
    from environments.tool_checks import environment_tool_checks

    tools = list(Tool.objects.filter(environment=environment).prefetch_related("tests"))
    checks = environment_tool_checks(environment, tools)
    originals = (environment.manifest or {}).get("original_names") or {}
    for tool in tools:
        tool.original_name = originals.get(tool.name, "")  # a theme's name a client cannot call
        tool.schema_json = pretty_json(tool.schema, sort_keys=True)
        tool.verification_json = (
            pretty_json(tool.verification, sort_keys=True) if tool.verification else ""
        )
        tool.checks = checks[tool.pk]  # what verification ran, from whichever record knows
    return {"tools": tools}


# --- New environment: one build through the `environments.build` job --------------------------


def _build_form_context(values: dict[str, str] | None = None, error: str = "") -> dict[str, Any]:
    from environments.builder.request import builtin_sources
    from environments.builder.uploads import max_upload_bytes, supported_suffixes
    from environments.discovery.taxonomy import TAXONOMY
    from environments.models import Theme

    return {
        "themes": Theme.objects.exclude(source_kind=Theme.SourceKind.DIAGNOSIS)
        .order_by("name")
        .only("id", "name", "title", "source_kind")[:500],
        "sources": builtin_sources(),
        "suffixes": supported_suffixes(),
        "max_upload_mb": max_upload_bytes() // (1024 * 1024),
        "categories": [f"{p.name}/{s.name}" for p in TAXONOMY for s in p.secondaries],
        "values": values or {},
        "error": error,
    }


@login_required
@role_required(REVIEWER)
@require_http_methods(["GET", "POST"])
def new_environment(request):
    """Upload a file or pick a built-in source, a theme or an MCP server; POST queues the build
    and shows its progress. Or upload an Agent-World release archive: its catalogue run is
    started and shown. The submission is read as the REST API reads it."""
    from environments.builder.dispatch import (
        ReleaseUpload,
        queue_release,
        queue_submission,
        request_from_submission,
    )
    from environments.builder.request import BuildRequestError

    if request.method == "GET":
        values = {"theme": request.GET.get("theme", "")}
        return render(request, "environments/new.html", _build_form_context(values))
    values = {
        k: request.POST.get(k, "").strip()
        for k in ("source", "theme", "mcp", "name", "title", "description", "category", "env")
    }
    form = {k: v for k, v in values.items() if v}  # the form sends every field, most empty
    try:
        build_request = request_from_submission(form, request.FILES, request.user)
        if isinstance(build_request, ReleaseUpload):
            run = queue_release(build_request, request.user)
            return redirect("catalogue-run", pk=run.pk)
    except BuildRequestError as exc:
        context = _build_form_context(values, str(exc))
        return render(request, "environments/new.html", context, status=400)
    job = queue_submission(build_request, request.user)
    return redirect("environment-build", job=job.pk)


def _build_context(job_pk: int) -> dict[str, Any]:
    from aw_site.console import JOB_POLL
    from aw_site.models import Job

    job = get_object_or_404(Job, pk=job_pk, kind__in=BUILD_JOB_KINDS)
    result = job.result or {}
    environment_pk = result.get("environment") or result.get("draft_environment")
    environment = Environment.objects.filter(pk=environment_pk).first() if environment_pk else None
    return {
        "job": job,
        "job_poll": JOB_POLL,
        "show_log": True,
        "environment": environment,
        "build_yield": yield_rows(environment.build_yield) if environment else [],
    }


BUILD_JOB_KINDS = ("environments.build", "environments.build_environment")


@console_page
def build_status(request, job: int):
    return render(request, "environments/build.html", _build_context(job))


@console_page
def build_progress(request, job: int):
    """HTMX fragment polled while the build runs; once finished it links the environment."""
    return render(request, "environments/_build_progress.html", _build_context(job))


def yield_rows(build_yield: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The build yield as one row per stage, in pipeline order, for the console."""
    from environments.builder.stages import STAGES

    build_yield = build_yield if isinstance(build_yield, dict) else {}
    rows = []
    for stage in STAGES:
        values = build_yield.get(stage)
        if not isinstance(values, dict):
            rows.append({"stage": stage, "reached": False, "facts": []})
            continue
        facts = []
        for key, value in values.items():
            if key in ("rows_by_table", "path", "rejected_tools"):
                continue  # rejected tools have their own table on the environment page
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "–"
            elif isinstance(value, list):
                value = ", ".join(str(v) for v in value) or "–"
            facts.append((key.replace("_", " "), value))
        rows.append({"stage": stage, "reached": True, "facts": facts})
    return rows


# --- Themes: what each theme offers, what was built from it, a build action ----------------------

THEMES_PER_PAGE = 25


@console_page
def theme_list(request):
    """Every theme with its tools, category and environments; reviewers build one."""
    from environments.builder.theme_reading import theme_tools
    from environments.models import Theme
    from environments.themes_import import theme_dict

    themes = Theme.objects.exclude(source_kind=Theme.SourceKind.DIAGNOSIS).select_related(
        "category__parent__parent"
    )
    q = request.GET.get("q", "").strip()
    if q:
        themes = themes.filter(Q(name__icontains=q) | Q(title__icontains=q))
    kind = request.GET.get("kind", "")
    if kind in Theme.SourceKind.values:
        themes = themes.filter(source_kind=kind)
    page = page_of(request, themes.order_by("name", "pk"), THEMES_PER_PAGE)
    ids = [t.pk for t in page.object_list]
    built: dict[int, list[Environment]] = {}
    for environment in Environment.objects.filter(theme_id__in=ids).only(
        "id", "name", "version", "status", "tool_count", "theme_id"
    ):
        built.setdefault(environment.theme_id, []).append(environment)
    for theme in page.object_list:
        theme.tool_list = [t.get("name", "") for t in theme_tools(theme_dict(theme))]
        theme.built = built.get(theme.pk, [])
    return render(
        request,
        "environments/themes.html",
        {"page": page, "q": q, "kind": kind, "kinds": Theme.SourceKind.choices},
    )


@login_required
@role_required(REVIEWER)
@require_http_methods(["POST"])
def theme_build(request, pk: int):
    """Queue the build of one theme and show its progress (the same dispatch as the API's
    POST /api/themes/{id}/build/)."""
    from django.contrib import messages

    from environments.builder.dispatch import queue_submission, theme_request_from_submission
    from environments.builder.request import BuildRequestError

    fields = {k: request.POST.get(k, "") for k in ("name", "title", "category")}
    try:
        build_request = theme_request_from_submission(pk, fields, request.user)
    except BuildRequestError as exc:
        messages.error(request, str(exc))
        return redirect("theme-list")
    job = queue_submission(build_request, request.user)
    return redirect("environment-build", job=job.pk)


@console_page
def yield_page(request):
    """The build yield summed over all builds, per origin."""
    from environments.build_yield import FUNNEL, LABELS, yield_summary

    summary = yield_summary(Environment.objects.all())
    rows = []
    for origin, group in sorted(summary["origins"].items(), key=lambda i: (i[0] == "all", i[0])):
        rows.append({"origin": origin, **group, "steps": [group[s] for s in FUNNEL]})
    return render(
        request,
        "environments/yield.html",
        {"rows": rows, "labels": [LABELS[s] for s in FUNNEL]},
    )
