"""A small, valid bookstore environment package for tests.

Three tables (author <- book <- purchase, with foreign keys), read tools, write tools and tool
tests. `extra_tools` lets a test add tools (for example hostile ones for sandbox tests).
"""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

TOOLS_SOURCE = textwrap.dedent(
    '''
    """Bookstore tools."""


    def get_book(db, book_id):
        row = db.execute("SELECT * FROM book WHERE id = ?", (book_id,)).fetchone()
        if row is None:
            raise LookupError(f"no book with id {book_id}")
        return dict(row)


    def search_books(db, title_contains="", max_price=None, limit=10):
        sql = "SELECT id, title, price, stock FROM book WHERE title LIKE ?"
        params = [f"%{title_contains}%"]
        if max_price is not None:
            sql += " AND price <= ?"
            params.append(max_price)
        sql += " ORDER BY id LIMIT ?"
        params.append(limit)
        return [dict(row) for row in db.execute(sql, params)]


    def list_books_by_author(db, author_name):
        rows = db.execute(
            "SELECT book.id, book.title FROM book JOIN author ON author.id = book.author_id "
            "WHERE author.name = ? ORDER BY book.id",
            (author_name,),
        ).fetchall()
        if not rows:
            raise LookupError(f"no books by {author_name}")
        return [dict(row) for row in rows]


    def place_order(db, book_id, quantity, customer):
        book = db.execute("SELECT stock, price FROM book WHERE id = ?", (book_id,)).fetchone()
        if book is None:
            raise LookupError(f"no book with id {book_id}")
        if book["stock"] < quantity:
            raise ValueError(f"only {book['stock']} in stock")
        db.execute("UPDATE book SET stock = stock - ? WHERE id = ?", (quantity, book_id))
        cursor = db.execute(
            "INSERT INTO purchase (book_id, quantity, customer, total) VALUES (?, ?, ?, ?)",
            (book_id, quantity, customer, round(book["price"] * quantity, 2)),
        )
        return {"purchase_id": cursor.lastrowid, "total": round(book["price"] * quantity, 2)}


    def update_stock(db, book_id, stock):
        cursor = db.execute("UPDATE book SET stock = ? WHERE id = ?", (stock, book_id))
        if cursor.rowcount == 0:
            raise LookupError(f"no book with id {book_id}")
        return {"book_id": book_id, "stock": stock}
    '''
).lstrip()

TESTS_SOURCE = textwrap.dedent(
    '''
    """Bookstore tool tests."""


    def test_get_book__existing(call):
        assert call("get_book", book_id=1)["title"] == "Dune"


    def test_get_book__missing(call):
        try:
            call("get_book", book_id=999)
        except Exception as exc:
            assert "no book" in str(exc)
        else:
            raise AssertionError("expected an error")


    def test_search_books__by_title(call):
        assert [b["id"] for b in call("search_books", title_contains="Dune")] == [1, 2]


    def test_list_books_by_author__herbert(call):
        assert len(call("list_books_by_author", author_name="Frank Herbert")) == 2


    def test_place_order__reduces_stock(call):
        call("place_order", book_id=1, quantity=2, customer="ada")
        assert call("get_book", book_id=1)["stock"] == 3


    def test_update_stock__sets(call):
        call("update_stock", book_id=3, stock=0)
        assert call("get_book", book_id=3)["stock"] == 0
    '''
).lstrip()


def _tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOLS = [
    _tool("get_book", "Get one book by id.", {"book_id": {"type": "integer"}}, ["book_id"]),
    _tool(
        "search_books",
        "Search books by title and maximum price.",
        {
            "title_contains": {"type": "string"},
            "max_price": {"type": "number"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        },
        [],
    ),
    _tool(
        "list_books_by_author",
        "List the books of an author.",
        {"author_name": {"type": "string"}},
        ["author_name"],
    ),
    _tool(
        "place_order",
        "Buy copies of a book.",
        {
            "book_id": {"type": "integer"},
            "quantity": {"type": "integer", "minimum": 1},
            "customer": {"type": "string"},
        },
        ["book_id", "quantity", "customer"],
    ),
    _tool(
        "update_stock",
        "Set the stock of a book.",
        {"book_id": {"type": "integer"}, "stock": {"type": "integer", "minimum": 0}},
        ["book_id", "stock"],
    ),
]

AUTHORS = [(1, "Frank Herbert", "US"), (2, "Ursula K. Le Guin", "US"), (3, "Stanislaw Lem", "PL")]
BOOKS = [
    (1, "Dune", 1, 9.99, 5),
    (2, "Dune Messiah", 1, 8.5, 3),
    (3, "The Left Hand of Darkness", 2, 12.0, 4),
    (4, "Solaris", 3, 11.25, 2),
]


def build_state(path: Path, extra_books: int = 0) -> Path:
    """Write the bookstore database; `extra_books` adds filler rows for size tests."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
        CREATE TABLE book (
            id INTEGER PRIMARY KEY, title TEXT NOT NULL,
            author_id INTEGER NOT NULL REFERENCES author(id),
            price REAL NOT NULL, stock INTEGER NOT NULL);
        CREATE TABLE purchase (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            book_id INTEGER NOT NULL REFERENCES book(id),
            quantity INTEGER NOT NULL, customer TEXT NOT NULL, total REAL NOT NULL);
        """
    )
    conn.executemany("INSERT INTO author VALUES (?, ?, ?)", AUTHORS)
    conn.executemany("INSERT INTO book VALUES (?, ?, ?, ?, ?)", BOOKS)
    conn.executemany(
        "INSERT INTO book VALUES (?, ?, ?, ?, ?)",
        (
            (100 + i, f"Filler volume {i} " + "x" * 40, 1 + i % 3, 5.0 + i % 50, i % 7)
            for i in range(extra_books)
        ),
    )
    conn.commit()
    conn.close()
    return path


def build_sample_package(
    root: Path,
    *,
    name: str = "bookstore",
    extra_tools: list[tuple[dict[str, Any], str, str]] = (),
    extra_books: int = 0,
) -> Path:
    """Build a valid package in <root>/<name>/ and return its path.

    extra_tools: (openai tool schema, kind, function source) triples appended to the package.
    """
    path = Path(root) / name
    path.mkdir(parents=True, exist_ok=True)
    tools = list(TOOLS)
    kinds = {
        "get_book": "read",
        "search_books": "read",
        "list_books_by_author": "read",
        "place_order": "write",
        "update_stock": "write",
    }
    source = TOOLS_SOURCE
    for schema, kind, function_source in extra_tools:
        tools.append(schema)
        kinds[schema["function"]["name"]] = kind
        source += "\n\n" + textwrap.dedent(function_source).strip() + "\n"
    manifest = {
        "name": name,
        "version": 1,
        "title": "Bookstore",
        "description": "A small bookstore: authors, books and purchases.",
        "category": {"primary": "Shopping", "secondary": "Books", "tertiary": "Bookstore"},
        "tools": tools,
        "tool_kinds": kinds,
        "tables": {
            "author": {"primary_key": ["id"], "foreign_keys": []},
            "book": {
                "primary_key": ["id"],
                "foreign_keys": [{"column": "author_id", "references": "author.id"}],
            },
            "purchase": {
                "primary_key": ["id"],
                "foreign_keys": [{"column": "book_id", "references": "book.id"}],
            },
        },
    }
    provenance = [
        {"table": t, "source": "tests/support/sample_package.py", "kind": "synthetic", "detail": ""}
        for t in ("author", "book", "purchase")
    ]
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (path / "provenance.json").write_text(json.dumps(provenance, indent=2))
    (path / "tools.py").write_text(source)
    (path / "tool_tests.py").write_text(TESTS_SOURCE)
    state = path / "state.sqlite"
    if state.exists():
        state.unlink()
    build_state(state, extra_books=extra_books)
    return path


def simple_tool(name: str, properties: dict | None = None, required: list[str] = ()) -> dict:
    """An OpenAI tool schema for an extra test tool."""
    return _tool(name, f"Test tool {name}.", properties or {}, list(required))
