"""Who may see and do what in the console: login, roles, POST-only actions and CSRF."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from arena.models import ExpansionProposal
from tests.conftest import PASSWORD
from tests.support import factories

PAGES = [
    ("home", {}),
    ("catalogue", {}),
    ("trajectory-list", {}),
    ("round-list", {}),
    ("training-run-list", {}),
    ("job-list", {}),
    ("task-review", {}),
    ("task-review-summary", {}),
]


@pytest.fixture
def scene(db):
    return factories.make_review_scene()


@pytest.mark.django_db
@pytest.mark.parametrize("name,kwargs", PAGES)
def test_anonymous_visitor_is_sent_to_login(client, name, kwargs):
    response = client.get(reverse(name, kwargs=kwargs))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


@pytest.mark.django_db
def test_anonymous_detail_pages_redirect_to_login(client, scene):
    for url in (
        reverse("environment-detail", args=[scene["environment"].pk]),
        reverse("trajectory-detail", args=[scene["failed"].pk]),
        reverse("round-detail", args=[scene["round"].number]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_anonymous_post_to_approve_goes_to_login_and_changes_nothing(client, scene):
    proposal = scene["proposal"]
    response = client.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "approve"})
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.PENDING


@pytest.mark.django_db
def test_login_page_renders_and_signs_in(client, viewer):
    page = client.get(reverse("login"))
    assert page.status_code == 200
    assert b"csrfmiddlewaretoken" in page.content
    response = client.post(reverse("login"), {"username": viewer.username, "password": PASSWORD})
    assert response.status_code == 302
    home = client.get("/", follow=True)
    assert home.status_code == 200
    assert b'data-role="viewer"' in home.content


@pytest.mark.django_db
def test_user_without_role_is_refused(client, roleless):
    client.force_login(roleless)
    response = client.get(reverse("catalogue"))
    assert response.status_code == 403


@pytest.mark.django_db
def test_viewer_sees_no_review_buttons(client, viewer, scene):
    client.force_login(viewer)
    page = client.get(reverse("round-detail", args=[scene["round"].number])).content.decode()
    assert "Only reviewers approve or reject proposals" in page
    assert 'name="decision"' not in page
    assert "Start next round" not in client.get(reverse("round-list")).content.decode()


@pytest.mark.django_db
def test_viewer_forged_approve_is_forbidden(client, viewer, scene):
    client.force_login(viewer)
    proposal = scene["proposal"]
    response = client.post(
        reverse("proposal-review", args=[proposal.pk]), {"decision": "approve", "note": "sneaky"}
    )
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.PENDING
    assert proposal.reviewer is None


@pytest.mark.django_db
def test_viewer_forged_start_round_is_forbidden(client, viewer, scene, monkeypatch):
    from arena import rounds

    called = []
    monkeypatch.setattr(rounds, "start_round", lambda *a, **k: called.append(1))
    client.force_login(viewer)
    assert client.post(reverse("round-start"), {"_form": "1"}).status_code == 403
    assert called == []


@pytest.mark.django_db
def test_actions_refuse_get(client, reviewer, scene):
    client.force_login(reviewer)
    assert client.get(reverse("proposal-review", args=[scene["proposal"].pk])).status_code == 405
    assert client.get(reverse("round-start")).status_code == 405


@pytest.mark.django_db
def test_post_without_csrf_token_fails(reviewer, scene):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    proposal = scene["proposal"]
    response = client.post(reverse("proposal-review", args=[proposal.pk]), {"decision": "approve"})
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.PENDING


@pytest.mark.django_db
def test_post_with_csrf_token_from_page_succeeds(reviewer, scene):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    page = client.get(reverse("round-detail", args=[scene["round"].number]))
    token = page.cookies["csrftoken"].value
    proposal = scene["proposal"]
    response = client.post(
        reverse("proposal-review", args=[proposal.pk]),
        {"decision": "approve", "note": "ok"},
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == ExpansionProposal.Status.APPROVED


@pytest.mark.django_db
def test_every_page_carries_the_csrf_header_for_htmx(client, viewer, scene):
    client.force_login(viewer)
    page = client.get(reverse("catalogue")).content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in page
    assert "/static/vendor/htmx.min.js" in page
