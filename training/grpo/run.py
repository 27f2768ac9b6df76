"""Command line: ``python -m training.grpo.run --config run.json`` (also under accelerate launch).

    accelerate launch --config_file training/accelerate/single_gpu.yaml \
        -m training.grpo.run --config run.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import NoReturn

from training.grpo.config import TrainingConfig
from training.grpo.trainer import run_training


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Multi-environment GRPO for Agent-World.")
    parser.add_argument("--config", help="JSON file of TrainingConfig fields.")
    parser.add_argument(
        "--print-fields", action="store_true", help="Print every config field with its help."
    )
    parser.add_argument(
        "--traceback", action="store_true", help="Show the traceback of a refused config."
    )
    args = parser.parse_args(argv)
    if args.print_fields:
        print(json.dumps(TrainingConfig.help(), indent=2))
        return 0
    if not args.config:
        parser.error("--config is required")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        config = TrainingConfig.from_json(args.config)
    except OSError as exc:
        refuse(args, f"--config {args.config}: {exc.strerror or exc}")
    except (ValueError, TypeError) as exc:  # bad JSON, unknown fields, a field of a wrong kind
        refuse(args, f"--config {args.config}: {exc} (--print-fields lists the fields)")

    def print_metrics(step: int, metrics: dict) -> None:
        print(json.dumps({"step": step, **metrics}, default=str), flush=True)

    def print_checkpoint(path: str) -> None:
        print(json.dumps({"checkpoint": path}), flush=True)

    result = run_training(config, on_metrics=print_metrics, on_checkpoint=print_checkpoint)
    print(json.dumps({"result": result.to_dict()}, default=str), flush=True)
    return 0


def refuse(args: argparse.Namespace, reason: str) -> NoReturn:
    """A refused config: one line on stderr and exit code 2 (argparse's usage error code,
    without the usage block); the traceback only under --traceback."""
    if args.traceback:
        raise  # the config error being handled, with its traceback
    print(f"error: {reason}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    sys.exit(main())
