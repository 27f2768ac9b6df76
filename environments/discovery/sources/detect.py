"""What kind of data file this is, by its content first and its suffix second.

`detect_format` returns one of FORMATS or raises SourceError: a binary file named `.csv` is refused,
not parsed as text, and a text file is classified by what it starts with (SQL dump headers, JSON's
first character, HTML tags) before its suffix is consulted.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

from .base import SourceError

FORMATS = ("csv", "tsv", "json", "jsonl", "sqlite", "sql", "html", "zip", "tar")
SQLITE_MAGIC = b"SQLite format 3\x00"
_HEAD = 64 * 1024
_BINARY_MAGIC = {
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF": "a PDF document",
    b"\x7fELF": "an executable",
    b"MZ": "a Windows executable",
    b"BZh": "a bzip2 file",
    b"\xd0\xcf\x11\xe0": "an old Office document",
    b"PAR1": "a Parquet file",
    b"\x28\xb5\x2f\xfd": "a zstd file",
    b"Rar!": "a RAR archive",
    b"7z\xbc\xaf": "a 7-Zip archive",
}
_SQL_START = re.compile(
    r"^\s*(--|/\*|#|CREATE\s|INSERT\s|BEGIN|PRAGMA\s|SET\s|DROP\s|START\s+TRANSACTION|LOCK\s"
    r"|USE\s|\\c(?:onnect)?\s)",
    re.IGNORECASE,
)
_HTML = re.compile(r"<(!doctype\s+html|html|head|body|table|div|h[1-6]|p|title)\b", re.IGNORECASE)


def read_head(path: Path, size: int = _HEAD) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise SourceError(f"{Path(path).name}: cannot read ({exc.strerror or exc})") from exc


# Signs of a dialect in a hand-written script, each with its weight. Dump-tool headers decide
# alone; otherwise the evidence over the whole head is summed (not the first match), so one
# backtick in a comment does not outweigh a script full of SERIAL and `::` casts.
_POSTGRES_SIGNS = [
    (r"pg_catalog\.|^COPY\s+\S+.*FROM\s+stdin;|^SET\s+search_path|\bALTER\s+TABLE\s+ONLY\b", 10),
    (r"\b(?:BIG|SMALL)?SERIAL\b", 3),
    (r"\bGENERATED\s+(?:ALWAYS|BY\s+DEFAULT)\s+AS\s+IDENTITY\b", 3),
    (r"(?<![\w'])E'", 2),
    (r"^\\(?:c|connect)\s", 5),
    (r"\w::\w|\)::\w|'::\w", 2),
    (r"\bcharacter\s+varying\b", 3),
    (r"\bTIMESTAMPTZ\b|\bBYTEA\b|\bJSONB\b|\btimestamp\s+with(?:out)?\s+time\s+zone\b", 3),
    (r"\bCREATE\s+DATABASE\b[^;]*\b(?:ENCODING|LC_COLLATE|TEMPLATE)\b", 4),
    (r"\bCREATE\s+TYPE\s+\S+\s+AS\s+ENUM\b", 4),
    (r"\$\$", 2),
    (r'\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:\w+\.)?"', 1),
]
_MYSQL_SIGNS = [
    (r"/\*!\d{5}|^LOCK\s+TABLES", 10),
    (r"\bENGINE\s*=", 5),
    (r"\bAUTO_INCREMENT\b", 4),
    (r"^\s*USE\s+`?\w+`?\s*;", 5),
    (r"\bUNSIGNED\b", 3),
    (r"\b(?:DEFAULT\s+)?(?:CHARSET|CHARACTER\s+SET)\s*=?\s*\w+", 2),
    (r"^\s*[`\w]+\s+ENUM\s*\(|,\s*[`\w]+\s+ENUM\s*\(", 3),
    (r"^DELIMITER\s", 5),
]
# SQLite's own (`sqlite3 .dump` quotes names too): these keep such a script on the SQLite path.
_SQLITE_SIGNS = [
    (r"^PRAGMA\s", 5),
    (r"\bAUTOINCREMENT\b", 4),
    (r"\bWITHOUT\s+ROWID\b", 4),
    (r"^BEGIN\s+TRANSACTION\s*;", 2),
]
# Statements SQLite cannot run at all: evidence against the SQLite path however plain the rest
# of the script is (INT, VARCHAR, NUMERIC and TIMESTAMP columns are read by every dialect). A
# server script that adds its keys after the tables (`ALTER TABLE t ADD CONSTRAINT ... FOREIGN
# KEY ... REFERENCES`) is the common case; with no sign of either server, the PostgreSQL reader,
# the closest to standard SQL, reads it. N'...' literals are not weighed: SQLite sample scripts
# carry them too and the SQLite path reads them as plain strings.
_NOT_SQLITE_SIGNS = [
    (r"\bALTER\s+TABLE\s+\S+\s+ADD\s+(?:CONSTRAINT|PRIMARY\s+KEY|FOREIGN\s+KEY|UNIQUE|CHECK)\b", 5),
    (r"\bALTER\s+TABLE\s+\S+\s+(?:ALTER|MODIFY|CHANGE)\s+(?:COLUMN\s+)?\S+", 5),
    (r"\bALTER\s+TABLE\s+\S+\s+DROP\s+(?:CONSTRAINT|PRIMARY\s+KEY|FOREIGN\s+KEY)\b", 5),
    (r"^\s*CREATE\s+(?:SEQUENCE|SCHEMA|DOMAIN|EXTENSION|FUNCTION|PROCEDURE)\b", 5),
    (r"^\s*(?:COMMENT\s+ON|GRANT|REVOKE)\s", 5),
]
_BACKTICK = re.compile(r"`\w+`")
_COMMENTS = re.compile(r"/\*(?!!).*?\*/|^\s*--[^\n]*", re.DOTALL | re.MULTILINE)


def _weigh(signs: list[tuple[str, int]], text: str) -> int:
    flags = re.MULTILINE | re.IGNORECASE
    return sum(weight for pattern, weight in signs if re.search(pattern, text, flags))


def sql_dialect(text: str) -> str:
    """'postgres', 'mysql' or 'sqlite' for the head of a SQL dump or hand-written script.

    Every sign of PostgreSQL (SERIAL, IDENTITY, E'...', psql \\c, :: casts, character varying,
    TIMESTAMPTZ, BYTEA, CREATE DATABASE ... ENCODING, CREATE TYPE ... AS ENUM, "quoted" tables)
    and of MySQL (backticks, AUTO_INCREMENT, ENGINE=, USE db, UNSIGNED, ENUM(...) columns,
    CHARSET) found in `text` adds its weight; the heavier side wins, and a script with no sign
    at all, or as much sign of SQLite (PRAGMA, AUTOINCREMENT, WITHOUT ROWID), is SQLite. A
    statement SQLite cannot run (ALTER TABLE ... ADD CONSTRAINT, CREATE SEQUENCE, COMMENT ON,
    GRANT ...) counts against SQLite; such a script with no sign of either server is read as
    PostgreSQL. N'...' literals are common to all three and decide nothing."""
    if re.search(r"^--\s*PostgreSQL database dump", text, re.MULTILINE | re.IGNORECASE):
        return "postgres"
    if re.search(r"^--\s*(?:MySQL|MariaDB) dump", text, re.MULTILINE | re.IGNORECASE):
        return "mysql"
    text = _COMMENTS.sub(" ", text)  # a sign in prose ("std::string") is no evidence
    postgres = _weigh(_POSTGRES_SIGNS, text)
    mysql = _weigh(_MYSQL_SIGNS, text)
    mysql += min(6, len(_BACKTICK.findall(text[:16384])))  # backtick-quoted names
    against_sqlite = _weigh(_NOT_SQLITE_SIGNS, text)
    if _weigh(_SQLITE_SIGNS, text) >= max(postgres, mysql, against_sqlite):
        return "sqlite"
    if postgres == mysql == 0:  # only standard SQL that SQLite cannot run
        return "postgres"
    return "postgres" if postgres > mysql else "mysql"


def detect_format(path: Path) -> str:
    """The format of a data file: csv, tsv, json, jsonl, sqlite, sql, html, zip or tar."""
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise SourceError(f"{name}: not a regular file")
    head = read_head(path)
    suffix = path.suffix.lower()
    if not head:
        raise SourceError(f"{name}: empty file")
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head[257:262] == b"ustar" or head.startswith((b"\x1f\x8b", b"\xfd7zXZ", b"BZh")):
        try:
            if tarfile.is_tarfile(path):
                return "tar"
        except (OSError, EOFError, tarfile.TarError) as exc:
            raise SourceError(f"{name}: damaged compressed file ({exc})") from exc
        if head.startswith(b"\x1f\x8b"):
            raise SourceError(
                f"{name}: a gzip-compressed file that is not a tar archive is not supported; "
                "send the file itself or a .zip/.tar.gz of it"
            )
    for magic, what in _BINARY_MAGIC.items():
        if head.startswith(magic):
            raise SourceError(f"{name}: the content is {what}, not a supported data file")
    if b"\x00" in head:
        raise SourceError(f"{name}: binary content (NUL bytes), not a text data file")
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the prefix is fine; anything else is not UTF-8.
        if len(head) == _HEAD and exc.start >= len(head) - 4:
            text = head[: exc.start].decode("utf-8-sig")
        else:
            raise SourceError(
                f"{name}: not UTF-8 text (byte {exc.start}); binary or another encoding"
            ) from exc
    control = sum(1 for ch in text[:4096] if ord(ch) < 32 and ch not in "\t\r\n\f")
    if control > 8:
        raise SourceError(f"{name}: binary content (control characters), not a text data file")
    stripped = text.lstrip()
    if not stripped:
        raise SourceError(f"{name}: empty file (only whitespace)")
    first = stripped[0]
    if first in "{[":
        if suffix in (".jsonl", ".ndjson") or _looks_like_jsonl(stripped):
            return "jsonl"
        return "json"
    if suffix == ".sql" or re.search(
        r"^--\s*(PostgreSQL|MySQL|MariaDB) database dump|^--\s*(MySQL|MariaDB) dump",
        text,
        re.MULTILINE | re.IGNORECASE,
    ):
        return "sql"
    if _SQL_START.match(stripped) and re.search(r"CREATE\s+TABLE", text, re.IGNORECASE):
        return "sql"
    if first == "<":
        if _HTML.search(stripped[:4096]):
            return "html"
        raise SourceError(f"{name}: markup that is not HTML (XML is not supported)")
    if suffix in (".html", ".htm"):
        raise SourceError(f"{name}: named .html but holds no HTML")
    first_line = stripped.splitlines()[0]
    if suffix == ".tsv" or ("\t" in first_line and "," not in first_line):
        return "tsv"
    if suffix in (".csv", ".txt", "") or any(d in first_line for d in ",;|"):
        return "csv"
    raise SourceError(f"{name}: unsupported file type {suffix or '(no suffix)'}")


def _looks_like_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines()[:3] if ln.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith("{"):
        return False
    try:
        json.loads(lines[0])
    except json.JSONDecodeError:
        return False
    return lines[1].lstrip().startswith("{")
