"""Shared fixtures: users of each role, API clients signed in as them, a worker shutting down, and
environments built once per session for the task synthesis tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from aw_site.jobs import WORKER_SHUTTING_DOWN
from aw_site.roles import ADMIN, REVIEWER, VIEWER, grant_role
from tests.support.stack_markers import mark_database_tests

PASSWORD = "correct horse battery staple"


def pytest_collection_modifyitems(config, items):
    """Mark the tests that reach the database: the embedded-default pass of `./dev test` runs only
    those (`-m uses_database`), since the rest behave the same on both stacks."""
    mark_database_tests(items)


def make_user(django_user_model, username: str, role: str | None):
    user = django_user_model.objects.create_user(username=username, password=PASSWORD)
    if role:
        grant_role(user, role)
    return user


@pytest.fixture
def viewer(django_user_model):
    return make_user(django_user_model, "vera_viewer", VIEWER)


@pytest.fixture
def reviewer(django_user_model):
    return make_user(django_user_model, "rita_reviewer", REVIEWER)


@pytest.fixture
def admin_user(django_user_model):
    return make_user(django_user_model, "ada_admin", ADMIN)


@pytest.fixture
def roleless(django_user_model):
    return make_user(django_user_model, "nora_norole", None)


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def viewer_api(viewer):
    return token_client(viewer)


@pytest.fixture
def reviewer_api(reviewer):
    return token_client(reviewer)


@pytest.fixture
def admin_api(admin_user):
    return token_client(admin_user)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Password hashing dominates user set-up; tests need no slow hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def shutting_down():
    """This process's worker is shutting down (as after SIGTERM), for the test's duration."""
    WORKER_SHUTTING_DOWN.set()
    yield
    WORKER_SHUTTING_DOWN.clear()


@pytest.fixture(autouse=True)
def fast_endpoint_retries(monkeypatch):
    """Endpoint clients retry with millisecond backoff in tests, and forget what models refused."""
    from aw_site.openai_chat import forget_adaptations

    monkeypatch.setenv("AW_LLM_RETRY_BACKOFF", "0.005")
    monkeypatch.setenv("AW_POLICY_RETRY_BACKOFF", "0.005")
    forget_adaptations()
    yield
    forget_adaptations()


# --- environments built once per session (task synthesis tests share them) ---------------------

STARTER_FOR_TASKS = ("airports", "world_cities", "languages", "stocks")


@pytest.fixture(scope="session")
def starter_catalogue(tmp_path_factory):
    """Starter-catalogue environments, each built at most once per session, on first request."""
    from tests.support.starter_catalogue import SharedStarterCatalogue

    return SharedStarterCatalogue(tmp_path_factory.mktemp("starter"))


@pytest.fixture(scope="session")
def starter_package_paths(starter_catalogue):
    """Package directories of a few starter-catalogue environments, built once per session."""
    return starter_catalogue.paths(STARTER_FOR_TASKS)


@pytest.fixture(scope="session")
def foreign_package_path(tmp_path_factory):
    """A foreign SQLite database (tests/support/foreign_db.py) built into a verified package."""
    from environments.builder.pipeline import run_pipeline
    from environments.builder.request import BuildRequest
    from environments.runtime import SandboxPool
    from tests.support.foreign_db import build_foreign_sqlite

    upload = tmp_path_factory.mktemp("foreign")
    database = build_foreign_sqlite(upload / "nations.sqlite")
    request = BuildRequest.for_upload([str(database)], database.name, str(upload))
    with SandboxPool(workers=1) as pool:
        built = run_pipeline(
            request,
            root=tmp_path_factory.mktemp("foreign_envs"),
            workdir=tmp_path_factory.mktemp("foreign_work"),
            pool=pool,
        )
    assert built.path, built
    return Path(built.path)
