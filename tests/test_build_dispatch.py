"""One reading of a build submission: the REST API and the console's New environment form refuse
the same bad submission with the same message, and queue nothing."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from aw_site.models import Job
from environments.builder.dispatch import (
    NO_ORIGIN,
    SOURCE_AND_FILE,
    TWO_ORIGINS,
    CatalogueRequest,
    request_from_submission,
)
from environments.builder.request import BuildRequest, BuildRequestError, Origin

URL = "/api/environments/build/"
BOOKS_CSV = b"isbn,title,year\n1,Alpha,1999\n2,Beta,2003\n3,Gamma,2010\n"


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    return settings.STORAGE_ROOT


def books() -> SimpleUploadedFile:
    return SimpleUploadedFile("books.csv", BOOKS_CSV)


BAD_SUBMISSIONS = {
    "a source and a file": (lambda: {"source": "iris", "file": books()}, SOURCE_AND_FILE),
    "two origins": (lambda: {"source": "iris", "mcp": "https://example.org/mcp"}, TWO_ORIGINS),
    "nothing to build": (lambda: {"name": "x"}, NO_ORIGIN),
    "unknown source": (lambda: {"source": "atlantis"}, "unknown source 'atlantis'"),
    "bad category": (
        lambda: {"source": "iris", "category": "Nowhere/Nothing"},
        "not in the taxonomy",
    ),
    "bad name": (lambda: {"file": books(), "name": "Bad Name!"}, "name 'Bad Name!'"),
    "unsupported file": (lambda: {"file": SimpleUploadedFile("x.exe", b"MZ")}, "unsupported"),
    "no such theme": (lambda: {"theme": "999999"}, "no theme with id 999999"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_SUBMISSIONS))
def test_the_api_and_the_console_refuse_alike(reviewer_api, client, reviewer, storage, case):
    submission, words = BAD_SUBMISSIONS[case]
    api = reviewer_api.post(URL, submission(), format="multipart")
    client.force_login(reviewer)
    console = client.post(reverse("environment-new"), submission())
    assert api.status_code == 400 and console.status_code == 400, (api.content, console.status_code)
    message = api.json()["error"]
    assert words in message
    assert console.context["error"] == message
    assert not Job.objects.exists()
    uploads = storage / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())  # a refused upload is removed


@pytest.mark.django_db
def test_a_submission_becomes_a_typed_request(storage):
    request = request_from_submission(
        {"source": "iris", "name": "my_iris", "options": '{"min_tools": 3}'}, {}
    )
    assert isinstance(request, BuildRequest) and request.origin == Origin.SOURCE
    assert request.name == "my_iris" and request.options.min_tools == 3
    bulk = request_from_submission({"sources": ["iris", "wheat"]}, {})
    assert bulk == CatalogueRequest(("iris", "wheat"), 2)
    with pytest.raises(BuildRequestError, match="at most 60 characters"):
        request_from_submission({"source": "iris", "name": "n" * 61}, {})
    with pytest.raises(BuildRequestError, match="give the build as a JSON object"):
        request_from_submission([None, None], {})  # a JSON body that is a list


@pytest.mark.django_db
def test_a_build_body_that_is_not_an_object_is_refused_in_words(reviewer_api):
    response = reviewer_api.post(URL, [None, None], format="json")
    assert response.status_code == 400
    assert "give the build as a JSON object" in response.json()["error"]


def test_a_queued_request_comes_back_as_it_was_validated():
    request = BuildRequest.for_source("iris", name="my_iris", options={"rows": 20})
    assert BuildRequest.from_dict(request.as_dict()) == request


@pytest.mark.django_db
def test_a_theme_build_builds_that_theme_whatever_else_is_sent(reviewer_api, client, reviewer):
    from environments.models import Theme

    theme = Theme.objects.create(name="library", title="Library", source_kind=Theme.SourceKind.PRD)
    sent = {"sources": ["iris"], "source": "iris", "mcp": "npx x", "title": "My library"}
    api = reviewer_api.post(f"/api/themes/{theme.pk}/build/", sent, format="json")
    assert api.status_code == 202, api.content
    client.force_login(reviewer)
    console = client.post(reverse("theme-build", args=[theme.pk]), {"title": "My library"})
    assert console.status_code == 302
    jobs = list(Job.objects.order_by("pk"))
    assert [job.kind for job in jobs] == ["environments.build", "environments.build"]
    for job in jobs:
        assert job.arguments["theme"] == theme.pk and job.arguments["title"] == "My library"
        assert not job.arguments.get("source") and not job.arguments.get("mcp")
