"""Themes become environments: real MCP servers (npm and PyPI reference servers), a real public
OpenAPI document from the npm registry, a PRD, the LLM path against a scripted server, and a
theme with nothing implementable, all through the one `environments.build` job."""

from __future__ import annotations

import json
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from aw_site.models import Job
from environments.discovery.themes import load_theme_file, parse_theme_document
from environments.mcp_import import import_mcp_server
from environments.models import Environment, Theme
from environments.themes_import import store_theme
from tests.support.npm_packages import npm_bin, npm_package
from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply
from tests.support.worker import wait_for

URL = "/api/environments/build/"
FIXTURES = Path(__file__).parent / "fixtures" / "themes"
DATA = Path(__file__).resolve().parents[1] / "environments" / "data" / "themes"
GIT_SERVER = Path(sys.executable).with_name("mcp-server-git")


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


def finished(job_id: int, timeout: float = 120) -> Job:
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=timeout, message="build")
    return Job.objects.get(pk=job_id)


def servers(tmp_path: Path) -> dict[str, list[str]]:
    found = {}
    filesystem = npm_bin("mcp-server-filesystem")
    if filesystem is not None:
        (tmp_path / "shared").mkdir(exist_ok=True)
        found["filesystem"] = ["node", str(filesystem), str(tmp_path / "shared")]
    memory = npm_bin("mcp-server-memory")
    if memory is not None:
        found["memory"] = ["node", str(memory)]
    if GIT_SERVER.exists():
        found["git"] = [sys.executable, "-m", "mcp_server_git"]
    return found


EXPECTED = {  # tools the offline path implements and verifies; the rest are rejected with reasons
    "filesystem": {"read_multiple_files", "write_file", "create_directory", "list_directory",
                   "search_files", "get_file_info"},
    "memory": {"create_entities", "create_relations", "delete_entities", "delete_observations",
               "delete_relations", "read_graph", "search_nodes", "open_nodes"},
    "git": {"git_commit", "git_log", "git_create_branch", "git_show", "git_branch"},
}  # fmt: skip
REJECTED = {  # read_text_file refuses its advertised `tail`; add_observations answers
    # {results: [{name, observations}]} where the server's outputSchema says entityName
    "filesystem": {"edit_file", "move_file", "read_text_file"},
    "memory": {"add_observations"},
    "git": {"git_diff", "git_add"},
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("server", ["filesystem", "memory", "git"])
def test_a_real_mcp_server_becomes_an_environment_with_its_own_tools(storage, tmp_path, server):
    command = servers(tmp_path).get(server)
    if command is None:
        pytest.skip(f"the {server} reference server is not installed (npm / pip)")
    out = StringIO()
    call_command("build_environment", mcp=" ".join(command), name=f"mcp_{server}", stdout=out)
    assert f"built mcp_{server}@v1" in out.getvalue()
    environment = Environment.objects.get(name=f"mcp_{server}")
    assert environment.status == "verified"
    theme = environment.theme
    assert theme.source_kind == "mcp_spec" and theme.provenance["transport"] == "stdio"
    served = {t["name"]: t for t in theme.raw_spec["raw_spec"]["tools"]}
    tools = {t.name: t for t in environment.tools.all()}
    assert EXPECTED[server] <= set(tools) <= set(served)
    for name, tool in tools.items():  # the surface a real client of the server sees
        assert tool.schema["function"]["parameters"] == served[name]["inputSchema"]
        assert tool.schema["function"]["description"] == served[name].get("description", "")
        assert tool.origin == "imported" and tool.verified
    rejected = {r["name"]: r["reason"] for r in environment.verification_report["rejected_tools"]}
    assert REJECTED[server] <= set(rejected)
    assert set(rejected) | set(tools) == set(served)
    assert all(reason for reason in rejected.values())
    assert any(p["kind"] == "synthetic" for p in environment.provenance)
    funnel = environment.build_yield["funnel"]
    assert funnel["theme_tools"] == len(served)
    assert funnel["tools_verified"] == environment.tool_count == len(tools)
    assert funnel["schema_entities"] == environment.table_count


def _themes():
    oas = npm_package("@readme/oas-examples")
    if oas is None:
        pytest.skip("npm could not install @readme/oas-examples")
    return json.loads((oas / "3.0" / "json" / "petstore.json").read_text())


@pytest.mark.django_db(transaction=True)
def test_a_public_openapi_document_builds_through_the_api(reviewer_api, viewer_api, storage):
    document = _themes()  # the Swagger Petstore as @readme/oas-examples ships it
    theme = store_theme(parse_theme_document(document, "petstore.json"))
    assert viewer_api.post(URL, {"theme": theme.pk}, format="json").status_code == 403
    response = reviewer_api.post(URL, {"theme": theme.pk, "name": "petstore"}, format="json")
    assert response.status_code == 202, response.content
    job = finished(response.json()["id"])
    assert job.state == "succeeded", job.error
    assert job.target == f"theme:{theme.pk}"
    environment = Environment.objects.get(pk=job.result["environment"])
    names = set(environment.tools.values_list("name", flat=True))
    assert {
        "getPetById",
        "addPet",
        "updatePet",
        "deletePet",
        "placeOrder",
        "getUserByName",
    } <= names
    get_pet = environment.tools.get(name="getPetById").schema["function"]
    assert get_pet["description"] == "Find pet by ID"
    assert get_pet["parameters"]["properties"]["petId"]["type"] == "integer"
    add_pet = environment.tools.get(name="addPet").schema["function"]["parameters"]
    assert {"name", "photoUrls", "status", "category"} <= set(add_pet["properties"])
    rejected = {r["name"]: r["reason"] for r in environment.verification_report["rejected_tools"]}
    assert "outside world" in rejected["loginUser"] and "upload" in rejected["uploadFile"]
    # every published tool was called against the document: its contract is in the manifest
    contracts = environment.manifest["contracts"]
    assert set(contracts) == names
    # the api_key header is a credential the document's security schemes name: not a parameter
    delete_pet = environment.tools.get(name="deletePet").schema["function"]["parameters"]
    assert set(delete_pet["properties"]) == {"petId"}
    assert "parameters 1/1 accepted" in contracts["deletePet"]
    assert any(
        "'api_key' is left out" in note for note in environment.manifest["tool_notes"]["deletePet"]
    )
    assert "effect: deletes the pet named" in contracts["deletePet"]
    assert "response schema valid" in contracts["getPetById"]
    assert "effect: creates one pet" in contracts["addPet"]
    record = environment.tools.get(name="deletePet").verification["contract"]
    assert record["passed"] and {c["name"] for c in record["checks"]} >= {"parameters", "effect"}
    assert environment.verification_report["contract"]["data"]["passed"]
    assert set(environment.manifest["tables"]) == {"pets", "orders", "users"}
    detail = reviewer_api.get(f"/api/environments/{environment.pk}/").json()
    assert detail["yield_funnel"]["theme_tools"] == 20
    assert detail["yield_funnel"]["tools_verified"] == environment.tool_count
    summary = reviewer_api.get("/api/environments/yield/").json()
    assert summary["origins"]["all"]["tools_verified"] == environment.tool_count
    listed = reviewer_api.get(f"/api/themes/{theme.pk}/").json()
    assert "getPetById" in listed["tool_names"]
    assert listed["environments"][0]["name"] == "petstore"


@pytest.mark.django_db(transaction=True)
def test_a_prd_builds_from_the_console_with_synthetic_rows_shown(client, reviewer, viewer, storage):
    theme = store_theme(load_theme_file(FIXTURES / "clinic_prd.md"))
    client.force_login(viewer)
    page = client.get(reverse("theme-list")).content.decode()
    assert "Pet Clinic Appointments" in page and "book_appointment" in page
    assert "theme-build" not in page  # viewers see no build action
    assert client.post(reverse("theme-build", args=[theme.pk])).status_code == 403
    client.force_login(reviewer)
    page = client.get(reverse("theme-list")).content.decode()
    assert reverse("theme-build", args=[theme.pk]) in page
    response = client.post(reverse("theme-build", args=[theme.pk]))
    assert response.status_code == 302
    job = Job.objects.get(kind="environments.build")
    assert finished(job.pk).state == "succeeded", job.error
    environment = Environment.objects.get(theme=theme)
    tools = {t.name: t for t in environment.tools.all()}
    assert {"get_pet", "search_pets", "register_pet", "book_appointment", "cancel_appointment",
            "confirm_appointment", "complete_appointment", "update_owner"} <= set(tools)  # fmt: skip
    assert tools["cancel_appointment"].kind == "write"
    rejected = {r["name"]: r["reason"] for r in environment.verification_report["rejected_tools"]}
    assert "outside world" in rejected["send_reminder_emails"]
    assert environment.manifest["tables"]["pets"]["foreign_keys"] == [
        {"column": "owner_id", "references": "owners.owner_id"}
    ]
    detail = client.get(reverse("environment-detail", args=[environment.pk])).content.decode()
    assert "synthetic data" in detail and "rejected-tools" in detail
    assert "send_reminder_emails" in detail and "yield-funnel" in detail
    page = client.get(reverse("theme-list")).content.decode()
    assert environment.label in page
    assert "yield-summary" in client.get(reverse("environment-yield")).content.decode()
    new = client.get(reverse("environment-new")).content.decode()
    assert 'name="mcp"' in new and f'value="{theme.pk}"' in new


@pytest.mark.django_db(transaction=True)
def test_a_theme_with_nothing_implementable_is_rejected_with_reasons(reviewer_api, storage):
    theme = store_theme(load_theme_file(DATA / "mcp_time_server.json"))
    response = reviewer_api.post(URL, {"theme": theme.pk}, format="json")
    job = finished(response.json()["id"])
    assert job.state == "failed" and "ingest stage failed" in job.error
    environment = Environment.objects.get(theme=theme)
    assert environment.status == "rejected"
    reason = environment.failure_reason
    assert "nothing in the theme can be implemented" in reason
    assert "get_current_time: needs the outside world" in reason
    assert "convert_time: computes a result from its arguments (conversion of" in reason
    assert not (storage / "environments" / environment.name).exists()


@pytest.mark.django_db
def test_bad_theme_and_mcp_requests_are_refused_before_any_job(reviewer_api, storage):
    cases = {
        "no such theme": ({"theme": 999999}, "no theme with id 999999"),
        "unparsable server": ({"mcp": "node 'unclosed"}, "no closing quotation"),
        "bad scheme": ({"mcp": "ftp://example.org/mcp"}, "must be http(s)"),
        "two origins": ({"mcp": "x", "source": "iris"}, "not two"),
        "bad option": ({"mcp": "x", "options": {"rows": 0}}, "rows"),
    }
    for case, (body, words) in cases.items():
        response = reviewer_api.post(URL, body, format="json")
        assert response.status_code == 400, (case, response.content)
        assert words.lower() in response.json()["error"].lower(), (case, response.json())
    assert not Job.objects.exists()
    with pytest.raises(CommandError, match="no theme with id 424242"):
        call_command("build_environment", theme=424242, stdout=StringIO())


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_mcp_server_leaves_a_rejected_row(reviewer_api, storage):
    response = reviewer_api.post(
        URL, {"mcp": "http://127.0.0.1:9/mcp", "name": "gone"}, format="json"
    )
    job = finished(response.json()["id"])
    assert job.state == "failed" and "could not list tools" in job.error
    environment = Environment.objects.get(name="gone")
    assert environment.status == "rejected"
    assert environment.failure_reason.startswith("ingest stage failed")
    assert not Theme.objects.exists()


# --- the LLM path against the scripted OpenAI-compatible server ------------------------------

GOOD_TOOL = {
    "name": "getPetById",
    "kind": "read",
    "description": "x",
    "parameters": {},
    "source": (
        "def getPetById(db, **params):\n"
        "    row = db.execute('SELECT * FROM pets WHERE id = ?', (params['petId'],)).fetchone()\n"
        "    if row is None:\n"
        "        raise LookupError('no pet ' + str(params['petId']))\n"
        "    out = dict(row)\n"
        "    out['photoUrls'] = json.loads(out['photoUrls'] or '[]')\n"
        "    return out\n"
    ),
    "tests": [
        "def test_getPetById__missing(call):\n"
        "    try:\n"
        "        call('getPetById', petId=-5)\n"
        "    except Exception:\n"
        "        return\n"
        "    raise AssertionError('no error')\n"
    ],
}
BROKEN_TOOL = {
    "name": "deletePet",
    "kind": "write",
    "description": "x",
    "parameters": {},
    "source": "def deletePet(db, **params)\n    db.execute('DELETE FROM pets')\n",
    "tests": ["def test_deletePet__gone(call):\n    call('deletePet', petId=1)\n"],
}
WRONG_TOOL = {
    "name": "placeOrder",
    "kind": "write",
    "description": "x",
    "parameters": {},
    "source": "def placeOrder(db, **params):\n    return {'id': 0}\n",
    "tests": [
        "def test_placeOrder__made(call):\n    assert call('placeOrder', petId=1)['id'] == 0\n"
    ],
}


@pytest.mark.django_db(transaction=True)
def test_the_llm_path_designs_theme_tools_and_reports_what_it_rejects(
    reviewer_api, storage, monkeypatch
):
    theme = store_theme(load_theme_file(DATA / "petstore_openapi.yaml"))

    def responder(body):
        if body.get("tools"):  # the research agent's loop
            steps = sum(1 for m in body["messages"] if m["role"] == "assistant")
            if steps == 0:
                rows = [
                    {"id": 900 + i, "name": f"Rex {i}", "status": "available"} for i in range(6)
                ]
                return tool_call_reply(
                    "save_table",
                    {"name": "pets", "rows": rows, "source_url": "https://example.org/pets"},
                )
            return tool_call_reply("finish", {"summary": "done"})
        answer = {"imports": ["json"], "tools": [GOOD_TOOL, BROKEN_TOOL, WRONG_TOOL]}
        return text_reply(json.dumps(answer))

    with ScriptedOpenAIServer(responder) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("AW_LLM_MODEL", "scripted")
        response = reviewer_api.post(URL, {"theme": theme.pk}, format="json")
        job = finished(response.json()["id"])
    assert job.state == "succeeded", job.error
    environment = Environment.objects.get(pk=job.result["environment"])
    llm = environment.build_yield["llm"]
    assert llm["research"]["ok"] and llm["research"]["tables"] == ["pets"]
    assert llm["design"]["ok"] and "deletePet" not in llm["design"]["tools"]
    assert any(p["kind"] == "web" for p in environment.provenance)  # the research agent's rows
    rejected = environment.verification_report["rejected_tools"]
    broken = next(r for r in rejected if r["name"] == "deletePet")
    assert broken["stage"] == "llm" and "syntax error" in broken["reason"]
    wrong = next(r for r in rejected if r["name"] == "placeOrder" and r["stage"] == "llm")
    assert "cross-validation" in wrong["reason"] or "accuracy" in wrong["reason"]
    tools = {t.name: t for t in environment.tools.all()}
    assert tools["getPetById"].origin == "llm"  # verified and cross-checked against offline
    assert tools["deletePet"].origin == "imported" and tools["placeOrder"].origin == "imported"
    verdict = next(
        v
        for v in environment.verification_report["verdicts"]
        if v["name"] == "getPetById" and v["origin"] == "llm"
    )
    assert verdict["cross_passed"] > 0 and verdict["cross_failed"] == 0
    assert "LLM tools rejected" in job.log_tail and "deletePet" in job.log_tail


@pytest.mark.django_db(transaction=True)
def test_llm_failures_are_reported_on_the_job(reviewer_api, storage, monkeypatch):
    theme = store_theme(load_theme_file(DATA / "petstore_openapi.yaml"))

    def responder(body):
        raise RuntimeError("model overloaded")

    with ScriptedOpenAIServer(responder) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        response = reviewer_api.post(URL, {"theme": theme.pk}, format="json")
        job = finished(response.json()["id"])
    assert job.state == "succeeded", job.error  # the offline implementation stands, said so
    environment = Environment.objects.get(pk=job.result["environment"])
    llm = environment.build_yield["llm"]
    assert not llm["research"]["ok"] and not llm["design"]["ok"]
    assert "LLM design FAILED" in job.log_tail and "LLM research FAILED" in job.log_tail
    assert environment.verification_report["llm"]["design"]["error"]
    assert all(t.origin == "imported" for t in environment.tools.all())


def test_import_of_the_git_server_keeps_twelve_tools():
    if not GIT_SERVER.exists():
        pytest.skip("pip install mcp-server-git")
    theme = import_mcp_server([sys.executable, "-m", "mcp_server_git"])
    assert len(theme["raw_spec"]["tools"]) == 12


# --- rows from the closest local data ------------------------------------------------------------

BOOKS_CSV = b"""isbn,title,author,year,price
9780000000001,Alpha,Ann Lee,1999,12.5
9780000000002,Beta,Bob Ray,2003,20.0
9780000000003,Gamma,Cal Doe,2010,8.75
9780000000004,Delta,Ann Lee,2015,15.0
"""


@pytest.mark.django_db(transaction=True)
def test_rows_come_from_a_built_in_source_that_names_the_entity(storage):
    theme = store_theme(load_theme_file(FIXTURES / "airport_desk.json"))
    call_command("build_environment", theme=theme.pk, stdout=StringIO())
    environment = Environment.objects.get(theme=theme)
    assert environment.status == "verified"
    assert [p["kind"] for p in environment.provenance] == ["package"]
    assert environment.provenance[0]["source"] == "built-in source airports"
    assert environment.build_yield["ingest"]["synthetic_tables"] == []
    assert {"get_airport", "search_airports", "list_airports"} == set(
        environment.tools.values_list("name", flat=True)
    )


@pytest.mark.django_db(transaction=True)
def test_rows_come_from_a_file_uploaded_with_the_theme(storage, tmp_path):
    theme = store_theme(load_theme_file(FIXTURES / "book_shelf.json"))
    data = tmp_path / "books.csv"
    data.write_bytes(BOOKS_CSV)
    out = StringIO()
    call_command("build_environment", theme=theme.pk, data=str(data), name="shelf", stdout=out)
    environment = Environment.objects.get(name="shelf")
    assert environment.status == "verified", environment.failure_reason
    kinds = {p["kind"]: p for p in environment.provenance}
    assert kinds["file"]["source"] == "upload books.csv"
    assert "isbn<-isbn" in kinds["file"]["detail"]
    assert environment.row_count == 4
    assert data.read_bytes() == BOOKS_CSV
    assert not (storage / "uploads").exists() or not any((storage / "uploads").iterdir())


@pytest.mark.django_db(transaction=True)
def test_kebab_case_operation_ids_keep_their_names(reviewer_api, storage):
    oas = npm_package("@readme/oas-examples")
    if oas is None:
        pytest.skip("npm could not install @readme/oas-examples")
    document = json.loads((oas / "3.1" / "json" / "train-travel.json").read_text())
    theme = store_theme(parse_theme_document(document, "train-travel.json"))
    response = reviewer_api.post(URL, {"theme": theme.pk, "name": "trains"}, format="json")
    job = finished(response.json()["id"])
    assert job.state == "succeeded", job.error
    environment = Environment.objects.get(name="trains")
    names = set(environment.tools.values_list("name", flat=True))
    assert {"get-booking", "create-booking", "delete-booking"} <= names
    assert "def get_booking(db, **params)" in environment.tools.get(name="get-booking").source
    # the document wraps its lists ({data: [...], links}): the tools answer in that envelope
    assert (
        "response schema valid (rows under data)"
        in environment.manifest["contracts"]["get-stations"]
    )
    episode = reviewer_api.post("/api/episodes/", {"environment": environment.pk}, format="json")
    assert episode.status_code == 201, episode.content
    key = episode.json()["episode"]
    stations = reviewer_api.post(
        f"/api/episodes/{key}/call/", {"tool": "get-stations", "arguments": {}}, format="json"
    ).json()
    assert list(stations["result"]) == ["data"] and stations["result"]["data"], stations
    called = reviewer_api.post(  # the kebab-case name reaches its function
        f"/api/episodes/{key}/call/",
        {"tool": "get-booking", "arguments": {"bookingId": "no-such-booking"}},
        format="json",
    ).json()
    assert called["error_kind"] == "tool_error" and "no booking" in called["error"], called


@pytest.mark.django_db
def test_only_admins_start_mcp_servers_by_command(reviewer_api, storage):
    """A command line runs on the worker host: reviewers give URLs, admins may give commands."""
    for url, body in (
        (URL, {"mcp": "npx -y @modelcontextprotocol/server-memory"}),
        ("/api/themes/import/", {"mcp_command": "uvx mcp-server-time"}),
    ):
        response = reviewer_api.post(url, body, format="json")
        assert response.status_code == 403, response.content
        assert "only admins" in response.json()["error"]
    assert not Job.objects.exists()
