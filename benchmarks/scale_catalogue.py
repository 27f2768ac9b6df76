"""Fill a database with a synthetic paper-scale catalogue (benchmarks only; never production).

    createdb -h 127.0.0.1 aw_scale
    DATABASE_URL=postgres://root@127.0.0.1:5432/aw_scale .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://root@127.0.0.1:5432/aw_scale .venv/bin/python benchmarks/scale_catalogue.py --scale paper

Prints rows/s per table and in total. ``--reset`` empties the app tables first. Refuses to run
without an explicit DATABASE_URL so it cannot fill the embedded default database by accident.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

APP_TABLES_MODELS = (
    "arena.ExpansionProposal",
    "arena.FailureLabel",
    "arena.DiagnosisReport",
    "arena.ArenaEvaluation",
    "arena.EvolutionRound",
    "training.Step",
    "training.Trajectory",
    "training.TrainingMetric",
    "training.Checkpoint",
    "training.TrainingRun",
    "training.Policy",
    "tasks.Task",
    "environments.ToolTest",
    "environments.Tool",
    "environments.Environment",
    "environments.Theme",
    "environments.Category",
    "aw_site.Job",
)


def reset_tables() -> None:
    from django.apps import apps
    from django.db import connection

    tables = []
    for label in APP_TABLES_MODELS:
        model = apps.get_model(label)
        tables.append(model._meta.db_table)
        tables += [f.remote_field.through._meta.db_table for f in model._meta.local_many_to_many]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        else:
            for table in tables:
                cursor.execute(f"DELETE FROM {table}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="paper", help="paper, tenth or tiny")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reset", action="store_true", help="empty the app tables first")
    parser.add_argument("--analyze", action="store_true", default=True)
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        parser.error(
            "set DATABASE_URL to the benchmark database (e.g. postgres://root@127.0.0.1:5432/aw_scale)"
        )

    import django

    django.setup()
    from django.db import connection

    from benchmarks.scale.generator import SCALES, generate_catalogue

    spec = SCALES[args.scale]
    print(
        f"database {connection.settings_dict['NAME']} ({connection.vendor}); scale {args.scale}: {spec}"
    )
    if args.reset:
        started = time.perf_counter()
        reset_tables()
        print(f"reset in {time.perf_counter() - started:.1f} s")
    report = generate_catalogue(spec, seed=args.seed, progress=lambda line: print(line, flush=True))
    print("\n".join(report.lines()))
    if args.analyze and connection.vendor == "postgresql":
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print(f"ANALYZE in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
