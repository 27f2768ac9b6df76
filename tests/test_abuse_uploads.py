"""Oversized and malformed request bodies get a clear JSON 4xx and change nothing."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from aw_site.models import Job
from environments.models import Theme
from training.models import Policy

pytestmark = pytest.mark.django_db

IMPORT = "/api/themes/import/"


def snapshot() -> tuple[int, int, int]:
    return Job.objects.count(), Theme.objects.count(), Policy.objects.count()


def post_raw(client, url: str, body, content_type: str = "application/json"):
    return client.generic("POST", url, body, content_type=content_type)


def assert_clear_refusal(response, statuses=(400,), words: str = ""):
    assert response.status_code in statuses, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    error = response.json()["error"]
    assert error and words.lower() in error.lower(), error


def test_body_over_the_upload_limit_is_refused(reviewer_api):
    before = snapshot()
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    documents = [{"name": f"theme-{i}", "description": "x" * 200} for i in range(limit // 200 + 10)]
    body = json.dumps({"documents": documents})
    assert len(body) > limit
    assert_clear_refusal(post_raw(reviewer_api, IMPORT, body), statuses=(413,), words="too large")
    assert snapshot() == before


def test_too_many_documents_are_refused(reviewer_api):
    before = snapshot()
    body = json.dumps({"documents": [{"name": f"t{i}"} for i in range(5001)]})
    assert_clear_refusal(post_raw(reviewer_api, IMPORT, body), words="no more than 5000")
    assert snapshot() == before


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_deeply_nested_json_is_a_parse_error_not_a_crash(reviewer_api, depth):
    before = snapshot()
    body = '{"documents": ' + "[" * depth + "]" * depth + "}"
    assert_clear_refusal(post_raw(reviewer_api, IMPORT, body), words="JSON parse error")
    assert snapshot() == before


def test_wrong_content_type_is_415(reviewer_api):
    before = snapshot()
    response = post_raw(reviewer_api, IMPORT, "documents=[]", content_type="text/plain")
    assert_clear_refusal(response, statuses=(415,), words="Unsupported media type")
    assert snapshot() == before


@pytest.mark.parametrize(
    "body",
    [b'\xff\xfe{"documents": []}', b'{"documents": ["caf\xe9"]}', b"\x00\x00\x00", b""],
    ids=["utf16-bom", "latin1", "nul-bytes", "empty"],
)
def test_non_utf8_or_empty_body_is_refused(reviewer_api, body):
    before = snapshot()
    response = post_raw(reviewer_api, IMPORT, body)
    assert_clear_refusal(response)
    assert snapshot() == before


def test_nul_characters_in_json_values_are_refused(reviewer_api):
    """PostgreSQL jsonb cannot store \\u0000; the API must refuse it, not fail with a 500."""
    before = snapshot()
    body = json.dumps({"name": "nul-spec", "source_kind": "prd", "raw_spec": {"note": "a\u0000b"}})
    assert_clear_refusal(post_raw(reviewer_api, "/api/themes/", body), words="nul")
    body = json.dumps({"name": "a\u0000b", "source_kind": "prd"})
    assert_clear_refusal(post_raw(reviewer_api, "/api/themes/", body), words="nul")
    assert snapshot() == before


def test_wrong_shapes_get_field_errors(reviewer_api):
    before = snapshot()
    cases = [
        (IMPORT, [1, 2, 3], ""),
        (IMPORT, {"documents": "not a list"}, "documents"),
        ("/api/themes/", {"name": "x" * 10_000, "source_kind": "prd"}, "name"),
        ("/api/themes/", {"name": "ok", "source_kind": "nonsense"}, "source_kind"),
        ("/api/policies/", {"name": ["a"], "kind": {"x": 1}}, ""),
        ("/api/tasks/synthesize/", {"environment": "1; DROP TABLE tasks_task"}, "environment"),
        ("/api/rounds/start/", {"tasks_per_environment": 10**30}, "tasks_per_environment"),
    ]
    for url, payload, words in cases:
        response = reviewer_api.post(url, payload, format="json")
        assert_clear_refusal(response, words=words)
    assert snapshot() == before


def test_episode_call_with_huge_or_odd_arguments_is_refused(viewer_api):
    body = json.dumps({"tool": "x" * 1000, "arguments": {}})
    response = post_raw(viewer_api, "/api/episodes/no-such-key/call/", body)
    assert response.status_code in (400, 404) and response.json()["error"]
    response = post_raw(viewer_api, "/api/episodes/", json.dumps({"environment": [1, 2]}))
    assert_clear_refusal(response)
