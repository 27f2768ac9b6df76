"""One build entry point: uploads and built-in sources through the REST API, the CLI and the
console all run the `environments.build` job; bad input is refused before any job; a failed
build leaves a REJECTED row naming the stage and no package, upload or temp file."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from aw_site.models import Job
from environments.builder import stages
from environments.models import Environment
from tests.support.worker import celery_worker, redis_available, wait_for

URL = "/api/environments/build/"

BOOKS_CSV = b"""isbn,title,author,year,genre,price
9780000000001,Alpha,Ann Lee,1999,fiction,12.5
9780000000002,Beta,Bob Ray,2003,science,20.0
9780000000003,Gamma,Cal Doe,2010,fiction,8.75
9780000000004,Delta,Ann Lee,2015,history,15.0
9780000000005,Epsilon,Dan Fox,2020,science,30.25
9780000000006,Zeta,Eve Kim,2001,history,11.0
"""

PLANETS_JSON = json.dumps(
    [
        {"code": "MER", "name": "Mercury", "moons": 0, "type": "rocky", "au": 0.39},
        {"code": "VEN", "name": "Venus", "moons": 0, "type": "rocky", "au": 0.72},
        {"code": "EAR", "name": "Earth", "moons": 1, "type": "rocky", "au": 1.0},
        {"code": "MAR", "name": "Mars", "moons": 2, "type": "rocky", "au": 1.52},
        {"code": "JUP", "name": "Jupiter", "moons": 95, "type": "giant", "au": 5.2},
        {"code": "SAT", "name": "Saturn", "moons": 146, "type": "giant", "au": 9.58},
    ]
).encode()

SHOP_SQL = b"""
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
INSERT INTO customers VALUES (1, 'Ada', 'Leeds'), (2, 'Bo', 'York'), (3, 'Cy', 'Leeds'),
  (4, 'Di', 'Bath');
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  total REAL,
  status TEXT
);
INSERT INTO orders VALUES (1, 1, 10.5, 'open'), (2, 1, 22.0, 'shipped'), (3, 2, 7.25, 'open'),
  (4, 3, 99.0, 'shipped'), (5, 4, 5.0, 'cancelled'), (6, 2, 12.0, 'open');
"""

UPLOADS = {
    "csv": ("books.csv", BOOKS_CSV, "Reference & Standards/Encyclopedic Data/Books"),
    "json": ("planets.json", PLANETS_JSON, "Science & Research/Physics & Astronomy/Planets"),
    "sql": ("shop.sql", SHOP_SQL, "E-commerce & Retail/Orders & Shopping/Shop"),
}


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


def upload(client, filename: str, content: bytes, **fields):
    data = {"file": SimpleUploadedFile(filename, content), **fields}
    return client.post(URL, data, format="multipart")


def finished(job_id: int, timeout: float = 120) -> Job:
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=timeout, message="build")
    return Job.objects.get(pk=job_id)


def leftovers(storage: Path) -> list[str]:
    """Anything a build leaves under uploads/ (there should be nothing)."""
    root = storage / "uploads"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def assert_verified_with_yield(environment: Environment) -> None:
    assert environment.status == "verified", environment.failure_reason
    assert environment.tool_count >= 5
    assert environment.tools.filter(verified=True).count() == environment.tool_count
    assert set(environment.build_yield) == set(stages.STAGES)  # jsonb keeps no key order
    assert environment.build_yield["ingest"]["rows"] == environment.row_count > 0
    assert environment.build_yield["verify"]["verified"] == environment.tool_count
    assert environment.build_yield["tools"]["generated"] >= environment.tool_count
    assert environment.origin in ("built-in source", "upload")  # the catalogue filters on it
    assert Path(environment.package_path, "state.sqlite").is_file()


# --- REST API -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", list(UPLOADS))
def test_an_uploaded_file_becomes_a_verified_environment(reviewer_api, storage, kind):
    filename, content, category = UPLOADS[kind]
    response = upload(reviewer_api, filename, content, category=category, title=f"My {kind}")
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.kind == "environments.build" and job.queue == "sandbox"
    assert job.state == "succeeded", job.error
    environment = Environment.objects.get(pk=job.result["environment"])
    assert environment.name == Path(filename).stem and environment.title == f"My {kind}"
    assert environment.category.path.replace(" > ", "/") == category
    assert_verified_with_yield(environment)
    if kind == "sql":
        assert environment.build_yield["schema"]["foreign_keys"] == [
            "orders.customer_id -> customers.id"
        ]
    assert leftovers(storage) == []
    detail = reviewer_api.get(f"/api/environments/{environment.pk}/").json()
    assert detail["build_yield"]["publish"]["tools"] == environment.tool_count


@pytest.mark.django_db(transaction=True)
def test_a_built_in_source_builds_through_the_same_job(reviewer_api, storage):
    response = reviewer_api.post(URL, {"source": "iris", "name": "my_iris"}, format="json")
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.kind == "environments.build" and job.state == "succeeded", job.error
    environment = Environment.objects.get(name="my_iris")
    assert environment.category.primary().name == "Science & Research"
    assert_verified_with_yield(environment)


@pytest.mark.django_db(transaction=True)
def test_the_bulk_form_still_fans_out(reviewer_api, storage):
    response = reviewer_api.post(URL, {"sources": ["wheat"]}, format="json")
    assert response.status_code == 202, response.content
    parent = finished(response.json()["id"])
    assert parent.kind == "environments.build_catalogue" and parent.state == "succeeded"
    (child,) = parent.result["jobs"]
    assert finished(child).state == "succeeded"
    assert Environment.objects.get(name="wheat").status == "verified"


def _json(client, body):
    return client.post(URL, body, format="json")


REFUSALS = {
    "unknown source": (lambda c: _json(c, {"source": "atlantis"}), "unknown source 'atlantis'"),
    "unknown bulk source": (lambda c: _json(c, {"sources": ["iris", "atlantis"]}), "atlantis"),
    "unsupported type": (lambda c: upload(c, "setup.exe", b"MZ\x90\x00"), "unsupported file type"),
    "empty file": (lambda c: upload(c, "empty.csv", b""), "empty"),
    "oversized file": (lambda c: upload(c, "big.csv", BOOKS_CSV * 4), "too large"),
    "oversized body": (lambda c: upload(c, "huge.csv", b"a,b\n" + b"1,2\n" * 40_000), "too large"),
    "header only": (lambda c: upload(c, "header.csv", b"id,name,city\n"), "no rows"),
    "no file": (lambda c: c.post(URL, {"name": "x"}, format="multipart"), "no file"),
    "bad category": (
        lambda c: upload(c, "books.csv", BOOKS_CSV, category="Nowhere/Nothing"),
        "not in the taxonomy",
    ),
    "bad name": (lambda c: upload(c, "books.csv", BOOKS_CSV, name="Bad Name!"), "name"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(REFUSALS))
def test_bad_requests_are_refused_before_any_job(reviewer_api, storage, settings, case):
    settings.AW_MAX_UPLOAD_BYTES = len(BOOKS_CSV) * 2
    send, words = REFUSALS[case]
    response = send(reviewer_api)
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert words.lower() in response.json()["error"].lower(), response.json()
    assert not Job.objects.exists() and not Environment.objects.exists()
    assert leftovers(storage) == []


@pytest.mark.django_db
def test_viewers_cannot_build(viewer_api, storage):
    response = upload(viewer_api, "books.csv", BOOKS_CSV)
    assert response.status_code == 403 and "reviewer role" in response.json()["error"]
    assert not Job.objects.exists() and leftovers(storage) == []


@pytest.mark.django_db(transaction=True)
def test_a_build_failing_at_publish_leaves_a_rejected_row_and_nothing_else(
    reviewer_api, storage, monkeypatch
):
    real_publish = stages.publish_package

    def publish_then_break(root, spec, *args, **kwargs):
        real_publish(root, spec, *args, **kwargs)  # the package is on disk ...
        raise OSError("disk full")  # ... but the stage fails before it is recorded

    monkeypatch.setattr(stages, "publish_package", publish_then_break)
    response = upload(reviewer_api, "books.csv", BOOKS_CSV)
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.state == "failed" and "publish stage failed" in job.error
    environment = Environment.objects.get(name="books")
    assert environment.status == "rejected"
    assert environment.failure_reason.startswith("publish stage failed: OSError: disk full")
    assert environment.build_yield["verify"]["passed"] is True  # what survived before publish
    assert not any((storage / "environments" / "books").glob("v*"))
    assert not any((storage / "environments" / "books").glob(".v*"))  # no staging directory
    assert leftovers(storage) == []


@pytest.mark.django_db(transaction=True)
def test_a_build_whose_tools_do_not_verify_is_rejected_at_the_verify_stage(reviewer_api, storage):
    body = {"source": "wheat", "name": "strict_wheat", "options": {"min_tools": 500}}
    response = reviewer_api.post(URL, body, format="json")
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.state == "failed" and "verify stage failed" in job.error
    environment = Environment.objects.get(name="strict_wheat")
    assert environment.status == "rejected"
    assert environment.failure_reason.startswith("verify stage failed")
    assert "needs at least 500" in environment.failure_reason
    assert environment.build_yield["verify"]["passed"] is False
    assert environment.origin == "built-in source"  # rejected builds keep theirs too
    assert "publish" not in environment.build_yield
    assert not (storage / "environments" / "strict_wheat").exists()


# --- CLI ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", list(UPLOADS))
def test_the_cli_builds_a_file(storage, tmp_path, kind):
    filename, content, category = UPLOADS[kind]
    path = tmp_path / filename
    path.write_bytes(content)
    out = StringIO()
    call_command(
        "build_environment",
        file=str(path),
        name=f"cli_{kind}",
        category=category,
        stdout=out,
    )
    text = out.getvalue()
    assert "queued" in text and "% " in text and f"built cli_{kind}@v1" in text
    assert_verified_with_yield(Environment.objects.get(name=f"cli_{kind}"))
    assert path.read_bytes() == content  # the original is never removed
    assert leftovers(storage) == []


@pytest.mark.django_db(transaction=True)
def test_the_cli_builds_a_source_and_fails_with_the_reason(storage, tmp_path):
    out = StringIO()
    call_command("build_environment", source="wheat", stdout=out)
    assert "built wheat@v1" in out.getvalue()
    with pytest.raises(CommandError, match="unknown source 'atlantis'"):
        call_command("build_environment", source="atlantis", stdout=StringIO())
    bad = tmp_path / "header.csv"
    bad.write_bytes(b"id,name\n")
    with pytest.raises(CommandError, match="no rows"):
        call_command("build_environment", file=str(bad), stdout=StringIO())
    assert not Job.objects.filter(arguments__name="header").exists()
    assert leftovers(storage) == []


@pytest.mark.django_db(transaction=True)
def test_the_cli_reports_a_later_stage_failure(storage, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("sandbox unavailable")

    monkeypatch.setattr(stages, "verify_tools", broken)
    path = tmp_path / "books.csv"
    path.write_bytes(BOOKS_CSV)
    with pytest.raises(CommandError, match="verify stage failed: RuntimeError: sandbox"):
        call_command("build_environment", file=str(path), stdout=StringIO())
    assert Environment.objects.get(name="books").status == "rejected"
    assert leftovers(storage) == []


# --- console --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_viewers_get_403_and_no_button(client, viewer, storage):
    client.force_login(viewer)
    assert client.get(reverse("environment-new")).status_code == 403
    data = {"file": SimpleUploadedFile("books.csv", BOOKS_CSV)}
    assert client.post(reverse("environment-new"), data).status_code == 403
    assert "New environment" not in client.get(reverse("catalogue")).content.decode()
    assert not Job.objects.exists() and leftovers(storage) == []


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_builds_from_the_console(client, reviewer, storage):
    client.force_login(reviewer)
    assert "new-environment-button" in client.get(reverse("catalogue")).content.decode()
    page = client.get(reverse("environment-new")).content.decode()
    assert 'enctype="multipart/form-data"' in page and 'name="file"' in page
    assert 'value="iris"' in page  # the built-in sources are offered
    refused = client.post(reverse("environment-new"), {"file": SimpleUploadedFile("x.exe", b"MZ")})
    assert refused.status_code == 400 and "unsupported file type" in refused.content.decode()
    response = client.post(
        reverse("environment-new"),
        {"file": SimpleUploadedFile("books.csv", BOOKS_CSV), "title": "Console books"},
    )
    assert response.status_code == 302, response.content[:300]
    job = Job.objects.get(kind="environments.build")
    assert response["Location"] == reverse("environment-build", kwargs={"job": job.pk})
    status_page = client.get(response["Location"]).content.decode()
    assert f"job-{job.pk}-progress" in status_page
    finished(job.pk)
    partial = client.get(reverse("environment-build-progress", kwargs={"job": job.pk}))
    text = partial.content.decode()
    assert partial.status_code == 200 and "succeeded" in text and "hx-trigger" not in text
    environment = Environment.objects.get(name="books")
    assert reverse("environment-detail", args=[environment.pk]) in text
    assert "build-yield" in text and "verified" in text
    detail = client.get(reverse("environment-detail", args=[environment.pk])).content.decode()
    assert "Build yield" in detail and "build-yield" in detail
    assert environment.title == "Console books" and environment.created_by == reviewer


@pytest.mark.django_db(transaction=True)
def test_the_progress_partial_polls_while_the_build_runs(client, reviewer, storage):
    client.force_login(reviewer)
    job = Job.objects.create(
        kind="environments.build", queue="sandbox", arguments={"name": "x"}, state="running"
    )
    partial = client.get(reverse("environment-build-progress", kwargs={"job": job.pk}))
    assert partial.status_code == 200 and "hx-trigger" in partial.content.decode()


# --- a real worker (PostgreSQL + Redis) -----------------------------------------------------


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not redis_available(), reason="Redis is not reachable")
def test_an_upload_builds_on_a_real_celery_worker(reviewer_api, storage, tmp_path):
    with celery_worker(tmp_path, extra_env={"AW_STORAGE_ROOT": str(storage)}) as worker:
        response = upload(reviewer_api, "shop.sql", SHOP_SQL)
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]
        wait_for(
            lambda: Job.objects.get(pk=job_id).is_finished,
            timeout=180,
            message=f"the build\n{worker.log()[-3000:]}",
        )
    job = Job.objects.get(pk=job_id)
    assert job.state == "succeeded", job.error
    assert job.worker.startswith("testworker-")
    assert_verified_with_yield(Environment.objects.get(pk=job.result["environment"]))
    assert leftovers(storage) == []
