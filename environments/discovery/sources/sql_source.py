"""SQL dumps (SQLite dialect) executed into the mining database, DDL and DML only.

Each statement is checked before it runs: CREATE/ALTER/DROP of tables, indexes and views, and
INSERT/UPDATE/DELETE/REPLACE are allowed; transaction markers are skipped; anything else (ATTACH,
PRAGMA, SELECT load_extension(...), VACUUM INTO ...) is refused with the statement's line number.
An authorizer refuses ATTACH and extension loading a second time, inside SQLite. N'...' literals
of published sample scripts are read as plain strings, and a leading /* header */ is passed over.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from .base import PROVENANCE_TABLE, DatabaseBuilder, SourceError, TableSpec

_ALLOWED = re.compile(
    r"^(CREATE\s+(UNIQUE\s+)?(TABLE|INDEX|VIEW)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX|VIEW)|"
    r"INSERT|UPDATE|DELETE|REPLACE)\b",
    re.IGNORECASE,
)
_LEADING_BLOCK = re.compile(r"^\s*(?:/\*.*?\*/\s*)+", re.DOTALL)  # a /* header */ before it
_SKIPPED = re.compile(r"^(BEGIN|COMMIT|END|PRAGMA\s+foreign_keys)\b", re.IGNORECASE)
_DENIED_ACTIONS = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}


def split_statements(script: str) -> list[tuple[int, str]]:
    """(line number, statement) for every complete statement of a SQL script. The line is the
    statement's own first line, not that of the comment block or blank lines before it, so an
    error names the line a reader finds the statement on."""
    statements: list[tuple[int, str]] = []
    buffer, start, begun = "", 1, False
    for line_no, line in enumerate(script.splitlines(), start=1):
        if not begun:
            start = line_no
        buffer += line + "\n"
        begun = begun or _has_sql(buffer)
        if sqlite3.complete_statement(buffer):
            statements.append((start, _strip_comments(buffer).strip()))
            buffer, begun = "", False
    if _strip_comments(buffer).strip():
        raise SourceError(f"line {start}: unterminated SQL statement")
    return [(n, s) for n, s in statements if s]


def _has_sql(buffer: str) -> bool:
    """Whether `buffer` holds more than blank lines and comments (an open /* counts as one)."""
    rest = _strip_comments(buffer).strip()
    return bool(rest) and not (rest.startswith("/*") and "*/" not in rest)


def _strip_comments(sql: str) -> str:
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return _LEADING_BLOCK.sub("", "\n".join(lines))


_NATIONAL = re.compile(
    r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\[[^\]]*\]|`[^`]*`|(?<![\w$])[Nn](?=')",
    re.DOTALL,
)


def _plain_literals(statement: str) -> str:
    """N'...' (a national-character literal, common in published sample scripts) as '...':
    SQLite has no N prefix. Comments, strings and quoted names are passed over untouched."""
    if "N'" not in statement and "n'" not in statement:
        return statement
    return _NATIONAL.sub(lambda m: "" if m.group() in ("N", "n") else m.group(), statement)


def _authorizer(action, arg1, arg2, db_name, trigger):
    if action in _DENIED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def load_sql_dump(
    builder: DatabaseBuilder, path: Path, source: str | None = None, dialect: str | None = None
) -> list[TableSpec]:
    """Ingest a SQL dump: PostgreSQL and MySQL dumps are read (never run) by `sql_dialects`;
    SQLite dumps run their checked DDL/DML. Every resulting table keeps its declared keys."""
    from .detect import sql_dialect
    from .sql_dialects import load_dialect_dump

    path = Path(path)
    source = source or str(path)
    label = source if ":" in source else path.name
    try:
        script = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{label}: cannot read as UTF-8 text ({exc})") from exc
    dialect = dialect or sql_dialect(script[:65536])
    if dialect in ("postgres", "mysql"):
        return load_dialect_dump(builder, path, script, dialect, source)
    try:
        statements = split_statements(script)
    except SourceError as exc:
        raise SourceError(f"{label}: {exc}") from exc
    if not statements:
        raise SourceError(f"{label}: no SQL statements")
    conn = builder.conn
    before = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    conn.set_authorizer(_authorizer)
    try:
        for line_no, statement in statements:
            if _SKIPPED.match(statement):
                continue
            if not _ALLOWED.match(statement):
                verb = " ".join(statement.split()[:2])
                raise SourceError(f"{label}: line {line_no}: statement not allowed: {verb}")
            try:
                conn.execute(_plain_literals(statement))
            except sqlite3.Error as exc:
                raise SourceError(f"{label}: line {line_no}: {exc}") from exc
            except (OverflowError, ValueError) as exc:
                raise SourceError(f"{label}: line {line_no}: {exc}") from exc
    finally:
        conn.set_authorizer(None)
    after = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    specs = []
    if not [t for t in after if t not in before and not t.startswith("sqlite_")]:
        raise SourceError(f"{label}: the SQL dump creates no table")
    for table in after:
        if table in before or table.startswith("sqlite_") or table == PROVENANCE_TABLE:
            continue
        specs.append(register_existing_table(builder, table, source, "sql"))
    return specs


def register_existing_table(
    builder: DatabaseBuilder, table: str, source: str, kind: str
) -> TableSpec:
    """Describe a table created by SQL so foreign-key inference and provenance cover it."""
    conn = builder.conn
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    columns = [r[1] for r in info]
    types = {r[1]: (r[2] or "TEXT").upper() for r in info}
    pk_cols = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    primary_key = pk_cols[0] if len(pk_cols) == 1 else ""  # composite keys: no by-key tools
    spec = TableSpec(
        table, columns, types, primary_key, {r[1] for r in info if r[3]}, declared=True
    )
    for fk in conn.execute(f'PRAGMA foreign_key_list("{table}")').fetchall():
        spec.foreign_keys[fk[3]] = (fk[2], fk[4])
    builder.tables[table] = spec
    count = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    builder.add_provenance(table, source, kind, f"{count} rows from {kind}")
    return spec
