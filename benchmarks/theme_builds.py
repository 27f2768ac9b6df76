"""Benchmark: themes built into environments offline (no LLM), yield per stage and time per build.

Themes: the reference MCP servers (filesystem and memory from npm, git and time from PyPI; live
`tools/list` import), the OpenAPI 3.0/3.1 examples the npm package @readme/oas-examples ships,
and the theme fixtures of the repository (OpenAPI, function schemas, PRDs, an MCP spec). Each is
built with the theme pipeline (the stages the `environments.build` job runs) into a temporary
package root, sharing one warm sandbox pool.

    .venv/bin/python -m tests.support.npm_packages      # once: the npm packages under var/npm
    .venv/bin/python benchmarks/theme_builds.py [--count 20] [--tasks 10] [--json out.json]

After each published build, up to --tasks graph tasks (walks of 1 to 3 steps, audited) are
synthesized in the new environment, for the last step of the funnel; their time is apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

from environments.builder.request import BuildRequest  # noqa: E402
from environments.builder.stages import BuildFailed  # noqa: E402
from environments.builder.theme_pipeline import run_theme_pipeline  # noqa: E402
from environments.discovery.themes import (  # noqa: E402
    ThemeError,
    load_theme_file,
    parse_theme_document,
)
from environments.mcp_import import import_mcp_server  # noqa: E402
from environments.runtime import SandboxPool  # noqa: E402
from tests.support.npm_packages import npm_bin, npm_package  # noqa: E402


def themes(count: int, scratch: Path) -> list[tuple[str, dict]]:
    found: list[tuple[str, dict]] = []
    servers = {
        "mcp filesystem": ["node", str(npm_bin("mcp-server-filesystem") or ""), str(scratch)],
        "mcp memory": ["node", str(npm_bin("mcp-server-memory") or "")],
        "mcp git": [sys.executable, "-m", "mcp_server_git"],
        "mcp time": [sys.executable, "-m", "mcp_server_time"],
    }
    for label, command in servers.items():
        try:
            found.append((label, import_mcp_server(command, timeout=60)))
        except Exception as exc:  # noqa: BLE001 - a missing server is reported, not fatal
            print(f"skip {label}: {exc}", file=sys.stderr)
    for path in sorted((ROOT / "environments" / "data" / "themes").iterdir()) + sorted(
        (ROOT / "tests" / "fixtures" / "themes").iterdir()
    ):
        found.append((f"fixture {path.name}", load_theme_file(path)))
    examples = npm_package("@readme/oas-examples")
    if examples is not None:
        first = ["3.0/json/petstore.json", "3.0/json/petstore-expanded.json", "3.0/json/star-trek.json",
                 "3.0/json/uspto.json", "3.1/json/train-travel.json", "3.1/json/webhooks.json"]  # fmt: skip
        paths = [examples / p for p in first] + sorted(examples.glob("3.*/json/*.json"))
        for path in dict.fromkeys(paths):
            if len(found) >= count:
                break
            try:
                found.append(
                    (
                        f"oas {path.parent.parent.name}/{path.name}",
                        parse_theme_document(json.loads(path.read_text()), path.name),
                    )
                )
            except ThemeError:
                continue
    return found[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--json", default="")
    parser.add_argument("--tasks", type=int, default=10, help="graph tasks per published build")
    args = parser.parse_args()
    import django

    django.setup()
    from environments.package import load_package
    from tasks.service import synthesize_specs

    results = []
    with (
        tempfile.TemporaryDirectory(prefix="aw-theme-bench-") as tmp,
        SandboxPool(workers=2) as pool,
    ):
        tmp_path = Path(tmp)
        chosen = themes(args.count, tmp_path)
        for index, (label, theme) in enumerate(chosen):
            name = f"bench_theme_{index}"
            request = BuildRequest.create(origin="theme", theme=index + 1, name=name, title=label)
            workdir = tmp_path / name
            workdir.mkdir()
            started = time.perf_counter()
            outcome, error = None, ""
            try:
                outcome = run_theme_pipeline(
                    request, theme, root=tmp_path / "packages", workdir=workdir, pool=pool
                )
                build_yield = outcome.build_yield
            except BuildFailed as exc:
                build_yield, error = (
                    exc.build_yield,
                    f"{exc.stage}: {exc.reason.splitlines()[0][:90]}",
                )
            seconds = time.perf_counter() - started
            tasks, task_seconds = 0, 0.0
            if outcome is not None and args.tasks:
                started = time.perf_counter()
                try:
                    batch = synthesize_specs(
                        load_package(outcome.path), pool, kind="graph", count=args.tasks,
                        min_walk_length=1, max_walk_length=3, seed=index,
                    )  # fmt: skip
                    tasks = len(batch.specs)
                except Exception as exc:  # noqa: BLE001 - reported in the row
                    error = f"tasks: {type(exc).__name__}: {exc}"[:100]
                task_seconds = time.perf_counter() - started
            funnel = build_yield.get("funnel") or {}
            row = {
                "theme": label,
                "kind": theme.get("source_kind"),
                "theme_tools": funnel.get("theme_tools") or 0,
                "entities": funnel.get("schema_entities") or 0,
                "implemented": funnel.get("tools_implemented") or 0,
                "verified": funnel.get("tools_verified") or 0,
                "tasks": tasks,
                "published": outcome is not None,
                "seconds": round(seconds, 2),
                "task_seconds": round(task_seconds, 2),
                "why_not": error,
            }
            results.append(row)
            print(json.dumps(row), flush=True)
    totals = {
        k: sum(r[k] for r in results)
        for k in ("theme_tools", "entities", "implemented", "verified", "tasks")
    }
    times = [r["seconds"] for r in results]
    print()
    print(
        "| theme | kind | theme tools | entities | implemented | verified | tasks | published "
        "| build s | tasks s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(
            f"| {r['theme']} | {r['kind']} | {r['theme_tools']} | {r['entities']} | {r['implemented']} "
            f"| {r['verified']} | {r['tasks']} | {'yes' if r['published'] else 'no: ' + r['why_not']} "
            f"| {r['seconds']} | {r['task_seconds']} |"
        )
    print(
        f"| **{len(results)} themes** | | **{totals['theme_tools']}** | **{totals['entities']}** | "
        f"**{totals['implemented']}** | **{totals['verified']}** | **{totals['tasks']}** | "
        f"**{sum(r['published'] for r in results)}** | median {statistics.median(times):.2f}, "
        f"max {max(times):.2f}, total {sum(times):.1f} | |"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
