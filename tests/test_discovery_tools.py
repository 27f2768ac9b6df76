"""Tool generation, sandbox verification, cross-validation, escapes, complexify, publishing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from environments.builder.publish import publish_package
from environments.builder.request import CategoryPath, EnvironmentSpec
from environments.builder.stage_results import VerifyResult
from environments.discovery.code_safety import UnsafeCode, check_tool_source
from environments.discovery.complexify import complexify
from environments.discovery.sources import mine_sources, read_provenance
from environments.discovery.tool_design_agent import parse_design
from environments.discovery.tool_generator import generate_tools
from environments.discovery.verification import verify_tools
from environments.package import load_package
from environments.runtime import SandboxPool

FIXTURES = Path(__file__).parent / "fixtures" / "discovery"
CATEGORY = {
    "primary": "Science & Research",
    "secondary": "Chemistry & Materials",
    "tertiary": "Elements",
}


@pytest.fixture(scope="module")
def elements_db(tmp_path_factory):
    return mine_sources(
        tmp_path_factory.mktemp("db") / "elements.sqlite", files=[FIXTURES / "elements.sql"]
    )


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as sandbox:
        yield sandbox


def test_generator_covers_every_tool_family(elements_db):
    tools = generate_tools(elements_db, "the periodic table")
    names = set(tools.names())
    assert {
        "get_element",
        "search_elements",
        "list_isotopes_for_element",
        "aggregate_isotopes",
        "create_element",
        "update_element",
        "delete_element",
        "get_isotope",
    } <= names
    assert tools.kinds["create_element"] == "write" and tools.kinds["get_element"] == "read"
    search = tools.schemas["search_elements"]["function"]["parameters"]["properties"]
    assert {"symbol", "symbol_contains", "min_mass", "max_mass", "limit", "offset"} <= set(search)
    assert all(len(tools.tests[n]) >= 2 for n in names)
    compile(tools.tools_source(), "tools.py", "exec")


def test_schema_tools_verify_in_the_sandbox_and_publish(elements_db, pool, tmp_path):
    tools = generate_tools(elements_db, "the periodic table")
    report, kept = verify_tools("elements", elements_db, tools, pool=pool, category=CATEGORY)
    assert report.verified, report.explain()
    assert len(report.verified_tools) >= 10
    spec = EnvironmentSpec("elements", "Elements", "d")
    verified = VerifyResult(report.as_dict(), report.explain(), kept)
    path = publish_package(tmp_path, spec, CategoryPath.parse(CATEGORY), elements_db, verified).path
    package = load_package(path)
    assert set(package.tool_names) == set(report.verified_tools)
    assert package.provenance[0]["kind"] == "sql"
    results = pool.run_tool_tests(package)
    assert all(r["failed"] == 0 for r in results.values()), results
    with sqlite3.connect(package.state_path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "aw_provenance" not in tables


LLM_ANSWER = {
    "imports": ["json"],
    "tools": [
        {  # correct domain tool
            "name": "heaviest_isotope",
            "kind": "read",
            "description": "The heaviest isotope of an element.",
            "parameters": {
                "type": "object",
                "properties": {"element_number": {"type": "integer"}},
                "required": ["element_number"],
            },
            "source": "def heaviest_isotope(db, **params):\n"
            "    row = db.execute('SELECT mass_number FROM isotope WHERE element_number"
            " = ? ORDER BY mass_number DESC LIMIT 1', (params['element_number'],))"
            ".fetchone()\n"
            "    if row is None:\n"
            "        raise LookupError('no such element')\n"
            "    return row[0]\n",
            "tests": [
                "def test_heaviest_isotope__helium(call):\n"
                "    assert call('heaviest_isotope', element_number=2) >= 4\n",
                "def test_heaviest_isotope__missing(call):\n"
                "    try:\n        call('heaviest_isotope', element_number=999)\n"
                "    except Exception:\n        return\n"
                "    raise AssertionError('expected an error')\n",
            ],
        },
        {  # same name as a schema tool, wrong answers: cross-validation must reject it
            "name": "get_element",
            "kind": "read",
            "description": "Get an element.",
            "parameters": {
                "type": "object",
                "properties": {"number": {"type": "integer"}},
                "required": ["number"],
            },
            "source": "def get_element(db, **params):\n"
            "    return {'number': params['number'], 'symbol': 'X'}\n",
            "tests": [
                "def test_get_element__echo(call):\n"
                "    assert call('get_element', number=3)['number'] == 3\n"
            ],
        },
        {  # passes the static check, reads /etc/passwd through json's codecs module
            "name": "peek_secrets",
            "kind": "read",
            "description": "Reads a file.",
            "parameters": {"type": "object", "properties": {}},
            "source": "def peek_secrets(db, **params):\n"
            "    return json.codecs.open('/etc/passwd').read()[:10]\n",
            "tests": [
                "def test_peek_secrets__runs(call):\n    call('peek_secrets')\n",
                "def test_peek_secrets__any_error(call):\n"
                "    try:\n        call('peek_secrets')\n"
                "    except Exception:\n        return\n",
            ],
        },
        {  # refused before it ever runs
            "name": "open_socket",
            "kind": "read",
            "description": "Network.",
            "parameters": {"type": "object", "properties": {}},
            "source": "import socket\n\ndef open_socket(db, **params):\n"
            "    return socket.create_connection(('example.com', 80))\n",
            "tests": [],
        },
    ],
}


def test_llm_tools_cross_validated_and_escapes_rejected(elements_db, pool):
    llm_tools, problems = parse_design(LLM_ANSWER)
    assert problems and "open_socket" in problems[0] and "socket" in problems[0]
    schema_tools = generate_tools(elements_db, "the periodic table")
    report, kept = verify_tools("elements", elements_db, schema_tools, llm_tools, pool=pool)
    verdicts = {(v.name, v.origin): v for v in report.verdicts}
    assert verdicts[("heaviest_isotope", "llm")].verified
    wrong = verdicts[("get_element", "llm")]
    assert not wrong.verified and wrong.cross_failed > 0
    assert "cross-validation" in wrong.reasons[0]
    assert verdicts[("get_element", "schema")].verified
    escape = verdicts[("peek_secrets", "llm")]
    assert escape.escaped and not escape.verified
    assert "escape the sandbox" in escape.reasons[0] and "/etc/passwd" in escape.reasons[0]
    assert "peek_secrets" not in kept.names() and "heaviest_isotope" in kept.names()
    assert kept.origin["get_element"] == "schema"
    assert "peek_secrets" in report.explain()


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def t(db):\n    return open('/etc/passwd').read()\n", r"open\(\) is not allowed"),
        ("import socket\ndef t(db):\n    return socket.socket()\n", "import of 'socket'"),
        ("import os\ndef t(db):\n    return os.fork()\n", "import of 'os'"),
        ("def t(db):\n    return ().__class__.__bases__\n", "dunder attribute"),
        ("print('at import time')\n", "only functions"),
    ],
)
def test_static_check_refuses_escapes(source, reason):
    with pytest.raises(UnsafeCode, match=reason):
        check_tool_source(source)


def test_threshold_is_configurable(elements_db, pool):
    tools = generate_tools(elements_db, "x")
    tools.tests["get_element"].append(
        "def test_get_element__always_wrong(call):\n    assert False\n"
    )
    report, kept = verify_tools("e", elements_db, tools, pool=pool, threshold=1.0, min_tools=50)
    verdict = next(v for v in report.verdicts if v.name == "get_element")
    assert not verdict.verified and "below 1.0" in verdict.reasons[0]
    assert "get_element" not in kept.names()
    assert not report.verified and "needs at least 50" in report.summary


def test_complexify_adds_marked_rows_and_keeps_links(tmp_path):
    db = mine_sources(tmp_path / "p.sqlite", datasets=["penguins"])
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT COUNT(*) FROM penguin").fetchone()[0]
    records = complexify(db, rounds=2, rows_per_table=4, seed=3)
    assert [r.round for r in records] == [1, 2]
    assert records[0].added_rows["penguin"] == 4 and records[0].edge_cases
    with sqlite3.connect(db) as conn:
        after = conn.execute("SELECT COUNT(*) FROM penguin").fetchone()[0]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        nulls = conn.execute("SELECT COUNT(*) FROM penguin WHERE sex IS NULL").fetchone()[0]
    assert after > before + 8 and nulls >= 11
    assert any(p["kind"] == "derived" and "round 2" in p["detail"] for p in read_provenance(db))
