"""The verifier of released tools is itself tested: the release's good tools pass, and each
deliberately wrong implementation is rejected with its reason (a read that writes, writes that
do not persist, only errors, a nondeterministic result, no network, code that does not load);
a log collection is found, a collection only one tool appends to is not."""

from __future__ import annotations

import dataclasses

import pytest

from environments.agent_world.package import CollectionPlan, write_collection_package
from environments.agent_world.release import (
    ChainStep,
    Collection,
    ReleaseQuestion,
    read_environment,
)
from environments.agent_world.verify import candidate_arguments, verify_release_tools
from environments.runtime import SandboxPool
from tests.support.agent_world_release import LIBRARY, STRING, _schema, write_release

WRONG_TOOLS = (
    (
        "get_shelf",
        "Named as a read, it takes a copy off the shelf.",
        _schema({"book_id": STRING}, ["book_id"]),
        """def get_shelf(book_id, **_extra):
    import json, os
    path = os.path.join(os.environ["MCP_DB_DIR"], "books.json")
    with open(path) as handle:
        books = json.load(handle)
    for book in books:
        if book["id"] == book_id:
            book["copies"] = book["copies"] + 1
    with open(path, "w") as handle:
        json.dump(books, handle)
    return {"books": books}
""",
    ),
    (
        "update_greeting",
        "Says it updates the greeting; writes nothing.",
        _schema({"greeting": STRING}, ["greeting"]),
        """def update_greeting(greeting, **_extra):
    return {"greeting": greeting}
""",
    ),
    (
        "search_archive",
        "Answers every call with an error.",
        _schema({"query": STRING}, ["query"]),
        """def search_archive(query, **_extra):
    return {"error": {"code": "UNAVAILABLE", "message": "the archive is closed"}}
""",
    ),
    (
        "count_visits",
        "Counts across episodes through interpreter-wide state.",
        _schema({}, []),
        """def count_visits(**_extra):
    import builtins
    builtins.aw_visits = getattr(builtins, "aw_visits", 0) + 1
    return {"visits": builtins.aw_visits}
""",
    ),
)


@pytest.fixture(scope="module")
def verification(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify")
    mix = write_release(root / "release", extra_library_tools=WRONG_TOOLS)
    environment = read_environment(mix, LIBRARY)
    category = {
        "primary": "Reference & Standards",
        "secondary": "Encyclopedic Data",
        "tertiary": "",
    }
    plan = CollectionPlan(
        "lantern", 1, "L", "", category, environment.tools, {}, (), "2026-01-01T00:00:00Z", ""
    )
    path = write_collection_package(root / "candidate", environment, plan)
    with SandboxPool(workers=1) as pool:
        return verify_release_tools(environment, path, pool)


def reasons(verification):
    return {v.name: (v.reason_kind, v.reason) for v in verification.verdicts if not v.verified}


def test_the_good_tools_pass_with_their_kinds(verification):
    kinds = {v.name: v.kind for v in verification.verdicts if v.verified}
    assert kinds == {
        "list_books": "read",
        "get_book": "read",
        "create_loan": "write",
        "cancel_loan": "write",
        "update_settings": "write",
        "add_tag": "write",
    }


def test_each_wrong_implementation_is_rejected_with_its_reason(verification):
    found = reasons(verification)
    assert found["get_shelf"] == (
        "a read that writes",
        "its name says it reads, yet it changed books",
    )
    assert found["update_greeting"][0] == "writes do not persist"
    assert found["search_archive"] == (
        "answers only errors",
        "it answered every call on real rows with an error: the archive is closed",
    )
    assert found["count_visits"][0] == "nondeterministic"
    assert found["fetch_cover"][0] == "needs the network"
    assert found["convert_fee"][0] == "does not load"
    assert found["renew_loan"][0] == "code does not parse"
    assert verification.rejected_by_reason() == {
        "a read that writes": 1,
        "answers only errors": 1,
        "code does not parse": 1,
        "does not load": 1,
        "needs the network": 1,
        "nondeterministic": 1,
        "writes do not persist": 1,
    }


def test_the_log_collection_is_found_and_an_owned_collection_is_not(verification):
    assert verification.log_collections == ["request_logs"]  # tags: only add_tag appends


def test_arguments_come_from_question_chains_then_real_rows(tmp_path):
    environment = read_environment(write_release(tmp_path), LIBRARY)
    tools = {t.name: t for t in environment.tools}
    assert candidate_arguments(tools["get_book"], environment) == [
        {"book_id": "bk_001"},  # the questions' chains
        {"book_id": "bk_002"},
        {"book_id": "bk_003"},  # the ids of books
    ]
    assert candidate_arguments(tools["create_loan"], environment)[0] == {
        "book_id": "bk_001",
        "member": "Zoë",
    }
    assert candidate_arguments(tools["update_settings"], environment) == [
        {"max_loans_per_member": 3},
        {"max_loans_per_member": 4},  # nearby values, so a write has something to change
        {"max_loans_per_member": 5},
    ]


def test_a_key_is_drawn_from_the_collection_named_for_it_in_any_plural(tmp_path):
    """`match_id` takes the ids of `matches` (not a made-up "sample" that answers an error)."""
    environment = read_environment(write_release(tmp_path), LIBRARY)
    matches = Collection("matches", [{"id": "mt_01", "home": "Åland"}, {"id": "mt_02"}])
    environment = dataclasses.replace(environment, collections=(*environment.collections, matches))
    tool = dataclasses.replace(
        environment.tools[0],
        name="update_match_status",
        parameters={"type": "object", "properties": {"match_id": {"type": "string"}},
                    "required": ["match_id"]},
    )  # fmt: skip
    assert candidate_arguments(tool, environment)[:2] == [
        {"match_id": "mt_01"},
        {"match_id": "mt_02"},
    ]


# --- shapes the real release has (env 0004000 of RUC-NLPIR/Agent-World, written anew here) --

REAL_SHAPED_TOOLS = (
    (
        "get_book_card",
        "A read that stamps when the book was last looked up, as a usage stamp.",
        _schema({"book_id": STRING}, ["book_id"]),
        """def get_book_card(book_id, **_extra):
    import datetime, json, os
    path = os.path.join(os.environ["MCP_DB_DIR"], "books.json")
    with open(path, encoding="utf-8") as handle:
        books = json.load(handle)
    book = next((b for b in books if b["id"] == book_id), None)
    if book is None:
        return {"error": {"code": "NOT_FOUND", "message": "no such book"}}
    book["last_used_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(books, handle, ensure_ascii=False)
    return {"book": book}
""",
    ),
    (
        "updateBookNote",
        "Every field it sets is optional; with none it answers an error.",
        _schema({"book_id": STRING, "note": STRING, "genre": STRING}, ["book_id"]),
        """def updateBookNote(book_id, note=None, genre=None, **_extra):
    import json, os
    if note is None and genre is None:
        return {"error": {"code": "VALIDATION_ERROR",
                          "message": "At least one mutable field must be provided"}}
    path = os.path.join(os.environ["MCP_DB_DIR"], "books.json")
    with open(path, encoding="utf-8") as handle:
        books = json.load(handle)
    book = next((b for b in books if b["id"] == book_id), None)
    if book is None:
        return {"error": {"code": "NOT_FOUND", "message": "no such book"}}
    book["note"] = note
    book["genre"] = genre or book["genre"]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(books, handle, ensure_ascii=False)
    return {"book": book}
""",
    ),
)


SEND_REMINDER = (
    "send_reminder",
    "Refuses a book with no copy on the shelf; its questions call it after restocking one.",
    _schema({"book_id": STRING, "note": STRING}, ["book_id", "note"]),
    """def send_reminder(book_id, note, **_extra):
    import json, os
    path = os.path.join(os.environ["MCP_DB_DIR"], "books.json")
    with open(path, encoding="utf-8") as handle:
        books = json.load(handle)
    book = next((b for b in books if b["id"] == book_id), None)
    if book is None or book["copies"] < 1:
        return {"error": {"code": "INVALID_TRANSITION", "message": "no copy on the shelf"}}
    book["reminder"] = note
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(books, handle, ensure_ascii=False)
    return {"sent": True, "book_id": book_id}
""",
)


@pytest.fixture(scope="module")
def real_shaped(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-real-shapes")
    mix = write_release(root / "release", extra_library_tools=(*REAL_SHAPED_TOOLS, SEND_REMINDER))
    environment = read_environment(mix, LIBRARY)
    # three questions whose chains restock bk_003 first, then remind: alone, each step fails
    chains = [
        ReleaseQuestion(f"remind {n}", "{}", (), (ChainStep("send_reminder", {"book_id": "bk_003",
                                                                             "note": n}),))
        for n in ("a", "b", "c")
    ]  # fmt: skip
    environment = dataclasses.replace(environment, questions=(*environment.questions, *chains))
    category = {"primary": "Reference & Standards", "secondary": "", "tertiary": ""}
    plan = CollectionPlan(
        "lantern", 1, "L", "", category, environment.tools, {}, (), "2026-01-01T00:00:00Z", ""
    )
    path = write_collection_package(root / "candidate", environment, plan)
    with SandboxPool(workers=1) as pool:
        return verify_release_tools(environment, path, pool)


def test_a_read_that_only_stamps_when_a_row_was_used_is_a_read(real_shaped):
    verdicts = {v.name: v for v in real_shaped.verdicts}
    assert verdicts["get_book_card"].verified, verdicts["get_book_card"].reason
    assert verdicts["get_book_card"].kind == "read"


def test_an_update_whose_fields_are_all_optional_is_called_with_them(real_shaped):
    verdict = next(v for v in real_shaped.verdicts if v.name == "updateBookNote")
    assert verdict.verified, verdict.reason
    assert verdict.kind == "write" and verdict.changed == ["books"]
    assert verdict.example["book_id"] == "bk_001" and "note" in verdict.example


def test_only_stamps_is_narrow():
    from environments.agent_world.verify import only_stamps

    stamp = {
        "before": {"id": "a", "seen": None},
        "after": {"id": "a", "seen": "2026-01-01T00:00:00Z"},
    }
    count = {"before": {"id": "a", "n": 1}, "after": {"id": "a", "n": 2}}
    assert only_stamps({"added": [], "removed": [], "changed": [stamp]})
    assert not only_stamps({"added": [], "removed": [], "changed": [stamp, count]})
    assert not only_stamps({"added": [{"id": "b"}], "removed": [], "changed": [stamp]})


def test_a_step_that_fails_out_of_its_chain_is_called_with_real_rows(real_shaped):
    """Its questions' calls fill every candidate slot and fail alone (the chain restocks the
    book first): the tool is called again with arguments drawn from the rows."""
    verdict = next(v for v in real_shaped.verdicts if v.name == "send_reminder")
    assert verdict.verified, verdict.reason
    assert verdict.example == {"book_id": "bk_001", "note": "sample"}
