"""p50/p95 of the console's main pages over HTTP against a running `./dev run`, e.g. while a
round trains (the first ten minutes: the console must stay usable while the loop runs).

    ./dev run &                                            # or manage.py run_embedded --port 8000
    .venv/bin/python benchmarks/console_latency.py --url http://127.0.0.1:8000 --repeat 20

Signs in through the login form like a browser (session cookie, CSRF), then requests each page
``--repeat`` times in turn and prints p50/p95/max per page; ``--while-training`` first waits until
a training job runs, so the figure is the one under load. Exit status 1 when a page's p95 is over
``--target-ms`` (500).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

PAGES = ["/", "/environments/", "/rounds/", "/rounds/{round}/", "/trajectories/", "/jobs/"]


def sign_in(base: str, username: str, password: str) -> requests.Session:
    session = requests.Session()
    # gunicorn closes an idle keep-alive connection after 2 s: a request racing that close is
    # sent again rather than counted as an error.
    session.mount("http://", HTTPAdapter(max_retries=Retry(total=2, allowed_methods=["GET"])))
    form = session.get(f"{base}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    if token is None:
        raise SystemExit(f"no login form at {base}/accounts/login/ (status {form.status_code})")
    answer = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=30,
    )
    if "/accounts/login/" in answer.url:
        raise SystemExit(f"sign-in as {username} failed at {base}: wrong password?")
    return session


def wait_for_training(session: requests.Session, base: str, seconds: float) -> None:
    """Until the jobs list shows a running training step (or give up after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page = session.get(f"{base}/jobs/?state=running", timeout=30).text
        if "arena.train" in page or "training.train" in page:
            return
        time.sleep(1)
    raise SystemExit(f"no training job ran within {seconds:.0f} s")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", default="admin")
    parser.add_argument("--password", default="agent-world-demo")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--round", type=int, default=1, help="the round page to request")
    parser.add_argument("--target-ms", type=float, default=500.0)
    parser.add_argument("--while-training", action="store_true")
    parser.add_argument("--wait-seconds", type=float, default=900.0)
    args = parser.parse_args()
    base = args.url.rstrip("/")
    session = sign_in(base, args.user, args.password)
    if args.while_training:
        wait_for_training(session, base, args.wait_seconds)
    timings: dict[str, list[float]] = {page.format(round=args.round): [] for page in PAGES}
    for _ in range(args.repeat):
        for path in timings:
            started = time.perf_counter()
            answer = session.get(f"{base}{path}", timeout=60)
            timings[path].append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                print(f"{path}: status {answer.status_code}", file=sys.stderr)
    over = 0
    print(f"{'page':24} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  ({args.repeat} requests each)")
    for path, values in timings.items():
        p95 = percentile(values, 0.95)
        over += p95 > args.target_ms
        print(
            f"{path:24} {statistics.median(values):8.0f} {p95:8.0f} {max(values):8.0f}"
            + ("  over target" if p95 > args.target_ms else "")
        )
    print(f"{len(timings) - over} of {len(timings)} pages with p95 under {args.target_ms:.0f} ms")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
