"""Bring-your-own-data ingestion: real pg_dump/mysqldump output, id-keyed JSON, SQLite files,
archives, and every bad input refused with a SourceError that leaves nothing behind."""

from __future__ import annotations

import io
import json
import sqlite3
import tarfile
import zipfile
from pathlib import Path

import pytest

from environments.discovery.schema import read_schema
from environments.discovery.sources import (
    Limits,
    SourceError,
    detect_format,
    mine_sources,
    probe_file,
    read_provenance,
)
from tests.support.dumps import CUSTOMERS, ITEMS, ORDERS, mysql_dump_of, pg_dump_of

FIXTURES = Path(__file__).parent / "fixtures"
RETAIL = FIXTURES / "byod" / "retail.json"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix in (".sqlite", ".tmp"))


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


# --- real dumps from the servers on this machine ------------------------------------------------


@pytest.fixture
def pg_dump_file(tmp_path):
    return pg_dump_of(tmp_path)


@pytest.fixture
def mysql_dump_file(tmp_path):
    return mysql_dump_of(tmp_path)


def _check_shop(db: Path, tz: str) -> None:
    schema = read_schema(db)
    assert {"customers", "orders", "order_items"} <= set(schema)
    assert schema["customers"].primary_key == "id"
    assert schema["orders"].foreign_keys["customer_id"] == ("customers", "id")
    assert schema["order_items"].foreign_keys["order_id"] == ("orders", "id")
    pk = [r[1] for r in _rows(db, "PRAGMA table_info(order_items)") if r[5]]
    assert pk == ["order_id", "line_no"]
    assert _rows(db, "SELECT id, name, email, note FROM customers ORDER BY id") == CUSTOMERS
    assert _rows(db, "SELECT created_at FROM customers WHERE id = 1") == [
        (f"2024-03-01 10:00:00{tz}",)
    ]
    assert _rows(db, "SELECT * FROM orders ORDER BY id") == ORDERS
    assert _rows(db, "SELECT * FROM order_items ORDER BY order_id, line_no") == ITEMS
    types = {r[1]: r[2] for r in _rows(db, "PRAGMA table_info(orders)")}
    assert types["total"] == "REAL" and types["status"] == "TEXT"
    assert _rows(db, "PRAGMA foreign_key_check") == []


def test_pg_dump_round_trips(tmp_path, pg_dump_file):
    text = pg_dump_file.read_text()
    assert "COPY public.customers" in text and "ALTER TABLE ONLY" in text
    assert detect_format(pg_dump_file) == "sql"
    probe = probe_file(pg_dump_file, max_bytes=10_000_000)
    assert (probe.format, probe.tables, probe.detail) == ("sql", 3, "postgres dump")
    db = mine_sources(tmp_path / "pg.sqlite", files=[pg_dump_file])
    _check_shop(db, "+00:00")  # PostgreSQL's +00 written as ISO 8601 +00:00 (dates.py)
    assert {p["kind"] for p in read_provenance(db)} == {"sql:postgres"}


def test_mysqldump_round_trips(tmp_path, mysql_dump_file):
    text = mysql_dump_file.read_text()
    assert "ENGINE=InnoDB" in text and "LOCK TABLES" in text and "/*!40101" in text
    assert probe_file(mysql_dump_file, max_bytes=10_000_000).detail == "mysql dump"
    db = mine_sources(tmp_path / "my.sqlite", files=[mysql_dump_file])
    _check_shop(db, "")
    assert {p["kind"] for p in read_provenance(db)} == {"sql:mysql"}


def test_dump_type_mismatch_names_the_line(tmp_path):
    dump = tmp_path / "bad_pg.sql"
    dump.write_text(
        "-- PostgreSQL database dump\n"
        "CREATE TABLE public.t (id integer NOT NULL, n integer);\n"
        "COPY public.t (id, n) FROM stdin;\n1\t2\n2\tabc\n\\.\n"
    )
    with pytest.raises(SourceError, match=r"bad_pg.sql: line 5: t.n: 'abc' is not a valid integer"):
        mine_sources(tmp_path / "x.sqlite", files=[dump])
    assert _leftovers(tmp_path) == []


# --- JSON -----------------------------------------------------------------------------------------


def test_id_keyed_json_three_levels_deep(tmp_path):
    db = mine_sources(tmp_path / "retail.sqlite", files=[RETAIL])
    schema = read_schema(db)
    doc = json.loads(RETAIL.read_text())
    users, products = doc["users"], doc["products"]
    assert schema["users"].primary_key == "user_id"
    assert schema["users"].row_count == len(users)
    orders = schema["user_orders"]
    assert orders.primary_key == "order_id"
    assert orders.foreign_keys["user_id"] == ("users", "user_id")
    assert orders.row_count == sum(len(u["orders"]) for u in users.values())
    items = schema["order_items"]
    assert items.foreign_keys["order_id"] == ("user_orders", "order_id")
    assert items.foreign_keys["item_id"] == ("product_variants", "item_id")
    assert items.foreign_keys["product_id"] == ("products", "product_id")
    fulfil = schema["order_fulfillments"]
    assert fulfil.foreign_keys["order_id"] == ("user_orders", "order_id")
    assert schema["fulfillment_item_ids"].foreign_keys["item_id"] == ("product_variants", "item_id")
    assert schema["order_payment_history"].foreign_keys["payment_method_id"] == (
        "user_payment_methods",
        "id",
    )
    assert schema["user_payment_methods"].foreign_keys["user_id"] == ("users", "user_id")
    assert schema["user_wishlist"].foreign_keys["product_id"] == ("products", "product_id")
    # products keyed by id -> product_variants keyed by item id, with the product key as FK
    variants = schema["product_variants"]
    assert variants.primary_key == "item_id"
    assert variants.foreign_keys["product_id"] == ("products", "product_id")
    assert variants.row_count == sum(len(p["variants"]) for p in products.values())
    # sparse option maps became key/value tables, not dozens of mostly-NULL columns
    assert {c.name for c in schema["variant_options"].columns} >= {"item_id", "key", "value"}
    assert not any(c.name.startswith("options_") for c in variants.columns)
    # identifiers stay TEXT: long digit strings, leading zeros, '#W...' codes
    kinds = {c.name: c.kind for c in schema["products"].columns}
    assert kinds["product_id"] == "text"
    assert {c.name: c.kind for c in orders.columns}["order_id"] == "text"
    assert _rows(db, "SELECT COUNT(*) FROM product_variants WHERE item_id = '0095721084'") == [(1,)]
    assert _rows(db, "SELECT COUNT(*) FROM user_orders WHERE order_id LIKE '#W%'")[0][0] > 0
    assert {c.name: c.kind for c in schema["user_orders"].columns}["placed_at"] == "datetime"
    names = " ".join(schema)
    assert "orderses" not in names and "addresss" not in names
    assert _rows(db, "PRAGMA foreign_key_check") == []
    for spec in schema.values():
        assert len(spec.columns) <= 64


def test_wide_json_is_reshaped_or_refused(tmp_path):
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps([{f"f{i}": i for i in range(80)} for _ in range(3)]))
    with pytest.raises(SourceError, match=r"wide.json: \$\[\*\] has 80 fields.*64-column limit"):
        mine_sources(tmp_path / "w.sqlite", files=[wide])
    nested = tmp_path / "nested.json"
    nested.write_text(
        json.dumps([{"id": n, "attrs": {f"a{i}": i for i in range(80)}} for n in range(3)])
    )
    db = mine_sources(tmp_path / "n.sqlite", files=[nested])
    schema = read_schema(db)
    assert schema["nested_attrs"].row_count == 240 and len(schema["nested"].columns) == 1
    assert _leftovers(tmp_path) == ["n.sqlite"]


def test_jsonl(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(
        "\n".join(json.dumps({"event_id": f"e{n:03d}", "kind": "click", "n": n}) for n in range(5))
    )
    assert detect_format(path) == "jsonl" and probe_file(path, max_bytes=10**6).records == 5
    db = mine_sources(tmp_path / "e.sqlite", files=[path])
    schema = read_schema(db)
    assert schema["events"].primary_key == "event_id" and schema["events"].row_count == 5


# --- other formats and archives -------------------------------------------------------------------


def _shop_sqlite(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE shops (id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
            "CREATE TABLE staff (id INTEGER PRIMARY KEY, shop_id INTEGER REFERENCES shops(id),"
            " name TEXT);"
            "INSERT INTO shops VALUES (1, 'Main'), (2, 'Annex');"
            "INSERT INTO staff VALUES (1, 1, 'Ana'), (2, 2, 'Bo'), (3, 2, 'Cy');"
        )
    conn.close()
    return path


def test_sqlite_file_csv_and_html(tmp_path):
    source = _shop_sqlite(tmp_path / "shop.db")
    assert detect_format(source) == "sqlite"
    assert probe_file(source, max_bytes=10**6).tables == 2
    db = mine_sources(
        tmp_path / "s.sqlite",
        files=[
            source,
            FIXTURES / "discovery" / "penguins_sample.csv",
            FIXTURES / "discovery" / "http_status.html",
        ],
    )
    schema = read_schema(db)
    assert schema["staff"].foreign_keys["shop_id"] == ("shops", "id")
    assert schema["staff"].row_count == 3 and schema["penguins_sample"].row_count == 40
    assert schema["status"].primary_key == "code"


def _archive_members(tmp_path: Path) -> dict[str, bytes]:
    return {
        "data/customers.csv": b"customer_id,name\nC001,Ana\nC002,Bo\n",
        "data/orders.json": json.dumps(
            {
                "orders": {
                    "#W1001": {"customer_id": "C001", "total": 9.5},
                    "#W1002": {"customer_id": "C002", "total": 3.25},
                }
            }
        ).encode(),
        "shop.db": _shop_sqlite(tmp_path / "member.db").read_bytes(),
    }


def _check_archive_db(db: Path, archive: str) -> None:
    schema = read_schema(db)
    assert {"customers", "orders", "shops", "staff"} <= set(schema)
    assert schema["orders"].foreign_keys["customer_id"] == ("customers", "customer_id")
    sources = {p["source"] for p in read_provenance(db)}
    assert f"{archive}:data/customers.csv" in sources and f"{archive}:shop.db" in sources


def test_zip_archive_of_several_files(tmp_path):
    path = tmp_path / "bundle.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in _archive_members(tmp_path).items():
            zf.writestr(name, data)
    probe = probe_file(path, max_bytes=10**6)
    assert probe.format == "zip" and probe.tables == 4
    db = mine_sources(tmp_path / "z.sqlite", files=[path])
    _check_archive_db(db, "bundle.zip")


def test_tar_gz_archive_of_several_files(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for name, data in _archive_members(tmp_path).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    assert detect_format(path) == "tar"
    db = mine_sources(tmp_path / "t.sqlite", files=[path])
    _check_archive_db(db, "bundle.tar.gz")


# --- bad inputs -------------------------------------------------------------------------------


def _refused(tmp_path: Path, path: Path, match: str, limits: Limits | None = None) -> None:
    with pytest.raises(SourceError, match=match) as probed:
        probe_file(path, limits=limits or Limits())
    assert path.name in str(probed.value)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    with pytest.raises(SourceError, match=match):
        mine_sources(out / "db.sqlite", files=[path], limits=limits or Limits())
    assert list(out.iterdir()) == []


def test_truncated_json(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(RETAIL.read_text()[:5000])
    _refused(tmp_path, path, r"cut.json: invalid JSON \(the file looks truncated\)")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "a PNG image"),
        (bytes(__import__("random").Random(1).randbytes(4096)), "binary content|not UTF-8"),
    ],
)
def test_binary_named_csv(tmp_path, content, match):
    path = tmp_path / "data.csv"
    path.write_bytes(content)
    _refused(tmp_path, path, match)


def test_zip_bomb(tmp_path):
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.csv", b"a,b\n" + b"1,2\n" * 1_000_000)  # 4 MB of repetition
    assert path.stat().st_size < 50_000
    _refused(tmp_path, path, "zip bomb", Limits(ratio_floor=64 * 1024))
    _refused(tmp_path, path, "more than the 1000000-byte limit", Limits(max_bytes=1_000_000))


def test_zip_member_lying_about_its_size(tmp_path):
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("big.csv", b"a,b\n" + b"1,2\n" * 100_000)
    raw = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).infolist()[0]
    small = (1000).to_bytes(4, "little")
    raw[22:26] = small  # local header uncompressed size
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 24 : central + 28] = small  # central directory uncompressed size
    assert info.file_size > 1000
    path.write_bytes(bytes(raw))
    _refused(
        tmp_path, path, "zip bomb|damaged or unreadable archive"
    )  # zipfile stops at the declared size


@pytest.mark.parametrize("member", ["../evil.csv", "/etc/evil.csv", "a/../../evil.csv"])
def test_zip_path_traversal(tmp_path, member):
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ok.csv", "a,b\n1,2\n")
        zf.writestr(zipfile.ZipInfo(member), "a,b\n1,2\n")
    _refused(tmp_path, path, "absolute path|escapes the archive")
    assert not (tmp_path.parent / "evil.csv").exists()


@pytest.mark.parametrize("kind", ["traversal", "absolute", "symlink", "hardlink"])
def test_tar_path_traversal_and_links(tmp_path, kind):
    path = tmp_path / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        data = b"a,b\n1,2\n"
        info = tarfile.TarInfo(
            {"traversal": "../evil.csv", "absolute": "/tmp/evil.csv"}.get(kind, "ok.csv")
        )
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        elif kind == "hardlink":
            info.type, info.linkname = tarfile.LNKTYPE, "/etc/passwd"
        else:
            info.size = len(data)
        tf.addfile(info, io.BytesIO(data) if info.size else None)
    _refused(tmp_path, path, "absolute path|escapes the archive|is a link")


def test_zip_symlink_member(tmp_path):
    path = tmp_path / "link.zip"
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("passwd.csv")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    _refused(tmp_path, path, "symlink")


def test_oversized_file(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text("a,b\n" + "1,2\n" * 1000)
    _refused(tmp_path, path, "larger than|more than the 1000-byte limit", Limits(max_bytes=1000))


def test_csv_with_5000_columns(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(5000)) + "\n" + ",".join("1" * 5000) + "\n")
    _refused(tmp_path, path, "5000 columns, more than the 1000-column limit")


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("empty.csv", "", "empty file"),
        ("blank.json", "  \n ", "empty file"),
        ("none.json", "[]", "empty list: nothing to ingest"),
        ("none2.json", "{}", "empty object: nothing to ingest"),
        ("header.csv", "a,b,c\n", "header but no rows"),
        ("nothing.sql", "-- MySQL dump 10.13\nSET NAMES utf8;\n", "no CREATE TABLE"),
    ],
)
def test_empty_inputs(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_text(content)
    _refused(tmp_path, path, match)


def test_probe_reads_a_bounded_prefix(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("id,value\n" + "".join(f"{n},{n * 2}\n" for n in range(200_000)))
    probe = probe_file(path, limits=Limits(probe_bytes=64 * 1024))
    assert probe.estimated and 150_000 < probe.records < 300_000
    assert (probe.format, probe.tables) == ("csv", 1)


def test_columns_named_like_sql_keywords(tmp_path):
    data = tmp_path / "flights.csv"
    data.write_text("flight,from,to,order,group\nF1,OSL,BER,1,a\nF2,BER,CDG,2,b\nF3,CDG,OSL,3,a\n")
    db = mine_sources(tmp_path / "out.sqlite", files=[data])
    assert _rows(db, 'SELECT "from", "to", "order" FROM flights ORDER BY flight') == [
        ("OSL", "BER", 1),
        ("BER", "CDG", 2),
        ("CDG", "OSL", 3),
    ]
