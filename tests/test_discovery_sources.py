"""Source adapters on real files: tables, inferred keys and links, provenance, clean failures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from environments.discovery.schema import read_schema
from environments.discovery.sources import SourceError, mine_sources, read_provenance

FIXTURES = Path(__file__).parent / "fixtures" / "discovery"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_csv_is_typed_with_a_surrogate_key(tmp_path):
    db = mine_sources(tmp_path / "p.sqlite", files=[FIXTURES / "penguins_sample.csv"])
    table = read_schema(db)["penguins_sample"]
    kinds = {c.name: c.kind for c in table.columns}
    assert kinds["bill_length_mm"] == "real" and kinds["year"] == "integer"
    assert kinds["species"] == "text" and table.primary_key == "id"
    assert table.row_count == 40
    prov = read_provenance(db)
    assert prov[0]["kind"] == "csv" and prov[0]["source"].endswith("penguins_sample.csv")


def test_malformed_csv_names_the_line_and_writes_nothing(tmp_path):
    with pytest.raises(SourceError, match="line 7 has 3 fields"):
        mine_sources(tmp_path / "bad.sqlite", files=[FIXTURES / "malformed.csv"])
    assert _leftovers(tmp_path) == []


def test_nested_json_becomes_parent_and_child_tables(tmp_path):
    db = mine_sources(tmp_path / "c.sqlite", files=[FIXTURES / "countries_nested.json"])
    schema = read_schema(db)
    assert schema["country"].primary_key == "alpha_2"
    assert "codes_alpha_3" in [c.name for c in schema["country"].columns]
    child = schema["country_subdivisions"]
    assert child.foreign_keys["country_alpha_2"] == ("country", "alpha_2")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        n = conn.execute(
            "SELECT COUNT(*) FROM country_subdivisions WHERE country_alpha_2 = 'LU'"
        ).fetchone()[0]
    assert n == 12


def test_broken_json_fails_cleanly(tmp_path):
    with pytest.raises(SourceError, match="invalid JSON"):
        mine_sources(tmp_path / "b.sqlite", files=[FIXTURES / "broken.json"])
    assert _leftovers(tmp_path) == []


def test_sql_dump_keeps_declared_keys(tmp_path):
    db = mine_sources(tmp_path / "e.sqlite", files=[FIXTURES / "elements.sql"])
    schema = read_schema(db)
    assert schema["element"].primary_key == "number"
    assert schema["isotope"].foreign_keys["element_number"] == ("element", "number")
    assert "symbol" in schema["element"].unique
    assert read_provenance(db)[0]["kind"] == "sql"


@pytest.mark.parametrize(
    ("fixture", "message"),
    [("attach.sql", "line 4: statement not allowed: ATTACH"), ("bad_syntax.sql", "line 4")],
)
def test_unsafe_or_broken_sql_is_refused(tmp_path, fixture, message):
    with pytest.raises(SourceError, match=message):
        mine_sources(tmp_path / "x.sqlite", files=[FIXTURES / fixture])
    assert _leftovers(tmp_path) == []


def test_html_table_and_prose_page(tmp_path):
    db = mine_sources(
        tmp_path / "h.sqlite",
        files=[FIXTURES / "http_status.html", FIXTURES / "status_page.html"],
    )
    schema = read_schema(db)
    assert schema["status"].primary_key == "code"
    assert schema["status"].row_count > 50
    sections = schema["status_page_section"]
    assert sections.row_count == 8
    with sqlite3.connect(db) as conn:
        text = conn.execute("SELECT group_concat(text) FROM status_page_section").fetchone()[0]
    assert "var x" not in text


def test_html_table_with_short_row_fails(tmp_path):
    with pytest.raises(SourceError, match="row 1 has 1 cells"):
        mine_sources(tmp_path / "t.sqlite", files=[FIXTURES / "bad_table.html"])


def test_package_dataset_links_tables_by_value(tmp_path):
    db = mine_sources(tmp_path / "a.sqlite", datasets=["airports"])
    schema = read_schema(db)
    assert schema["airport"].foreign_keys["country"] == ("country", "alpha_2")
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT name, country FROM airport WHERE iata = 'JFK'").fetchone()
    assert row == ("John F Kennedy International Airport", "US")
    assert {p["kind"] for p in read_provenance(db)} == {"python_package"}


def test_a_failure_midway_leaves_no_database(tmp_path):
    with pytest.raises(SourceError):
        mine_sources(
            tmp_path / "mix.sqlite",
            files=[FIXTURES / "penguins_sample.csv", FIXTURES / "malformed.csv"],
        )
    assert _leftovers(tmp_path) == []
