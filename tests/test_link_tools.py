"""Tables keyed by several columns get add/remove tools, and link tables list either side."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources
from environments.discovery.tool_generator import generate_tools
from environments.discovery.verification import verify_tools
from environments.runtime import SandboxPool
from tests.test_domain_rules import Tools

MUSIC_SQL = """
CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE track (
    track_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    artist_id INTEGER REFERENCES artist,
    milliseconds INTEGER
);
CREATE TABLE playlist (playlist_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE playlist_track (
    playlist_id INTEGER REFERENCES playlist,
    track_id INTEGER REFERENCES track,
    PRIMARY KEY (playlist_id, track_id)
);
INSERT INTO artist VALUES (1, 'Nina Simone'), (2, 'Miles Davis'), (3, 'Bjork');
INSERT INTO track VALUES
    (10, 'Feeling Good', 1, 173000), (11, 'Sinnerman', 1, 620000),
    (12, 'So What', 2, 545000), (13, 'Blue in Green', 2, 337000),
    (14, 'Joga', 3, 305000), (15, 'Hyperballad', 3, 321000);
INSERT INTO playlist VALUES (1, 'Evening'), (2, 'Jazz'), (3, 'Empty so far');
INSERT INTO playlist_track VALUES (1, 10), (1, 12), (1, 14), (2, 12), (2, 13), (2, 11);
"""


@pytest.fixture(scope="module")
def music_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("music")
    script = folder / "music.sql"
    script.write_text(MUSIC_SQL)
    return mine_sources(folder / "music.sqlite", files=[script])


@pytest.fixture
def tools_on_copy(music_db, tmp_path):
    """The generated tools over a fresh copy of the database, with SQLite's own foreign keys on."""
    tools = generate_tools(music_db, "a music store")
    run = Tools(tools, music_db, tmp_path)
    run.db.execute("PRAGMA foreign_keys = ON")
    return tools, run


def test_schema_keeps_the_composite_key(music_db):
    table = read_schema(music_db)["playlist_track"]
    assert table.primary_key == "" and table.key_columns == ["playlist_id", "track_id"]
    assert table.composite_key
    single = read_schema(music_db)["track"]
    assert single.key_columns == ["track_id"] and not single.composite_key


def test_link_table_gets_add_remove_and_both_lists(tools_on_copy):
    tools, call = tools_on_copy
    names = set(tools.names())
    assert {
        "add_track_to_playlist",
        "remove_track_from_playlist",
        "list_tracks_for_playlist",
        "list_playlists_for_track",
    } <= names
    assert tools.kinds["add_track_to_playlist"] == "write"
    assert tools.kinds["list_playlists_for_track"] == "read"
    add = tools.schemas["add_track_to_playlist"]["function"]["parameters"]
    assert add["required"] == ["playlist_id", "track_id"]
    for name in ("add_track_to_playlist", "remove_track_from_playlist"):
        assert len(tools.tests[name]) >= 3, name


def test_link_tools_add_list_refuse_and_remove(tools_on_copy):
    _, call = tools_on_copy
    before = call("list_tracks_for_playlist", playlist_id=3)
    assert before["total"] == 0
    added = call("add_track_to_playlist", playlist_id=3, track_id=15)
    assert (added["playlist_id"], added["track_id"]) == (3, 15)
    listed = call("list_tracks_for_playlist", playlist_id=3)
    assert [r["name"] for r in listed["rows"]] == ["Hyperballad"]
    assert {r["name"] for r in call("list_playlists_for_track", track_id=12)["rows"]} == {
        "Evening",
        "Jazz",
    }
    with pytest.raises(ValueError, match="already exists"):
        call("add_track_to_playlist", playlist_id=3, track_id=15)
    with pytest.raises(LookupError, match="track_id"):
        call("add_track_to_playlist", playlist_id=3, track_id=999)
    with pytest.raises(LookupError, match=r"playlist_id = 3, track_id = 14"):
        call("remove_track_from_playlist", playlist_id=3, track_id=14)
    with pytest.raises(ValueError, match="track_id"):
        call("remove_track_from_playlist", playlist_id=3)
    assert call("remove_track_from_playlist", playlist_id=3, track_id=15)["removed"] is True
    assert call("list_tracks_for_playlist", playlist_id=3)["total"] == 0
    with pytest.raises(LookupError):
        call("list_tracks_for_playlist", playlist_id=404)


def test_generated_link_tests_pass_verification(music_db):
    tools = generate_tools(music_db, "a music store")
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("music", music_db, tools, pool=pool)
    link_tools = {
        "add_track_to_playlist",
        "remove_track_from_playlist",
        "list_tracks_for_playlist",
        "list_playlists_for_track",
    }
    verdicts = {v.name: v for v in report.verdicts}
    for name in link_tools:
        assert verdicts[name].verified, (name, verdicts[name].reasons)
        assert not verdicts[name].failed_tests, (name, verdicts[name].failed_tests)
    assert link_tools <= set(kept.names())


def test_a_wrong_link_tool_fails_its_generated_tests(music_db):
    """The generated tests are an oracle: an add that does nothing is rejected."""
    tools = generate_tools(music_db, "a music store")
    tools.functions["add_track_to_playlist"] = (
        "def add_track_to_playlist(db, **params):\n    return dict(params)\n"
    )
    tools.functions["remove_track_from_playlist"] = (
        "def remove_track_from_playlist(db, **params):\n    return {'removed': True}\n"
    )
    # Lists the link rows rather than the tracks they point at.
    tools.functions["list_tracks_for_playlist"] = tools.functions[
        "list_playlist_tracks_for_playlist"
    ].replace("list_playlist_tracks_for_playlist", "list_tracks_for_playlist")
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("music", music_db, tools, pool=pool)
    verdicts = {v.name: v for v in report.verdicts}
    assert not verdicts["add_track_to_playlist"].verified
    assert not verdicts["remove_track_from_playlist"].verified
    assert not verdicts["list_tracks_for_playlist"].verified
    assert "add_track_to_playlist" not in kept.names()


def test_a_without_rowid_link_with_its_own_field_verifies(tmp_path):
    """A link table may carry fields of its own and need not have a rowid."""
    script = tmp_path / "enrolment.sql"
    script.write_text(
        "CREATE TABLE student (student_id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
        "CREATE TABLE course (code TEXT PRIMARY KEY, title TEXT NOT NULL);\n"
        "CREATE TABLE enrolment (student_id INTEGER NOT NULL REFERENCES student,\n"
        "    code TEXT NOT NULL REFERENCES course, grade INTEGER NOT NULL,\n"
        "    PRIMARY KEY (student_id, code)) WITHOUT ROWID;\n"
        "INSERT INTO student VALUES (1, 'Ada'), (2, 'Alan'), (3, 'Grace');\n"
        "INSERT INTO course VALUES ('CS101', 'Programming'), ('MA201', 'Algebra');\n"
        "INSERT INTO enrolment VALUES (1, 'CS101', 90), (1, 'MA201', 75), (2, 'CS101', 82);\n"
    )
    db = mine_sources(tmp_path / "enrolment.sqlite", files=[script])
    tools = generate_tools(db, "a school")
    add = tools.schemas["add_course_to_student"]["function"]["parameters"]
    assert add["required"] == ["student_id", "code", "grade"]
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("school", db, tools, pool=pool)
    failing = {v.name: v.failed_tests for v in report.verdicts if v.failed_tests}
    assert not failing, failing
    assert {
        "add_course_to_student",
        "remove_course_from_student",
        "list_courses_for_student",
        "list_students_for_course",
        "list_enrolments_for_student",
    } <= set(kept.names())


FLIGHTS_SQL = """
CREATE TABLE flight (flight_number TEXT PRIMARY KEY, origin TEXT NOT NULL);
CREATE TABLE flight_dates (
    flight_number TEXT NOT NULL REFERENCES flight,
    date DATE NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('available', 'cancelled', 'landed')),
    seats INTEGER CHECK (seats >= 0),
    meal BOOLEAN,
    PRIMARY KEY (flight_number, date)
);
CREATE TABLE ohlc (date DATE PRIMARY KEY, open REAL, close REAL);
CREATE TABLE playlist (playlist_id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE product (product_id INTEGER PRIMARY KEY, name TEXT NOT NULL, in_stock BOOLEAN);
CREATE TABLE basket (basket_id INTEGER PRIMARY KEY, owner TEXT NOT NULL);
CREATE TABLE basket_product (basket_id INTEGER REFERENCES basket,
    product_id INTEGER REFERENCES product, PRIMARY KEY (basket_id, product_id));
INSERT INTO flight VALUES ('BA1', 'LHR'), ('BA2', 'JFK');
INSERT INTO flight_dates VALUES
    ('BA1', '2024-01-01', 'available', 10, 1), ('BA1', '2024-01-02', 'cancelled', 0, 0),
    ('BA2', '2024-01-01', 'landed', 5, 1), ('BA2', '2024-01-02', 'available', 3, 0);
INSERT INTO ohlc VALUES ('2024-01-01', 1.5, 2.0), ('2024-01-02', 2.0, 2.5);
INSERT INTO playlist VALUES (1, 'Evening'), (2, NULL);
INSERT INTO product VALUES (1, 'Tea', 1), (2, 'Jam', 0), (3, 'Bread', 1);
INSERT INTO basket VALUES (1, 'Ada'), (2, 'Alan');
INSERT INTO basket_product VALUES (1, 1), (1, 2), (2, 3);
"""


@pytest.fixture(scope="module")
def flights_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("flights")
    script = folder / "flights.sql"
    script.write_text(FLIGHTS_SQL)
    return mine_sources(folder / "flights.sqlite", files=[script])


@pytest.fixture
def flight_tools(flights_db, tmp_path):
    tools = generate_tools(flights_db, "an airline")
    return tools, Tools(tools, flights_db, tmp_path)


def test_a_dated_series_gets_get_and_update_by_its_whole_key(flight_tools):
    tools, call = flight_tools
    assert tools.kinds["get_flight_date"] == "read" and tools.kinds["update_flight_date"] == "write"
    update = tools.schemas["update_flight_date"]["function"]["parameters"]
    assert update["required"] == ["flight_number", "date"]
    assert update["properties"]["status"]["enum"] == ["available", "cancelled", "landed"]
    assert update["properties"]["date"]["format"] == "date"
    row = call("get_flight_date", flight_number="BA1", date="2024-01-01")
    assert row["status"] == "available" and row["meal"] is True
    changed = call("update_flight_date", flight_number="BA1", date="2024-01-01", status="landed")
    assert changed["status"] == "landed" and changed["seats"] == 10
    assert call("get_flight_date", flight_number="BA1", date="2024-01-01")["status"] == "landed"
    with pytest.raises(LookupError, match="2024-03-03"):
        call("get_flight_date", flight_number="BA1", date="2024-03-03")
    with pytest.raises(ValueError, match="at least one field"):
        call("update_flight_date", flight_number="BA1", date="2024-01-01")
    with pytest.raises(ValueError, match="one of available, cancelled or landed") as refused:
        call("update_flight_date", flight_number="BA1", date="2024-01-01", status="late")
    assert type(refused.value).tool_refusal == "invalid_arguments"
    with pytest.raises(ValueError, match="seats"):
        call("update_flight_date", flight_number="BA1", date="2024-01-01", seats=-4)


def test_add_declares_the_rules_it_enforces_and_says_them_in_words(flight_tools):
    tools, call = flight_tools
    props = tools.schemas["add_flight_date"]["function"]["parameters"]["properties"]
    assert props["status"]["enum"] == ["available", "cancelled", "landed"]
    assert props["seats"]["minimum"] == 0 and props["date"]["format"] == "date"
    with pytest.raises(ValueError) as refused:
        call("add_flight_date", flight_number="BA1", date="2024-02-01", status="late")
    assert "one of available, cancelled or landed" in str(refused.value)
    assert "[" not in str(refused.value)


def test_every_read_path_returns_booleans(flight_tools):
    _, call = flight_tools
    listed = call("list_products_for_basket", basket_id=1)["rows"]
    assert [r["in_stock"] for r in listed] == [True, False]
    added = call(
        "add_flight_date", flight_number="BA2", date="2024-02-01", status="available", meal=True
    )
    assert added["meal"] is True
    series = call("list_flight_dates_for_flight", flight_number="BA1")["rows"]
    assert {r["meal"] for r in series} == {True, False}


def test_a_create_with_every_field_optional_takes_no_fields(flight_tools):
    tools, call = flight_tools
    assert tools.schemas["create_playlist"]["function"]["parameters"]["required"] == []
    created = call("create_playlist")
    assert created["playlist_id"] == 3 and created["name"] is None
    assert any("__no_fields" in test for test in tools.tests["create_playlist"])
    # a required field missing from an empty call is refused in words
    with pytest.raises(ValueError, match="owner"):
        call("create_basket")


def test_a_table_keyed_by_a_date_can_add_a_day(flight_tools):
    tools, call = flight_tools
    assert tools.schemas["create_ohlc"]["function"]["parameters"]["required"] == ["date"]
    created = call("create_ohlc", date="2024-01-03", open=2.5, close=3.0)
    assert created == {"date": "2024-01-03", "open": 2.5, "close": 3.0}
    with pytest.raises(ValueError, match="ISO date"):
        call("create_ohlc", date="next monday")


def test_every_generated_test_of_the_series_passes_verification(flights_db):
    tools = generate_tools(flights_db, "an airline")
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("airline", flights_db, tools, pool=pool)
    failing = {v.name: v.failed_tests for v in report.verdicts if v.failed_tests}
    assert not failing, failing
    names = set(kept.names())
    assert {
        "get_flight_date",
        "update_flight_date",
        "add_flight_date",
        "create_ohlc",
        "create_playlist",
    } <= names
    assert any(
        t.startswith("def test_create_playlist__no_fields") for t in tools.tests["create_playlist"]
    )


def test_a_crash_or_a_no_op_fails_the_generated_tests(flights_db):
    """The empty-call test rejects a create that crashes with a raw SQL error (a crash is no
    refusal), and the update test rejects an update that changes nothing."""
    tools = generate_tools(flights_db, "an airline")
    tools.functions["create_playlist"] = (
        "def create_playlist(db, **params):\n"
        "    names = ', '.join(params)\n"
        "    marks = ', '.join('?' for _ in params)\n"
        "    cur = db.execute(f'INSERT INTO playlist ({names}) VALUES ({marks})', list(params.values()))\n"
        "    return dict(db.execute('SELECT * FROM playlist WHERE rowid = ?', (cur.lastrowid,)).fetchone())\n"
    )
    tools.functions["update_flight_date"] = (
        "def update_flight_date(db, **params):\n"
        "    return get_flight_date(db, flight_number=params['flight_number'], date=params['date'])\n"
    )
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("airline", flights_db, tools, pool=pool)
    verdicts = {v.name: v for v in report.verdicts}
    assert any("__no_fields" in t for t in verdicts["create_playlist"].failed_tests)
    assert not verdicts["update_flight_date"].verified
    assert "update_flight_date" not in kept.names()
