"""Every API endpoint against every role: anonymous 401, no role 403, viewer reads, reviewer
starts and approves, only admins retire.

Endpoints come from the router registry (list, detail, create and every extra action) plus the
episode paths, so a new endpoint is checked without editing this file. Writes that a role may
make are sent with a malformed JSON body or a missing object, so they prove the permission check
passed (400/404) without starting real work.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework import mixins
from rest_framework.test import APIClient

from aw_site.api_urls import router
from aw_site.roles import ADMIN, REVIEWER, VIEWER
from benchmarks.scale.generator import TINY, generate_catalogue
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

MISSING = 987654321
BAD_JSON = "{not json"


@dataclass(frozen=True)
class Endpoint:
    method: str
    url: str
    needed: str  # the least role that may call it
    write: bool


def _needed(viewset, action: str | None, write: bool) -> str:
    default = REVIEWER if write else VIEWER
    return getattr(viewset, "required_roles", {}).get(action, default)


def _lookup(viewset) -> object:
    field = getattr(viewset, "lookup_field", "pk")
    queryset = viewset.queryset
    value = queryset.order_by("pk").values_list(field if field != "pk" else "pk", flat=True).first()
    assert value is not None, f"the tiny catalogue has no {queryset.model.__name__}"
    return value


def router_endpoints() -> list[Endpoint]:
    endpoints = []
    for prefix, viewset, _basename in router.registry:
        base = f"/api/{prefix}/"
        detail = f"{base}{_lookup(viewset)}/"
        endpoints.append(Endpoint("get", base, _needed(viewset, "list", False), False))
        endpoints.append(Endpoint("get", detail, _needed(viewset, "retrieve", False), False))
        if issubclass(viewset, mixins.CreateModelMixin):
            endpoints.append(Endpoint("post", base, _needed(viewset, "create", True), True))
        for action in viewset.get_extra_actions():
            for method in action.mapping:
                write = method not in ("get", "head", "options")
                url = (
                    f"{base}{MISSING}/{action.url_path}/"
                    if action.detail
                    else f"{base}{action.url_path}/"
                )
                if not write and action.detail:
                    url = f"{detail}{action.url_path}/"
                endpoints.append(
                    Endpoint(method, url, _needed(viewset, action.__name__, write), write)
                )
    return endpoints


EPISODE_ENDPOINTS = [
    Endpoint("post", "/api/episodes/", VIEWER, False),
    Endpoint("get", "/api/episodes/no-such-key/tools/", VIEWER, False),
    Endpoint("post", "/api/episodes/no-such-key/call/", VIEWER, False),
    Endpoint("get", "/api/episodes/no-such-key/diff/", VIEWER, False),
    Endpoint("post", "/api/episodes/no-such-key/finish/", VIEWER, False),
    Endpoint("delete", "/api/episodes/no-such-key/finish/", VIEWER, False),
]


def call(client: APIClient, endpoint: Endpoint):
    if endpoint.method in ("post", "put", "patch"):
        return client.generic(
            endpoint.method.upper(), endpoint.url, BAD_JSON, content_type="application/json"
        )
    return getattr(client, endpoint.method)(endpoint.url)


@pytest.fixture
def catalogue():
    generate_catalogue(TINY)


@pytest.fixture
def endpoints(catalogue) -> list[Endpoint]:
    found = router_endpoints() + EPISODE_ENDPOINTS
    urls = {e.url for e in found}
    for expected in (
        "/api/environments/",
        "/api/proposals/",
        "/api/rounds/start/",
        "/api/tasks/synthesize/",
        "/api/tasks/review-sample/",
        "/api/tasks/review-marks/",
        f"/api/tasks/{MISSING}/mark/",
    ):
        assert expected in urls, f"{expected} missing from the enumerated endpoints"
    return found


def test_anonymous_gets_401_everywhere(endpoints):
    client = APIClient()
    wrong = [
        (e.method, e.url, r.status_code)
        for e in endpoints
        if (r := call(client, e)).status_code != 401
    ]
    assert not wrong, wrong


def test_user_without_role_gets_403_everywhere(endpoints, roleless):
    client = token_client(roleless)
    wrong = [
        (e.method, e.url, r.status_code)
        for e in endpoints
        if (r := call(client, e)).status_code != 403
    ]
    assert not wrong, wrong


ROLE_ORDER = (VIEWER, REVIEWER, ADMIN)


@pytest.mark.parametrize("role", ROLE_ORDER)
def test_each_role_gets_exactly_its_rights(endpoints, role, viewer, reviewer, admin_user):
    user = {VIEWER: viewer, REVIEWER: reviewer, ADMIN: admin_user}[role]
    client = token_client(user)
    wrong = []
    for endpoint in endpoints:
        response = call(client, endpoint)
        allowed = ROLE_ORDER.index(role) >= ROLE_ORDER.index(endpoint.needed)
        if allowed:
            ok = response.status_code not in (401, 403) and response.status_code < 500
            if not endpoint.write and endpoint.method == "get" and "/episodes/" not in endpoint.url:
                ok = response.status_code == 200
        else:
            ok = (
                response.status_code == 403
                and f"{endpoint.needed} role" in response.json()["error"]
            )
        if not ok:
            wrong.append((endpoint.method, endpoint.url, endpoint.needed, response.status_code))
    assert not wrong, wrong


def test_matrix_covers_the_role_boundaries(endpoints):
    needed = {(e.url.split("/")[-2], e.needed) for e in endpoints if e.write}
    assert ("retire", ADMIN) in needed
    assert ("approve", REVIEWER) in needed and ("start", REVIEWER) in needed
    assert ("mark", REVIEWER) in needed
