"""Change the declared type of columns of a table that SQL created, keeping everything else.

SQLite cannot ALTER a column's type, so the table is rebuilt from its own CREATE statement with
only the type words of the named columns replaced: keys, CHECK and UNIQUE constraints,
defaults, indexes and triggers stay as the source declared them.
"""

from __future__ import annotations

import re
import sqlite3

_CONSTRAINT_WORDS = frozenset(
    "CONSTRAINT PRIMARY NOT NULL UNIQUE CHECK DEFAULT COLLATE REFERENCES GENERATED AS".split()
)
_TOKEN = re.compile(r'"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|\'(?:[^\']|\'\')*\'|[^\s(),]+|[(),]')


def _unquote(name: str) -> str:
    if name[:1] in '"`[' and len(name) >= 2:
        inner = name[1:-1]
        return inner.replace('""', '"') if name[0] == '"' else inner.replace("``", "`")
    return name


def retype_sql(create_sql: str, types: dict[str, str]) -> str:
    """create_sql with the declared type of each column in types replaced (names compared
    case-insensitively); columns not found are left alone."""
    wanted = {k.lower(): v for k, v in types.items()}
    tokens = list(_TOKEN.finditer(create_sql))
    edits: list[tuple[int, int, str]] = []
    depth, item_start = 0, True
    i = 0
    while i < len(tokens):
        text = tokens[i].group()
        if text == "(":
            depth += 1
            item_start = depth == 1
            i += 1
            continue
        if text == ")":
            depth -= 1
            i += 1
            continue
        if depth == 1 and text == ",":
            item_start = True
            i += 1
            continue
        if depth == 1 and item_start:
            item_start = False
            name = _unquote(text)
            if text.upper() in ("CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"):
                i += 1
                continue
            if name.lower() in wanted:
                j = i + 1
                start = end = tokens[i].end()
                nested = 0
                while j < len(tokens):
                    word = tokens[j].group()
                    if nested == 0 and (word in (",", ")") or word.upper() in _CONSTRAINT_WORDS):
                        break
                    nested += word == "("
                    nested -= word == ")"
                    end = tokens[j].end()
                    j += 1
                edits.append((start, end, " " + wanted[name.lower()]))
                i = j
                continue
        i += 1
    for start, end, text in reversed(edits):
        create_sql = create_sql[:start] + text + create_sql[end:]
    return create_sql


def retype_table(conn: sqlite3.Connection, table: str, types: dict[str, str]) -> None:
    """Rebuild table with new declared types for the given columns (foreign keys must be off)."""
    create = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()[0]
    new_sql = retype_sql(create, types)
    if new_sql == create:
        return
    others = conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
        "AND sql IS NOT NULL ORDER BY rowid",
        (table,),
    ).fetchall()
    copy = f"{table}__aw_copy"
    conn.execute(f'CREATE TABLE "{copy}" AS SELECT * FROM "{table}"')
    conn.execute(f'DROP TABLE "{table}"')
    conn.execute(new_sql)
    conn.execute(f'INSERT INTO "{table}" SELECT * FROM "{copy}"')
    conn.execute(f'DROP TABLE "{copy}"')
    for (sql,) in others:
        conn.execute(sql)
