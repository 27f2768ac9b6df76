"""Importing a release in the Agent-World format: time, verdicts, questions, call overhead, scores.

    .venv/bin/python benchmarks/agent_world_import.py [--environments 60] [--seed 7]
        [--calls 300] [--keep DIR]

Generates a seeded release (benchmarks/agent_world_mix.py: varied collections, clock-stamping
and uuid-making writes, log-appending tools, broken tools, questions that reproduce and some that
do not), imports it through the user command (`manage.py build_environment --agent-world PATH`)
in a scratch database and storage root, then reads the scratch database and reports:

- import time per environment (each build job's run, the question replay included: median, p95)
  and for the whole release (the command's wall time);
- tools verified, and rejected by reason, over the release (and against what was planted);
- questions imported as held-out tasks and kept out, by reason;
- the call overhead of a JSON-collection tool against an SQLite tool through the same episode
  API path (`POST /api/episodes/{key}/call/`, in process, `--calls` calls each, interleaved):
  median and p95 per call and the mean with a 95% interval; a log-appending JSON tool as well;
- the reward of the gold replay and of a no-op run over the imported questions (mean and a 95%
  bootstrap interval).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agent_world_mix import write_release  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def bootstrap(values: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95% percentile-bootstrap interval."""
    if not values:
        return float("nan"), float("nan"), float("nan")
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(rounds))
    return statistics.fmean(values), means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def scratch_env(work: Path) -> dict[str, str]:
    """The embedded default (SQLite in WAL mode with a busy timeout, jobs in process threads)
    under `work`: a `DATABASE_URL=sqlite:///...` gets neither, and the release's concurrent
    build jobs would meet "database is locked"."""
    env = {
        **os.environ,
        "AW_VAR_DIR": str(work / "var"),
        "AW_STORAGE_ROOT": str(work / "storage"),
        "DJANGO_SETTINGS_MODULE": "aw_site.settings",
    }
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "AW_JOBS_MODE"):
        env.pop(name, None)
    return env


def import_release(release: Path, work: Path) -> tuple[float, str]:
    """Migrate the scratch database, then the user command; (wall seconds, its output)."""
    env = scratch_env(work)
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    run = subprocess.run(
        [python, "manage.py", "build_environment", "--agent-world", str(release)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"the import failed\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return seconds, run.stdout


def build_figures() -> dict:
    """Per environment: its job's time, verdicts and questions (the scratch database)."""
    from aw_site.models import Job
    from environments.models import Environment

    jobs = {
        job.target: job.duration_seconds
        for job in Job.objects.filter(kind="environments.build")
        if job.finished_at
    }
    verified, rejected, questions, kept_out = 0, Counter(), Counter(), Counter()
    environments = {"published": 0, "rejected": Counter()}
    for record in Environment.objects.filter(origin="agent_world"):
        built = record.build_yield or {}
        if record.status == "verified":
            environments["published"] += 1
        else:
            environments["rejected"][(record.failure_reason or "?").split(":")[0]] += 1
        verify = built.get("verify") or {}
        verified += int(verify.get("verified") or 0)
        rejected.update(verify.get("rejected_by_reason") or {})
        asked = built.get("questions") or {}
        questions["questions"] += asked.get("questions", 0)
        questions["imported"] += asked.get("imported", 0)
        kept_out.update(asked.get("kept_out_by_reason") or {})
    return {
        "job_seconds": sorted(jobs.values()),
        "verified": verified,
        "rejected": dict(sorted(rejected.items())),
        "questions": dict(questions),
        "kept_out": dict(sorted(kept_out.items())),
        "environments": environments,
    }


def call_overhead(calls: int, work: Path) -> dict[str, dict[str, float]]:
    """Per tool, latency (ms) of `calls` calls through the episode API, interleaved."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from aw_site.roles import VIEWER, grant_role
    from environments.models import Environment
    from environments.registry import record_package
    from serving.episode_service import episode_service
    from tests.support.sample_package import build_sample_package

    user = get_user_model().objects.create_user("bench", password="bench-only")
    grant_role(user, VIEWER)
    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    bookstore = record_package(build_sample_package(work / "sqlite-package"))
    plain, logged = None, None
    for record in Environment.objects.filter(origin="agent_world", status="verified"):
        logs = (record.manifest.get("state") or {}).get("log_collections") or []
        names = set(record.tools.values_list("name", flat=True))
        reads = sorted(n for n in names if n.startswith("get_") and not n.endswith("_views"))
        if reads and not logs and plain is None:
            plain = (record, reads[0])
        if reads and "request_logs" in logs and logged is None:
            logged = (record, reads[0])
    cases = {"sqlite get_book": (bookstore, "get_book", {"book_id": 1})}
    for label, found in (("json", plain), ("json + log", logged)):
        if found is None:
            continue
        record, tool = found
        verdicts = (record.verification_report or {}).get("verdicts") or []
        example = next(v["example"] for v in verdicts if v["name"] == tool)  # a verified call
        cases[f"{label} {tool}"] = (record, tool, example)
    episodes = {}
    for label, (record, tool, arguments) in cases.items():
        created = client.post("/api/episodes/", {"environment": record.pk}, format="json")
        assert created.status_code == 201, created.content
        episodes[label] = created.json()["episode"]
        for _ in range(10):  # warm: the worker has loaded the package
            client.post(
                f"/api/episodes/{episodes[label]}/call/",
                {"tool": tool, "arguments": arguments},
                format="json",
            )
    timings: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(calls):
        for label, (_record, tool, arguments) in cases.items():
            started = time.perf_counter()
            answer = client.post(
                f"/api/episodes/{episodes[label]}/call/",
                {"tool": tool, "arguments": arguments},
                format="json",
            )
            timings[label].append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200 and answer.json().get("ok"), answer.content
    episode_service().shutdown()
    result = {}
    for label, values in timings.items():
        mean, low, high = bootstrap(values)
        result[label] = {
            "median": statistics.median(values),
            "p95": percentile(values, 0.95),
            "mean": mean,
            "low": low,
            "high": high,
        }
    return result


def question_scores() -> dict[str, tuple[float, float, float]]:
    """Gold replay and no-op rewards over every imported question."""
    from environments.package import load_package
    from environments.runtime import SandboxPool
    from tasks.models import Task
    from tasks.records import spec_from_task
    from tasks.reward import score
    from tasks.synthesis.replay import replay_gold, run_calls

    gold, nothing = [], []
    tasks = Task.objects.filter(environment__origin="agent_world").select_related("environment")
    with SandboxPool(workers=1) as pool:
        for task in tasks:
            spec = spec_from_task(task)
            package = load_package(task.environment.package_path)
            gold.append(score(spec, replay_gold(spec, pool, package)).total)
            nothing.append(score(spec, run_calls(pool, package, [], None)).total)
    return {"gold": bootstrap(gold), "no-op": bootstrap(nothing), "tasks": len(gold)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--environments", type=int, default=60)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--keep", default="", help="keep the release and scratch state here")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="aw-import-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    release = write_release(work / "release", args.environments, args.seed)
    planted = Counter(
        kind
        for row in json.loads((release / "index.json").read_text("utf-8"))
        for kind in row["broken"]
    )
    generated = time.perf_counter() - started
    wall, output = import_release(release, work)

    scratch = scratch_env(work)
    os.environ.clear()  # this process reads the scratch state now
    os.environ.update(scratch)
    import django

    django.setup()
    figures = build_figures()
    overhead = call_overhead(args.calls, work)
    scores = question_scores()

    per_env = figures["job_seconds"]
    print(
        f"release: {args.environments} environments (seed {args.seed}), generated in {generated:.1f} s"
    )
    summary = [line.strip() for line in output.splitlines() if line.strip().startswith(
        ("published", "rejected"))]  # fmt: skip
    for line in summary:
        print(f"  the command: {line[:200]}")
    print(
        f"import: {wall:.1f} s for the release ({wall / args.environments:.2f} s per environment); "
        f"per build job: median {statistics.median(per_env):.2f} s, p95 "
        f"{percentile(per_env, 0.95):.2f} s, max {max(per_env):.2f} s"
    )
    envs = figures["environments"]
    print(f"environments: {envs['published']} published, rejected {dict(envs['rejected'])}")
    rejected = figures["rejected"]
    print(
        f"tools: {figures['verified']} verified, {sum(rejected.values())} rejected: "
        + ", ".join(f"{n} {why}" for why, n in rejected.items())
    )
    print("  planted broken tools: " + ", ".join(f"{n} {k}" for k, n in sorted(planted.items())))
    asked = figures["questions"]
    print(
        f"questions: {asked.get('imported', 0)} of {asked.get('questions', 0)} imported as "
        "held-out tasks; kept out: "
        + ", ".join(f"{n} {why}" for why, n in figures["kept_out"].items())
    )
    print(f"call overhead through the episode API ({args.calls} calls each, ms per call):")
    for label, row in overhead.items():
        print(
            f"  {label:<40} median {row['median']:.2f}  p95 {row['p95']:.2f}  "
            f"mean {row['mean']:.2f} [{row['low']:.2f}, {row['high']:.2f}]"
        )
    for name in ("gold", "no-op"):
        mean, low, high = scores[name]
        print(
            f"{name} reward over {scores['tasks']} imported questions: {mean:.3f} [{low:.3f}, {high:.3f}]"
        )
    print(f"scratch state: {work}")


if __name__ == "__main__":
    main()
