"""Programmatic template applicability over the starter catalogue.

For every starter environment and every template: does the template *fit* (it drafts a task on
some parent -> children shape of the environment) and is a task *kept* (synthesized, run twice,
verified and passed by the verifier audit, within three tries)? Prints one row per template
with both counts out of the environments measured, and the environments without any shape.

    .venv/bin/python benchmarks/program_templates.py [--only a,b] [--packages DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from starter_packages import starter_packages  # noqa: E402

TRIES = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--packages", default="", help="reuse a built package root")
    args = parser.parse_args()

    import django

    django.setup()
    from environments.package import load_package
    from environments.runtime import SandboxPool
    from tasks.synthesis.program_templates import TEMPLATE_NAMES, TEMPLATES
    from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer

    paths = starter_packages(args.packages, [n for n in args.only.split(",") if n])
    fits = {name: [] for name in TEMPLATE_NAMES}
    kept = {name: [] for name in TEMPLATE_NAMES}
    shapeless = []
    started = time.perf_counter()
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        for path in paths:
            environment = path.parent.name
            synthesizer = ProgrammaticTaskSynthesizer(load_package(path), pool, llm=None)
            if not synthesizer.shapes:
                shapeless.append(environment)
                continue
            for name, template in zip(TEMPLATE_NAMES, TEMPLATES, strict=True):
                rngs = [random.Random(f"{environment}:{name}:{i}") for i in range(TRIES)]
                if any(template(synthesizer.view, s, r) for s in synthesizer.shapes for r in rngs):
                    fits[name].append(environment)
                for attempt in range(TRIES):
                    rng = random.Random(f"{environment}:{name}:keep:{attempt}")
                    check = synthesizer.template_task(rng, attempt, template=template)
                    if synthesizer._keep(check) is not None:
                        kept[name].append(environment)
                        break
    total = len(paths)
    print(f"{'template':20} {'fits':>6} {'kept':>6}  environments kept")
    for name in TEMPLATE_NAMES:
        print(
            f"{name:20} {len(fits[name]):>3}/{total:<2} {len(kept[name]):>3}/{total:<2}  "
            + ", ".join(kept[name])
        )
    print(f"no parent -> children shape: {', '.join(shapeless) or 'none'}")
    print(f"{total} environments in {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
