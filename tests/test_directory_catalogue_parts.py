"""A document past AW_THEME_MAX_TOOLS in a catalogue run: each of its parts is a ledger item with
a build job of its own, queued in the run's window; a part that fails leaves its siblings be and
the document ends once every part has; a rerun builds only the failed part, a third nothing.

The environment pipeline is replaced by a stand-in that files one environment per part (the real
build of a part is exercised in test_directory_catalogue.py), so the 500-operation document of
test_theme_split.py runs its 18 parts through the ledger and the jobs in seconds."""

from __future__ import annotations

import json
import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from aw_site.models import Job
from environments.directory import ledger
from environments.directory.build import theme_sha256
from environments.directory.documents import document_themes
from environments.jobs import next_version
from environments.management.commands.build_catalogue import Command as BuildCatalogue
from environments.models import CatalogueItem, CatalogueRun, Environment, Theme
from tests.support import directory_documents as docs
from tests.test_theme_split import big_document

ITEM_JOB = "environments.build_directory_item"
BIG = "shop.example/2.1/openapi.json"
BROKEN_PART = "staff/employees"  # its build raises: no stage put it into words
REFUSED_PART = "status, webhooks"  # its build is rejected with a reason


class StandInBuild:
    """`run_build` for a part's theme: an environment verified (or rejected) at once; records
    what it built and the most build jobs of the run it saw live together."""

    def __init__(self) -> None:
        self.built: list[str] = []
        self.most_live = 0
        self.broken = {BROKEN_PART}
        self.refused = {REFUSED_PART}
        self.lock = threading.Lock()

    def __call__(self, ctx, request) -> dict:
        theme = Theme.objects.get(pk=request.theme)
        label = (theme.provenance.get("family") or {}).get("label", theme.name)
        with self.lock:
            self.built.append(label)
            run = CatalogueRun.objects.latest("pk")
            self.most_live = max(self.most_live, ledger.live_jobs(run))
        if label in self.broken:
            raise RuntimeError("the sandbox fell over")
        refused = label in self.refused
        environment = Environment.objects.create(
            name=theme.name[:120],
            version=next_version(theme.name[:120]),  # past a rejected one of a retried part
            title=theme.title,
            theme=theme,
            status=Environment.Status.REJECTED if refused else Environment.Status.VERIFIED,
            failure_reason="verify stage failed: 1 of 16 tools verified" if refused else "",
            tool_count=0 if refused else len(theme.raw_spec.get("tools") or []),
        )
        return {"environment": environment.pk}


@pytest.fixture
def stand_in(settings, tmp_path, monkeypatch):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    monkeypatch.setenv("AW_CATALOGUE_WINDOW", "3")
    build = StandInBuild()
    monkeypatch.setattr("environments.jobs.run_build", build)
    return build


@pytest.fixture
def directory(tmp_path):
    root = tmp_path / "directory"
    for key, document in ((BIG, big_document()), (docs.MUSIC, docs.music_catalogue())):
        (root / "api" / key).parent.mkdir(parents=True, exist_ok=True)
        (root / "api" / key).write_text(json.dumps(document))
    return root


def build_catalogue(directory, **options) -> str:
    out = StringIO()
    call_command(
        "build_catalogue", openapi_directory=str(directory), tasks=0, stdout=out, **options
    )
    return out.getvalue()


def parts_of(document: CatalogueItem) -> dict[str, CatalogueItem]:
    return {p.part: p for p in CatalogueItem.objects.filter(document=document)}


@pytest.mark.django_db(transaction=True)
def test_a_big_documents_parts_are_built_by_jobs_of_their_own_and_resume_part_by_part(
    stand_in, directory, client, viewer
):
    themes = document_themes(big_document(), BIG)
    labels = [t["provenance"]["family"]["label"] for t in themes]
    assert len(labels) == 18 and BROKEN_PART in labels and REFUSED_PART in labels

    text = build_catalogue(directory)
    assert "parts: published 16, rejected 1, failed 1, remaining 0" in text
    document = CatalogueItem.objects.get(key=BIG)
    parts = parts_of(document)
    assert set(parts) == set(labels) and document.parts == 18
    for theme, label in zip(themes, labels, strict=True):  # key: path + label, the part's hash
        assert (parts[label].key, parts[label].sha256) == (f"{BIG}#{label}", theme_sha256(theme))
    jobs = [p.job for p in parts.values()]
    assert all(j.kind == ITEM_JOB and j.arguments == {"item": p.pk}
               for j, p in zip(jobs, parts.values(), strict=True))  # fmt: skip
    assert len({j.pk for j in jobs}) == 18 and document.job_id is None
    assert stand_in.most_live <= 3  # the run's window holds parts as it holds documents
    assert len(stand_in.built) == 19  # every part once, and the small document whole
    assert sorted(b for b in stand_in.built if b in labels) == sorted(labels)

    # the broken part failed alone; its siblings were built and the document waits for a rerun
    assert parts[BROKEN_PART].state == CatalogueItem.State.FAILED
    assert "the sandbox fell over" in parts[BROKEN_PART].reason
    assert parts[REFUSED_PART].state == CatalogueItem.State.REJECTED
    published = [p for p in parts.values() if p.state == CatalogueItem.State.PUBLISHED]
    assert len(published) == 16
    assert document.state == CatalogueItem.State.FAILED
    assert document.reason.startswith(f"1 of 18 parts failed; {BROKEN_PART}: unexpected")
    music = CatalogueItem.objects.get(key=docs.MUSIC)
    assert music.state == CatalogueItem.State.PUBLISHED and music.parts == 0
    assert not CatalogueItem.objects.filter(document=music).exists()

    summary = ledger.run_summary(document.run)
    assert summary.part_counts["published"] == 16 and summary.part_counts["rejected"] == 1
    assert summary.part_counts["failed"] == 1 and summary.part_remaining == 0
    assert ("verify stage failed: N of N tools verified", 1) in summary.part_top_reasons
    assert summary.counts["published"] == 1 and summary.counts["failed"] == 1
    assert summary.remaining == 0 and summary.environments_published == 17
    assert summary.verified_tools == sum(p.verified_tools for p in published) + music.verified_tools
    client.force_login(viewer)
    page = client.get(reverse("catalogue-run", args=[document.run_id])).content.decode()
    assert 'data-part-count="published">16<' in page and 'data-part-count="failed">1<' in page
    assert "Parts rejected, by reason" in page and "(18 parts)" in page

    # the rerun takes the failed document and builds its failed part, nothing else
    stand_in.broken, stand_in.built = set(), []
    themes_before, jobs_before = Theme.objects.count(), Job.objects.filter(kind=ITEM_JOB).count()
    build_catalogue(directory)
    assert stand_in.built == [BROKEN_PART]
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs_before + 2  # the document, the part
    assert Theme.objects.count() == themes_before  # the part's stored theme is reused
    document.refresh_from_db()
    assert document.state == CatalogueItem.State.PUBLISHED, document.reason
    assert len(document.environments) == 18
    assert document.verified_tools == sum(
        Environment.objects.filter(
            pk__in=document.environments, status=Environment.Status.VERIFIED
        ).values_list("tool_count", flat=True)
    )
    assert CatalogueItem.objects.filter(document=document).count() == 18

    # a third run builds nothing at all
    stand_in.built = []
    jobs_before = Job.objects.filter(kind=ITEM_JOB).count()
    text = build_catalogue(directory)
    assert stand_in.built == [] and "earlier runs 2" in text
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs_before


@pytest.mark.django_db(transaction=True)
def test_a_run_killed_while_parts_build_resumes_the_parts_left(stand_in, directory):
    """Some parts built, the others left queued or building by a process that is gone: the next
    run builds only those, and the document ends once they are."""
    build_catalogue(directory)
    document = CatalogueItem.objects.get(key=BIG)
    parts = parts_of(document)
    left = [parts[BROKEN_PART], parts["orders/quotes"], parts["logistics/warehouses"]]
    gone = Job.objects.create(kind=ITEM_JOB, queue="sandbox", state=Job.State.FAILED)
    for part in left:  # as a killed run leaves them
        Environment.objects.filter(pk__in=part.environments).delete()
        CatalogueItem.objects.filter(pk=part.pk).update(
            state=CatalogueItem.State.QUEUED, environments=[], job=gone, verified_tools=0
        )
    CatalogueItem.objects.filter(pk=document.pk).update(
        state=CatalogueItem.State.BUILDING, environments=[], verified_tools=0
    )
    stand_in.broken, stand_in.built = set(), []
    jobs_before = Job.objects.filter(kind=ITEM_JOB).count()
    build_catalogue(directory)
    assert sorted(stand_in.built) == sorted(p.part for p in left)
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs_before + 1 + len(left)
    document.refresh_from_db()
    assert document.state == CatalogueItem.State.PUBLISHED
    assert len(document.environments) == 18
    assert CatalogueItem.objects.filter(document=document).count() == 18


@pytest.mark.django_db(transaction=True)
def test_retry_rejected_builds_only_the_rejected_part_of_a_published_document(
    stand_in, directory, client, viewer
):
    """A big document published with one part rejected: --retry-rejected builds that part
    again and nothing else (no published part, not the small document); the document and the
    part get new rows in the retrying run, their old rows kept as history, superseded."""
    stand_in.broken = set()
    build_catalogue(directory)
    first = CatalogueRun.objects.get()
    document = CatalogueItem.objects.get(key=BIG)
    assert document.state == CatalogueItem.State.PUBLISHED
    refused = parts_of(document)[REFUSED_PART]
    assert refused.state == CatalogueItem.State.REJECTED
    jobs_before = Job.objects.filter(kind=ITEM_JOB).count()

    stand_in.refused, stand_in.built = set(), []
    text = build_catalogue(directory, retry_rejected=True)
    assert stand_in.built == [REFUSED_PART]
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs_before + 2  # the document, the part
    assert "earlier runs 1; retried 1 (and 1 parts)" in text
    second = CatalogueRun.objects.latest("pk")
    retried = CatalogueItem.objects.get(key=BIG, superseded=False)
    assert retried.run == second and retried.retries == CatalogueItem.State.PUBLISHED
    assert retried.state == CatalogueItem.State.PUBLISHED and len(retried.environments) == 18
    parts = parts_of(retried)
    assert len(parts) == 18 and all(not p.superseded for p in parts.values())
    assert all(p.state == CatalogueItem.State.PUBLISHED for p in parts.values())
    again = parts[REFUSED_PART]
    assert again.pk != refused.pk and again.run == second
    assert again.retries == CatalogueItem.State.REJECTED
    assert all(p.run == first for label, p in parts.items() if label != REFUSED_PART)
    for row in (document, refused):  # history: the outcome the first run recorded
        old = CatalogueItem.objects.get(pk=row.pk)
        assert old.superseded and old.run == first and old.state == row.state

    now, then = ledger.run_summary(second), ledger.run_summary(first)
    assert (now.counts["published"], now.part_counts["published"]) == (1, 1)
    assert (now.retried, now.part_retried, now.done_before) == (1, 1, 1)
    assert (then.counts["published"], then.superseded) == (1, 1)  # the music catalogue
    assert (then.part_counts["published"], then.part_counts["rejected"]) == (17, 0)
    assert then.part_superseded == 1 and then.part_top_reasons == []
    client.force_login(viewer)
    page = client.get(reverse("catalogue-run", args=[first.pk])).content.decode()
    assert 'data-count="superseded">1<' in page and "(built again by a later run)" in page
    page = client.get(reverse("catalogue-run", args=[second.pk])).content.decode()
    assert 'data-count="retried">1<' in page and 'data-part-count="retried">1<' in page
    assert "(retry of published)" in page

    # nothing is rejected any more: a run retrying rejections builds nothing
    stand_in.built = []
    jobs_before = Job.objects.filter(kind=ITEM_JOB).count()
    text = build_catalogue(directory, retry_rejected=True)
    assert stand_in.built == [] and "earlier runs 2; retried 0" in text
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs_before


@pytest.mark.django_db
def test_waiting_parts_of_a_huge_document_take_turns_with_the_documents_after_it():
    """`top_up` gives places by turn: a document takes turn 1, a part of a split one the turn
    after its siblings already given a place. A document of many parts listed early (its key
    sorts first) takes one place at a time, never every place that frees in a row."""
    run = CatalogueRun.objects.create(source="/srv/api", listed=4)
    Item = CatalogueItem.State
    split_documents = {"run": run, "state": Item.BUILDING}  # as `split_document` leaves them
    huge = CatalogueItem.objects.create(key="a.example/graph.json", sha256="a", parts=6,
                                        **split_documents)  # fmt: skip
    split = CatalogueItem.objects.create(key="b.example/big.json", sha256="b", parts=2,
                                         **split_documents)  # fmt: skip
    for document, labels in ((huge, "abcdef"), (split, "xy")):
        for label in labels:
            CatalogueItem.objects.create(
                run=run,
                key=ledger.part_key(document.key, label),
                sha256=f"{document.sha256}{label}",
                part=label,
                document=document,
                state=Item.QUEUED,
            )
    for key in ("c.example/one.json", "d.example/two.json"):
        CatalogueItem.objects.create(run=run, key=key, sha256=key, state=Item.QUEUED)

    def queue_item(item):
        return Job.objects.create(kind=ITEM_JOB, queue="sandbox", arguments={"item": item.pk})

    def keys(pks):
        return [CatalogueItem.objects.get(pk=pk).key.split("/")[-1] for pk in pks]

    building = ledger.top_up(run.pk, queue_item, limit=2)
    order = keys(building)
    while building:  # the oldest build ends, one place frees
        done = building.pop(0)
        item = CatalogueItem.objects.get(pk=done)
        Job.objects.filter(pk=item.job_id).update(state=Job.State.SUCCEEDED)
        CatalogueItem.objects.filter(pk=done).update(state=Item.PUBLISHED)
        given = ledger.top_up(run.pk, queue_item, limit=2)
        building += given
        order += keys(given)
    assert order == [
        "graph.json#a", "big.json#x", "one.json", "two.json", "graph.json#b", "big.json#y",
        "graph.json#c", "graph.json#d", "graph.json#e", "graph.json#f",
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_run_says_which_published_environments_ended_below_the_task_goal_and_why(client, viewer):
    """Every published environment is to get its goal tasks: the run counts those whose
    synthesis ended with fewer, by the reason its account gives, on the console and in the
    summary the CLI and the API print: each by its newest goal-tier synthesis, and not while
    that one is still to run."""
    run = CatalogueRun.objects.create(source="/srv/api", listed=1, tasks_per_environment=5)
    no_start = (
        "walk could not start: no read tool can be called with values from the data: "
        "'Inputs_Get' found nothing"
    )
    goal = {"tier": "goal"}
    cases = [  # (tasks kept, [(synthesis job state, its result, its error, its arguments)])
        (5, [(Job.State.SUCCEEDED, {"discarded": {"walk shorter than planned": 3}}, "", goal)]),
        (0, [(Job.State.SUCCEEDED, {"discarded": {no_start: 300, "walk shorter than planned": 2}},
              "", goal)]),
        (2, [(Job.State.SUCCEEDED, {"discarded": {"walk shorter than planned": 10},
                                    "audit": {"discarded": {"surrogate_id_naming": 40}}}, "", goal),
             (Job.State.SUCCEEDED, {}, "", {"tier": "explicit"})]),  # another tier: not the goal's
        (1, [(Job.State.FAILED, {}, "the sandbox died", goal)]),
        (0, [(Job.State.QUEUED, {}, "", goal)]),
        (0, [(Job.State.FAILED, {}, "lost", goal), (Job.State.QUEUED, {}, "", goal)]),  # retried
        (3, [(Job.State.FAILED, {}, "lost", goal),
             (Job.State.SUCCEEDED, {"discarded": {"walk shorter than planned": 9}}, "", goal)]),
    ]  # fmt: skip
    environments = []
    for index, (tasks, jobs) in enumerate(cases):
        environment = Environment.objects.create(
            name=f"api_{index}", version=1, title=f"API {index}", task_count=tasks,
            status=Environment.Status.VERIFIED, tool_count=4,
        )  # fmt: skip
        for state, result, error, arguments in jobs:
            Job.objects.create(kind="tasks.synthesize", queue="sandbox", state=state,
                               result=result, error=error, arguments=arguments,
                               target=f"environment:{environment.pk}")  # fmt: skip
        environments.append(environment.pk)
    CatalogueItem.objects.create(run=run, key="a.example/api.json", sha256="a",
                                 state=CatalogueItem.State.PUBLISHED, environments=environments)  # fmt: skip
    summary = ledger.run_summary(run)
    assert summary.tasks_goal == 5 and summary.short_of_tasks == 4
    reasons = dict(summary.short_reasons)
    assert reasons == {
        "walk could not start: no read tool can be called with values from the data: … found "
        "nothing": 1,
        "the audit's surrogate_id_naming check discarded them": 1,
        "the task synthesis failed: the sandbox died": 1,
        "walk shorter than planned": 1,  # its retry ended: counted once, by the retry
    }
    assert summary.as_dict()["short_reasons"][0]["count"] == 1
    client.force_login(viewer)
    page = client.get(reverse("catalogue-run", args=[run.pk])).content.decode()
    assert 'data-count="short_of_tasks">4<' in page
    assert "the audit&#x27;s surrogate_id_naming check discarded them" in page
    out = StringIO()
    BuildCatalogue(stdout=out).report(summary)
    printed = out.getvalue()
    assert "4 published environments ended with fewer than 5 goal tasks:" in printed
    assert "    1  the task synthesis failed: the sandbox died" in printed
