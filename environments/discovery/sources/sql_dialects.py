"""PostgreSQL and MySQL/MariaDB SQL -> SQLite tables: dumps (`pg_dump`, `mysqldump`) and
scripts written by hand (sample databases published as .sql files).

The SQL is never executed: it is split into statements (strings, N'...' and E'...' literals,
quoted identifiers, `--`, `#` and `/* */` comments, `/*!40101 ... */` conditional comments,
dollar quotes, `DELIMITER`, psql meta-commands such as `\\c dbname`, and `COPY ... FROM stdin;`
data blocks understood), and only what describes tables and their rows is interpreted:

- CREATE TABLE: columns with their types mapped to SQLite (serial/identity/int -> INTEGER,
  numeric/decimal -> REAL, character varying/text/enum -> TEXT, timestamp [with time zone]/
  datetime -> DATETIME, date -> DATE, boolean/tinyint(1) -> BOOLEAN, bytea/blob -> BLOB), NOT
  NULL, literal DEFAULTs (filled into rows an INSERT leaves them out of), PRIMARY KEY, UNIQUE,
  REFERENCES and table constraints (composite keys, CONSTRAINT ... FOREIGN KEY);
- ALTER TABLE [ONLY] ... ADD [CONSTRAINT ...] PRIMARY KEY / FOREIGN KEY / UNIQUE / CHECK;
- CREATE [UNIQUE] INDEX on plain columns;
- CHECK constraints and enums (MySQL `ENUM('a','b')` columns, PostgreSQL `CREATE TYPE x AS ENUM`)
  are kept as rules: simple forms (`col IN (...)`, `col >= n`, `>`, `<=`, `<`, `BETWEEN`, `<> ''`,
  joined by AND) become normalised SQLite CHECKs on the final table (see `sql_checks`); any
  other CHECK, or one the rows break, is dropped with a provenance note naming it and why;
- INSERT INTO ... VALUES (...), (...) and COPY ... FROM stdin rows, each value converted to its
  column's type (a mismatch is a SourceError naming the line).

What needs SQL to run is decided by what it would do to the data:
- INSERT ... SELECT, CREATE TABLE ... AS SELECT, UPDATE, DELETE, TRUNCATE and MERGE would change
  or derive rows, so the data read would not be the data meant: the build is refused, naming the
  line and the statement kind.
- CREATE FUNCTION / PROCEDURE / TRIGGER / VIEW / RULE / EVENT, DO blocks and CALL only add
  behaviour on top of the rows (real pg_dump files of popular databases carry triggers that keep
  a `last_update` column): they are not run, and each is recorded in the table's provenance as
  "not honoured: line N: CREATE TRIGGER x (triggers need SQL to run)" so the user sees it. A NOT
  NULL column whose DEFAULT needs SQL (now(), uuid()) and that INSERTs left out loses its NOT
  NULL, with the same kind of note.

Everything else (CREATE/DROP DATABASE, USE, SET, SELECT pg_catalog.set_config/setval, sequences,
CREATE SCHEMA/DOMAIN, COMMENT ON, OWNER TO, GRANT, LOCK/UNLOCK TABLES, DROP TABLE) is skipped.
Rows go into staging tables first; once the whole script is read (pg_dump adds keys at the end)
the final tables are created with their keys and rules and filled from the staging tables.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import DatabaseBuilder, SourceError, TableSpec, sql_name

_STR_PG = r"(?:[Ee]'(?:[^'\\]|\\.|'')*'|[Nn]?'(?:[^']|'')*')"
_STR_MY = r"(?:[Nn]?'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\")"
_TOKEN = {
    dialect: re.compile(
        rf"""\s+|(?P<str>{s})|(?P<qid>"(?:[^"]|"")*")|(?P<bid>`(?:[^`]|``)*`)
        |(?P<hex>0x[0-9A-Fa-f]+|[Xx]'[0-9A-Fa-f]*')
        |(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
        |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)|(?P<op>::|.)""",
        re.VERBOSE | re.DOTALL,
    )
    for dialect, s in (("postgres", _STR_PG), ("mysql", _STR_MY))
}
_MY_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}
_COPY_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)")
_COPY_MAP = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_COPY_HEAD = re.compile(r"^COPY\s+(.+?)\s*(\((.*?)\))?\s+FROM\s+stdin", re.IGNORECASE | re.DOTALL)
_COLUMN_STOP = {
    "NOT", "NULL", "DEFAULT", "PRIMARY", "UNIQUE", "REFERENCES", "AUTO_INCREMENT", "COLLATE",
    "CHECK", "GENERATED", "COMMENT", "CONSTRAINT", "ON", "CHARACTER", "CHARSET", "KEY",
    "AUTOINCREMENT", "IDENTITY", "INVISIBLE", "VISIBLE", "STORAGE", "COLUMN_FORMAT",
}  # fmt: skip
_TABLE_CONSTRAINT = {"PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN", "CHECK",
                     "FULLTEXT", "SPATIAL", "EXCLUDE", "PERIOD"}  # fmt: skip


def is_table_constraint(item: list[Tok]) -> bool:
    """A CREATE TABLE item is a table constraint, not a column, only when its first word is
    followed by what that constraint needs: `key int`, `index integer`, `period text` and
    Sakila's `fulltext tsvector` are columns, `KEY idx (a)` and `PERIOD FOR p (a, b)` are not.
    A quoted identifier is always a column."""
    if not item or item[0].kind != "word" or item[0].up not in _TABLE_CONSTRAINT:
        return False
    word = item[0].up
    after = [t.up if t.kind == "word" else t.text for t in item[1:4]] + ["", "", ""]
    if word == "CONSTRAINT":  # CONSTRAINT name PRIMARY KEY ... / CONSTRAINT PRIMARY KEY ...
        return bool({after[0], after[1]} & _CONSTRAINT_BODIES)
    if word in ("PRIMARY", "FOREIGN"):
        return after[0] == "KEY"
    if word == "CHECK":
        return after[0] == "("
    if word == "EXCLUDE":
        return after[0] in ("USING", "(")
    if word == "PERIOD":
        return after[0] == "FOR"
    # UNIQUE / KEY / INDEX / FULLTEXT / SPATIAL [KEY|INDEX] [name] [USING x] (columns)
    k = 1
    if word in ("UNIQUE", "FULLTEXT", "SPATIAL") and after[0] in ("KEY", "INDEX"):
        if word == "UNIQUE" or len(item) == 2:
            return True
        k = 2
    return _index_columns_follow(item, k)


def _index_columns_follow(item: list[Tok], k: int) -> bool:
    """`(a, ...)`, `name (a, ...)` or `name USING btree (a)` from `item[k]`: an index's
    column list, not a column type such as `varchar(20)` (whose parenthesis holds a number)."""
    if k < len(item) and item[k].kind in ("word", "id") and item[k].up != "USING":
        k += 1  # the index name
    if k < len(item) and item[k].up == "USING":
        return True
    return k + 1 < len(item) and item[k].text == "(" and item[k + 1].kind in ("word", "id")


_CONSTRAINT_BODIES = {"PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "EXCLUDE", "KEY", "INDEX"}


@dataclass
class Tok:
    kind: str  # str, id, word, num, hex, op
    text: str
    value: Any = None

    @property
    def up(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


@dataclass
class TableDef:
    name: str
    line: int
    columns: list[str] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)
    not_null: set[str] = field(default_factory=set)
    primary_key: list[str] = field(default_factory=list)
    unique: list[list[str]] = field(default_factory=list)
    foreign_keys: list[tuple[list[str], str, list[str]]] = field(default_factory=list)
    indexes: list[tuple[str, list[str], bool]] = field(default_factory=list)
    checks: list[tuple[str, str]] = field(default_factory=list)  # (column, normalised rule)
    defaults: dict[str, Any] = field(default_factory=dict)  # literal DEFAULTs
    run_defaults: dict[str, str] = field(default_factory=dict)  # DEFAULT now() and the like
    rows: int = 0

    @property
    def stage(self) -> str:
        return f"{self.name}__aw_stage"


def split_dump(text: str, dialect: str):
    """Yield (line number, statement, copy data lines or None) for every statement of a dump."""
    pos, line, n = 0, 1, len(text)
    delimiter = ";"
    special = re.compile(r"[;'\"`\n$#-/\\]" if dialect == "mysql" else r"[;'\"\n$-/\\]")
    string_re = re.compile(_STR_MY if dialect == "mysql" else _STR_PG, re.DOTALL)
    while pos < n:
        # Skip blank space and whole-line comments between statements.
        while pos < n:
            if text[pos] in " \t\r\n":
                line += text[pos] == "\n"
                pos += 1
            elif text.startswith("--", pos) or (dialect == "mysql" and text[pos] == "#"):
                end = text.find("\n", pos)
                pos = n if end < 0 else end
            elif text[pos] == "\\" and dialect == "postgres":  # psql meta-command (\restrict)
                end = text.find("\n", pos)
                pos = n if end < 0 else end
            elif dialect == "mysql" and re.match(r"DELIMITER\s+(\S+)", text[pos : pos + 40], re.I):
                match = re.match(r"DELIMITER\s+(\S+)", text[pos : pos + 40], re.I)
                delimiter = match.group(1)
                end = text.find("\n", pos)
                pos = n if end < 0 else end
            else:
                break
        if pos >= n:
            return
        start_line, parts, seg = line, [], pos
        while True:
            match = special.search(text, pos)
            if match is None:
                rest = "".join(parts) + text[seg:]
                if rest.strip():
                    raise SourceError(f"line {start_line}: unterminated SQL statement")
                return
            i, ch = match.start(), match.group()
            if ch == "\n":
                line += 1
                pos = i + 1
            elif ch in "'\"" or (ch == "`" and dialect == "mysql"):
                if ch == "'" and dialect == "postgres" and i > 0 and text[i - 1] in "Ee":
                    m = re.compile(_STR_PG, re.DOTALL).match(text, i - 1)
                elif ch == "'":
                    m = string_re.match(text, i)
                elif ch == "`":
                    m = re.compile(r"`(?:[^`]|``)*`").match(text, i)
                elif dialect == "mysql":
                    m = string_re.match(text, i)
                else:
                    m = re.compile(r'"(?:[^"]|"")*"').match(text, i)
                if m is None:
                    raise SourceError(f"line {line}: unterminated string or quoted name")
                line += text.count("\n", i, m.end())
                pos = m.end()
            elif ch == "$" and dialect == "postgres":
                m = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$").match(text, i)
                if m is None:
                    pos = i + 1
                    continue
                end = text.find(m.group(), m.end())
                if end < 0:
                    raise SourceError(f"line {line}: unterminated dollar-quoted string")
                line += text.count("\n", i, end)
                pos = end + len(m.group())
            elif ch == "-" and text.startswith("--", i) or ch == "#":
                parts.append(text[seg:i])
                end = text.find("\n", i)
                pos = seg = n if end < 0 else end
            elif ch == "/" and text.startswith("/*", i):
                end = text.find("*/", i + 2)
                if end < 0:
                    raise SourceError(f"line {line}: unterminated /* comment */")
                kept = " "
                if dialect == "mysql" and text.startswith("/*!", i):
                    # MySQL runs a /*!NNNNN ... */ inside a statement (`/*!50705 0x01...,*/` in
                    # a row): its text is kept. A statement that is wholly one (`/*!40101 SET
                    # ... */;`, mysqldump's stand-in view tables) is still dropped.
                    if ("".join(parts) + text[seg:i]).strip():
                        kept = " " + re.sub(r"^/\*!\d*", "", text[i:end]) + " "
                parts.append(text[seg:i] + kept)
                line += text.count("\n", i, end)
                pos = seg = end + 2
            elif ch == "\\" and dialect == "mysql":
                pos = i + 2
            elif (
                ch == ";"
                and text.startswith(delimiter, i)
                or (delimiter != ";" and ch != ";" and text.startswith(delimiter, i))
            ):
                parts.append(text[seg:i])
                statement = "".join(parts).strip()
                pos = i + len(delimiter)
                copy_rows = None
                if dialect == "postgres" and _COPY_HEAD.match(statement):
                    copy_rows, pos, line = _copy_block(text, pos, line)
                if statement:
                    yield start_line, statement, copy_rows
                break
            else:
                pos = i + 1


def _copy_block(text: str, pos: int, line: int):
    """The data lines after `COPY ... FROM stdin;` up to `\\.`: ([(line, raw)], pos, line)."""
    end = text.find("\n", pos)
    if end < 0:
        raise SourceError(f"line {line}: COPY without data")
    pos, line = end + 1, line + 1
    rows = []
    while True:
        end = text.find("\n", pos)
        raw = text[pos:] if end < 0 else text[pos:end]
        if raw.rstrip("\r") == "\\.":
            return rows, (len(text) if end < 0 else end + 1), line + 1
        if end < 0:
            raise SourceError(f"line {line}: COPY data block is not terminated by \\.")
        rows.append((line, raw.rstrip("\r")))
        pos, line = end + 1, line + 1


def tokenize(statement: str, dialect: str, line: int) -> list[Tok]:
    tokens: list[Tok] = []
    pattern = _TOKEN[dialect]
    pos = 0
    for m in pattern.finditer(statement):
        if m.start() != pos:
            raise SourceError(f"line {line}: cannot read {statement[pos : pos + 30]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind is None:
            continue
        text = m.group()
        if kind == "str":
            if text[0] in "Nn":  # N'...': a national-character literal is a plain string
                text = text[1:]
            if dialect == "mysql" and text[0] == '"':
                tokens.append(Tok("str", text, _unescape_mysql(text[1:-1], '"')))
            elif dialect == "mysql":
                tokens.append(Tok("str", text, _unescape_mysql(text[1:-1], "'")))
            elif text[0] in "Ee":
                tokens.append(Tok("str", text, _unescape_pg_e(text[2:-1])))
            else:
                tokens.append(Tok("str", text, text[1:-1].replace("''", "'")))
        elif kind == "qid":
            tokens.append(Tok("id", text, text[1:-1].replace('""', '"')))
        elif kind == "bid":
            tokens.append(Tok("id", text, text[1:-1].replace("``", "`")))
        elif kind == "hex":
            digits = text[2:] if text.startswith("0x") else text[2:-1]
            tokens.append(
                Tok("hex", text, bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits))
            )
        elif kind == "word":
            tokens.append(Tok("word", text, text))
        else:
            tokens.append(Tok(kind, text, text))
    if pos != len(statement):
        raise SourceError(f"line {line}: cannot read {statement[pos : pos + 30]!r}")
    return tokens


def _unescape_mysql(body: str, quote: str) -> str:
    body = body.replace(quote * 2, quote)
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_MY_ESCAPES.get(nxt, "\\" + nxt if nxt in "%_" else nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _unescape_pg_e(body: str) -> str:
    return _COPY_ESCAPE.sub(_copy_unescape_one, body.replace("''", "'"))


def _copy_unescape_one(m: re.Match) -> str:
    esc = m.group(1)
    if esc[0] == "x" and len(esc) > 1:
        return chr(int(esc[1:], 16))
    if esc[0] in "01234567":
        return chr(int(esc, 8))
    return _COPY_MAP.get(esc, esc)


def _name(tok: Tok) -> str:
    return str(tok.value)


def map_type(raw: str, enums: set[str] | dict[str, list[str]]) -> str:
    """SQLite declared type for a PostgreSQL/MySQL column type."""
    text = raw.lower().strip()
    base = re.sub(r"\(.*?\)", "", text).strip()
    base = base.split(".")[-1].strip('"`').strip()
    if base.endswith("[]") or base.startswith("_"):
        return "TEXT"
    if base in enums or base.startswith(("enum", "set")):
        return "TEXT"
    if text.startswith("tinyint(1)") or base in ("boolean", "bool", "bit"):
        return "BOOLEAN"
    words = base.split()
    head = words[0] if words else ""
    if head in ("serial", "bigserial", "smallserial", "serial4", "serial8", "integer", "int",
                "int2", "int4", "int8", "bigint", "smallint", "tinyint", "mediumint", "year"):  # fmt: skip
        return "INTEGER"
    if head in ("numeric", "decimal", "real", "float", "float4", "float8", "double", "money",
                "dec", "fixed"):  # fmt: skip
        return "REAL"
    if head in ("timestamp", "timestamptz", "datetime"):
        return "DATETIME"
    if head == "date":
        return "DATE"
    if head in ("bytea", "blob", "tinyblob", "mediumblob", "longblob", "binary", "varbinary"):
        return "BLOB"
    return "TEXT"


def _split_items(tokens: list[Tok]) -> list[list[Tok]]:
    items, current, depth = [], [], 0
    for tok in tokens:
        if tok.kind == "op" and tok.text == "(":
            depth += 1
        elif tok.kind == "op" and tok.text == ")":
            depth -= 1
        if depth == 0 and tok.kind == "op" and tok.text == ",":
            items.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        items.append(current)
    return items


def _paren_names(tokens: list[Tok], i: int) -> tuple[list[str], int]:
    """Names inside the parentheses starting at tokens[i]; (names, index after ')')."""
    if i >= len(tokens) or tokens[i].text != "(":
        raise ValueError("expected (")
    names, depth, j = [], 0, i
    while j < len(tokens):
        tok = tokens[j]
        if tok.text == "(" and tok.kind == "op":
            depth += 1
        elif tok.text == ")" and tok.kind == "op":
            depth -= 1
            if depth == 0:
                return names, j + 1
        elif depth == 1 and tok.kind in ("word", "id"):
            names.append(sql_name(_name(tok)))
            # `col(10)` prefix lengths and ASC/DESC: skip what follows the name
        j += 1
    raise ValueError("unbalanced (")


def _qualified(tokens: list[Tok], i: int) -> tuple[str, int]:
    """A possibly schema-qualified name starting at tokens[i]: (sql name, next index)."""
    name = _name(tokens[i])
    i += 1
    while i + 1 < len(tokens) and tokens[i].text == "." and tokens[i + 1].kind in ("word", "id"):
        name = _name(tokens[i + 1])
        i += 2
    return sql_name(name), i


_ROUTINE = re.compile(
    r"CREATE\s+(?:(?:OR\s+REPLACE|DEFINER\s*=\s*\S+|SQL\s+SECURITY\s+\w+|ALGORITHM\s*=\s*\w+"
    r"|CONSTRAINT|TEMP|TEMPORARY|RECURSIVE)\s+)*"
    r"(FUNCTION|PROCEDURE|EVENT\s+TRIGGER|TRIGGER|MATERIALIZED\s+VIEW|VIEW|RULE|EVENT|AGGREGATE)\s",
    re.IGNORECASE,
)
_CUT_OFF = re.compile(r"unterminated|not terminated|COPY without data")
_COMPARE = {">=", ">", "<=", "<", "=", "<>", "!="}
_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "=": "=", "<>": "<>", "!=": "!="}
_CHECK_WORDS = {"IN", "ANY", "ARRAY", "AND", "OR", "NOT", "BETWEEN", "VALUES"}


def _group(tokens: list[Tok], i: int) -> tuple[list[Tok], int]:
    """The tokens inside the parentheses opening at tokens[i]; (inner, index after ')')."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].kind == "op" and tokens[j].text == "(":
            depth += 1
        elif tokens[j].kind == "op" and tokens[j].text == ")":
            depth -= 1
            if depth == 0:
                return tokens[i + 1 : j], j + 1
    raise ValueError("unbalanced (")


def _sql_literal(value: Any) -> str:
    """A value as a normalised SQLite literal: 'it''s', 3, 2.5."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _default_value(tokens: list[Tok], i: int) -> tuple[Any, bool]:
    """(value, is a literal) of the DEFAULT expression at tokens[i]; ("", False) if unreadable."""
    while i < len(tokens) and tokens[i].text == "(":
        i += 1
    sign = 1
    if i < len(tokens) and tokens[i].text in ("-", "+"):
        sign, i = (-1 if tokens[i].text == "-" else 1), i + 1
    if i >= len(tokens):
        return "", False
    tok = tokens[i]
    if tok.kind == "str" and str(tok.value).lower() in ("now", "today", "current_timestamp"):
        return f"'{tok.value}'", False  # PostgreSQL reads these strings at insert time
    if tok.kind == "str":
        return tok.value, True
    if tok.kind == "num":
        return sign * (
            float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        ), True
    if tok.up in ("TRUE", "FALSE"):
        return tok.up == "TRUE", True
    if tok.up == "NULL":
        return None, False
    words = [t.text for t in tokens[i : i + 4] if t.kind in ("word", "op")]
    return "".join(words[:1]) + ("()" if len(words) > 1 and words[1] == "(" else ""), False


def _strip_casts(tokens: list[Tok]) -> list[Tok]:
    """The tokens without PostgreSQL `::type` casts (pg_dump writes `(status)::text`)."""
    out, i = [], 0
    while i < len(tokens):
        if tokens[i].kind == "op" and tokens[i].text == "::":
            i += 1
            while i < len(tokens):
                tok = tokens[i]
                if tok.kind in ("word", "id") and tok.up not in _CHECK_WORDS:
                    i += 1
                elif tok.text in ("[", "]"):
                    i += 1
                elif tok.text == "(" and i + 2 < len(tokens) and tokens[i + 1].kind == "num":
                    i = _group(tokens, i)[1]
                else:
                    break
            continue
        out.append(tokens[i])
        i += 1
    return out


def _unwrap(tokens: list[Tok]) -> list[Tok]:
    """Drop parentheses that wrap the whole expression."""
    while tokens and tokens[0].text == "(" and tokens[0].kind == "op":
        try:
            inner, after = _group(tokens, 0)
        except ValueError:
            return tokens
        if after != len(tokens):
            return tokens
        tokens = inner
    return tokens


def _conjuncts(tokens: list[Tok]) -> list[list[Tok]] | None:
    """The parts of `a AND b AND ...` (BETWEEN's AND kept); None when OR joins them."""
    tokens = _unwrap(tokens)
    parts, current, depth, between = [], [], 0, False
    for tok in tokens:
        if tok.kind == "op" and tok.text in "()":
            depth += 1 if tok.text == "(" else -1
        if depth == 0 and tok.up == "OR":
            return None
        if depth == 0 and tok.up == "BETWEEN":
            between = True
        if depth == 0 and tok.up == "AND" and not between:
            parts.append(current)
            current = []
            continue
        if depth == 0 and tok.up == "AND":
            between = False
        current.append(tok)
    parts.append(current)
    flat: list[list[Tok]] = []
    for part in parts:
        inner = _unwrap(part)
        if inner is not part and any(t.up == "AND" for t in inner):
            nested = _conjuncts(inner)
            if nested is None:
                return None
            flat.extend(nested)
        else:
            flat.append(inner)
    return flat


def _operand(tokens: list[Tok], i: int) -> tuple[str, str, int] | None:
    """('col', name, next) or ('lit', normalised literal, next) at tokens[i]."""
    if i < len(tokens) and tokens[i].text == "(" and tokens[i].kind == "op":
        try:
            inner, after = _group(tokens, i)
        except ValueError:
            return None
        found = _operand(inner, 0)
        return (found[0], found[1], after) if found and found[2] == len(inner) else None
    sign = ""
    if i < len(tokens) and tokens[i].kind == "op" and tokens[i].text in "-+":
        sign, i = tokens[i].text.replace("+", ""), i + 1
    if i >= len(tokens):
        return None
    tok = tokens[i]
    if tok.kind == "num":
        number = float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        return "lit", _sql_literal(-number if sign else number), i + 1
    if sign:
        return None
    if tok.kind == "str":
        return "lit", _sql_literal(tok.value), i + 1
    if tok.kind == "id" or (tok.kind == "word" and tok.up not in _CHECK_WORDS | {"NULL"}):
        return "col", sql_name(_name(tok)), i + 1
    return None


def _literals(tokens: list[Tok]) -> list[str] | None:
    """The literals of `('a', 'b')` or `(ARRAY['a', 'b'])`; None if anything else is there."""
    values = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.text in ("(", ")", "[", "]", ",") or tok.up == "ARRAY":
            i += 1
            continue
        found = _operand(tokens, i)
        if found is None or found[0] != "lit":
            return None
        values.append(found[1])
        i = found[2]
    return values or None


def _rule(tokens: list[Tok]) -> tuple[str, str] | str:
    """(column, normalised rule) for one simple comparison, or the reason it is not one."""
    left = _operand(tokens, 0)
    if left is None:
        return "not a simple column rule"
    i = left[2]
    op = ""
    while i < len(tokens) and tokens[i].kind == "op" and op + tokens[i].text in _COMPARE:
        op += tokens[i].text
        i += 1
    word = tokens[i].up if i < len(tokens) else ""
    if left[0] == "col" and word == "IN" and i + 1 < len(tokens):
        values = _literals(tokens[i + 1 :])
        return (left[1], f'"{left[1]}" IN ({", ".join(values)})') if values else "not a list"
    if left[0] == "col" and word == "BETWEEN":
        low = _operand(tokens, i + 1)
        if low and low[0] == "lit" and low[2] < len(tokens) and tokens[low[2]].up == "AND":
            high = _operand(tokens, low[2] + 1)
            if high and high[0] == "lit" and high[2] == len(tokens):
                if low[1].startswith("'") or high[1].startswith("'"):
                    return "compares text by order"
                return left[1], f'"{left[1]}" >= {low[1]}\x00"{left[1]}" <= {high[1]}'
        return "not a simple BETWEEN"
    if op == "=" and word == "ANY" and left[0] == "col":
        values = _literals(tokens[i + 1 :])
        return (left[1], f'"{left[1]}" IN ({", ".join(values)})') if values else "not a list"
    right = _operand(tokens, i) if op else None
    if right is None or right[2] != len(tokens) or left[0] == right[0]:
        return "compares columns" if right and left[0] == right[0] == "col" else "not a simple rule"
    (column, value), op = (
        ((left[1], right[1]), op) if left[0] == "col" else ((right[1], left[1]), _FLIP[op])
    )
    if op == "=":
        return column, f'"{column}" IN ({value})'
    if op in ("<>", "!="):
        return (column, f"\"{column}\" <> ''") if value == "''" else "excludes one value"
    if value.startswith("'"):
        return "compares text by order"
    return column, f'"{column}" {op} {value}'


def translate_check(tokens: list[Tok]) -> tuple[list[tuple[str, str]], str]:
    """A CHECK expression as normalised (column, rule) pairs, or ([], why it cannot be kept).

    Kept: `col IN (...)`, `col = ANY (ARRAY[...])`, `col >= n` (and >, <=, <, either side),
    `col BETWEEN a AND b`, `col <> ''`, joined by AND. Anything else is dropped whole."""
    tokens = _strip_casts(tokens)
    for a, b in zip(tokens, tokens[1:], strict=False):
        if a.kind == "word" and a.up not in _CHECK_WORDS and b.kind == "op" and b.text == "(":
            return [], "uses a function"
    parts = _conjuncts(tokens)
    if parts is None:
        return [], "uses OR"
    rules: list[tuple[str, str]] = []
    for part in parts:
        found = _rule(part)
        if isinstance(found, str):
            return [], found
        column, rule = found
        rules.extend((column, r) for r in rule.split("\x00"))
    return rules, ""


class DumpReader:
    """Reads one PostgreSQL or MySQL dump into the builder's connection."""

    def __init__(self, builder: DatabaseBuilder, path: Path, dialect: str, source: str):
        self.builder, self.path, self.dialect, self.source = builder, path, dialect, source
        self.conn = builder.conn
        self.tables: dict[str, TableDef] = {}
        self.enums: dict[str, list[str]] = {}  # CREATE TYPE x AS ENUM (...) -> its values
        self.notes: list[tuple[str, str]] = []  # (table or "", what was not honoured and why)
        self.skipped = 0
        self.name = source if ":" in source else path.name

    def fail(self, line: int, message: str) -> SourceError:
        return SourceError(f"{self.name}: line {line}: {message}")

    def read(self, text: str, *, partial: bool = False) -> list[TableSpec]:
        """Read the whole script into final tables; with `partial`, `text` is only the head of a
        larger script: its statements are read (and refused) the same way, the statement cut at
        its end is ignored and no final table is made (the probe of a large upload)."""
        try:
            for line, statement, copy_rows in split_dump(text, self.dialect):
                self.statement(line, statement, copy_rows)
        except SourceError as exc:
            if partial and _CUT_OFF.search(str(exc)):
                return []
            if str(exc).startswith(self.name):
                raise
            raise SourceError(f"{self.name}: {exc}") from exc
        if partial:
            return []
        if not self.tables:
            raise SourceError(f"{self.name}: the {self.dialect} dump has no CREATE TABLE")
        return self.finish()

    def statement(self, line: int, statement: str, copy_rows) -> None:
        head = statement[:80].upper().split()
        if not head:
            return
        if head[0] == "COPY" and copy_rows is not None:
            return self.copy(line, statement, copy_rows)
        if head[0] == "INSERT" or head[0] == "REPLACE":
            return self.insert(line, statement)
        if head[0] == "CREATE":
            words = [w for w in head[1:4] if w not in ("UNLOGGED", "TEMPORARY", "TEMP", "OR")]
            if words and words[0] == "TABLE":
                return self.create_table(line, statement)
            if words[:2] == ["UNIQUE", "INDEX"] or words[:1] == ["INDEX"]:
                return self.create_index(line, statement)
            if words and words[0] == "TYPE" and re.search(r"\bAS\s+ENUM\b", statement, re.I):
                tokens = tokenize(statement, self.dialect, line)
                name = _qualified(tokens, 2)[0]
                self.enums[name] = [str(t.value) for t in tokens if t.kind == "str"]
                return
            routine = _ROUTINE.match(statement)
            if routine:
                return self.not_honoured(line, statement, routine)
        if head[0] in ("DO", "CALL"):
            kind = "DO block" if head[0] == "DO" else "CALL"
            self.notes.append(("", f"not honoured: line {line}: {kind} (code needs SQL to run)"))
            return
        if head[0] == "ALTER" and len(head) > 1 and head[1] == "TABLE":
            return self.alter_table(line, statement)
        if head[0] in ("UPDATE", "DELETE", "TRUNCATE", "MERGE"):
            raise self.fail(
                line,
                f"{head[0]} statement refused: it changes rows after they are inserted, and a "
                "script is read, never run (put the final rows in INSERT ... VALUES)",
            )
        self.skipped += 1

    def not_honoured(self, line: int, statement: str, routine: re.Match) -> None:
        """A function, procedure, trigger, view, rule or event: kept as a note, never run."""
        kind = " ".join(routine.group(1).upper().split())
        tokens = tokenize(statement[routine.end(1) :].split("(", 1)[0], self.dialect, line)
        name = _qualified(tokens, 0)[0] if tokens and tokens[0].kind in ("word", "id") else "?"
        table = ""
        if kind == "TRIGGER":
            on = re.search(r"\bON\s+([`\"\w.]+)", statement, re.I)
            if on:
                on_tokens = tokenize(on.group(1), self.dialect, line)
                table = _qualified(on_tokens, 0)[0] if on_tokens else ""
        what = kind.split()[-1].lower() + "s"
        self.notes.append(
            (table, f"not honoured: line {line}: CREATE {kind} {name} ({what} need SQL to run)")
        )

    def create_table(self, line: int, statement: str) -> None:
        tokens = tokenize(statement, self.dialect, line)
        i = 2
        while i < len(tokens) and tokens[i].up in ("TABLE", "IF", "NOT", "EXISTS", "ONLY"):
            i += 1
        if i >= len(tokens):
            raise self.fail(line, "CREATE TABLE without a name")
        name, i = _qualified(tokens, i)
        if name in self.tables or name in self.builder.tables:
            raise self.fail(line, f"table {name!r} is defined twice")
        if i < len(tokens) and tokens[i].up == "AS":
            raise self.fail(
                line,
                f"CREATE TABLE {name} AS SELECT refused: it needs SQL to run (a script is "
                "read, never run)",
            )
        if i >= len(tokens) or tokens[i].text != "(":
            raise self.fail(line, f"CREATE TABLE {name}: only column lists are supported")
        depth, j = 0, i
        for j in range(i, len(tokens)):
            if tokens[j].kind == "op" and tokens[j].text == "(":
                depth += 1
            elif tokens[j].kind == "op" and tokens[j].text == ")":
                depth -= 1
                if depth == 0:
                    break
        table = TableDef(name, line)
        try:
            for item in _split_items(tokens[i + 1 : j]):
                if not item:
                    continue
                if is_table_constraint(item):
                    self.constraint(table, item)
                else:
                    self.column(table, item)
        except (ValueError, IndexError) as exc:
            raise self.fail(line, f"CREATE TABLE {name}: cannot read ({exc})") from exc
        if not table.columns:
            raise self.fail(line, f"CREATE TABLE {name} has no columns")
        self.tables[name] = table
        cols = ", ".join(f'"{c}" {table.types[c]}' for c in table.columns)
        try:
            self.conn.execute(f'CREATE TABLE "{table.stage}" ({cols})')
        except sqlite3.Error as exc:
            raise self.fail(line, f"CREATE TABLE {name}: {exc}") from exc

    def column(self, table: TableDef, item: list[Tok]) -> None:
        column = sql_name(_name(item[0]))
        if column in table.types:
            raise ValueError(f"column {column} twice")
        k, type_parts, type_toks, depth = 1, [], [], 0
        while k < len(item):
            tok = item[k]
            if depth == 0 and k > 1 and tok.kind == "word" and tok.up in _COLUMN_STOP:
                following = item[k + 1].up if k + 1 < len(item) else ""
                if tok.up != "CHARACTER" or following == "SET":
                    break
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                depth -= 1
            type_parts.append(tok.text)
            type_toks.append(tok)
            k += 1
        raw_type = re.sub(r"\s*([(),])\s*", r"\1", " ".join(type_parts))
        table.columns.append(column)
        table.types[column] = map_type(raw_type, self.enums)
        enum_values = None
        if type_toks and type_toks[0].up == "ENUM":  # MySQL enum('a','b')
            enum_values = [t.value for t in type_toks if t.kind == "str"]
        elif type_toks and not raw_type.endswith("]"):  # a CREATE TYPE ... AS ENUM, not an array
            enum_values = self.enums.get(sql_name(re.sub(r"\(.*", "", raw_type).split(".")[-1]))
        if enum_values:
            values = ", ".join(_sql_literal(v) for v in enum_values)
            table.checks.append((column, f'"{column}" IN ({values})'))
        self.column_extras(table, column, item[k:])
        rest = [t.up for t in item[k:]]
        for n, word in enumerate(rest):
            if word == "NOT" and n + 1 < len(rest) and rest[n + 1] == "NULL":
                table.not_null.add(column)
            elif word == "PRIMARY":
                table.primary_key = [column]
            elif word == "UNIQUE":
                table.unique.append([column])
            elif word == "REFERENCES":
                ref_at = k + n + 1
                ref, after = _qualified(item, ref_at)
                ref_cols = (
                    _paren_names(item, after)[0]
                    if after < len(item) and item[after].text == "("
                    else []
                )
                table.foreign_keys.append(([column], ref, ref_cols))
        if "SERIAL" in raw_type.upper() or "AUTO_INCREMENT" in rest or "IDENTITY" in rest:
            table.not_null.add(column)
            table.run_defaults.pop(column, None)

    def column_extras(self, table: TableDef, column: str, rest: list[Tok]) -> None:
        """The CHECK and DEFAULT clauses after a column's type."""
        n = 0
        while n < len(rest):
            word = rest[n].up
            if word == "CHECK" and n + 1 < len(rest) and rest[n + 1].text == "(":
                group, n = _group(rest, n + 1)
                self.add_check(table, group)
                continue
            if word == "DEFAULT" and n + 1 < len(rest):
                value, literal = _default_value(rest, n + 1)
                if literal:
                    table.defaults[column] = value
                elif value:
                    table.run_defaults[column] = value
            n += 1

    def add_check(self, table: TableDef, tokens: list[Tok]) -> None:
        rules, reason = translate_check(tokens)
        if reason:
            text = " ".join(t.text for t in tokens)
            text = text if len(text) <= 80 else text[:77] + "..."
            self.notes.append((table.name, f"CHECK ({text}) on {table.name} not kept: {reason}"))
        table.checks.extend(rules)

    def constraint(self, table: TableDef, item: list[Tok]) -> None:
        k = 0
        if item[0].up == "CONSTRAINT":
            k = 2
        word = item[k].up
        if word == "PRIMARY":
            cols, _ = _paren_names(item, self._to_paren(item, k))
            table.primary_key = cols
        elif word == "UNIQUE":
            cols, _ = _paren_names(item, self._to_paren(item, k))
            table.unique.append(cols)
        elif word == "FOREIGN":
            cols, after = _paren_names(item, self._to_paren(item, k))
            while item[after].up != "REFERENCES":
                after += 1
            ref, after = _qualified(item, after + 1)
            ref_cols = (
                _paren_names(item, after)[0]
                if after < len(item) and item[after].text == "("
                else []
            )
            table.foreign_keys.append((cols, ref, ref_cols))
        elif word in ("KEY", "INDEX"):
            name = _name(item[k + 1]) if item[k + 1].kind in ("word", "id") else ""
            cols, _ = _paren_names(item, self._to_paren(item, k))
            table.indexes.append((sql_name(name or "_".join(cols)), cols, False))
        elif word == "CHECK":
            self.add_check(table, _group(item, self._to_paren(item, k))[0])
        # FULLTEXT, SPATIAL, EXCLUDE: not kept

    @staticmethod
    def _to_paren(item: list[Tok], k: int) -> int:
        while k < len(item) and item[k].text != "(":
            k += 1
        return k

    def alter_table(self, line: int, statement: str) -> None:
        tokens = tokenize(statement, self.dialect, line)
        i = 2
        while i < len(tokens) and tokens[i].up in ("ONLY", "IF", "EXISTS"):
            i += 1
        name, i = _qualified(tokens, i)
        table = self.tables.get(name)
        actions = _split_items(tokens[i:])
        for action in actions:
            if not action or action[0].up != "ADD":
                self.skipped += 1
                continue
            body = action[1:]
            if body and is_table_constraint(body):
                if table is None:
                    raise self.fail(line, f"ALTER TABLE {name}: no such table")
                try:
                    self.constraint(table, body)
                except (ValueError, IndexError) as exc:
                    raise self.fail(line, f"ALTER TABLE {name}: cannot read ({exc})") from exc
            else:
                self.skipped += 1

    def create_index(self, line: int, statement: str) -> None:
        tokens = tokenize(statement, self.dialect, line)
        unique = tokens[1].up == "UNIQUE"
        i = 3 if unique else 2
        while i < len(tokens) and tokens[i].up in ("CONCURRENTLY", "IF", "NOT", "EXISTS"):
            i += 1
        index_name = sql_name(_name(tokens[i]))
        while i < len(tokens) and tokens[i].up != "ON":
            i += 1
        i += 1
        while i < len(tokens) and tokens[i].up == "ONLY":
            i += 1
        name, i = _qualified(tokens, i)
        while i < len(tokens) and tokens[i].text != "(":
            i += 1
        try:
            cols, _ = _paren_names(tokens, i)
        except ValueError:
            self.skipped += 1
            return
        table = self.tables.get(name)
        if table and cols and all(c in table.types for c in cols):
            table.indexes.append((index_name, cols, unique))
        else:
            self.skipped += 1

    def _target(
        self, line: int, name: str, columns: list[str] | None
    ) -> tuple[TableDef, list[str]]:
        table = self.tables.get(name)
        if table is None:
            raise self.fail(line, f"data for table {name!r}, which the dump never creates")
        if columns is None:
            return table, table.columns
        unknown = [c for c in columns if c not in table.types]
        if unknown:
            raise self.fail(line, f"{name}: unknown column {unknown[0]!r}")
        return table, columns

    def _write(self, line: int, table: TableDef, columns: list[str], rows: list[tuple]) -> None:
        omitted = [c for c in table.defaults if c not in columns]
        if omitted:  # a column left out of the INSERT takes its literal DEFAULT
            fill = tuple(self.convert(line, table, c, table.defaults[c]) for c in omitted)
            columns, rows = [*columns, *omitted], [row + fill for row in rows]
        quoted = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("?" for _ in columns)
        try:
            self.conn.executemany(f'INSERT INTO "{table.stage}" ({quoted}) VALUES ({marks})', rows)
        except sqlite3.Error as exc:
            raise self.fail(line, f"{table.name}: {exc}") from exc
        table.rows += len(rows)

    def convert(self, line: int, table: TableDef, column: str, value: Any) -> Any:
        if value is None:
            return None
        declared = table.types[column]
        try:
            if declared == "INTEGER":
                if isinstance(value, bool):
                    return int(value)
                if isinstance(value, (int, float)) and float(value).is_integer():
                    return int(value)
                return int(str(value).strip())
            if declared == "REAL":
                return float(value)
            if declared == "BOOLEAN":
                text = str(value).strip().lower()
                if text in ("t", "true", "1", "y", "yes", "on"):
                    return 1
                if text in ("f", "false", "0", "n", "no", "off"):
                    return 0
                raise ValueError(value)
            if declared == "BLOB":
                if isinstance(value, bytes):
                    return value
                text = str(value)
                if text.startswith("\\x"):
                    return bytes.fromhex(text[2:])
                return text.encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise self.fail(
                line, f"{table.name}.{column}: {value!r} is not a valid {declared.lower()} value"
            ) from exc
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                return value
        return str(value) if not isinstance(value, str) else value

    def copy(self, line: int, statement: str, copy_rows: list[tuple[int, str]]) -> None:
        head = _COPY_HEAD.match(statement)
        tokens = tokenize(head.group(1), self.dialect, line)
        name, _ = _qualified(tokens, 0)
        columns = None
        if head.group(3) is not None:
            col_tokens = tokenize(head.group(3), self.dialect, line)
            columns = [sql_name(_name(t)) for t in col_tokens if t.kind in ("word", "id")]
        table, columns = self._target(line, name, columns)
        batch = []
        for data_line, raw in copy_rows:
            fields = raw.split("\t")
            if len(fields) != len(columns):
                raise self.fail(
                    data_line, f"{name}: {len(fields)} values for {len(columns)} columns"
                )
            values = []
            for column, text in zip(columns, fields, strict=True):
                value = None if text == "\\N" else _COPY_ESCAPE.sub(_copy_unescape_one, text)
                if table.types[column] == "BLOB" and value is not None and text.startswith("\\\\x"):
                    value = bytes.fromhex(text[3:])
                values.append(self.convert(data_line, table, column, value))
            batch.append(tuple(values))
            if len(batch) >= 5000:
                self._write(data_line, table, columns, batch)
                batch = []
        if batch:
            self._write(line, table, columns, batch)

    def insert(self, line: int, statement: str) -> None:
        tokens = tokenize(statement, self.dialect, line)
        i = 1
        while i < len(tokens) and tokens[i].up in (
            "INTO",
            "IGNORE",
            "LOW_PRIORITY",
            "DELAYED",
            "HIGH_PRIORITY",
        ):
            i += 1
        name, i = _qualified(tokens, i)
        columns = None
        if i < len(tokens) and tokens[i].text == "(":
            columns, i = _paren_names(tokens, i)
        if i < len(tokens) and (
            tokens[i].up in ("SELECT", "WITH", "TABLE") or tokens[i].text == "("
        ):
            raise self.fail(
                line,
                f"INSERT INTO {name} ... SELECT refused: it needs SQL to run (a script is "
                "read, never run; only INSERT ... VALUES rows are taken)",
            )
        if i >= len(tokens) or tokens[i].up not in ("VALUES", "VALUE"):
            raise self.fail(line, f"INSERT INTO {name}: only INSERT ... VALUES is supported")
        table, columns = self._target(line, name, columns)
        i += 1
        rows, row_no = [], 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.text == "(":
                row_no += 1
                values, i = self._tuple(line, tokens, i + 1, name, row_no)
                if len(values) != len(columns):
                    raise self.fail(
                        line,
                        f"{name}: row {row_no} has {len(values)} values for {len(columns)} columns",
                    )
                rows.append(
                    tuple(
                        self.convert(line, table, c, v)
                        for c, v in zip(columns, values, strict=True)
                    )
                )
            elif tok.text in (",", ";"):
                i += 1
            elif tok.up in ("ON", "RETURNING"):  # ON CONFLICT / ON DUPLICATE KEY: values kept
                break
            else:
                raise self.fail(line, f"{name}: unexpected {tok.text!r} in VALUES")
        if not rows:
            raise self.fail(line, f"INSERT INTO {name} without rows")
        self._write(line, table, columns, rows)

    def _tuple(self, line: int, tokens: list[Tok], i: int, name: str, row_no: int):
        values: list[Any] = []
        expect_value = True
        while i < len(tokens):
            tok = tokens[i]
            if tok.text == ")" and tok.kind == "op":
                return values, i + 1
            if tok.text == "," and tok.kind == "op":
                expect_value = True
                i += 1
                continue
            if not expect_value:
                if tok.text == "::":  # PostgreSQL cast: skip the type name
                    i += 2
                    while (
                        i < len(tokens)
                        and tokens[i].text in ("[", "]", "(", ")")
                        and tokens[i].text != ")"
                    ):
                        i += 1
                    continue
                raise self.fail(line, f"{name}: row {row_no}: unexpected {tok.text!r}")
            sign = 1
            if tok.text in ("-", "+") and tok.kind == "op":
                sign = -1 if tok.text == "-" else 1
                i += 1
                tok = tokens[i]
            if tok.kind == "word" and tok.up in ("_BINARY", "_UTF8MB4", "_UTF8", "_LATIN1"):
                i += 1
                tok = tokens[i]
            if tok.kind == "str" or tok.kind == "hex":
                values.append(tok.value)
            elif tok.kind == "num":
                number = float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
                values.append(sign * number)
            elif tok.up == "NULL":
                values.append(None)
            elif tok.up in ("TRUE", "FALSE"):
                values.append(tok.up == "TRUE")
            else:
                raise self.fail(
                    line, f"{name}: row {row_no}: unsupported value {tok.text!r} (only literals)"
                )
            expect_value = False
            i += 1
        raise self.fail(line, f"{name}: row {row_no} is not closed")

    def finish(self) -> list[TableSpec]:
        from .sql_source import register_existing_table

        specs = []
        for table in self.tables.values():
            self.relax_run_defaults(table)
            parts = []
            for column in table.columns:
                text = f'"{column}" {table.types[column]}'
                if column in table.not_null or column in table.primary_key:
                    text += " NOT NULL"
                parts.append(text)
            parts.extend(f"CHECK ({rule})" for rule in self.kept_checks(table))
            if table.primary_key:
                missing = [c for c in table.primary_key if c not in table.types]
                if missing:
                    raise SourceError(
                        f"{self.name}: {table.name}: primary key column {missing[0]!r} does not exist"
                    )
                parts.append("PRIMARY KEY (" + ", ".join(f'"{c}"' for c in table.primary_key) + ")")
            for cols in table.unique:
                if cols and all(c in table.types for c in cols) and cols != table.primary_key:
                    parts.append("UNIQUE (" + ", ".join(f'"{c}"' for c in cols) + ")")
            for cols, ref, ref_cols in table.foreign_keys:
                target = self.tables.get(ref)
                if target is None and ref not in self.builder.tables:
                    raise SourceError(
                        f"{self.name}: {table.name}.{','.join(cols)} references table {ref!r}, "
                        "which the dump does not create"
                    )
                ref_cols = ref_cols or (target.primary_key if target else [])
                if len(ref_cols) != len(cols):
                    raise SourceError(
                        f"{self.name}: {table.name}: foreign key {cols} -> {ref} does not match the key"
                    )
                parts.append(
                    "FOREIGN KEY ("
                    + ", ".join(f'"{c}"' for c in cols)
                    + f') REFERENCES "{ref}" ('
                    + ", ".join(f'"{c}"' for c in ref_cols)
                    + ")"
                )
            quoted = ", ".join(f'"{c}"' for c in table.columns)
            try:
                self.conn.execute(f'CREATE TABLE "{table.name}" ({", ".join(parts)})')
                self.conn.execute(
                    f'INSERT INTO "{table.name}" ({quoted}) SELECT {quoted} FROM "{table.stage}"'
                )
                self.conn.execute(f'DROP TABLE "{table.stage}"')
                for index_name, cols, unique in table.indexes:
                    kind = "UNIQUE INDEX" if unique else "INDEX"
                    self.conn.execute(
                        f'CREATE {kind} IF NOT EXISTS "{table.name}__{index_name}" ON "{table.name}" ('
                        + ", ".join(f'"{c}"' for c in cols)
                        + ")"
                    )
            except sqlite3.IntegrityError as exc:
                raise SourceError(
                    f"{self.name}: table {table.name} (created at line {table.line}): the rows break "
                    f"its keys ({exc})"
                ) from exc
            except sqlite3.Error as exc:
                raise SourceError(
                    f"{self.name}: table {table.name} (line {table.line}): {exc}"
                ) from exc
            spec = register_existing_table(
                self.builder, table.name, self.source, f"sql:{self.dialect}"
            )
            specs.append(spec)
        for table_name, note in self.notes:
            self.builder.add_provenance(table_name, self.source, "sql:note", note)
        return specs

    def relax_run_defaults(self, table: TableDef) -> None:
        """A NOT NULL column whose DEFAULT needs SQL to run (now(), uuid()) and that some INSERTs
        left out holds NULL there: its NOT NULL is dropped, with a note, rather than the build."""
        for column, default in table.run_defaults.items():
            if column not in table.not_null or column in table.primary_key:
                continue
            query = f'SELECT COUNT(*) FROM "{table.stage}" WHERE "{column}" IS NULL'
            missing = self.conn.execute(query).fetchone()[0]
            if missing:
                table.not_null.discard(column)
                self.notes.append(
                    (
                        table.name,
                        f"not honoured: {table.name}.{column} DEFAULT {default} (it needs SQL to "
                        f"run); {missing} row(s) that left it out hold NULL",
                    )
                )

    def kept_checks(self, table: TableDef) -> list[str]:
        """The table's normalised CHECK rules its rows satisfy; the others are noted, not kept."""
        kept: list[str] = []
        for column, rule in table.checks:
            if rule in kept:
                continue
            if column not in table.types:
                self.notes.append(
                    (table.name, f"CHECK ({rule}) on {table.name} not kept: no column {column!r}")
                )
                continue
            query = f'SELECT COUNT(*) FROM "{table.stage}" WHERE NOT ({rule})'
            broken = self.conn.execute(query).fetchone()[0]
            if broken:
                self.notes.append(
                    (
                        table.name,
                        f"CHECK ({rule}) on {table.name} not kept: {broken} row(s) break it",
                    )
                )
                continue
            kept.append(rule)
        return kept


def load_dialect_dump(
    builder: DatabaseBuilder, path: Path, text: str, dialect: str, source: str | None = None
) -> list[TableSpec]:
    return DumpReader(builder, Path(path), dialect, source or str(path)).read(text)
