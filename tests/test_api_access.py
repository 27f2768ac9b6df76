"""Who may do what through the API, and how bad input is answered."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from arena.models import EvolutionRound, ExpansionProposal
from environments.models import Category, Environment
from training.models import Policy

pytestmark = pytest.mark.django_db


@pytest.fixture
def verified_environment():
    category = Category.ensure_path("Travel & Transportation", "Flights")
    environment = Environment.objects.create(
        name="airports",
        category=category,
        status=Environment.Status.VERIFYING,
        manifest={"name": "airports"},
    )
    environment.transition(Environment.Status.VERIFIED)
    return environment


@pytest.fixture
def pending_proposal():
    policy = Policy.objects.create(name="tiny", kind=Policy.Kind.LOCAL_HF)
    evolution_round = EvolutionRound.objects.create(
        number=1, policy=policy, status="awaiting_approval"
    )
    return ExpansionProposal.objects.create(
        round=evolution_round, kind="more_tasks", rationale="planning failures"
    )


def test_anonymous_gets_401_with_json_error():
    response = APIClient().get("/api/environments/")
    assert response.status_code == 401
    assert "credentials" in response.json()["error"].lower()


def test_user_without_role_is_refused(roleless):
    client = APIClient()
    client.force_authenticate(roleless)
    response = client.get("/api/environments/")
    assert response.status_code == 403
    assert "viewer role" in response.json()["error"]


def test_viewer_reads_with_token(viewer_api, verified_environment):
    response = viewer_api.get("/api/environments/", {"search": "airp"})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1 and body["results"][0]["name"] == "airports"
    assert body["results"][0]["category_path"] == "Travel & Transportation > Flights"


def test_viewer_cannot_approve_reviewer_can(viewer_api, reviewer_api, pending_proposal):
    url = f"/api/proposals/{pending_proposal.pk}/approve/"
    refused = viewer_api.post(url, {"note": "ship it"}, format="json")
    assert refused.status_code == 403
    assert "reviewer role" in refused.json()["error"]
    pending_proposal.refresh_from_db()
    assert pending_proposal.status == "pending"
    accepted = reviewer_api.post(url, {"note": "ship it"}, format="json")
    assert accepted.status_code == 200, accepted.json()
    assert (
        accepted.json()["status"] == "approved" and accepted.json()["reviewer"] == "rita_reviewer"
    )
    again = reviewer_api.post(url, {}, format="json")
    assert again.status_code == 400 and "already approved" in again.json()["error"]


def test_only_admins_retire(reviewer_api, admin_api, verified_environment):
    url = f"/api/environments/{verified_environment.pk}/retire/"
    assert reviewer_api.post(url).status_code == 403
    verified_environment.refresh_from_db()
    assert verified_environment.status == "verified"
    response = admin_api.post(url)
    assert response.status_code == 200 and response.json()["status"] == "retired"
    again = admin_api.post(url)
    assert again.status_code == 400 and "only verified" in again.json()["error"]


def test_bad_input_gets_400_with_message_and_changes_nothing(reviewer_api, verified_environment):
    from aw_site.models import Job
    from training.models import TrainingRun

    jobs_before = Job.objects.count()
    cases = [
        ("/api/tasks/synthesize/", {"environment": verified_environment.pk, "count": 0}, "count"),
        ("/api/tasks/synthesize/", {"environment": 999999}, "environment"),
        (
            "/api/tasks/synthesize/",
            {"environment": verified_environment.pk, "min_walk_length": 9, "max_walk_length": 2},
            "min_walk_length",
        ),
        ("/api/themes/import/", {"source_kind": "mcp_spec"}, "give documents"),
        ("/api/training-runs/", {"base_policy": 12345}, "base_policy"),
        ("/api/policies/", {"name": "remote", "kind": "openai"}, "base_url"),
    ]
    for url, payload, expected in cases:
        response = reviewer_api.post(url, payload, format="json")
        assert response.status_code == 400, (url, response.content)
        assert expected in response.json()["error"], (url, response.json())
    policy = Policy.objects.create(name="tiny", kind=Policy.Kind.LOCAL_HF)
    response = reviewer_api.post(
        "/api/training-runs/", {"base_policy": policy.pk, "config": {"bogus": 1}}, format="json"
    )
    assert response.status_code == 400 and "bogus: unknown option" in response.json()["error"]
    # Policies without weights are refused before a job is queued, each with its reason.
    for kind, extra, reason in (
        (Policy.Kind.GOLD, {}, "has no weights to train"),
        (Policy.Kind.FAULT_INJECTION, {}, "has no weights to train"),
        (Policy.Kind.OPENAI, {"base_url": "http://llm:8000/v1"}, "serves_checkpoint"),
    ):
        untrainable = Policy.objects.create(name=f"no-weights-{kind}", kind=kind, **extra)
        response = reviewer_api.post(
            "/api/training-runs/", {"base_policy": untrainable.pk}, format="json"
        )
        assert response.status_code == 400, (kind, response.content)
        assert reason in response.json()["error"], (kind, response.json())
        untrainable.delete()
    malformed = reviewer_api.generic(
        "POST", "/api/policies/", "{not json", content_type="application/json"
    )
    assert malformed.status_code == 400 and "JSON parse error" in malformed.json()["error"]
    assert Job.objects.count() == jobs_before
    assert TrainingRun.objects.count() == 0
    assert Policy.objects.count() == 1


def test_openapi_schema_and_docs_page(viewer, client):
    client.force_login(viewer)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for expected in (
        "/api/environments/",
        "/api/tasks/",
        "/api/rounds/",
        "/api/proposals/{id}/approve/",
        "/api/jobs/",
    ):
        assert expected in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200


def test_lists_are_paginated(viewer_api):
    category = Category.ensure_path("Finance")
    Environment.objects.bulk_create(
        [Environment(name=f"env-{i}", category=category, manifest={}) for i in range(60)]
    )
    first = viewer_api.get("/api/environments/").json()
    assert first["count"] == 60 and len(first["results"]) == 50 and first["next"]
    small = viewer_api.get("/api/environments/", {"page_size": 7, "page": 2}).json()
    assert len(small["results"]) == 7
    bad_page = viewer_api.get("/api/environments/", {"page": 99})
    assert bad_page.status_code == 404 and bad_page.json()["error"]
