"""Instruction tiers of graph tasks: explicit steps, a goal, and a goal with constraints.

Synthesized on the sample bookstore, two starter-catalogue environments (airports,
world_cities) and a foreign-shaped database (the retail JSON fixture, built as an upload),
read-only walks and walks with writes, at every tier.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from environments.discovery.naming import plural, singular
from environments.runtime import SandboxPool, load_package
from tasks.privacy import public_metadata
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer, graph_signature
from tasks.synthesis.instructions import TIERS, concrete_values, is_serial, names_a_tool
from tasks.synthesis.tool_graph import records_of
from tests.support.openai_server import ScriptedOpenAIServer, text_reply
from tests.support.sample_package import build_sample_package

RETAIL = Path(__file__).parent / "fixtures" / "byod" / "retail.json"
ROW_ORDER = re.compile(
    r"\b(first|second|third|fourth|fifth|#\d+)\b[\w ]{0,40}\breturned\b", re.IGNORECASE
)
STEP_N = re.compile(r"\bstep \d+", re.IGNORECASE)
SMALLEST = re.compile(
    r"\bthe (smallest|largest|earliest|latest|alphabetically first|alphabetically last) "
)
BROKEN = [re.compile(r"\b\w+seses\b"), re.compile(r"\b\w+sss\b"), re.compile(r"\ba [aeiou]\w")]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def packages(tmp_path_factory, pool, starter_catalogue):
    from environments.builder.pipeline import run_pipeline
    from environments.builder.request import BuildRequest

    root = tmp_path_factory.mktemp("envs")
    upload = tmp_path_factory.mktemp("upload")
    shutil.copy(RETAIL, upload / "retail.json")
    request = BuildRequest.for_upload([str(upload / "retail.json")], "retail.json", str(upload))
    retail = run_pipeline(request, root=root, workdir=tmp_path_factory.mktemp("work"), pool=pool)
    starters = starter_catalogue.paths(("airports", "world_cities"))
    return {
        "bookstore": load_package(build_sample_package(tmp_path_factory.mktemp("pkg"))),
        "airports": load_package(starters["airports"]),
        "world_cities": load_package(starters["world_cities"]),
        "retail": load_package(retail.path),
    }


@pytest.fixture(scope="module")
def synthesized(packages, pool):
    """tier -> [(package, task)], read-only and write walks in every environment."""
    found = {}
    for tier in TIERS:
        found[tier] = []
        for package in packages.values():
            with GraphTaskSynthesizer(package, pool, llm=None, tier=tier) as synthesizer:
                tasks = synthesizer.synthesize(3, Difficulty(steps=2), seed=1)
                tasks += synthesizer.synthesize(3, Difficulty(steps=3, writes=1), seed=20)
            assert tasks, (tier, package.name, synthesizer.stats)
            found[tier] += [(package, task) for task in tasks]
    return found


def _unquoted(text: str) -> str:
    return re.sub(r'"[^"]*"', '""', text)


@pytest.mark.parametrize("tier", TIERS)
def test_every_tier_states_the_task_without_tools_or_row_order(synthesized, tier):
    pairs = synthesized[tier]
    assert any(t.expected_diff for _, t in pairs) and any(not t.expected_diff for _, t in pairs)
    assert {p.name for p, _ in pairs} == {"bookstore", "airports", "world_cities", "retail"}
    for package, task in pairs:
        text = task.instruction
        assert task.audit and task.audit["passed"], task.audit
        assert task.metadata["tier"] == tier == task.difficulty["tier"]
        assert names_a_tool(text, list(package.tool_names)) is None, text
        if tier == "explicit":  # a row of several is named by a stated order only
            for match in ROW_ORDER.finditer(text):
                assert text[match.end() :].startswith(
                    tuple(f" in step {n} when sorted by" for n in range(1, 50))
                ), text
        else:
            assert not ROW_ORDER.search(text), text
        bare = _unquoted(text)
        tables = package.manifest["tables"]
        broken = [p for p in BROKEN if p.search(bare)]
        broken += [
            f"{plural(singular(t))}{end}"
            for t in tables
            for end in ("es", "s")
            if re.search(rf"\b{plural(singular(t)).replace('_', ' ')}{end}\b", bare)
        ]
        assert not broken, (broken, text)
        literals = concrete_values(task.gold_chain)
        discovered = task.metadata.get("discovered", [])
        if tier == "explicit":
            assert not discovered
        else:  # serial ids told by their row's name; goal_hard: and one key to discover
            if tier == "goal":
                assert all(is_serial(d["param"], d["value"]) for d in discovered)
            for found in discovered:
                literals.remove(found["value"])
                assert all(fmt_in(v, text) for v in found["described_by"].values())
        missing = [v for v in literals if v not in text]
        assert not missing, (missing, text)
        results = task.metadata["gold_results"]
        for step in task.gold_chain:
            for binding in step["inputs"].values():
                if binding["item"] is None:
                    continue
                rows = len(records_of(results[binding["step"]]))
                if tier == "explicit":  # a row of several is the first by a stated key
                    assert rows == 1 or binding.get("sorted_by"), binding
                    if rows > 1:
                        assert "when sorted by" in text
                else:  # of several rows, goals name the smallest or largest value
                    assert rows == 1 or binding.get("sorted_by") == binding["field"], binding
                    if rows > 1:
                        assert SMALLEST.search(text), text
        if tier == "explicit":
            assert "Step 1:" in text
        else:
            assert not STEP_N.search(text), text


def fmt_in(value, text: str) -> bool:
    return (f'"{value}"' if isinstance(value, str) else json.dumps(value)) in text


def test_goal_hard_adds_conditions_discoveries_and_distractors(synthesized):
    texts = [t.instruction for _, t in synthesized["goal_hard"]]
    assert any(x.startswith("First check that") for x in texts)
    assert any("(I already know that" in x for x in texts)
    assert any(t.metadata["discovered"] for _, t in synthesized["goal_hard"])


def test_the_tier_is_part_of_the_signature(synthesized):
    _, task = synthesized["goal"][0]
    steps = [{"tool": c["tool"], "arguments": c["arguments"]} for c in task.gold_chain]
    answer = task.metadata["answer"]
    signatures = {graph_signature("e", 1, steps, answer, tier) for tier in TIERS}
    assert len(signatures) == 3
    assert not {t.signature for _, t in synthesized["goal"]} & {
        t.signature for _, t in synthesized["explicit"]
    }


def test_an_llm_rewrite_that_names_a_tool_is_refused(packages, pool, monkeypatch):
    bookstore = packages["bookstore"]
    suffix = {"text": ""}

    def rewrite(body):
        request = body["messages"][-1]["content"].split("Request:\n", 1)[1]
        return text_reply(json.dumps({"instruction": "Please: " + request + suffix["text"]}))

    with ScriptedOpenAIServer(rewrite) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        with GraphTaskSynthesizer(bookstore, pool, tier="goal") as synthesizer:
            kept = synthesizer.synthesize(2, Difficulty(steps=2), seed=5)
            suffix["text"] = " Use get_book for it."
            named = synthesizer.synthesize(2, Difficulty(steps=2), seed=40)
    assert kept and all(t.metadata["instruction_source"] == "llm" for t in kept)
    assert named and all(t.metadata["instruction_source"] == "template" for t in named)
    assert all("get_book" not in t.instruction for t in named)


def test_unknown_tier_is_refused(packages, pool):
    with pytest.raises(ValueError):
        GraphTaskSynthesizer(packages["bookstore"], pool, llm=None, tier="bogus")


def test_tier_is_public_task_metadata():
    assert public_metadata({"extra": {"tier": "goal", "gold_results": [1]}}) == {
        "extra": {"tier": "goal"}
    }


@pytest.mark.django_db
def test_the_api_validates_the_tier(reviewer_api):
    from environments.models import Category, Environment
    from tasks.api import SynthesizeTasksSerializer

    category = Category.ensure_path("Travel & Transportation", "Flights")
    environment = Environment.objects.create(
        name="airports", category=category, status=Environment.Status.VERIFYING
    )
    environment.transition(Environment.Status.VERIFIED)
    response = reviewer_api.post(
        "/api/tasks/synthesize/", {"environment": environment.pk, "tier": "bogus"}, format="json"
    )
    assert response.status_code == 400 and "tier" in response.json()["error"]
    default = SynthesizeTasksSerializer(data={"environment": environment.pk})
    assert default.is_valid(), default.errors
    assert default.validated_data["tier"] == "goal"
    hard = SynthesizeTasksSerializer(data={"environment": environment.pk, "tier": "goal_hard"})
    assert hard.is_valid() and hard.validated_data["tier"] == "goal_hard"


LIST_BOOKS = (
    {
        "type": "function",
        "function": {
            "name": "list_books",
            "description": "Books in an order, a page at a time.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_by": {"type": "string", "enum": ["price", "title", "stock"]},
                    "descending": {"type": "boolean"},
                    "max_price": {"type": "number"},
                    "limit": {"type": "integer"},
                },
                "required": ["order_by"],
            },
        },
    },
    "read",
    """
    def list_books(db, order_by, descending=False, max_price=None, limit=PAGE):
        if order_by not in ("price", "title", "stock"):
            raise ValueError(f"cannot order by {order_by!r}")
        sql = "SELECT id, title, price, stock FROM book"
        params = []
        if max_price is not None:
            sql += " WHERE price <= ?"
            params.append(max_price)
        sql += f" ORDER BY {order_by} {'DESC' if descending else 'ASC'}, id LIMIT ?"
        params.append(limit)
        return [dict(row) for row in db.execute(sql, params)]
    """,
)


def paged(rows: int) -> tuple:
    schema, kind, source = LIST_BOOKS
    return schema, kind, source.replace("PAGE", str(rows))


def test_a_page_size_only_the_code_knows_is_found_by_asking_for_one_row_more(tmp_path, pool):
    """The tool pages at 5 rows without its schema saying so: "the largest id among the books"
    read off such a page would be a wrong gold answer (the walker must see the cut)."""
    package = load_package(
        build_sample_package(tmp_path, name="paged", extra_tools=[paged(5)], extra_books=12)
    )
    with GraphTaskSynthesizer(package, pool, llm=None, tier="goal") as synthesizer:
        walker = synthesizer.walker
        seen = set()
        for max_price in (None, 20.0, 9.5, 8.0, 1.0):
            arguments = {"order_by": "price"} | ({"max_price": max_price} if max_price else {})
            page = synthesizer.lease.call("list_books", arguments, "read").result
            every = synthesizer.lease.call("list_books", arguments | {"limit": 100}, "read").result
            step = {"tool": "list_books", "arguments": arguments, "result": page}
            cut = len(every) > len(page)
            assert walker._truncated(step) is cut, (arguments, len(page), len(every))
            seen.add(cut)
    assert seen == {True, False}


def test_an_order_is_said_as_an_order_and_never_drafted_as_a_filter(tmp_path, pool):
    """ "the books whose order by is "price"" reads as a filter no row has: a goal says
    "ordered by "price"", and an optional order is never drawn as the walk's one filter."""
    from tasks.synthesis.arguments import sample_arguments

    package = load_package(
        build_sample_package(tmp_path, name="ordered", extra_tools=[paged(50)], extra_books=12)
    )
    with GraphTaskSynthesizer(package, pool, llm=None, tier="goal") as synthesizer:
        tasks = synthesizer.synthesize(12, Difficulty(steps=2), seed=4, max_walks=200)
        view, graph = synthesizer.view, synthesizer.graph
    listing = [t for t in tasks if any(s["tool"] == "list_books" for s in t.gold_chain)]
    assert listing, [t.gold_chain for t in tasks]
    for task in listing:
        text = task.instruction
        assert "order by is" not in text and "descending is" not in text, text
        (step,) = [s for s in task.gold_chain if s["tool"] == "list_books"]
        assert f'ordered by "{step["arguments"]["order_by"]}"' in text, text
    node = graph.nodes["list_books"]
    assert node.params["order_by"].orders and node.params["descending"].orders
    rng = random.Random(0)
    drafts = [sample_arguments(view, node, rng, optional_rate=1.0) for _ in range(40)]
    assert all("descending" not in d for d in drafts)  # an order is no optional filter
    assert any("max_price" in d for d in drafts)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"order_by": "price", "descending": True}, ', ordered by "price" descending'),
        ({"sort_by": "price", "sort_order": "desc"}, ', ordered by "price" descending ("desc")'),
        ({"ordering": "-price"}, ', ordered by "price" descending ("-price")'),
        ({"sort": "title", "direction": "ASC"}, ', ordered by "title" ascending ("ASC")'),
    ],
)
def test_order_arguments_read_as_an_order(arguments, said):
    from tasks.synthesis.instructions import GoalPhrases
    from tasks.synthesis.tool_graph import ParamInfo, ToolNode

    params = {name: ParamInfo(name, "string", False, "enum", orders=True) for name in arguments}
    node = ToolNode("list_books", "read", "list", "book", None, "", params)
    steps = [{"tool": "list_books", "arguments": arguments, "inputs": {}}]
    assert GoalPhrases(steps, {"list_books": node})._order(0) == said


def test_a_yes_no_column_is_never_a_condition_or_a_fact(tmp_path):
    """ "Check that the is active of the member ... is above -1" holds always and reads
    badly: columns that are only ever 0 and 1 are left out of goal_hard conditions."""
    from tasks.synthesis.environment_view import EnvironmentView
    from tasks.synthesis.instructions import GoalPhrases, _condition
    from tasks.synthesis.tool_graph import ParamInfo, ToolNode

    view = EnvironmentView(load_package(build_sample_package(tmp_path, extra_books=4)))
    rows = [{"id": n, "title": f"t{n}", "in_print": n % 2, "stock": n} for n in range(6)]
    view.rows = lambda table: rows if table == "book" else []
    view._values.clear()
    assert view.is_flag("book", "in_print") and not view.is_flag("book", "stock")
    node = ToolNode(
        "get_book", "read", "get", "book", None, "", {"id": ParamInfo("id", "integer", True, "key")}
    )
    steps = [{"tool": "get_book", "arguments": {"id": 3}, "inputs": {}, "result": rows[3]}]
    phrases = GoalPhrases(steps, {"get_book": node})
    said = {
        _condition(steps, {"get_book": node}, view, phrases, random.Random(seed))
        for seed in range(30)
    }
    assert not any("in print" in text for text in said), said
    assert any("stock" in text for text in said), said
