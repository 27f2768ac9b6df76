"""Column meaning at ingest: dates read in any common form and stored as ISO 8601, enums for
categorical columns, CHECK constraints as rules, observed signs and scales, booleans as booleans.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from environments.builder.pipeline import design_tools
from environments.discovery.domain_rules import EnumPolicy, infer_rules, normalised_checks
from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources, read_provenance
from environments.discovery.sources.dates import fitting_formats, is_iso, to_iso
from environments.discovery.sources.sql_checks import check_constraints
from environments.discovery.sources.sql_retype import retype_sql
from environments.discovery.tool_generator import generate_tools
from environments.discovery.verification import verify_tools
from environments.runtime import SandboxPool
from tests.test_domain_rules import Tools, _run_generated_tests

# --- date formats ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "label", "first"),
    [
        (["2021/1/1", "2021/12/31"], "YYYY/M/D", "2021-01-01"),
        (["13/2/2021", "3/4/2021"], "D/M/YYYY", "2021-02-13"),
        (["2/13/2021", "3/4/2021"], "M/D/YYYY", "2021-02-13"),
        (["1.2.2021", "31.12.2021"], "D.M.YYYY", "2021-02-01"),
        (["Jan 5, 2021", "Sep 30, 2025"], "Mon D, YYYY", "2021-01-05"),
        (["5 January 2021", "30 September 2025"], "D Month YYYY", "2021-01-05"),
        (["January 5, 2021"], "Month D, YYYY", "2021-01-05"),
        (["1/5/2021 3:30 PM", "1/31/2021 11:00 AM"], "M/D/YYYY h:M AM/PM", "2021-01-05T15:30:00"),
        (["2021/1/5 9:05:07"], "YYYY/M/D H:M:S", "2021-01-05T09:05:07"),
        (["2024-03-01 10:00:00+00"], "YYYY-M-D H:M:S+ZONE", "2024-03-01 10:00:00+00:00"),
    ],
)
def test_one_format_reads_every_value(values, label, first):
    formats = fitting_formats(values)
    assert formats and formats[0].label == label
    chosen = next(f for f in formats if f.label == label)
    assert to_iso(values[0], chosen) == first


def test_a_column_of_mixed_forms_or_plain_words_is_not_a_date():
    assert not fitting_formats(["2021/1/1", "1.2.2021"])
    assert not fitting_formats(["2021/2/30"])
    assert not fitting_formats(["pending", "2021/1/1"])
    assert is_iso("2021-01-05") == "date" and is_iso("2021-01-05T10:00:00Z") == "datetime"
    assert is_iso("2021-13-05") == "" and is_iso("2021/01/05") == ""


def test_day_and_month_both_fit_a_column_whose_parts_are_all_small():
    labels = [f.label for f in fitting_formats(["1/2/2021", "3/4/2021"])]
    assert labels == ["M/D/YYYY", "D/M/YYYY"]


# --- ingest of every kind --------------------------------------------------------------------


def _invoice_rows() -> list[tuple[int, str, str, float, str]]:
    rows = []
    for i in range(40):
        month, day = 1 + i % 9, 1 + (i * 7) % 28
        when = f"2021/{month}/{day}" if i < 30 else f"2025/{month}/{day}"
        rows.append((i + 1, when, f"{month}/{day}/2021 15:{i:02d}", 10.0 * i, "CARD"))
    return rows


def _write_csv(path: Path) -> Path:
    lines = ["invoice_id,invoice_date,paid_at,amount,method"]
    lines += [",".join(str(v) for v in row) for row in _invoice_rows()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_sql(path: Path) -> Path:
    values = ",\n".join(f"({i}, '{d}', '{p}', {a}, '{m}')" for i, d, p, a, m in _invoice_rows())
    path.write_text(
        "CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY, invoice_date VARCHAR(10) NOT NULL,"
        " paid_at TEXT, amount NUMERIC CHECK (amount >= 0), method TEXT);\n"
        "CREATE INDEX invoices_by_date ON invoices (invoice_date);\n"
        f"INSERT INTO invoices VALUES\n{values};\n"
    )
    return path


@pytest.fixture(params=["csv", "sql"])
def invoices(request, tmp_path) -> Path:
    source = (_write_csv if request.param == "csv" else _write_sql)(
        tmp_path / f"invoices.{request.param}"
    )
    return mine_sources(tmp_path / "invoices.sqlite", files=[source])


def test_dates_are_stored_as_iso_and_declared_as_dates(invoices):
    table = read_schema(invoices)["invoices"]
    assert table.column("invoice_date").kind == "date"
    assert table.column("paid_at").kind == "datetime"
    conn = sqlite3.connect(invoices)
    first = conn.execute(
        "SELECT invoice_date, paid_at FROM invoices ORDER BY invoice_id"
    ).fetchone()
    assert first == ("2021-01-01", "2021-01-01T15:00:00")
    conn.close()
    details = [p["detail"] for p in read_provenance(invoices) if "ISO 8601" in p["detail"]]
    assert "invoice_date: dates read as YYYY/M/D, stored as ISO 8601 (40 values)" in details
    assert any(d.startswith("paid_at: date-times read as M/D/YYYY H:M") for d in details)


def test_the_sql_script_keeps_its_index_and_check(tmp_path):
    db = mine_sources(tmp_path / "s.sqlite", files=[_write_sql(tmp_path / "s.sql")])
    conn = sqlite3.connect(db)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    create = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'invoices'").fetchone()[0]
    conn.close()
    assert "invoices_by_date" in names
    assert "CHECK (amount >= 0)" in create and "invoice_date DATE NOT NULL" in create


def test_date_range_search_answers_from_the_iso_values(invoices, tmp_path):
    run = Tools(generate_tools(invoices, "the invoices"), invoices, tmp_path)
    january = run(
        "search_invoices", min_invoice_date="2021-01-01", max_invoice_date="2021-01-31", limit=100
    )
    expected = sum(1 for row in _invoice_rows() if row[1].startswith("2021/1/"))
    assert expected == 4 and january["total"] == expected
    assert {r["invoice_date"][:7] for r in january["rows"]} == {"2021-01"}
    assert run("search_invoices", min_invoice_date="2025-12-01")["total"] == 0
    new_year = sum(1 for row in _invoice_rows() if row[2].startswith("1/1/"))
    whole_day = run("search_invoices", max_paid_at="2021-01-01", limit=100)
    assert new_year == 2 and whole_day["total"] == new_year
    assert {r["paid_at"][:13] for r in whole_day["rows"]} == {"2021-01-01T15"}
    assert run("search_invoices", paid_at="2021-01-01")["total"] == new_year
    assert run("search_invoices", max_paid_at="2021-01-01T14:59:59")["total"] == 0
    message = run.error("search_invoices", min_invoice_date="2021/1/1")
    assert "ISO date YYYY-MM-DD" in message


def test_date_parameters_carry_their_format(invoices):
    tools = generate_tools(invoices)
    props = tools.schemas["create_invoice"]["function"]["parameters"]["properties"]
    assert props["invoice_date"]["format"] == "date"
    assert "YYYY-MM-DD" in props["invoice_date"]["description"]
    assert props["paid_at"]["format"] == "date-time"
    assert "YYYY-MM-DDTHH:MM:SS" in props["paid_at"]["description"]


def test_ambiguous_day_month_follows_the_database_then_is_recorded(tmp_path):
    (tmp_path / "a.csv").write_text("id,day\n1,1/2/2021\n2,3/4/2021\n3,5/6/2021\n")
    db = mine_sources(tmp_path / "a.sqlite", files=[tmp_path / "a.csv"])
    stored = [r[0] for r in sqlite3.connect(db).execute("SELECT day FROM a ORDER BY id")]
    assert stored == ["2021-01-02", "2021-03-04", "2021-05-06"]
    [detail] = [p["detail"] for p in read_provenance(db) if "ISO 8601" in p["detail"]]
    assert "ambiguous (D/M/YYYY fits too)" in detail and "assumed" in detail
    (tmp_path / "b.csv").write_text("id,seen\n1,25/12/2021\n2,3/4/2021\n")
    db = mine_sources(tmp_path / "ab.sqlite", files=[tmp_path / "a.csv", tmp_path / "b.csv"])
    conn = sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT day FROM a ORDER BY id")] == [
        "2021-02-01",
        "2021-04-03",
        "2021-06-05",
    ]
    assert conn.execute("SELECT seen FROM b WHERE id = 1").fetchone()[0] == "2021-12-25"


def test_numbers_and_eight_digit_codes_stay_numbers(tmp_path):
    (tmp_path / "n.csv").write_text(
        "id,year,ref,order_date\n1,2021,20210105,20210105\n2,2022,20220230,20220228\n"
    )
    db = mine_sources(tmp_path / "n.sqlite", files=[tmp_path / "n.csv"])
    table = read_schema(db)["n"]
    assert table.column("year").kind == "integer" and table.column("ref").kind == "integer"
    assert table.column("order_date").kind == "date"
    rows = sqlite3.connect(db).execute("SELECT year, ref, order_date FROM n ORDER BY id").fetchall()
    assert rows[0] == (2021, 20210105, "2021-01-05")


def test_json_dates_are_normalised_too(tmp_path):
    records = [{"id": i, "booked": f"Mar {i + 1}, 2024"} for i in range(5)]
    (tmp_path / "b.json").write_text(json.dumps({"bookings": records}))
    db = mine_sources(tmp_path / "b.sqlite", files=[tmp_path / "b.json"])
    assert read_schema(db)["bookings"].column("booked").kind == "date"
    assert sqlite3.connect(db).execute("SELECT MIN(booked) FROM bookings").fetchone() == (
        "2024-03-01",
    )


def test_retype_keeps_constraints():
    sql = "CREATE TABLE t (\"a\" INTEGER PRIMARY KEY, d varchar(10) NOT NULL CHECK (d <> ''), e)"
    assert retype_sql(sql, {"d": "DATE", "e": "DATETIME"}) == (
        "CREATE TABLE t (\"a\" INTEGER PRIMARY KEY, d DATE NOT NULL CHECK (d <> ''), e DATETIME)"
    )


# --- enums, CHECK constraints, signs, scales, booleans ---------------------------------------


def build_airline(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE members (member_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
            cabin TEXT NOT NULL, membership TEXT, balance REAL, latitude REAL, rating INTEGER,
            newsletter BOOLEAN, tier TEXT CHECK (tier IN ('a', 'b', 'c')),
            miles INTEGER CHECK (miles BETWEEN 0 AND 100000));
        CREATE TABLE tiny (tiny_id INTEGER PRIMARY KEY, kind TEXT);
        """
    )
    cabins = ["economy", "business", "basic_economy"]
    people = ["Ada Lovelace", "Alan Turing", "Grace Hopper"]
    conn.executemany(
        "INSERT INTO members VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                i + 1,
                people[i % 3],
                cabins[i % 3],
                ["gold", "silver"][i % 2],
                100.0 * i + (0.25 if i % 2 else 0),
                -30.5 + 7 * i,
                1 + i % 5,
                i % 2,
                "ab"[i % 2],
                1000 * i,
            )
            for i in range(24)
        ],
    )
    conn.executemany("INSERT INTO tiny VALUES (?, ?)", [(1, "x"), (2, "y"), (3, "x"), (4, "y")])
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="module")
def airline(tmp_path_factory) -> Path:
    return build_airline(tmp_path_factory.mktemp("airline") / "airline.sqlite")


@pytest.fixture(scope="module")
def airline_tools(airline):
    return generate_tools(airline, "the airline")


@pytest.fixture
def run(airline_tools, airline, tmp_path):
    return Tools(airline_tools, airline, tmp_path)


def test_enums_for_categorical_columns_not_names_nor_tiny_tables(airline):
    conn = sqlite3.connect(airline)
    schema = read_schema(airline)
    rules = infer_rules(conn, schema["members"])
    assert rules.enums["cabin"] == ["basic_economy", "business", "economy"]
    assert rules.enums["membership"] == ["gold", "silver"]
    assert "name" not in rules.enums
    assert infer_rules(conn, schema["tiny"]).enums == {}
    strict = infer_rules(conn, schema["members"], policy=EnumPolicy(max_values=2))
    assert "cabin" not in strict.enums and "membership" in strict.enums


def test_open_sets_and_thinly_seen_values_are_not_enums(tmp_path):
    """A few countries or tickers in a sample are not the only ones there are: columns named as
    open sets never become enums, and a value seen on under four rows on average is not a
    category yet (the Chinook invoice's 11 billing countries over 24 rows)."""
    path = tmp_path / "shop.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE invoice (invoice_id INTEGER PRIMARY KEY, billing_country TEXT, "
        "symbol TEXT, channel TEXT, region_code TEXT, mood TEXT)"
    )
    countries = ["Brazil", "Germany", "Norway", "Canada", "France", "India"]
    tickers, channels = ["AAPL", "MSFT"], ["web", "store"]
    moods = "calm glad sad cross tired keen bored proud shy brave meek".split()
    conn.executemany(
        "INSERT INTO invoice VALUES (?, ?, ?, ?, ?, ?)",
        [
            (i, countries[i % 6], tickers[i % 2], channels[i % 2], "EU", moods[i % 11])
            for i in range(40)
        ],
    )
    conn.commit()
    rules = infer_rules(conn, read_schema(path)["invoice"])
    assert "billing_country" not in rules.enums and "symbol" not in rules.enums
    assert "region_code" not in rules.enums
    assert "mood" not in rules.enums  # 11 values over 40 rows: each seen under four times
    assert rules.enums["channel"] == ["store", "web"]


def test_enum_enforced_by_create_and_update(run, airline_tools):
    props = airline_tools.schemas["create_member"]["function"]["parameters"]["properties"]
    assert props["cabin"]["enum"] == ["basic_economy", "business", "economy"]
    message = run.error("create_member", name="Bo", cabin="banana")
    # the allowed values in words, not as a Python list
    assert "members.cabin must be one of basic_economy, business or economy" in message
    assert run("create_member", name="Bo", cabin="business")["cabin"] == "business"
    assert "banana" in run.error("update_member", member_id=1, cabin="banana")
    assert run("update_member", member_id=1, cabin="economy")["cabin"] == "economy"


def test_check_constraints_become_rules(run, airline, airline_tools):
    rules = infer_rules(sqlite3.connect(airline), read_schema(airline)["members"])
    assert rules.enums["tier"] == ["a", "b", "c"]  # declared: c is allowed though never seen
    assert rules.bounds["miles"] == {"minimum": 0, "maximum": 100000}
    props = airline_tools.schemas["create_member"]["function"]["parameters"]["properties"]
    assert props["tier"]["enum"] == ["a", "b", "c"] and props["miles"]["maximum"] == 100000
    assert run("create_member", name="Bo", cabin="economy", tier="c")["tier"] == "c"
    assert "100000" in run.error("create_member", name="Bo", cabin="economy", miles=100001)


@pytest.mark.parametrize(
    ("sql", "column", "rule"),
    [
        ("CREATE TABLE t (\"s\" TEXT CHECK (\"s\" IN ('x', 'y')))", "s", {"enum": ["x", "y"]}),
        ("CREATE TABLE t (s TEXT CHECK(s IN ('x','y')))", "s", {"enum": ["x", "y"]}),
        ("CREATE TABLE t (b REAL, CHECK (b >= 0))", "b", {"minimum": 0}),
        ("CREATE TABLE t (q INT CHECK (`q` > 2))", "q", {"minimum": 2}),
        ("CREATE TABLE t (r INT CHECK (r BETWEEN 1 AND 5))", "r", {"minimum": 1, "maximum": 5}),
    ],
)
def test_check_forms(sql, column, rule):
    found = check_constraints(normalised_checks(sql))[column]
    assert {k: v for k, v in found.items() if not k.startswith("exclusive")} == rule


def test_negative_balance_refused_where_every_balance_is_positive(run, airline_tools):
    props = airline_tools.schemas["update_member"]["function"]["parameters"]["properties"]
    assert props["balance"]["minimum"] == 0
    assert "Observed 0 to 2,300.25." in props["balance"]["description"]
    assert "members.balance must be >= 0" in run.error("update_member", member_id=1, balance=-5.0)
    assert run("update_member", member_id=1, balance=12.5)["balance"] == 12.5


def test_latitude_is_free_and_a_rating_is_a_bounded_scale(run, airline_tools):
    props = airline_tools.schemas["create_member"]["function"]["parameters"]["properties"]
    assert "minimum" not in props["latitude"] and "maximum" not in props["latitude"]
    assert run("update_member", member_id=2, latitude=-80.0)["latitude"] == -80.0
    assert (props["rating"]["minimum"], props["rating"]["maximum"]) == (0, 5)
    assert "<= 5" in run.error("update_member", member_id=2, rating=6)


def test_booleans_come_back_as_booleans(run):
    assert run("get_member", member_id=1)["newsletter"] is False
    assert run("get_member", member_id=2)["newsletter"] is True
    rows = run("search_members", newsletter=True, limit=3)["rows"]
    assert rows and all(r["newsletter"] is True for r in rows)
    created = run("create_member", name="Bo", cabin="economy", newsletter=True)
    assert created["newsletter"] is True
    groups = run("aggregate_members", metric="count", group_by="newsletter")["groups"]
    assert {g["group"] for g in groups} == {False, True}


def test_generated_tests_refuse_outside_enums_and_pass(airline_tools, airline, tmp_path):
    cases = [t.split("(")[0] for t in airline_tools.tests["create_member"]]
    assert "def test_create_member__unknown_cabin" in cases
    assert "def test_create_member__above_rating" in cases or any("above" in c for c in cases)
    assert not _run_generated_tests(airline_tools, airline, tmp_path)


def test_invoice_toolset_verifies_in_the_sandbox(tmp_path):
    db = mine_sources(tmp_path / "v.sqlite", files=[_write_csv(tmp_path / "invoices.csv")])
    designed = design_tools(db, "the invoices")
    with SandboxPool(workers=1) as pool:
        verification, _ = verify_tools("inv", db, designed.toolset, pool=pool, threshold=1.0)
    failed = {
        v["name"]: v["failed_tests"] for v in verification.as_dict()["verdicts"] if v["failed"]
    }
    assert not failed, failed


def _airline_json(path: Path) -> Path:
    users = {
        f"user_{i}": {
            "name": {"first_name": f"Ann{i}", "last_name": "Lee"},
            "membership": ["gold", "silver", "regular"][i % 3],
            "payment_methods": {
                f"gift_card_{i}": {"source": "gift_card", "id": f"gift_card_{i}", "balance": 5 * i},
                f"card_{i}": {"source": "credit_card", "id": f"card_{i}", "brand": "visa"},
            },
            "joined": f"{1 + i % 12}/{1 + i % 28}/2020",
        }
        for i in range(24)
    }
    flights = [
        {
            "flight_number": f"HAT{i:03d}",
            "cabin": ["economy", "business", "basic_economy"][i % 3],
            "flight_type": ["one_way", "round_trip"][i % 2],
            "price": 100 + i,
            "refundable": i % 2 == 0,
        }
        for i in range(24)
    ]
    path.write_text(json.dumps({"users": users, "flights": flights}))
    return path


def test_nested_json_airline_gets_enums_bounds_dates_and_booleans(tmp_path):
    db = mine_sources(tmp_path / "air.sqlite", files=[_airline_json(tmp_path / "air.json")])
    tools = generate_tools(db, "the airline")
    run = Tools(tools, db, tmp_path)
    flight = tools.schemas["create_flight"]["function"]["parameters"]["properties"]
    assert flight["cabin"]["enum"] == ["basic_economy", "business", "economy"]
    assert flight["flight_type"]["enum"] == ["one_way", "round_trip"]
    message = run.error("update_flight", flight_number="HAT001", cabin="banana")
    assert "cabin must be one of" in message
    assert run("get_flight", flight_number="HAT000")["refundable"] is True
    schema = read_schema(db)
    child = next(n for n, t in schema.items() if "balance" in {c.name for c in t.columns})
    rules = infer_rules(sqlite3.connect(db), schema[child])
    assert rules.bounds["balance"]["minimum"] == 0
    key = {schema[child].primary_key: "gift_card_3"}
    message = run.error(f"update_{schema[child].entity}", **key, balance=-20)
    assert "balance must be >= 0" in message
    assert schema["users"].column("joined").kind == "date"
    user = tools.schemas["create_user"]["function"]["parameters"]["properties"]
    assert user["membership"]["enum"] == ["gold", "regular", "silver"]
    assert not _run_generated_tests(tools, db, tmp_path)


def test_sqlite_file_dates_and_checks(tmp_path):
    source = tmp_path / "shop.db"
    conn = sqlite3.connect(source)
    conn.executescript(
        "CREATE TABLE visits (visit_id INTEGER PRIMARY KEY, seen_on DATE NOT NULL, "
        "kind TEXT CHECK (kind IN ('walk-in', 'online')), spent REAL CHECK (spent >= 0));"
    )
    conn.executemany(
        "INSERT INTO visits VALUES (?, ?, ?, ?)",
        [(i, f"{1 + i % 28}.{1 + i % 12}.2024", "online", 2.5 * i) for i in range(1, 15)],
    )
    conn.commit()
    conn.close()
    db = mine_sources(tmp_path / "mined.sqlite", files=[source])
    rows = sqlite3.connect(db).execute("SELECT seen_on FROM visits ORDER BY visit_id").fetchall()
    assert rows[0] == ("2024-02-02",)
    tools = generate_tools(db)
    props = tools.schemas["create_visit"]["function"]["parameters"]["properties"]
    assert props["kind"]["enum"] == ["walk-in", "online"]  # declared, though one is never seen
    assert props["spent"]["minimum"] == 0
    run = Tools(tools, db, tmp_path)
    assert run("search_visits", min_seen_on="2024-12-01")["total"] == 1


def test_a_check_that_refuses_iso_leaves_the_column_as_written(tmp_path):
    script = tmp_path / "c.sql"
    script.write_text(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, d TEXT CHECK (d LIKE '%/%'), e TEXT);\n"
        "INSERT INTO t VALUES (1, '2021/1/5', '2021/1/5'), (2, '2021/2/7', '2021/2/7');\n"
    )
    db = mine_sources(tmp_path / "c.sqlite", files=[script])
    row = sqlite3.connect(db).execute("SELECT d, e FROM t WHERE id = 1").fetchone()
    assert row == ("2021/1/5", "2021-01-05")
    table = read_schema(db)["t"]
    assert table.column("d").kind == "text" and table.column("e").kind == "date"


def test_mixed_iso_date_times_compare_as_instants(tmp_path):
    stamps = ["2024-03-01T10:00:00+02:00", "2024-03-01 09:30:00", "2024-03-02", "2024-03-03T00:00Z"]
    stamps += [f"2024-03-{d:02d}T12:00:00" for d in range(4, 12)]
    script = tmp_path / "e.sql"
    rows = ", ".join(f"({i}, '{s}')" for i, s in enumerate(stamps, start=1))
    script.write_text(
        f"CREATE TABLE events (id INTEGER PRIMARY KEY, at DATETIME);\nINSERT INTO events VALUES {rows};\n"
    )
    db = mine_sources(tmp_path / "e.sqlite", files=[script])
    tools = generate_tools(db)
    run = Tools(tools, db, tmp_path)
    morning = run("search_events", min_at="2024-03-01T08:00:00", max_at="2024-03-01T09:45:00")
    assert sorted(r["id"] for r in morning["rows"]) == [1, 2]  # 10:00+02:00 is 08:00 UTC
    assert run("search_events", max_at="2024-03-02")["total"] == 3
    assert not _run_generated_tests(tools, db, tmp_path)


def _build_sql(tmp_path: Path, script: str) -> Path:
    source = tmp_path / "dated.sql"
    source.write_text(script)
    return mine_sources(tmp_path / "dated.sqlite", files=[source])


def test_a_timestamp_column_of_plain_dates_is_declared_date(tmp_path):
    """Chinook declares invoice_date TIMESTAMP but writes '2021/1/1': stored as ISO dates, the
    column is DATE (its tools say format: date) and the provenance says dates, not date-times."""
    db = _build_sql(
        tmp_path,
        "CREATE TABLE invoice (invoice_id INTEGER PRIMARY KEY, invoice_date TIMESTAMP NOT NULL,"
        " due TIMESTAMP);\n"
        "INSERT INTO invoice VALUES (1, '2021/1/1', '2021-02-01'), (2, '2021/1/15', NULL),"
        " (3, '2021/12/3', '2022-01-03');\n",
    )
    table = read_schema(db)["invoice"]
    assert table.column("invoice_date").kind == "date" and table.column("due").kind == "date"
    create = sqlite3.connect(db).execute("SELECT sql FROM sqlite_master WHERE name = 'invoice'")
    assert "invoice_date DATE NOT NULL" in create.fetchone()[0]
    details = [p["detail"] for p in read_provenance(db)]
    assert "invoice_date: dates read as YYYY/M/D, stored as ISO 8601 (3 values)" in details
    assert "due: dates in ISO 8601 as YYYY-MM-DD (2 values)" in details
    tools = generate_tools(db, "invoices")
    search = tools.schemas["search_invoices"]["function"]["parameters"]["properties"]
    assert search["min_invoice_date"].get("format") == "date"


def test_iso_variants_get_one_form_and_every_date_column_a_note(tmp_path):
    """`…T08:00:00.000Z` becomes `…T08:00:00+00:00` (zero fractions dropped, Z as +00:00);
    real fractions are kept for every value; space-separated values keep their space; each
    column's provenance says what it holds."""
    document = {
        "events": [
            {"id": 1, "at": "2024-05-01T08:00:00.000Z", "logged": "2024-05-01T08:00:00.25",
             "seen": "2024-05-01 08:00:00"},
            {"id": 2, "at": "2024-05-02T09:30:00Z", "logged": "2024-05-02T09:30",
             "seen": "2024-05-02 09:30:00"},
        ]
    }  # fmt: skip
    path = tmp_path / "events.json"
    path.write_text(json.dumps(document))
    db = mine_sources(tmp_path / "events.sqlite", files=[path])
    rows = sqlite3.connect(db).execute("SELECT at, logged, seen FROM events ORDER BY id")
    assert rows.fetchall() == [
        ("2024-05-01T08:00:00+00:00", "2024-05-01T08:00:00.250000", "2024-05-01 08:00:00"),
        ("2024-05-02T09:30:00+00:00", "2024-05-02T09:30:00.000000", "2024-05-02 09:30:00"),
    ]
    details = [p["detail"] for p in read_provenance(db)]
    assert (
        "at: date-times written YYYY-MM-DDTHH:MM:SS.FZ / YYYY-MM-DDTHH:MM:SSZ, stored as "
        "YYYY-MM-DDTHH:MM:SS+HH:MM (2 values)" in details
    )
    assert "seen: date-times in ISO 8601 as YYYY-MM-DD HH:MM:SS (2 values)" in details
    run_search = read_schema(db)["events"]
    assert run_search.column("at").kind == "datetime"
