"""Graph tasks: the tool graph, random walks on real rows, and gold replays scoring 1.0."""

from __future__ import annotations

import json

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.reward import score
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer, dedup_tasks
from tasks.synthesis.replay import replay_gold
from tasks.synthesis.tool_graph import build_tool_graph
from tests.support.openai_server import ScriptedOpenAIServer, text_reply
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def penguins(tmp_path_factory, pool):
    """A real starter-catalogue environment (schema-generated tools, foreign keys)."""
    from environments.discovery.catalogue import STARTER_SPECS, build_environment

    spec = next(s for s in STARTER_SPECS if s["name"] == "penguins")
    root = tmp_path_factory.mktemp("catalogue")
    entry = build_environment(spec, root, root / ".mining", pool)
    assert entry.path, entry.error or entry.report
    return load_package(entry.path)


def _edge(graph, source, target, param):
    return next(
        (e for e in graph.edges if (e.source, e.target, e.param) == (source, target, param)), None
    )


def test_tool_graph_links_outputs_to_parameters(pool, bookstore, penguins):
    with pool.start_episode(bookstore) as episode:
        graph = build_tool_graph(bookstore, episode)
    edge = _edge(graph, "list_books_by_author", "get_book", "book_id")
    assert edge and edge.field == "id" and {"schema", "observed"} <= edge.via
    assert _edge(graph, "get_book", "update_stock", "book_id").field == "id"
    # author ids look like book ids, but the keys disagree: no edge
    assert not any(e.field == "author_id" and e.param == "book_id" for e in graph.edges)

    with pool.start_episode(penguins) as episode:
        catalogue_graph = build_tool_graph(penguins, episode)
    assert any("foreign_key" in e.via for e in catalogue_graph.edges)

    drawn = graph.to_dict()
    assert {n["id"] for n in drawn["nodes"]} == set(bookstore.tool_names)
    assert all(isinstance(n["x"], int) and isinstance(n["y"], int) for n in drawn["nodes"])
    assert len({(n["x"], n["y"]) for n in drawn["nodes"]}) == len(drawn["nodes"])
    assert drawn == graph.to_dict()  # deterministic layout
    json.dumps(drawn)


def test_every_graph_task_replays_to_a_perfect_score(pool, bookstore, penguins):
    tasks = []
    for package in (bookstore, penguins):
        with GraphTaskSynthesizer(package, pool, llm=None) as synthesizer:
            tasks += synthesizer.synthesize(6, Difficulty(steps=2), seed=1)
            tasks += synthesizer.synthesize(6, Difficulty(steps=4, writes=1, joins=1), seed=50)
            tasks += synthesizer.synthesize(
                1, Difficulty(steps=40, writes=3, joins=2, branches=1, min_steps=4), seed=900
            )
    assert len(tasks) >= 20
    assert any(t.expected_diff for t in tasks) and any(not t.expected_diff for t in tasks)
    for task in tasks:
        package = bookstore if task.environment == "bookstore" else penguins
        breakdown = score(task, replay_gold(task, pool, package))
        assert breakdown.total == 1.0, (breakdown.to_dict(), task.instruction)


def test_difficulty_controls_shape_the_walk(pool, bookstore, penguins):
    # the explicit tier keeps every step walked (goal tiers drop lookups nothing uses)
    plan = Difficulty(steps=40, writes=4, distractors=5, min_steps=6)
    with GraphTaskSynthesizer(penguins, pool, llm=None, tier="explicit") as synthesizer:
        long = synthesizer.synthesize(1, plan, seed=7)
        joined = synthesizer.synthesize(8, Difficulty(steps=4, writes=1, joins=1), seed=70)
    # penguins is one table of rows and three of categories: a chain of real dependencies
    # (no re-read of a row it already holds) ends where the graph does, its length recorded
    assert long and 6 <= long[0].difficulty["steps"] == len(long[0].gold_chain) <= 45
    assert long[0].metadata["requested_steps"] == 40
    assert long[0].difficulty["writes"] >= 2 and long[0].expected_diff
    assert long[0].difficulty["dependent_calls"] == len(long[0].gold_chain) - 1
    assert long[0].difficulty["distractors"] == 5
    assert len(long[0].tools) == len({c["tool"] for c in long[0].gold_chain}) + 5
    assert any(t.difficulty["joins"] >= 1 for t in joined)
    for task in joined:
        fed = [c for c in task.gold_chain if len({i["step"] for i in c["inputs"].values()}) > 1]
        assert len(fed) == task.difficulty["joins"]


def test_instruction_names_the_values_and_what_to_report(pool, bookstore):
    with GraphTaskSynthesizer(bookstore, pool, llm=None, tier="explicit") as synthesizer:
        tasks = synthesizer.synthesize(10, Difficulty(steps=3), seed=3)
    for task in tasks:
        first = task.gold_chain[0]["arguments"]
        for value in first.values():
            assert (
                f'"{value}"' if isinstance(value, str) else json.dumps(value)
            ) in task.instruction
        assert "Step 3:" in task.instruction
        if task.reference_answer is not None:
            assert "report" in task.instruction.lower()


def test_equivalent_tasks_are_deduplicated(pool, bookstore):
    with GraphTaskSynthesizer(bookstore, pool, llm=None) as first:
        a = first.synthesize(8, Difficulty(steps=2), seed=11)
        # the same seed walks the same chain: the second copy is recognised and dropped
        assert first.synthesize_one(Difficulty(steps=2), seed=11) is None
        assert first.stats.duplicates >= 1
    with GraphTaskSynthesizer(bookstore, pool, llm=None) as second:
        b = second.synthesize(8, Difficulty(steps=2), seed=11)
    assert [t.signature for t in a] == [t.signature for t in b]  # seeded, reproducible
    assert len({t.signature for t in a}) == len(a)
    assert dedup_tasks(a + b) == a


def test_llm_writes_the_instruction_when_configured(pool, bookstore, monkeypatch):
    def rewrite(body):
        steps = body["messages"][-1]["content"].split("Gold tool chain:")[0]
        return text_reply(json.dumps({"instruction": "Please do this. " + steps.strip()}))

    with ScriptedOpenAIServer(rewrite) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        with GraphTaskSynthesizer(bookstore, pool, tier="explicit") as synthesizer:
            tasks = synthesizer.synthesize(3, Difficulty(steps=2), seed=5)
        assert server.requests and all(t.metadata["instruction_source"] == "llm" for t in tasks)
        assert all(t.instruction.startswith("Please do this.") for t in tasks)

        server.responder = lambda body: text_reply('{"instruction": "Do something vague."}')
        with GraphTaskSynthesizer(bookstore, pool, tier="explicit") as synthesizer:
            vague = synthesizer.synthesize(2, Difficulty(steps=2), seed=5)
    # a rewrite that drops a concrete value would not determine the answer: template kept
    assert all(t.metadata["instruction_source"] == "template" for t in vague)
    assert all(t.instruction.startswith("Step 1:") for t in vague)


def test_episode_lease_answers_repeated_reads_of_the_initial_state_from_memory(pool, bookstore):
    """Walks repeat lookups; on the untouched state a read's answer is known, after a write
    it is not (the write may have changed it)."""
    from tasks.synthesis.episodes import EpisodeLease

    lease = EpisodeLease(pool, bookstore)
    try:
        first = lease.call("get_book", {"book_id": 1}, "read")
        again = lease.call("get_book", {"book_id": 1}, "read")
        assert first.ok and again.result == first.result and lease.cached_reads == 1
        again.result["title"] = "changed by a caller"
        assert lease.call("get_book", {"book_id": 1}, "read").result == first.result
        written = lease.call("update_stock", {"book_id": 1, "stock": 999}, "write")
        assert written.ok and lease.dirty
        after = lease.call("get_book", {"book_id": 1}, "read")
        assert lease.cached_reads == 2 and after.result["stock"] == 999
        lease.clean()  # a fresh episode is the initial state again: memory applies
        assert lease.call("get_book", {"book_id": 1}, "read").result == first.result
        assert lease.cached_reads == 3
    finally:
        lease.close()


def test_link_tools_are_links_between_two_rows_not_new_rows():
    """add_track_to_playlist links two existing rows (a walk says "add the track ... to the
    playlist ..."); add_track alone still creates one."""
    from tasks.synthesis.tool_graph import parse_tool_name

    tables = {"tracks": {}, "playlists": {}, "flight_dates": {}}
    assert parse_tool_name("add_track_to_playlist", tables) == ("link", "tracks", "playlists")
    assert parse_tool_name("remove_track_from_playlist", tables) == (
        "unlink",
        "tracks",
        "playlists",
    )
    assert parse_tool_name("add_track", tables) == ("create", "tracks", None)
    assert parse_tool_name("remove_flight_date", tables) == ("delete", "flight_dates", None)
