"""Which tests touch what differs between the two stacks `./dev test` runs the suite on.

The PostgreSQL pass and the embedded-default pass (SQLite, in-process jobs) differ only in the
Django database (`DATABASE_URL`), and through it in where jobs are recorded. A test that cannot
reach the database behaves the same on both, so the second pass runs only the tests marked
`uses_database` here: the ones pytest-django lets into the database, by the `django_db` marker or
by asking (directly or through another fixture) for one of the database fixtures.
"""

from __future__ import annotations

import pytest

USES_DATABASE = "uses_database"

# pytest-django's fixtures that open the test database (any other database fixture asks for one).
DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
    }
)


def uses_database(item: pytest.Item) -> bool:
    """True when the test can reach the Django database, so its outcome may depend on the stack."""
    if item.get_closest_marker("django_db") is not None:
        return True
    return not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def mark_database_tests(items: list[pytest.Item]) -> None:
    """Add the `uses_database` marker to every collected test that can reach the database."""
    for item in items:
        if uses_database(item):
            item.add_marker(USES_DATABASE)
