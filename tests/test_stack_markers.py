"""The embedded-default pass of `./dev test` selects `uses_database`: the marker must find every
test that can reach the Django database, and only those."""

from __future__ import annotations

import pytest

from tests.support.stack_markers import USES_DATABASE


def marked(request) -> bool:
    return request.node.get_closest_marker(USES_DATABASE) is not None


@pytest.mark.django_db
def test_a_test_with_the_django_db_marker_uses_the_database(request):
    assert marked(request)


def test_a_test_asking_for_the_db_fixture_uses_the_database(db, request):
    assert marked(request)


def test_a_test_asking_for_transactional_db_uses_the_database(transactional_db, request):
    assert marked(request)


@pytest.fixture
def a_row_count(db, django_user_model):
    return django_user_model.objects.count()


def test_a_fixture_that_asks_for_db_makes_its_test_use_the_database(a_row_count, request):
    assert a_row_count == 0 and marked(request)


def test_a_pure_python_test_does_not_use_the_database(request):
    assert not marked(request)
