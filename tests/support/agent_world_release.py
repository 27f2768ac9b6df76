"""A small hand-written release in the Agent-World format, written to a folder for the tests.

Two environments. `0100000` (a lending library) carries the hazards real releases do: a tool
reading MCP_DB_DIR when its code loads and others at each call, a clock-stamping tool making
uuid ids that adds a field the README does not list, a log collection every tool appends to
(reads included), errors as dicts, as {"found": false} and raised, `**_extra`, a tool whose
code does not load, one whose code does not parse, one that needs the network, a
single-document collection, rows without ids, non-ASCII text and files opened without an
encoding. `0200000` (a tide table) is one document and one tool. Questions: one whose chain
reproduces its reference answer, one whose does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LIBRARY = "0100000"
TIDES = "0200000"

BOOKS = [
    {
        "id": "bk_001",
        "title": "Cien años de soledad",
        "author": "Gabriel García Márquez",
        "genre": "novel",
        "copies": 2,
    },
    {
        "id": "bk_002",
        "title": "東京物語ノート",
        "author": "小津 安二郎",
        "genre": "film",
        "copies": 1,
    },
    {
        "id": "bk_003",
        "title": "Œuvres complètes",
        "author": "Molière",
        "genre": "drama",
        "copies": 0,
    },
]
LOANS = [
    {
        "id": "ln_001",
        "book_id": "bk_001",
        "member": "Zoë",
        "status": "active",
        "created_at": "2026-01-03T10:00:00Z",
    }
]
REQUEST_LOGS = [{"id": "req_000", "tool": "list_books", "at": "2026-01-03T09:59:00Z"}]
SETTINGS = {"library": "Lantern", "max_loans_per_member": 3, "greeting": "¡Bienvenidos!"}
TAGS = [{"book_id": "bk_001", "tag": "realismo mágico"}, {"book_id": "bk_002", "tag": "cinema"}]

README = """# Lantern Lending Library

## Collections
- books: id, title, author, genre, copies (copies never below 0)
- loans: id, book_id, member, status (active -> returned | cancelled), created_at
- settings: one document; max_loans_per_member
- tags: book_id, tag (no id; a pair is a tag)
- request_logs: every request, appended

## Business rules
- A loan takes one copy; a book with no copy left cannot be lent.
- Cancelling a loan gives the copy back.
"""

# Each tool's code reads the files itself, the way released tools do. `list_books` reads
# MCP_DB_DIR at each call; `get_book` when its code loads.
LIST_BOOKS = """def list_books(genre=None, limit=10, **_extra):
    import datetime, json, os, uuid
    db = os.environ.get("MCP_DB_DIR") or "/app/database"
    def _load(name):
        try:
            with open(os.path.join(db, name)) as handle:
                return json.load(handle)
        except Exception:
            return []
    def _save(name, data):
        with open(os.path.join(db, name), "w") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
    logs = _load("request_logs.json")
    logs.append({"id": "req_" + uuid.uuid4().hex[:12], "tool": "list_books",
                 "at": datetime.datetime.utcnow().isoformat() + "Z"})
    _save("request_logs.json", logs)
    books = [b for b in _load("books.json") if genre is None or b.get("genre") == genre]
    return {"books": books[:limit], "total": len(books)}
"""

GET_BOOK = """import json
import os
import uuid
from datetime import datetime

DB_DIR = os.environ["MCP_DB_DIR"]


def _log(tool):
    path = os.path.join(DB_DIR, "request_logs.json")
    with open(path) as handle:
        rows = json.load(handle)
    rows.append({"id": "req_" + uuid.uuid4().hex[:12], "tool": tool,
                 "at": datetime.utcnow().isoformat() + "Z"})
    with open(path, "w") as handle:
        json.dump(rows, handle, ensure_ascii=False)


def get_book(book_id, **_extra):
    _log("get_book")
    with open(os.path.join(DB_DIR, "books.json")) as handle:
        books = json.load(handle)
    for book in books:
        if book["id"] == book_id:
            return {"found": True, "book": book}
    return {"found": False}
"""

CREATE_LOAN = """def create_loan(book_id, member, **_extra):
    import datetime, json, os, time, uuid
    db = os.environ["MCP_DB_DIR"]
    def _load(name):
        try:
            with open(os.path.join(db, name)) as handle:
                return json.load(handle)
        except Exception:
            return []
    def _save(name, data):
        with open(os.path.join(db, name), "w") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=2)
    logs = _load("request_logs.json")
    logs.append({"id": "req_" + uuid.uuid4().hex[:12], "tool": "create_loan",
                 "at": datetime.datetime.utcnow().isoformat() + "Z"})
    _save("request_logs.json", logs)
    books = _load("books.json")
    book = next((b for b in books if b.get("id") == book_id), None)
    if book is None:
        return {"error": {"code": "NOT_FOUND", "message": "no book " + str(book_id)}}
    if book.get("copies", 0) < 1:
        return {"error": {"code": "UNAVAILABLE", "message": "no copy left of " + book_id}}
    now = datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z"
    book["copies"] -= 1
    book["last_loaned_at"] = now
    loan = {"id": "ln_" + uuid.uuid4().hex[:10], "book_id": book_id, "member": member,
            "status": "active", "created_at": now, "created_ts": int(time.time())}
    loans = _load("loans.json")
    loans.append(loan)
    _save("books.json", books)
    _save("loans.json", loans)
    return {"loan": loan}
"""

CANCEL_LOAN = """def cancel_loan(loan_id, **_extra):
    import json, os
    db = os.environ["MCP_DB_DIR"]
    with open(os.path.join(db, "loans.json")) as handle:
        loans = json.load(handle)
    loan = next((l for l in loans if l["id"] == loan_id), None)
    if loan is None:
        raise ValueError("no loan " + str(loan_id))
    if loan["status"] != "active":
        raise ValueError("loan " + loan_id + " is " + loan["status"])
    loan["status"] = "cancelled"
    with open(os.path.join(db, "books.json")) as handle:
        books = json.load(handle)
    for book in books:
        if book["id"] == loan["book_id"]:
            book["copies"] += 1
    with open(os.path.join(db, "books.json"), "w") as handle:
        json.dump(books, handle, ensure_ascii=False)
    with open(os.path.join(db, "loans.json"), "w") as handle:
        json.dump(loans, handle, ensure_ascii=False)
    return {"loan": loan}
"""

UPDATE_SETTINGS = """def update_settings(max_loans_per_member, **_extra):
    import json, os
    db = os.environ["MCP_DB_DIR"]
    with open(os.path.join(db, "settings.json")) as handle:
        settings = json.load(handle)
    settings["max_loans_per_member"] = max_loans_per_member
    with open(os.path.join(db, "settings.json"), "w") as handle:
        json.dump(settings, handle, ensure_ascii=False)
    with open(os.path.join(db, "request_logs.json")) as handle:
        logs = json.load(handle)
    logs.append({"id": "req_settings_" + str(len(logs)), "tool": "update_settings", "at": "-"})
    with open(os.path.join(db, "request_logs.json"), "w") as handle:
        json.dump(logs, handle)
    return {"settings": settings}
"""

ADD_TAG = """def add_tag(book_id, tag, **_extra):
    import json, os
    db = os.environ["MCP_DB_DIR"]
    path = os.path.join(db, "tags.json")
    with open(path) as handle:
        tags = json.load(handle)
    tags.append({"book_id": book_id, "tag": tag})
    with open(path, "w") as handle:
        json.dump(tags, handle, ensure_ascii=False)
    return {"tagged": book_id, "tag": tag}
"""

# Its code raises while it loads (a malformed constant): the tool is unavailable, not the env.
CONVERT_FEE = """import json

RATES = json.loads("{not json")


def convert_fee(amount, **_extra):
    return {"amount": amount * RATES["EUR"]}
"""

RENEW_LOAN_SYNTAX_ERROR = """def renew_loan(loan_id:
    return {"renewed": loan_id}
"""

FETCH_COVER = """def fetch_cover(book_id, **_extra):
    import urllib.request
    with urllib.request.urlopen("http://covers.example.org/" + book_id, timeout=2) as answer:
        return {"cover": answer.read().decode()}
"""

GET_TIDES = """def get_tides(**_extra):
    import json, os
    with open(os.path.join(os.environ["MCP_DB_DIR"], "tides.json")) as handle:
        return json.load(handle)
"""


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


STRING = {"type": "string"}
LIBRARY_TOOLS = [
    (
        "list_books",
        "List books, optionally of one genre.",
        _schema({"genre": STRING, "limit": {"type": "integer", "minimum": 1}}, []),
        LIST_BOOKS,
    ),
    ("get_book", "One book by id.", _schema({"book_id": STRING}, ["book_id"]), GET_BOOK),
    (
        "create_loan",
        "Lend a copy of a book to a member.",
        _schema({"book_id": STRING, "member": STRING}, ["book_id", "member"]),
        CREATE_LOAN,
    ),
    (
        "cancel_loan",
        "Cancel an active loan.",
        _schema({"loan_id": STRING}, ["loan_id"]),
        CANCEL_LOAN,
    ),
    (
        "update_settings",
        "Change the loan limit.",
        _schema({"max_loans_per_member": {"type": "integer"}}, ["max_loans_per_member"]),
        UPDATE_SETTINGS,
    ),
    (
        "add_tag",
        "Tag a book.",
        _schema({"book_id": STRING, "tag": STRING}, ["book_id", "tag"]),
        ADD_TAG,
    ),
    (
        "convert_fee",
        "Convert a fee.",
        _schema({"amount": {"type": "number"}}, ["amount"]),
        CONVERT_FEE,
    ),
    (
        "renew_loan",
        "Renew a loan.",
        _schema({"loan_id": STRING}, ["loan_id"]),
        RENEW_LOAN_SYNTAX_ERROR,
    ),
    ("fetch_cover", "A book's cover.", _schema({"book_id": STRING}, ["book_id"]), FETCH_COVER),
]


def checkpoint(env_id: str, name: str, taxonomy: dict[str, str], tools: list, files: list[str]):
    return {
        "index": int(env_id) // 1000,
        "local_files_dir": f"./environment_mix/{env_id}",
        "file_list": [f"./environment_mix/{env_id}/{f}" for f in ["README.md", *files]],
        "data": {
            "DatabaseAgent": {"files_summary": {f: "rows" for f in files}},
            "ToolDesignAgent": {
                "tool_schemas": [
                    {"name": n, "description": d, "parameters": p, "implementation": code}
                    for n, d, p, code in tools
                ]
            },
        },
        "metadata": {
            "env_id": env_id,
            "name": name,
            "description": f"{name}: a small environment written for the tests.",
            "taxonomy": taxonomy,
            "n_tools": len(tools),
            "database_dir_env_var": "MCP_DB_DIR",
        },
    }


def questions() -> dict[str, Any]:
    bk_001 = {"found": True, "book": BOOKS[0]}
    wrong = {"found": True, "book": dict(BOOKS[1], title="Late Spring")}
    return {
        "env_id": LIBRARY,
        "name": "Lantern Lending Library",
        "tasks": [
            {
                "task": "Which novel do we hold, and how many copies are on the shelf?",
                "reference_answer": json.dumps(bk_001, ensure_ascii=False),
                "grading_rubric": {
                    "success_criteria": ["names Cien años de soledad", "says 2 copies"],
                    "verified_tool_chain": [
                        {"tool": "list_books", "args": {"genre": "novel"}},
                        {"tool": "get_book", "args": {"book_id": "bk_001"}},
                    ],
                },
            },
            {
                "task": "What is the title of book bk_002?",
                "reference_answer": json.dumps(wrong, ensure_ascii=False),
                "grading_rubric": {
                    "success_criteria": ["gives the title"],
                    "verified_tool_chain": [{"tool": "get_book", "args": {"book_id": "bk_002"}}],
                },
            },
        ],
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def write_release(root: str | Path, extra_library_tools: tuple = ()) -> Path:
    """The release at root/ (a checkout: root/environment_mix/...); returns environment_mix/.
    `extra_library_tools`: more (name, description, parameters, code) for the library."""
    mix = Path(root) / "environment_mix"
    library = mix / LIBRARY
    collections = {
        "books.json": BOOKS,
        "loans.json": LOANS,
        "request_logs.json": REQUEST_LOGS,
        "settings.json": SETTINGS,
        "tags.json": TAGS,
    }
    for filename, data in collections.items():
        _write_json(library / filename, data)
    (library / "README.md").write_text(README, encoding="utf-8")
    _write_json(
        mix / f"{LIBRARY}_step4_checkpoint.json",
        checkpoint(
            LIBRARY,
            "Lantern Lending Library",
            {
                "L1_id": "L1-14",
                "L1_name": "Media & Entertainment",
                "L2_id": "L2-36",
                "L2_name": "Books & Reading",
                "L3_name": "Library Lending & Circulation",
            },
            [*LIBRARY_TOOLS, *extra_library_tools],
            list(collections),
        ),
    )
    _write_json(mix / "questions" / f"{LIBRARY}.json", questions())
    tides = mix / TIDES
    _write_json(tides / "tides.json", {"station": "Pier 7 — Nordsee", "high": ["06:12", "18:40"]})
    (tides / "README.md").write_text("# Tide table\nOne document: the day's high waters.\n")
    _write_json(
        mix / f"{TIDES}_step4_checkpoint.json",
        checkpoint(
            TIDES,
            "Tide Table",
            {
                "L1_id": "L1-06",
                "L1_name": "Weather & Geospatial",
                "L2_id": "L2-14",
                "L2_name": "Weather Forecasting",
                "L3_name": "Tide & Marine Conditions",
            },
            [("get_tides", "Today's high waters.", _schema({}, []), GET_TIDES)],
            ["tides.json"],
        ),
    )
    _write_json(
        mix / "index.json",
        [
            {"env_id": LIBRARY, "name": "Lantern Lending Library"},
            {"env_id": TIDES, "name": "Tide Table"},
        ],
    )
    return mix


# Tools that try to leave their episode: the sandbox must refuse each, in words.
SNOOPING_TOOLS = (
    (
        "read_path",
        "Read any file.",
        _schema({"path": STRING}, ["path"]),
        """def read_path(path, **_extra):
    with open(path) as handle:
        return {"text": handle.read()[:200]}
""",
    ),
    (
        "read_path_quietly",
        "Read any file, swallowing errors the way released _load helpers do.",
        _schema({"path": STRING}, ["path"]),
        """def read_path_quietly(path, **_extra):
    try:
        with open(path) as handle:
            return {"text": handle.read()[:200]}
    except Exception:
        return {"text": ""}
""",
    ),
    (
        "write_path",
        "Write any file.",
        _schema({"path": STRING}, ["path"]),
        """def write_path(path, **_extra):
    with open(path, "w") as handle:
        handle.write("x")
    return {"written": path}
""",
    ),
    (
        "peek_episode",
        "Read another episode's books.",
        _schema({"episode": STRING}, ["episode"]),
        """def peek_episode(episode, **_extra):
    import os
    mine = os.environ["MCP_DB_DIR"]
    with open(os.path.join(os.path.dirname(mine.rstrip("/")), episode, "books.json")) as handle:
        return {"text": handle.read()[:200]}
""",
    ),
    (
        "open_socket",
        "Reach a host.",
        _schema({}, []),
        """def open_socket(**_extra):
    import socket
    socket.create_connection(("example.org", 80), timeout=1)
    return {"connected": True}
""",
    ),
)


def add_small_environment(mix: str | Path, env_id: str, name: str = "Harbour Buoys") -> Path:
    """A one-document, one-tool environment like the tide table, under another id (fast to
    verify: release fan-outs of several environments)."""
    mix = Path(mix)
    folder = mix / env_id
    _write_json(folder / "tides.json", {"station": f"{name} — Bøje 3", "high": ["07:01"]})
    (folder / "README.md").write_text(f"# {name}\nOne document: the day's high waters.\n")
    _write_json(
        mix / f"{env_id}_step4_checkpoint.json",
        checkpoint(
            env_id,
            name,
            {"L1_id": "L1-06", "L1_name": "Weather & Geospatial", "L2_name": "Weather Forecasting"},
            [("get_tides", "Today's high waters.", _schema({}, []), GET_TIDES)],
            ["tides.json"],
        ),
    )
    return folder


def add_broken_environment(mix: str | Path, env_id: str) -> Path:
    """An environment whose checkpoint is not JSON (the reader refuses it in words)."""
    mix = Path(mix)
    _write_json(mix / env_id / "rows.json", [{"id": 1}])
    checkpoint_path = mix / f"{env_id}_step4_checkpoint.json"
    checkpoint_path.write_text("{not json", encoding="utf-8")
    return checkpoint_path


def write_small_release(root: str | Path, good: tuple[str, ...], broken: tuple[str, ...] = ()):
    """A release of small environments (`add_small_environment`) and broken ones; returns
    environment_mix/."""
    mix = Path(root) / "environment_mix"
    mix.mkdir(parents=True, exist_ok=True)
    for index, env_id in enumerate(good):
        add_small_environment(mix, env_id, f"Harbour Buoys {index + 1}")
    for env_id in broken:
        add_broken_environment(mix, env_id)
    return mix


# A third environment, written on its own (write_shop_release): customers and their orders,
# with a tool listing one customer's orders, so programmatic tasks have a parent -> children
# shape to loop over. Rows keyed by `customer_id` / `order_id` (no `id`), a clock-stamping
# status update, and a log collection every call appends to.
SHOP = "0300000"
CUSTOMERS = [
    {"customer_id": "c_01", "name": "Åsa Lindqvist", "city": "Malmö", "tier": "gold"},
    {"customer_id": "c_02", "name": "Bruno Díaz", "city": "Sevilla", "tier": "silver"},
    {"customer_id": "c_03", "name": "Chen Wei", "city": "上海", "tier": "gold"},
]
ORDERS = [
    {"order_id": "o_101", "customer_id": "c_01", "total": 120.5, "items": 3, "status": "paid"},
    {"order_id": "o_102", "customer_id": "c_01", "total": 35.0, "items": 1, "status": "open"},
    {"order_id": "o_103", "customer_id": "c_02", "total": 80.0, "items": 2, "status": "paid"},
    {"order_id": "o_104", "customer_id": "c_03", "total": 15.25, "items": 1, "status": "open"},
    {"order_id": "o_105", "customer_id": "c_03", "total": 64.0, "items": 4, "status": "paid"},
    {"order_id": "o_106", "customer_id": "c_02", "total": 22.0, "items": 2, "status": "open"},
]

_SHOP_LOAD = """import json, os, time
DB = os.environ.get("MCP_DB_DIR", ".")


def _load(name):
    try:
        with open(os.path.join(DB, name)) as handle:
            return json.load(handle)
    except Exception:
        return []


def _save(name, data):
    with open(os.path.join(DB, name), "w") as handle:
        json.dump(data, handle, ensure_ascii=False)


def _audit(tool):
    log = _load("audit_log.json")
    log.append({"tool": tool, "at": time.time()})
    _save("audit_log.json", log)
"""
SHOP_TOOLS = [
    (
        "list_customers",
        "List customers, optionally of one tier.",
        _schema({"tier": {"type": "string", "enum": ["gold", "silver"]}}, []),
        _SHOP_LOAD
        + """

def list_customers(tier=None, **_extra):
    _audit("list_customers")
    rows = [c for c in _load("customers.json") if tier is None or c["tier"] == tier]
    return {"customers": rows, "count": len(rows)}
""",
    ),
    (
        "get_customer",
        "One customer by id.",
        _schema({"customer_id": STRING}, ["customer_id"]),
        _SHOP_LOAD
        + """

def get_customer(customer_id, **_extra):
    _audit("get_customer")
    for row in _load("customers.json"):
        if row["customer_id"] == customer_id:
            return row
    return {"error": {"code": "NOT_FOUND", "message": "no customer " + customer_id}}
""",
    ),
    (
        "list_orders_for_customer",
        "The orders of one customer.",
        _schema({"customer_id": STRING}, ["customer_id"]),
        _SHOP_LOAD
        + """

def list_orders_for_customer(customer_id, **_extra):
    _audit("list_orders_for_customer")
    rows = [o for o in _load("orders.json") if o["customer_id"] == customer_id]
    return {"orders": rows}
""",
    ),
    (
        "get_order",
        "One order by id.",
        _schema({"order_id": STRING}, ["order_id"]),
        _SHOP_LOAD
        + """

def get_order(order_id, **_extra):
    _audit("get_order")
    for row in _load("orders.json"):
        if row["order_id"] == order_id:
            return {"found": True, "order": row}
    return {"found": False}
""",
    ),
    (
        "update_order_status",
        "Set an order's status (open -> paid | cancelled).",
        _schema(
            {"order_id": STRING, "status": {"type": "string", "enum": ["paid", "cancelled"]}},
            ["order_id", "status"],
        ),
        _SHOP_LOAD
        + """

def update_order_status(order_id, status, **_extra):
    import datetime
    _audit("update_order_status")
    orders = _load("orders.json")
    for row in orders:
        if row["order_id"] == order_id:
            row["status"] = status
            row["updated_at"] = datetime.datetime.utcnow().isoformat()
            _save("orders.json", orders)
            return {"order": row}
    raise KeyError("no order " + order_id)
""",
    ),
]


def write_shop_release(root: str | Path) -> Path:
    """A release of the one shop environment at root/environment_mix/; returns that folder."""
    mix = Path(root) / "environment_mix"
    shop = mix / SHOP
    files = {"customers.json": CUSTOMERS, "orders.json": ORDERS, "audit_log.json": []}
    for filename, data in files.items():
        _write_json(shop / filename, data)
    (shop / "README.md").write_text(
        "# Corner Shop\n\n## Business rules\n- An order moves open -> paid | cancelled.\n",
        encoding="utf-8",
    )
    taxonomy = {
        "L1_id": "L1-03",
        "L1_name": "Commerce & Retail",
        "L2_id": "L2-07",
        "L2_name": "E-commerce",
        "L3_name": "Order Management",
    }
    _write_json(
        mix / f"{SHOP}_step4_checkpoint.json",
        checkpoint(SHOP, "Corner Shop", taxonomy, SHOP_TOOLS, list(files)),
    )
    _write_json(mix / "index.json", [{"env_id": SHOP, "name": "Corner Shop"}])
    return mix
