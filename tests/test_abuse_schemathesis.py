"""Property-based abuse of every operation in the OpenAPI schema: no input gives a 500.

Schemathesis reads /api/schema/ from the WSGI app in-process and sends generated requests
(valid and invalid bodies, query strings and path ids) with a reviewer's token, so the writes
reach validation. Examples per operation are bounded so the module stays well under a minute;
AW_FUZZ_EXAMPLES raises the bound for a longer, randomized hunt (see docs/benchmarks_scale.md).
Jobs a valid request enqueues are never dispatched: the test transaction never commits.
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from django.core.signals import request_finished, request_started  # noqa: E402
from django.db import close_old_connections  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from aw_site.roles import REVIEWER, grant_role  # noqa: E402
from aw_site.wsgi import application  # noqa: E402

pytestmark = pytest.mark.django_db
EXAMPLES_PER_OPERATION = int(os.environ.get("AW_FUZZ_EXAMPLES", "4"))
DERANDOMIZE = "AW_FUZZ_EXAMPLES" not in os.environ  # the suite's run is the same every time


@pytest.fixture(autouse=True)
def keep_test_connection():
    """As Django's test Client does: a WSGI request must not close the test's DB connection."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


# Loaded at collection (pytest-django has set Django up by then); the schema view needs no DB.
schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def reviewer_token(django_user_model):
    """A reviewer without a password: hashing one per operation would dominate the runtime."""
    user = django_user_model.objects.create(username="fuzz_reviewer")
    grant_role(user, REVIEWER)
    return f"Token {Token.objects.create(user=user).key}"


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=DERANDOMIZE,
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_answers_with_a_server_error(case, reviewer_token):
    response = case.call(headers={"Authorization": reviewer_token})
    case.validate_response(response, checks=[not_a_server_error])
