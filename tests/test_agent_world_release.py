"""Reading a release in the Agent-World format: what is read, and every malformed release is
refused in words that name what, where and why."""

from __future__ import annotations

import json
import shutil

import pytest

from environments.agent_world.release import (
    ReleaseError,
    check_env_id,
    environment_ids,
    mix_directory,
    read_environment,
)
from tests.support.agent_world_release import LIBRARY, TIDES, write_release


@pytest.fixture
def mix(tmp_path):
    return write_release(tmp_path / "release")


def test_reads_collections_tools_taxonomy_and_questions(mix):
    environment = read_environment(mix, LIBRARY)
    assert environment.name == "Lantern Lending Library"
    assert environment.taxonomy.l1 == "Media & Entertainment"
    assert environment.taxonomy.l3 == "Library Lending & Circulation"
    kinds = {c.name: c.kind for c in environment.collections}
    assert kinds == {
        "books": "rows",
        "loans": "rows",
        "request_logs": "rows",
        "settings": "document",
        "tags": "rows",
    }
    assert environment.collection("books").data[1]["title"] == "東京物語ノート"
    assert environment.row_count == 3 + 1 + 1 + 1 + 2
    assert "Business rules" in environment.readme
    names = [t.name for t in environment.tools]
    assert "get_book" in names and "convert_fee" in names  # loads are checked in the sandbox
    assert [q.chain[0].tool for q in environment.questions] == ["list_books", "get_book"]
    assert environment.questions[0].success_criteria[0] == "names Cien años de soledad"


def test_tool_code_with_a_syntax_error_refuses_the_tool_not_the_environment(mix):
    environment = read_environment(mix, LIBRARY)
    refused = {r.name: r.reason for r in environment.refused_tools}
    assert list(refused) == ["renew_loan"]
    assert refused["renew_loan"].startswith("its code does not parse: line 1:")
    assert "renew_loan" not in [t.name for t in environment.tools]


def test_a_checkout_or_its_environment_mix_and_the_ids_it_holds(mix):
    assert mix_directory(mix.parent) == mix
    assert mix_directory(mix) == mix
    assert environment_ids(mix) == [LIBRARY, TIDES]
    single = read_environment(mix, TIDES)
    assert single.collections[0].kind == "document"
    assert single.collections[0].data["station"] == "Pier 7 — Nordsee"


def test_no_checkpoint_is_refused(mix):
    (mix / f"{TIDES}_step4_checkpoint.json").unlink()
    with pytest.raises(ReleaseError) as refused:
        read_environment(mix, TIDES)
    assert str(refused.value) == (
        f"environment {TIDES}: no checkpoint {TIDES}_step4_checkpoint.json in {mix}"
    )


def test_a_checkpoint_that_is_not_json_is_refused(mix):
    (mix / f"{TIDES}_step4_checkpoint.json").write_text('{"metadata": {"env_id": ', "utf-8")
    with pytest.raises(ReleaseError) as refused:
        read_environment(mix, TIDES)
    message = str(refused.value)
    assert message.startswith(
        f"environment {TIDES}: checkpoint {TIDES}_step4_checkpoint.json: not JSON (line 1,"
    )


def test_a_missing_collection_folder_is_refused(mix):
    shutil.rmtree(mix / TIDES)
    with pytest.raises(ReleaseError, match=f"collection folder {TIDES}/ is missing from"):
        read_environment(mix, TIDES)


def test_a_collection_the_checkpoint_lists_but_the_folder_lacks_is_refused(mix):
    (mix / LIBRARY / "tags.json").unlink()
    with pytest.raises(ReleaseError, match="lists tags.json, missing from 0100000/"):
        read_environment(mix, LIBRARY)


def test_a_collection_that_is_not_json_is_refused(mix):
    (mix / LIBRARY / "loans.json").write_text("[{]", "utf-8")
    with pytest.raises(ReleaseError, match=r"collection 0100000/loans.json: not JSON \(line 1"):
        read_environment(mix, LIBRARY)


@pytest.mark.parametrize("env_id", ["../0100000", "0100000/../../etc", "..", "/etc", ".hidden"])
def test_an_env_id_that_leaves_the_release_folder_is_refused(mix, env_id):
    with pytest.raises(ReleaseError, match="path that leaves the release folder is refused"):
        read_environment(mix, env_id)
    with pytest.raises(ReleaseError):
        check_env_id(env_id)


def test_a_collection_that_is_a_link_is_refused(mix, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text("[]")
    (mix / LIBRARY / "extra.json").symlink_to(secret)
    with pytest.raises(ReleaseError, match="extra.json is a link; links are refused"):
        read_environment(mix, LIBRARY)


def test_a_checkpoint_without_tools_is_refused(mix):
    path = mix / f"{TIDES}_step4_checkpoint.json"
    data = json.loads(path.read_text("utf-8"))
    data["data"]["ToolDesignAgent"]["tool_schemas"] = []
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(ReleaseError, match="no data.ToolDesignAgent.tool_schemas"):
        read_environment(mix, TIDES)


def test_a_tool_naming_a_file_the_release_lacks_is_noted(mix):
    path = mix / f"{TIDES}_step4_checkpoint.json"
    data = json.loads(path.read_text("utf-8"))
    schema = data["data"]["ToolDesignAgent"]["tool_schemas"][0]
    schema["implementation"] = schema["implementation"].replace("tides.json", "moons.json")
    path.write_text(json.dumps(data), "utf-8")
    notes = read_environment(mix, TIDES).notes
    assert notes == (
        f"tool get_tides names moons.json, which {TIDES}/ does not hold (it reads as empty)",
    )


def test_malformed_questions_are_counted_not_fatal(mix):
    path = mix / "questions" / f"{LIBRARY}.json"
    data = json.loads(path.read_text("utf-8"))
    data["tasks"].append({"task": "no chain", "grading_rubric": {}})
    path.write_text(json.dumps(data), "utf-8")
    environment = read_environment(mix, LIBRARY)
    assert len(environment.questions) == 2
    assert environment.question_problems == (
        f"questions/{LIBRARY}.json task 2: no verified_tool_chain",
    )


def test_a_tool_whose_schema_is_broken_is_refused_with_the_rule(mix):
    path = mix / f"{TIDES}_step4_checkpoint.json"
    data = json.loads(path.read_text("utf-8"))
    data["data"]["ToolDesignAgent"]["tool_schemas"][0]["parameters"] = {
        "type": "object",
        "properties": {},
        "required": ["day"],
    }
    path.write_text(json.dumps(data), "utf-8")
    environment = read_environment(mix, TIDES)
    assert environment.tools == ()
    assert environment.refused_tools[0].reason == (
        "its schema is refused: parameters.required must list declared properties"
    )
