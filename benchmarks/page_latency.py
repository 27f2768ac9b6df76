"""p50/p95 latency and query counts of the REST lists and console pages at paper scale.

    DATABASE_URL=postgres://root@127.0.0.1:5432/aw_scale .venv/bin/python benchmarks/page_latency.py

Requests go through Django's test Client in-process (the whole middleware, auth, DRF and template
stack, no network), against the database DATABASE_URL names (fill it first with
benchmarks/scale_catalogue.py). Each URL is requested once under CaptureQueriesContext for its
query count and slowest query, then timed ``--repeat`` times. ``--explain`` prints EXPLAIN ANALYZE
of the slowest query of every URL over its target. Targets: API p95 < 100 ms, pages p95 < 200 ms,
at most 10 queries a request.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

API_TARGET_MS, PAGE_TARGET_MS, QUERY_TARGET = 100.0, 200.0, 10


@dataclass
class Measurement:
    kind: str  # "api" or "page"
    url: str
    status: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    queries: int
    slowest_query_ms: float
    slowest_sql: str
    note: str = ""

    @property
    def target_ms(self) -> float:
        return API_TARGET_MS if self.kind == "api" else PAGE_TARGET_MS

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.p95_ms < self.target_ms and self.queries <= QUERY_TARGET


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def benchmark_users():
    """A viewer with an API token, created once in the benchmark database."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from aw_site.roles import VIEWER, grant_role

    user, created = get_user_model().objects.get_or_create(username="scale_viewer")
    if created or not user.groups.exists():
        grant_role(user, VIEWER)
    token, _ = Token.objects.get_or_create(user=user)
    return user, token.key


def sample_ids() -> dict[str, int]:
    """Ids of real rows near the middle of each table, so detail and filter URLs hit data."""
    from arena.models import EvolutionRound, FailureLabel
    from environments.models import Category, Environment
    from tasks.models import Task
    from training.models import Trajectory

    def middle(queryset) -> int:
        count = queryset.count()
        row = queryset.order_by("pk").values_list("pk", flat=True)[count // 2 : count // 2 + 1]
        return next(iter(row), 0)

    verified = Environment.objects.filter(status="verified")
    labelled = FailureLabel.objects.order_by("pk").values_list("trajectory_id", flat=True).first()
    rounds = EvolutionRound.objects.order_by("number").values_list("number", flat=True)
    return {
        "environment": middle(verified),
        "primary": middle(Category.objects.filter(level=1)),
        "tertiary": middle(Category.objects.filter(level=3)),
        "task": middle(Task.objects.all()),
        "trajectory": middle(Trajectory.objects.all()),
        "labelled_trajectory": labelled or 0,
        "round": rounds.last() or 1,
        "first_round": rounds.first() or 1,
    }


def api_urls(ids: dict[str, int]) -> list[str]:
    from aw_site.pagination import encode_cursor

    e, r = ids["environment"], ids["round"]
    return [
        "/api/environments/",
        "/api/environments/?search=invoice",
        f"/api/environments/?status=verified&category={ids['tertiary']}",
        "/api/environments/?ordering=-task_count",
        "/api/environments/?tool_count__gte=5&status=verified",
        f"/api/environments/{e}/",
        "/api/categories/",
        "/api/themes/?search=hotel",
        "/api/tools/",
        "/api/tools/?search=search_flight",
        f"/api/tools/?environment={e}",
        "/api/tasks/",
        "/api/tasks/?search=cheapest",
        f"/api/tasks/?environment={e}&split=train",
        "/api/tasks/?kind=graph&difficulty=3",
        "/api/tasks/?page=200",  # the deepest numbered page (rows 9,951-10,000)
        f"/api/tasks/?cursor={encode_cursor(ids['task'])}",  # a keyset page in the middle of the table
        f"/api/tasks/{ids['task']}/",
        "/api/trajectories/",
        "/api/trajectories/?success=false",
        f"/api/trajectories/?environment={e}",
        "/api/trajectories/?failure_labels__label=wrong_answer",
        f"/api/trajectories/?evaluations__round__number={r}",
        "/api/trajectories/?ordering=-total_reward",
        f"/api/trajectories/{ids['trajectory']}/",
        "/api/jobs/",
        "/api/jobs/?state=failed",
        "/api/jobs/?search=worker_check",
        "/api/rounds/",
        f"/api/rounds/{r}/",
        "/api/evaluations/",
        "/api/diagnoses/",
        "/api/proposals/",
        "/api/proposals/?status=pending",
        "/api/policies/",
        "/api/training-runs/",
    ]


def page_urls(ids: dict[str, int]) -> list[str]:
    e, r = ids["environment"], ids["round"]
    return [
        "/",
        "/environments/",
        "/environments/?q=invoice",
        f"/environments/?category={ids['primary']}",
        "/environments/?status=verified&sort=tasks",
        f"/environments/{e}/",
        f"/environments/{e}/tabs/tools/",
        f"/environments/{e}/tabs/tasks/",
        f"/environments/{e}/tabs/graph/",
        f"/tasks/{ids['task']}/",
        "/trajectories/",
        "/trajectories/?outcome=failed",
        "/trajectories/?label=wrong_answer",
        f"/trajectories/?round={r}",
        f"/trajectories/{ids['trajectory']}/",
        f"/trajectories/{ids['labelled_trajectory']}/",
        "/training/",
        "/rounds/",
        f"/rounds/{r}/",
        "/jobs/",
    ]


def measure(client, kind: str, url: str, repeat: int, headers: dict[str, str]) -> Measurement:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    try:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url, **headers)
    except Exception as exc:  # a page that fails is reported, not fatal to the run
        return Measurement(
            kind, url, 0, 0, 0, 0, 0, 0, "", note=f"{type(exc).__name__}: {exc}"[:200]
        )
    queries = list(captured.captured_queries)
    slowest = max(queries, key=lambda q: float(q["time"]), default={"time": "0", "sql": ""})
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(url, **headers)
        timings.append((time.perf_counter() - started) * 1000)
    note = "" if response.status_code == 200 else f"HTTP {response.status_code}"
    return Measurement(
        kind=kind,
        url=url,
        status=response.status_code,
        p50_ms=statistics.median(timings),
        p95_ms=percentile(timings, 0.95),
        max_ms=max(timings),
        queries=len(queries),
        slowest_query_ms=float(slowest["time"]) * 1000,
        slowest_sql=slowest["sql"],
        note=note,
    )


def explain(sql: str) -> str:
    from django.db import connection

    if connection.vendor != "postgresql" or not sql.lstrip().upper().startswith("SELECT"):
        return ""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS OFF) " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def table(measurements: list[Measurement]) -> str:
    lines = [
        "| kind | URL | status | p50 ms | p95 ms | queries | slowest query ms | ok |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in measurements:
        flag = "yes" if m.ok else "**no**"
        note = f" ({m.note})" if m.note else ""
        lines.append(
            f"| {m.kind} | `{m.url}` | {m.status}{note} | {m.p50_ms:.1f} | {m.p95_ms:.1f} | "
            f"{m.queries} | {m.slowest_query_ms:.1f} | {flag} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", choices=["api", "page"], default=None)
    parser.add_argument("--filter", default="", help="only URLs containing this text")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE slow queries")
    parser.add_argument("--json", type=Path, default=None, help="write measurements as JSON here")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        parser.error("set DATABASE_URL to the scale database")

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    user, token = benchmark_users()
    ids = sample_ids()
    api_client = Client(HTTP_HOST="127.0.0.1")
    page_client = Client(HTTP_HOST="127.0.0.1")
    page_client.force_login(user)
    api_headers = {"HTTP_AUTHORIZATION": f"Token {token}"}
    plan = []
    if args.only in (None, "api"):
        plan += [("api", url) for url in api_urls(ids)]
    if args.only in (None, "page"):
        plan += [("page", url) for url in page_urls(ids)]
    plan = [(kind, url) for kind, url in plan if args.filter in url]
    print(f"database {connection.settings_dict['NAME']}; sample ids {ids}", flush=True)
    results = []
    for kind, url in plan:
        client, headers = (api_client, api_headers) if kind == "api" else (page_client, {})
        m = measure(client, kind, url, args.repeat, headers)
        results.append(m)
        print(
            f"{kind:4s} {m.status} p50 {m.p50_ms:7.1f} p95 {m.p95_ms:7.1f} ms  q={m.queries:2d} "
            f"slowest {m.slowest_query_ms:6.1f} ms {'ok' if m.ok else 'OVER'}  {url} {m.note}",
            flush=True,
        )
        if args.explain and not m.ok and m.slowest_sql:
            print(explain(m.slowest_sql), flush=True)
    print()
    print(table(results))
    over = [m for m in results if not m.ok]
    print(
        f"\n{len(results) - len(over)} of {len(results)} within targets "
        f"(API p95 < {API_TARGET_MS:.0f} ms, pages p95 < {PAGE_TARGET_MS:.0f} ms, <= {QUERY_TARGET} queries)"
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
