"""`manage.py build_environment --agent-world PATH [--env ID ...]`: released environments go
through the one build job (origin agent_world), are verified tool by tool in the sandbox, keep
their taxonomy, and are served by the episode API like any other environment."""

from __future__ import annotations

import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from environments.agent_world.pipeline import run_agent_world_pipeline
from environments.builder.request import BuildRequest, BuildRequestError
from environments.builder.stages import BuildFailed
from environments.models import Environment
from serving.episode_service import episode_service
from tasks.models import Task
from tasks.released_questions import carried_ids, same_answer
from tests.support.agent_world_release import LIBRARY, TIDES, write_release


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "release")


@pytest.mark.django_db(transaction=True)
def test_the_cli_imports_a_release_and_the_episode_api_serves_it(storage, release, viewer_api):
    out = StringIO()
    call_command("build_environment", agent_world=str(release.parent), stdout=out)
    text = out.getvalue()
    assert "catalogue run #" in text and "environment_mix queued" in text
    assert "listed 2: published 2, rejected 0" in text and "published 2 of 2:" in text
    assert (
        "0100000 -> aw_0100000@v1: 6 verified tools, 5 collections, 8 rows; 1 of 2 questions "
        "imported as held-out tasks (kept out: 1 does not reproduce)"
    ) in text

    library = Environment.objects.get(name="aw_0100000")
    assert (library.status, library.origin) == ("verified", "agent_world")
    assert library.category.path == (
        "Entertainment & Media > Movies & TV > Library Lending & Circulation"
    )
    release_words = library.manifest["release"]
    assert release_words["env_id"] == LIBRARY
    assert release_words["taxonomy"]["L2"] == "Books & Reading"
    assert library.manifest["state"]["log_collections"] == ["request_logs"]
    verify = library.build_yield["verify"]
    assert verify["rejected_by_reason"] == {
        "code does not parse": 1,
        "does not load": 1,
        "needs the network": 1,
    }
    reasons = {r["tool"]: r["reason"] for r in verify["rejected_tools"]}
    assert reasons["convert_fee"].startswith("its code does not load: JSONDecodeError")
    assert reasons["fetch_cover"].startswith("it needs the network, which the sandbox refuses")
    kinds = {t.name: (t.kind, t.origin) for t in library.tools.all()}
    assert kinds == {
        "list_books": ("read", "imported"),
        "get_book": ("read", "imported"),
        "create_loan": ("write", "imported"),
        "cancel_loan": ("write", "imported"),
        "update_settings": ("write", "imported"),
        "add_tag": ("write", "imported"),
    }
    assert "DB_DIR = os.environ" in library.tools.get(name="get_book").source  # as released
    assert Environment.objects.get(name="aw_0200000").category.path.startswith(
        "Weather & Environment > Weather & Climate"
    )

    try:
        created = viewer_api.post("/api/episodes/", {"environment": library.pk}, format="json")
        assert created.status_code == 201, created.json()
        key = created.json()["episode"]
        listed = viewer_api.get(f"/api/episodes/{key}/tools/").json()["tools"]
        assert "create_loan" in [t["function"]["name"] for t in listed]
        read = viewer_api.post(
            f"/api/episodes/{key}/call/",
            {"tool": "get_book", "arguments": {"book_id": "bk_002"}},
            format="json",
        ).json()
        assert read["result"]["book"]["title"] == "東京物語ノート"
        assert viewer_api.get(f"/api/episodes/{key}/diff/").json()["diff"] == {}
        viewer_api.post(
            f"/api/episodes/{key}/call/",
            {"tool": "create_loan", "arguments": {"book_id": "bk_002", "member": "Ana"}},
            format="json",
        )
        diff = viewer_api.get(f"/api/episodes/{key}/diff/").json()["diff"]
        assert sorted(diff) == ["books", "loans"]
        assert diff["loans"]["added"][0]["created_at"] == library.manifest["state"]["clock"]
    finally:
        episode_service().shutdown()


@pytest.mark.django_db(transaction=True)
def test_one_env_of_a_release_and_the_refusals_before_any_job(storage, release):
    out = StringIO()
    call_command("build_environment", agent_world=str(release), env=[TIDES], stdout=out)
    assert "agent_world:0200000 queued" in out.getvalue()  # --env: a direct build job
    assert "published 1 of 1:" in out.getvalue()
    assert not Environment.objects.filter(name="aw_0100000").exists()
    with pytest.raises(CommandError, match="not a plain folder name"):
        call_command("build_environment", agent_world=str(release), env=["../x"], stdout=out)
    with pytest.raises(CommandError, match="has no environment '0900000'"):
        call_command("build_environment", agent_world=str(release), env=["0900000"], stdout=out)
    with pytest.raises(CommandError, match="not an Agent-World release"):
        call_command("build_environment", agent_world=str(release / TIDES), stdout=out)


@pytest.mark.django_db(transaction=True)
def test_a_broken_environment_is_rejected_naming_the_stage(storage, release):
    (release / f"{TIDES}_step4_checkpoint.json").write_text("{not json", "utf-8")
    shutil.rmtree(release / LIBRARY)  # checkpoint kept, collection folder gone
    out = StringIO()
    with pytest.raises(CommandError, match=r"no environment of catalogue run #\d+ was published"):
        call_command("build_environment", agent_world=str(release), stdout=out)
    text = out.getvalue()
    assert "rejected 2 (2 at ingest):" in text
    assert f"collection folder {LIBRARY}/ is missing" in text
    assert "not JSON (line 1, column 2" in text
    rejected = Environment.objects.get(name=f"aw_{TIDES}")
    assert rejected.status == "rejected"
    assert rejected.failure_reason.startswith(
        f"ingest stage failed: environment {TIDES}: checkpoint {TIDES}_step4_checkpoint.json"
    )


def test_an_environment_whose_tools_all_fail_is_not_published(tmp_path, release):
    checkpoint = release / f"{TIDES}_step4_checkpoint.json"
    data = json.loads(checkpoint.read_text("utf-8"))
    tool = data["data"]["ToolDesignAgent"]["tool_schemas"][0]
    tool["implementation"] = tool["implementation"].replace("tides.json", "../../etc/hosts")
    checkpoint.write_text(json.dumps(data), "utf-8")
    request = BuildRequest.for_agent_world(str(release), TIDES)
    with pytest.raises(BuildFailed) as failed:
        run_agent_world_pipeline(request, root=tmp_path / "out", workdir=tmp_path / "work")
    assert failed.value.stage == "verify"
    assert "get_tides: every call failed on real rows:" in failed.value.reason
    assert not (tmp_path / "out" / "aw_0200000").exists()


def test_the_request_names_the_release_and_the_environment(release):
    request = BuildRequest.for_agent_world(str(release.parent), LIBRARY)
    again = BuildRequest.from_dict(request.as_dict())
    assert (again.origin, again.release, again.env_id) == ("agent_world", request.release, LIBRARY)
    assert (request.name, request.target, request.min_tools) == (
        "aw_0100000",
        "agent_world:0100000",
        1,
    )
    with pytest.raises(BuildRequestError, match="its own origin"):
        BuildRequest.create(origin="agent_world", release="x", env_id="1", source="wheat")


@pytest.mark.django_db(transaction=True)
def test_released_questions_become_held_out_tasks_the_reward_scores(storage, release, reviewer_api):
    viewer_api = reviewer_api  # a viewer is not shown the reward of a held-out task
    call_command("build_environment", agent_world=str(release), env=[LIBRARY], stdout=StringIO())
    library = Environment.objects.get(name="aw_0100000")
    (task,) = Task.objects.filter(environment=library)
    assert (task.split, task.kind) == ("heldout", "graph")
    assert task.instruction.startswith("Which novel do we hold")
    assert [s["tool"] for s in task.gold_chain] == ["list_books", "get_book"]
    assert task.reference_answer["book"]["title"] == "Cien años de soledad"
    assert task.answer_contract["kind"] == "object"
    assert task.metadata["extra"]["success_criteria"] == [
        "names Cien años de soledad",
        "says 2 copies",
    ]
    questions = library.build_yield["questions"]
    assert (questions["questions"], questions["imported"]) == (2, 1)
    (kept_out,) = questions["kept_out"]
    assert kept_out["reason"].endswith('book.title: "Late Spring" released, "東京物語ノート" here')

    try:
        gold = viewer_api.post("/api/episodes/", {"task": task.pk}, format="json").json()
        answer = None
        for step in task.gold_chain:
            body = {"tool": step["tool"], "arguments": step["arguments"]}
            answer = viewer_api.post(
                f"/api/episodes/{gold['episode']}/call/", body, format="json"
            ).json()["result"]
        finished = viewer_api.post(
            f"/api/episodes/{gold['episode']}/finish/", {"answer": answer}, format="json"
        ).json()["reward"]
        assert finished["success"] is True and finished["total"] > 0.9, finished
        idle = viewer_api.post("/api/episodes/", {"task": task.pk}, format="json").json()
        nothing = viewer_api.post(
            f"/api/episodes/{idle['episode']}/finish/", {"answer": None}, format="json"
        ).json()["reward"]
        assert (nothing["success"], nothing["total"]) == (False, 0.0), nothing
    finally:
        episode_service().shutdown()


def test_volatile_fields_aside_answers_must_match():
    released = {"loan": {"id": "ln_4f9a0c11d2", "at": "2025-11-02T08:00:00Z", "latency_ms": 41}}
    replayed = {"loan": {"id": "ln_0e4c6794e3", "at": "2026-03-01T12:00:00Z", "latency_ms": 0}}
    assert same_answer(released, replayed)
    assert not same_answer(released, dict(replayed, extra=1))
    assert not same_answer({"title": "Late Spring"}, {"title": "東京物語ノート"})
    assert not same_answer({"copies": 2}, {"copies": 1})
    assert not same_answer({"member": "ab12cd34ef"}, {"member": "0e4c6794e3"})  # not an id key


def test_a_token_the_replay_drew_from_randomness_is_volatile_and_nothing_else():
    """As a released `create_key` answers a secret's hash and prefix: the replay draws other
    ones; a value the replay was given, or that was there before, must still match."""
    released = {"key": {"key_hash": "9202b9bbd200eb6c18209f", "key_prefix": "ts_mlHlY"}}
    replayed = {"key": {"key_hash": "2221d835f6752af3438d98", "key_prefix": "ts_jku6G"}}
    made = frozenset({"2221d835f6752af3438d98", "ts_jku6G"})
    assert same_answer(released, replayed, made=made)
    assert not same_answer(released, replayed)  # not generated here: it must match
    assert not same_answer({"status": "queued"}, {"status": "failed"}, made=frozenset({"failed"}))
    assert not same_answer({"k": "ts_mlHlY"}, {"k": "tx_jku6G"}, made=frozenset({"tx_jku6G"}))


def test_a_chain_step_takes_the_id_an_earlier_step_made_here():
    """The release's chain fetches `key_df0a...`, made by its create step under a real uuid;
    the replay's create step made another one, which the fetch must name instead."""
    created = {"api_key": {"id": "key_7cb03c7b10b042d698b1630da3a889d3", "name": "SRE"}}
    initial = {"ts_key_01J8Z2M3Q7V6E0H1K2P9R4T8X1", "SRE old"}
    released = {"id": "key_df0a3138af0645089e9e7b0d741f6df5"}
    assert carried_ids(released, [created], initial) == {"id": created["api_key"]["id"]}
    kept = {"id": "ts_key_01J8Z2M3Q7V6E0H1K2P9R4T8X1", "limit": 5}  # there before: kept
    assert carried_ids(kept, [created], initial) == kept
    two = [created, {"api_key": {"id": "key_00000000000000000000000000000001"}}]
    assert carried_ids(released, two, initial) == released  # which one is ambiguous: kept
    assert carried_ids(released, [], initial) == released
