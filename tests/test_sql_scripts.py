"""Hand-written PostgreSQL and MySQL scripts (sample databases as their authors publish them, not
pg_dump/mysqldump output): detected by content, read (never run) into tables with their keys and
CHECK/ENUM rules, refused with the line when they need SQL to run, and refused at upload exactly
when the build would refuse them."""

from __future__ import annotations

import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from aw_site.models import Job
from environments.discovery.sources import SourceError, detect_format, load_file, probe_file
from environments.discovery.sources.base import DatabaseBuilder, read_provenance
from environments.discovery.sources.detect import sql_dialect
from environments.discovery.sources.limits import Limits
from environments.discovery.sources.sql_checks import check_constraints
from environments.discovery.sources.sql_dialects import (
    is_table_constraint,
    tokenize,
    translate_check,
)
from environments.models import Environment
from tests import test_build_formats
from tests.support.worker import wait_for
from tests.test_build_formats import assert_built, leftovers, upload

storage = test_build_formats.storage  # the upload storage fixture (thread jobs, a temp root)

FIXTURES = Path(__file__).parent / "fixtures" / "byod"
PG_SCRIPT = FIXTURES / "vinyl_store_pg.sql"
MY_SCRIPT = FIXTURES / "tool_rental_mysql.sql"

PG_ROWS = {
    "label": 3,
    "artist": 4,
    "record": 6,
    "customer": 4,
    "customer_order": 5,
    "order_line": 7,
}
MY_ROWS = {"branch": 3, "category": 3, "tool": 6, "member": 4, "rental": 6}
PG_KEYS = {
    "record.artist_id -> artist.artist_id",
    "record.label_id -> label.label_id",
    "customer_order.customer_id -> customer.customer_id",
    "order_line.order_id -> customer_order.order_id",
    "order_line.record_id -> record.record_id",
}
MY_KEYS = {
    "tool.category_id -> category.category_id",
    "tool.branch_id -> branch.branch_id",
    "rental.tool_id -> tool.tool_id",
    "rental.member_id -> member.member_id",
    "rental.branch_id -> branch.branch_id",
}
PG_CHECKS = {
    "record": ["CHECK (\"format\" IN ('LP', 'EP', 'Single'))", 'CHECK ("price" >= 0)'],
    "customer_order": [
        "CHECK (\"status\" IN ('placed', 'packed', 'shipped', 'returned'))",
        'CHECK ("rating" >= 1)',
        'CHECK ("rating" <= 5)',
    ],
    "order_line": ['CHECK ("quantity" > 0)', 'CHECK ("quantity" <= 20)'],
}
MY_CHECKS = {
    "tool": [
        "CHECK (\"condition\" IN ('new', 'good', 'worn', 'retired'))",
        'CHECK ("daily_rate" >= 0)',
    ],
    "member": ["CHECK (\"tier\" IN ('basic', 'plus', 'trade'))"],
    "rental": [
        "CHECK (\"status\" IN ('out', 'returned', 'late'))",
        'CHECK ("days" >= 1)',
        'CHECK ("days" <= 60)',
    ],
}


def build_file(tmp_path: Path, path: Path) -> Path:
    target = tmp_path / f"{path.stem}.sqlite"
    with DatabaseBuilder(target) as builder:
        load_file(builder, path)
        builder.finish()
    return target


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def foreign_keys(conn: sqlite3.Connection) -> set[str]:
    keys = set()
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for fk in conn.execute(f'PRAGMA foreign_key_list("{table}")'):
            keys.add(f"{table}.{fk[3]} -> {fk[2]}.{fk[4]}")
    return keys


def assert_rules_kept(conn: sqlite3.Connection, expected: dict[str, list[str]]) -> None:
    for table, checks in expected.items():
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        for check in checks:
            assert check in sql, (table, check, sql)


# --- reading the two scripts --------------------------------------------------------------


def test_the_postgres_script_is_read_with_keys_rules_and_literals(tmp_path):
    assert detect_format(PG_SCRIPT) == "sql"
    assert sql_dialect(PG_SCRIPT.read_text()) == "postgres"
    conn = sqlite3.connect(build_file(tmp_path, PG_SCRIPT))
    rows = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in PG_ROWS}
    assert rows == PG_ROWS
    assert foreign_keys(conn) == PG_KEYS
    assert_rules_kept(conn, PG_CHECKS)
    labels = [r[0] for r in conn.execute("SELECT name FROM label ORDER BY label_id")]
    assert labels == ["Blue Harbour Records", "Nordlys Musikk", "L'Étiquette Rouge"]
    notes = dict(conn.execute("SELECT title, notes FROM record WHERE notes IS NOT NULL"))
    assert notes["Slow Machines"] == "Gatefold sleeve\nwith lyric sheet"  # E'' escapes
    assert notes["Don't Look Back"] == "Side B: 'Home'"
    # serial keys are numbered in order; literal DEFAULTs fill the columns an INSERT leaves out
    assert conn.execute(
        "SELECT record_id, format, stock FROM record WHERE title LIKE 'Live%'"
    ).fetchone() == (6, "LP", 0)
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("INSERT INTO customer_order VALUES (9, 1, '2024-01-01', 'lost', NULL)")
    provenance = [p["detail"] for p in read_provenance(conn_path(conn))]
    assert (
        "not honoured: line 113: CREATE FUNCTION take_stock (functions need SQL to run)"
        in provenance
    )
    assert (
        "not honoured: line 121: CREATE TRIGGER order_line_stock (triggers need SQL to run)"
        in provenance
    )
    assert any(
        p.startswith("CHECK (char_length") and "not kept: uses a function" in p for p in provenance
    )
    assert any("customer.joined DEFAULT now()" in p for p in provenance)


def conn_path(conn: sqlite3.Connection) -> Path:
    return Path(conn.execute("PRAGMA database_list").fetchone()[2])


def test_the_mysql_script_is_read_with_keys_rules_and_escapes(tmp_path):
    assert sql_dialect(MY_SCRIPT.read_text()) == "mysql"
    conn = sqlite3.connect(build_file(tmp_path, MY_SCRIPT))
    rows = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in MY_ROWS}
    assert rows == MY_ROWS
    assert foreign_keys(conn) == MY_KEYS
    assert_rules_kept(conn, MY_CHECKS)
    descriptions = [r[0] for r in conn.execute("SELECT description FROM tool ORDER BY tool_id")]
    assert descriptions[0] == "Two batteries, 'fast' charger"
    assert descriptions[4] == "Don't use above 5 m\nwithout a stabiliser"
    assert conn.execute("SELECT full_name FROM member WHERE member_id = 2").fetchone() == (
        "Owain O'Brien",
    )
    assert conn.execute("SELECT tier FROM member WHERE member_id = 4").fetchone() == ("basic",)
    assert conn.execute('SELECT "condition" FROM tool WHERE tool_id = 6').fetchone() == ("good",)
    notes = [p["detail"] for p in read_provenance(conn_path(conn))]
    assert (
        "not honoured: line 87: CREATE TRIGGER rental_before_insert (triggers need SQL to run)"
        in notes
    )


MYSQL_SAMPLE_IDIOMS = """SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='TRADITIONAL';
DROP SCHEMA IF EXISTS shop;
CREATE SCHEMA shop;
USE shop;
CREATE TABLE address (
  address_id SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT,
  address VARCHAR(50) NOT NULL,
  location GEOMETRY NOT NULL /*!80003 SRID 0 */,
  last_update TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY  (address_id)
)ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW address_list AS
  SELECT address_id, address FROM address;
DELIMITER $$
CREATE DEFINER=CURRENT_USER FUNCTION balance(p INT) RETURNS DECIMAL(5,2) DETERMINISTIC
BEGIN
  RETURN 0;
END $$
DELIMITER ;
INSERT INTO address VALUES (1,'47 Sample Drive',/*!50705 0x0000000001010000003E0A325D63345CC0,*/'2014-09-25 22:30:27'),
(2,'28 Query Boulevard',/*!50705 0x0000000001010000008E10D4DF812F5CC0,*/'2014-09-25 22:30:09');
COMMIT;
"""


def test_mysql_sample_database_idioms(tmp_path):
    """Versioned comments inside a row are MySQL's to run (kept); views and DEFINER functions
    are noted; SET @variables, CREATE SCHEMA and COMMIT are skipped."""
    target = build_file(tmp_path, write(tmp_path, "shop.sql", MYSQL_SAMPLE_IDIOMS))
    rows = sqlite3.connect(target).execute("SELECT address_id, location FROM address").fetchall()
    assert rows == [
        (1, bytes.fromhex("0000000001010000003E0A325D63345CC0")),
        (2, bytes.fromhex("0000000001010000008E10D4DF812F5CC0")),
    ]
    notes = [p["detail"] for p in read_provenance(target) if p["kind"] == "sql:note"]
    assert notes == [
        "not honoured: line 12: CREATE VIEW address_list (views need SQL to run)",
        "not honoured: line 15: CREATE FUNCTION balance (functions need SQL to run)",
    ]


MYSQL_CAMEL_CASE = """
CREATE TABLE `MediaType` (`MediaTypeId` INT NOT NULL AUTO_INCREMENT, `Name` NVARCHAR(120),
  CONSTRAINT `PK_MediaType` PRIMARY KEY (`MediaTypeId`));
CREATE TABLE `Track` (`TrackId` INT NOT NULL, `Name` NVARCHAR(200) NOT NULL,
  `MediaTypeId` INT NOT NULL, `UnitPrice` NUMERIC(10,2) NOT NULL,
  CONSTRAINT `PK_Track` PRIMARY KEY (`TrackId`));
ALTER TABLE `Track` ADD CONSTRAINT `FK_TrackMediaTypeId`
  FOREIGN KEY (`MediaTypeId`) REFERENCES `MediaType` (`MediaTypeId`);
INSERT INTO `MediaType` (`MediaTypeId`, `Name`) VALUES (1, N'MPEG audio file'), (2, N'AAC');
INSERT INTO `Track` (`TrackId`, `Name`, `MediaTypeId`, `UnitPrice`) VALUES
  (1, N'For Those About To Rock', 1, 0.99), (2, N'Balls to the Wall', 2, 0.99);
"""


@pytest.mark.parametrize(
    "raw, name",
    [
        ("InvoiceLineId", "invoice_line_id"),
        ("HTTPStatus", "http_status"),
        ("userID", "user_id"),
        ("AlbumArtURL", "album_art_url"),
        ("URLs", "urls"),
        ("IPv4Address", "ipv4_address"),
        ("eMail", "email"),
        ("Unit Price ($)", "unit_price"),
        ("2021 sales", "c_2021_sales"),
    ],
)
def test_sql_name_splits_camel_case_words(raw, name):
    from environments.discovery.sources.base import sql_name

    assert sql_name(raw) == name


def test_camel_case_names_become_words_and_keys_still_match(tmp_path):
    """Scripts written with CamelCase names (`MediaTypeId`) give snake-case tables and columns
    (media_type.media_type_id), so the tools and tasks read them as words."""
    target = build_file(tmp_path, write(tmp_path, "music.sql", MYSQL_CAMEL_CASE))
    conn = sqlite3.connect(target)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"media_type", "track"} <= tables
    columns = [r[1] for r in conn.execute('PRAGMA table_info("track")')]
    assert columns == ["track_id", "name", "media_type_id", "unit_price"]
    keys = [(r[2], r[3], r[4]) for r in conn.execute('PRAGMA foreign_key_list("track")')]
    assert keys == [("media_type", "media_type_id", "media_type_id")]


PG_KEYWORD_COLUMNS = """
CREATE TABLE film (
    film_id integer NOT NULL,
    title character varying(255) NOT NULL,
    fulltext tsvector NOT NULL,
    key text,
    index integer,
    period varchar(20),
    spatial text,
    check_date date,
    CONSTRAINT film_pkey PRIMARY KEY (film_id),
    UNIQUE (title),
    CHECK (index >= 0)
);
INSERT INTO film VALUES (1, 'Academy Dinosaur', 'academi:1 dinosaur:2', 'k1', 3, 'p1',
  's', '2024-01-02');
INSERT INTO film VALUES (2, 'Ace Goldfinger', 'ace:1 goldfing:2', 'k2', 0, 'p2', 's',
  '2024-02-03');
"""

MY_KEYWORD_COLUMNS = """
CREATE TABLE `film_text` (
  `film_id` SMALLINT NOT NULL,
  title VARCHAR(255) NOT NULL,
  fulltext TEXT,
  key VARCHAR(20),
  `index` INT(11),
  period INT,
  spatial VARCHAR(10),
  check_date DATE,
  PRIMARY KEY (`film_id`),
  UNIQUE KEY uq_title (title),
  KEY idx_key (key),
  INDEX (period),
  FULLTEXT KEY idx_title_description (title, fulltext)
) ENGINE=InnoDB;
INSERT INTO `film_text` VALUES (1, 'Academy Dinosaur', 'epic', 'k1', 3, 7, 's', '2024-01-02'),
  (2, 'Ace Goldfinger', 'astounding', 'k2', 0, 8, 's', '2024-02-03');
"""


@pytest.mark.parametrize(
    "name, script, table",
    [("pagila.sql", PG_KEYWORD_COLUMNS, "film"), ("sakila.sql", MY_KEYWORD_COLUMNS, "film_text")],
)
def test_columns_named_like_constraint_keywords_are_columns(tmp_path, name, script, table):
    """`fulltext tsvector`, `key text`, `index integer`, `period`, `spatial` are columns (as in
    Sakila/Pagila); only a keyword followed by what a constraint needs is a constraint."""
    target = build_file(tmp_path, write(tmp_path, name, script))
    conn = sqlite3.connect(target)
    columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    assert columns == [
        "film_id", "title", "fulltext", "key", "index", "period", "spatial", "check_date",
    ]  # fmt: skip
    keys = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]]
    assert keys == ["film_id"]
    rows = conn.execute(f'SELECT "key", "index", check_date FROM "{table}" ORDER BY 1').fetchall()
    assert rows == [("k1", 3, "2024-01-02"), ("k2", 0, "2024-02-03")]


@pytest.mark.parametrize(
    "item, constraint",
    [
        ("key text", False),
        ("key varchar(20) NOT NULL", False),
        ("KEY idx_key (key)", True),
        ("KEY (a)", True),
        ("KEY idx USING BTREE (a)", True),
        ("index integer", False),
        ("INDEX idx (a, b)", True),
        ("period varchar(20)", False),
        ("PERIOD FOR valid (starts, ends)", True),
        ("fulltext tsvector NOT NULL", False),
        ("FULLTEXT KEY ft (title, body)", True),
        ("FULLTEXT ft (title)", True),
        ("spatial geometry", False),
        ("SPATIAL INDEX sp (location)", True),
        ("unique boolean", False),
        ("UNIQUE (a)", True),
        ("UNIQUE KEY uq (a)", True),
        ("check int", False),
        ("CHECK (a > 0)", True),
        ("primary text", False),
        ("PRIMARY KEY (a)", True),
        ("foreign text", False),
        ("FOREIGN KEY (a) REFERENCES b (a)", True),
        ("constraint text", False),
        ("CONSTRAINT pk PRIMARY KEY (a)", True),
        ("exclude boolean", False),
        ("EXCLUDE USING gist (a WITH =)", True),
        ('"key" text', False),
    ],
)
def test_what_makes_a_table_constraint(item, constraint):
    assert is_table_constraint(tokenize(item, "postgres", 1)) is constraint


# --- detection ------------------------------------------------------------------------------

TABLE = "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);\n"


@pytest.mark.parametrize(
    "sign",
    [
        "CREATE TABLE t (id SERIAL PRIMARY KEY, name TEXT);",
        "CREATE TABLE t (id BIGSERIAL PRIMARY KEY);",
        "CREATE TABLE t (id INT GENERATED ALWAYS AS IDENTITY, name TEXT);",
        "INSERT INTO t VALUES (1, E'a\\nb');",
        "\\c shop\n" + TABLE,
        "\\connect shop\n" + TABLE,
        "INSERT INTO t VALUES (1, 'x'::text);",
        "CREATE TABLE t (id INTEGER, name character varying(20));",
        "CREATE TABLE t (id INTEGER, at TIMESTAMPTZ);",
        "CREATE TABLE t (id INTEGER, photo BYTEA);",
        "CREATE DATABASE shop ENCODING 'UTF8';\n" + TABLE,
        "CREATE TYPE mood AS ENUM ('ok', 'sad');\n" + TABLE,
        'CREATE TABLE "t" (id INTEGER);',
    ],
)
def test_each_postgres_sign(sign):
    assert sql_dialect("/* a script */\n" + sign) == "postgres"


@pytest.mark.parametrize(
    "sign",
    [
        "CREATE TABLE `t` (`id` INT, `name` TEXT);",
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY);",
        "CREATE TABLE t (id INT) ENGINE=InnoDB;",
        "USE shop;\n" + TABLE,
        "CREATE TABLE t (id INT UNSIGNED);",
        "CREATE TABLE t (id INT, mood ENUM('ok','sad'));",
        "CREATE TABLE t (id INT) DEFAULT CHARSET=utf8mb4;",
    ],
)
def test_each_mysql_sign(sign):
    assert sql_dialect("/* a script */\n" + sign) == "mysql"


def test_evidence_is_weighed_and_plain_scripts_stay_sqlite():
    plain = "-- cities\n" + TABLE + "INSERT INTO t VALUES (1, N'Oslo'), (2, 'it''s');\n"
    assert sql_dialect(plain) == "sqlite"  # N'' is common to every dialect
    sqlite_dump = 'PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE "t" (id INTEGER);\n'
    assert sql_dialect(sqlite_dump) == "sqlite"
    assert sql_dialect("-- std::string in prose is no cast\n" + TABLE) == "sqlite"
    mysql = (
        "CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT) ENGINE=InnoDB;\n"
        "INSERT INTO t (note) VALUES ('see a::b');\n"
    )
    assert sql_dialect(mysql) == "mysql"  # one `::` in a string loses to ENGINE and AUTO_INCREMENT


# A sample script in plain standard SQL (INT, VARCHAR, NUMERIC, TIMESTAMP, N'' literals) whose
# only server sign is that it adds its foreign keys after the tables, as SQLite cannot.
STANDARD_SCRIPT = """
/*****************************************************************
   Shelf Database - a sample for a server
******************************************************************/

/*****************************************************************
   Create Tables
******************************************************************/
CREATE TABLE shelf
(
    shelf_id INT NOT NULL,
    label VARCHAR(40) NOT NULL,
    CONSTRAINT shelf_pkey PRIMARY KEY  (shelf_id)
);

CREATE TABLE book
(
    book_id INT NOT NULL,
    title VARCHAR(120) NOT NULL,
    shelf_id INT NOT NULL,
    price NUMERIC(6,2),
    added_at TIMESTAMP,
    CONSTRAINT book_pkey PRIMARY KEY  (book_id)
);

/*****************************************************************
   Create Foreign Keys
******************************************************************/
ALTER TABLE book ADD CONSTRAINT book_shelf_id_fkey
    FOREIGN KEY (shelf_id) REFERENCES shelf (shelf_id) ON DELETE NO ACTION ON UPDATE NO ACTION;

CREATE INDEX book_shelf_id_idx ON book (shelf_id);

INSERT INTO shelf (shelf_id, label) VALUES (1, N'Poetry');
INSERT INTO shelf (shelf_id, label) VALUES (2, N'Maps');
INSERT INTO book (book_id, title, shelf_id, price, added_at) VALUES (1, N'Odes', 1, 9.5, '2021-03-04 00:00:00');
INSERT INTO book (book_id, title, shelf_id, price, added_at) VALUES (2, N'Atlas', 2, 30, '2022-01-02 00:00:00');
"""


def test_a_standard_sql_script_that_adds_its_keys_later_is_read_as_a_server_script(tmp_path):
    assert sql_dialect(STANDARD_SCRIPT) == "postgres"
    conn = sqlite3.connect(build_file(tmp_path, write(tmp_path, "shelf.sql", STANDARD_SCRIPT)))
    assert foreign_keys(conn) == {"book.shelf_id -> shelf.shelf_id"}
    assert conn.execute("SELECT label FROM shelf ORDER BY shelf_id").fetchall() == [
        ("Poetry",),
        ("Maps",),
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t ADD CONSTRAINT t_pk PRIMARY KEY (id);",
        "ALTER TABLE t ADD FOREIGN KEY (id) REFERENCES u (id);",
        "ALTER TABLE t ALTER COLUMN name SET NOT NULL;",
        "ALTER TABLE t DROP CONSTRAINT t_pk;",
        "CREATE SEQUENCE t_id_seq;",
        "COMMENT ON TABLE t IS 'towns';",
        "GRANT SELECT ON t TO reader;",
    ],
)
def test_a_statement_sqlite_cannot_run_counts_against_sqlite(statement):
    assert sql_dialect(TABLE + statement) == "postgres"
    assert sql_dialect("CREATE TABLE `t` (`id` INT, `name` TEXT);\n" + statement) == "mysql"
    # a SQLite dump's own signs still hold it: a tie goes to SQLite
    assert sql_dialect("PRAGMA foreign_keys=OFF;\n" + TABLE + statement) == "sqlite"


def test_a_sqlite_script_error_names_the_statement_line_and_the_file_once(tmp_path):
    script = (
        "/* towns\n   v1 */\n\n" + TABLE + "\n/*\n   more rows\n*/\n-- one more\n"
        "INSERT INTO t VALUES (1, 'a', 'b', 'c');\n"
    )
    path = write(tmp_path, "towns.sql", script)
    line = script.splitlines().index("INSERT INTO t VALUES (1, 'a', 'b', 'c');") + 1
    with pytest.raises(SourceError, match=rf"^towns\.sql: line {line}: table t has 2 columns"):
        build_file(tmp_path, path)


@pytest.mark.django_db
def test_an_upload_refusal_names_the_file_once(reviewer_api, storage):
    script = TABLE + "INSERT INTO t VALUES (1, 'a', 'b');\n"
    response = upload(reviewer_api, "towns.sql", script.encode(), "refused")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"].startswith("towns.sql: line 2: ")
    assert "towns.sql: towns.sql" not in response.json()["error"]


def test_a_script_without_the_sql_suffix_is_sql_when_it_opens_with_a_comment(tmp_path):
    path = write(tmp_path, "schema", "/* shop\n   schema */\nCREATE TABLE t (id INT);\n")
    assert detect_format(path) == "sql"
    path = write(tmp_path, "schema.txt", "\\c shop\nCREATE TABLE t (id SERIAL);\n")
    assert detect_format(path) == "sql"


def test_a_sqlite_script_may_use_n_literals(tmp_path):
    script = TABLE + "INSERT INTO t VALUES (1, N'O''Neil'), (2, 'N''Djamena'); -- n'est pas\n"
    conn = sqlite3.connect(build_file(tmp_path, write(tmp_path, "n.sql", script)))
    assert conn.execute("SELECT name FROM t ORDER BY id").fetchall() == [
        ("O'Neil",),
        ("N'Djamena",),
    ]


def test_a_sqlite_script_may_open_with_a_block_comment(tmp_path):
    path = write(
        tmp_path,
        "cities.sql",
        "/* cities\n   v1 */\n" + TABLE + "INSERT INTO t VALUES (1, 'Oslo');\n",
    )
    conn = sqlite3.connect(build_file(tmp_path, path))
    assert conn.execute("SELECT name FROM t").fetchall() == [("Oslo",)]


# --- literals -------------------------------------------------------------------------------


def test_n_and_e_literals():
    pg = tokenize("VALUES (N'O''Neil', E'tab\\there', E'it\\'s', 'C:\\dir')", "postgres", 1)
    assert [t.value for t in pg if t.kind == "str"] == ["O'Neil", "tab\there", "it's", "C:\\dir"]
    my = tokenize("VALUES (N'O\\'Neil', 'a''b', n'x\\ny')", "mysql", 1)
    assert [t.value for t in my if t.kind == "str"] == ["O'Neil", "a'b", "x\ny"]
    words = tokenize("WHERE x IN('a')", "postgres", 1)
    assert [t.text for t in words][:3] == ["WHERE", "x", "IN"]  # IN'...' is not an N'' literal


# --- rules ----------------------------------------------------------------------------------


def check_tokens(text: str) -> list:
    return tokenize(text, "postgres", 1)


@pytest.mark.parametrize(
    "expression, rules",
    [
        ("status IN ('a', 'b')", [("status", "\"status\" IN ('a', 'b')")]),
        ("qty >= 0", [("qty", '"qty" >= 0')]),
        ("(qty > 0) AND (qty <= 10)", [("qty", '"qty" > 0'), ("qty", '"qty" <= 10')]),
        ("0 < price", [("price", '"price" > 0')]),
        ("score BETWEEN -1 AND 2.5", [("score", '"score" >= -1'), ("score", '"score" <= 2.5')]),
        ("code <> ''", [("code", "\"code\" <> ''")]),
        ("kind = 'x'", [("kind", "\"kind\" IN ('x')")]),
        (  # how pg_dump writes `status IN (...)` on a varchar column
            "(((status)::text = ANY ((ARRAY['new'::character varying, 'old'::character varying])::text[])))",
            [("status", "\"status\" IN ('new', 'old')")],
        ),
    ],
)
def test_simple_checks_are_normalised(expression, rules):
    assert translate_check(check_tokens(expression)) == (rules, "")


@pytest.mark.parametrize(
    "expression, reason",
    [
        ("char_length(name) > 0", "uses a function"),
        ("qty > 0 OR qty IS NULL", "uses OR"),
        ("ends_at > starts_at", "compares columns"),
        ("name >= 'm'", "compares text by order"),
    ],
)
def test_other_checks_are_not_kept(expression, reason):
    assert translate_check(check_tokens(expression)) == ([], reason)


def test_check_constraints_reads_the_normalised_forms_back():
    sql = (
        'CREATE TABLE t ("id" INTEGER, "status" TEXT, "qty" INTEGER, "code" TEXT, "p" REAL, '
        "CHECK (\"status\" IN ('a', 'it''s')), CHECK (\"qty\" >= 0), CHECK (\"qty\" < 10), "
        'CHECK ("qty" > 0), CHECK ("code" <> \'\'), CHECK ("p" <= 2.5), CHECK (length(code) > 1))'
    )
    assert check_constraints(sql) == {
        "status": {"enum": ["a", "it's"]},
        "qty": {"minimum": 0, "exclusive_minimum": True, "maximum": 10, "exclusive_maximum": True},
        "code": {"min_length": 1},
        "p": {"maximum": 2.5, "exclusive_maximum": False},
    }
    assert check_constraints('CREATE TABLE t ("n" INTEGER)') == {}


def test_a_check_the_rows_break_is_dropped_with_a_note(tmp_path):
    path = write(
        tmp_path,
        "stock.sql",
        "CREATE TABLE item (id SERIAL PRIMARY KEY, qty INT CHECK (qty >= 0), kind VARCHAR(5) "
        "CHECK (kind IN ('a', 'b')));\nINSERT INTO item (qty, kind) VALUES (3, 'a'), (-1, 'b');\n",
    )
    target = build_file(tmp_path, path)
    (sql,) = (
        sqlite3.connect(target)
        .execute("SELECT sql FROM sqlite_master WHERE name='item'")
        .fetchone()
    )
    assert "CHECK (\"kind\" IN ('a', 'b'))" in sql and '"qty" >=' not in sql
    notes = [p["detail"] for p in read_provenance(target)]
    assert 'CHECK ("qty" >= 0) on item not kept: 1 row(s) break it' in notes


# --- refusals -------------------------------------------------------------------------------

REFUSED = {
    "insert select": (
        "INSERT INTO t (id, name) SELECT id, name FROM t;",
        r"line 4: INSERT INTO t \.\.\. SELECT refused: it needs SQL to run",
    ),
    "update": ("UPDATE t SET name = 'b' WHERE id = 1;", "line 4: UPDATE statement refused"),
    "delete": ("DELETE FROM t WHERE id = 1;", "line 4: DELETE statement refused"),
    "create as": ("CREATE TABLE u AS SELECT * FROM t;", "line 4: CREATE TABLE u AS SELECT refused"),
}


@pytest.mark.parametrize("dialect", ["postgres", "mysql"])
@pytest.mark.parametrize("case", list(REFUSED))
def test_statements_that_need_sql_are_refused_naming_the_line(tmp_path, dialect, case):
    statement, message = REFUSED[case]
    key = "id SERIAL PRIMARY KEY" if dialect == "postgres" else "id INT AUTO_INCREMENT PRIMARY KEY"
    script = (
        f"/* sample */\nCREATE TABLE t ({key}, name VARCHAR(10));\n"
        f"INSERT INTO t (name) VALUES (N'a');\n{statement}\n"
    )
    path = write(tmp_path, f"{dialect}.sql", script)
    assert sql_dialect(script) == dialect
    with pytest.raises(SourceError, match=message) as built:
        build_file(tmp_path, path)
    with pytest.raises(SourceError) as probed:
        probe_file(path)
    assert str(probed.value) == str(built.value)  # the upload is refused with the build's words


def test_the_probe_refuses_rows_that_break_a_declared_foreign_key(tmp_path):
    script = (
        "CREATE TABLE a (id SERIAL PRIMARY KEY);\nCREATE TABLE b (id SERIAL PRIMARY KEY, "
        "a_id INT REFERENCES a (id));\nINSERT INTO a (id) VALUES (1);\n"
        "INSERT INTO b (a_id) VALUES (1), (7);\n"
    )
    path = write(tmp_path, "fk.sql", script)
    with pytest.raises(SourceError, match="foreign key check failed"):
        build_file(tmp_path, path)
    with pytest.raises(SourceError, match=r"fk.sql: 1 row\(s\) break a declared foreign key"):
        probe_file(path)


def test_the_probe_accepts_what_the_build_accepts_with_exact_counts():
    probe = probe_file(PG_SCRIPT)
    assert (probe.format, probe.tables, probe.records, probe.estimated) == ("sql", 6, 29, False)
    assert probe.detail == "postgres dump"
    probe = probe_file(MY_SCRIPT)
    assert (probe.tables, probe.records, probe.detail) == (5, 22, "mysql dump")


def test_the_probe_of_a_large_script_reads_its_head_with_the_build_reader(tmp_path):
    rows = ",\n".join(f"(N'name {n}')" for n in range(4000))
    head = "CREATE TABLE t (id SERIAL PRIMARY KEY, name VARCHAR(20));\n"
    limits = Limits(probe_sql_bytes=32 * 1024)
    fine = write(tmp_path, "big.sql", head + f"INSERT INTO t (name) VALUES {rows};\n" * 3)
    probe = probe_file(fine, limits=limits)  # the statement cut at 32 KB is not an error
    assert (probe.tables, probe.records, probe.estimated) == (1, 12_000, True)  # streamed
    bad = write(
        tmp_path,
        "bad.sql",
        head + "UPDATE t SET name = 'x';\n" + f"INSERT INTO t (name) VALUES {rows};\n",
    )
    with pytest.raises(SourceError, match="bad.sql: line 2: UPDATE statement refused"):
        probe_file(bad, limits=limits)


# --- through the API and the CLI ------------------------------------------------------------


def assert_environment(environment: Environment, rows: dict, keys: set, checks: dict) -> None:
    facts = environment.build_yield
    assert facts["ingest"]["rows_by_table"] == rows
    assert any("(triggers need SQL to run)" in note for note in facts["ingest"]["notes"])
    assert set(facts["schema"]["foreign_keys"]) == keys
    conn = sqlite3.connect(Path(environment.package_path) / "state.sqlite")
    assert_rules_kept(conn, checks)
    assert foreign_keys(conn) == keys


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "script, rows, keys, checks",
    [(PG_SCRIPT, PG_ROWS, PG_KEYS, PG_CHECKS), (MY_SCRIPT, MY_ROWS, MY_KEYS, MY_CHECKS)],
    ids=["postgres", "mysql"],
)
def test_scripts_build_through_the_api(reviewer_api, storage, script, rows, keys, checks):
    response = upload(reviewer_api, script.name, script.read_bytes(), f"api_{script.stem}")
    assert response.status_code == 202, response.content[:500]
    job_id = response.json()["id"]
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=180, message=script.name)
    assert_environment(assert_built(job_id, storage), rows, keys, checks)


@pytest.mark.django_db(transaction=True)
def test_scripts_build_through_the_cli(storage, tmp_path):
    for script, rows, keys, checks in [
        (PG_SCRIPT, PG_ROWS, PG_KEYS, PG_CHECKS),
        (MY_SCRIPT, MY_ROWS, MY_KEYS, MY_CHECKS),
    ]:
        out = StringIO()
        call_command(
            "build_environment", "--file", str(script), "--name", f"cli_{script.stem}", stdout=out
        )
        assert f"built cli_{script.stem}@v1" in out.getvalue()
        environment = Environment.objects.get(name=f"cli_{script.stem}")
        assert environment.status == Environment.Status.VERIFIED
        assert_environment(environment, rows, keys, checks)
    assert leftovers(storage) == []


@pytest.mark.django_db
def test_a_script_the_build_would_refuse_is_refused_at_upload(reviewer_api, storage, tmp_path):
    script = PG_SCRIPT.read_text() + "\nUPDATE record SET stock = 0;\n"
    response = upload(reviewer_api, "vinyl.sql", script.encode(), "refused")
    assert response.status_code == 400, response.content[:300]
    assert "UPDATE statement refused" in response.json()["error"]
    assert not Job.objects.exists() and leftovers(storage) == []
