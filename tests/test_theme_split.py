"""Big APIs become a family of environment themes: a 500-operation document is split by tag and
path into parts of at most 40 tools, each with the schemas its operations use; a small document
is left whole; importing the big one stores one theme per part, and a part builds alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from aw_site.models import Job
from environments.builder.theme_reading import read_theme
from environments.discovery.theme_split import split_theme
from environments.discovery.themes import parse_theme_document
from environments.models import Environment, Theme
from environments.themes_import import theme_dict
from tests.support.worker import run_job, wait_for

SHARED = {  # schemas several resources reference
    "Address": {"street": {"type": "string"}, "city": {"type": "string"}},
    "Money": {"amount": {"type": "number"}, "currency": {"type": "string", "enum": ["EUR", "USD"]}},
    "Note": {"text": {"type": "string"}, "author": {"type": "string"}},
}
USES = {"addresses": "Address", "notes": "Note", "payments": "Money", "prices": "Money"}
TAGGED = {  # tag -> resource -> its sub-resources
    "customers": {"customers": ["addresses", "notes", "contacts", "payment-methods", "consents",
                                "preferences", "documents", "loyalty-cards", "segments", "devices",
                                "wishlists", "reviews", "referrals", "sessions", "carts",
                                "subscriptions", "tags"]},
    "catalog": {"products": ["variants", "images", "prices", "inventory", "attributes", "bundles",
                             "reviews", "related"], "categories": ["products", "rules", "images",
                                                                   "translations"],
                "brands": []},
    "orders": {"orders": ["lines", "payments", "refunds", "shipments", "invoices", "notes",
                          "discounts", "returns", "events"], "carts": [],
               "quotes": ["lines", "notes", "approvals", "attachments"]},
    "billing": {"invoices": ["lines", "payments", "credits", "reminders", "attachments", "notes"],
                "payments": [], "credit-notes": [], "tax-rates": [], "plans": ["prices", "features"],
                "subscriptions": []},
    "logistics": {"warehouses": ["addresses", "bins", "stock", "staff", "docks", "hours"],
                  "shipments": ["parcels", "events", "labels", "notes"], "carriers": [],
                  "routes": []},
    "staff": {"employees": ["addresses", "roles", "shifts", "notes", "skills"],
              "teams": ["members", "goals", "notes"], "roles": []},
}  # fmt: skip
UNTAGGED = {"webhooks": ["deliveries", "secrets"], "files": ["versions"], "exports": [],
            "imports": [], "reports": ["runs", "schedules", "shares"]}  # fmt: skip


def pascal(text: str) -> str:
    return "".join(word.capitalize() for word in re.split(r"[-_]", text))


def singular(text: str) -> str:
    if text.endswith("ies"):
        return text[:-3] + "y"
    return text[:-2] if text.endswith(("sses", "ches")) else text.removesuffix("s")


def _schema(name: str, uses: str = "", parent: str = "") -> dict:
    properties: dict = {"id": {"type": "integer"}, "name": {"type": "string"}}
    if uses:
        properties["detail"] = {"$ref": f"#/components/schemas/{uses}"}
    if parent:
        properties["parent"] = {"$ref": f"#/components/schemas/{parent}"}
    return {"type": "object", "required": ["name"], "properties": properties}


def _crud(paths: dict, base: str, schema: str, op_name: str, tags: list[str], slash: bool) -> None:
    """List, create, get, update and delete of one collection; `slash` names the operations the
    way GitHub does (`customers/list-addresses`), which no function name may contain."""
    ref = {"$ref": f"#/components/schemas/{schema}"}
    body = {"content": {"application/json": {"schema": ref}}}
    item_param = [{"name": "itemId", "in": "path", "required": True, "schema": {"type": "integer"}}]
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": ref}}}}
    name = (lambda verb: f"{op_name}/{verb}") if slash else (lambda verb: f"{verb}{op_name}")
    extra = {"tags": tags} if tags else {}
    paths[base] = {
        "get": {"operationId": name("list"), "responses": ok, **extra},
        "post": {"operationId": name("create"), "requestBody": body, "responses": ok, **extra},
    }
    paths[f"{base}/{{itemId}}"] = {
        "parameters": item_param,
        "get": {"operationId": name("get"), "responses": ok, **extra},
        "patch": {"operationId": name("update"), "requestBody": body, "responses": ok, **extra},
        "delete": {
            "operationId": name("delete"),
            "responses": {"204": {"description": "gone"}},
            **extra,
        },  # fmt: skip
    }


def big_document(reverse_paths: bool = False) -> dict:
    """A 500-operation shop API: tagged resources with sub-resources, untagged paths, schemas
    shared between resources, every path under a version prefix."""
    paths: dict = {}
    schemas = {name: {"type": "object", "properties": props} for name, props in SHARED.items()}
    resources = [(tag, r, subs) for tag, group in TAGGED.items() for r, subs in group.items()]
    resources += [("", r, subs) for r, subs in UNTAGGED.items()]
    for tag, resource, subs in resources:
        schema = pascal(singular(resource))
        schemas[schema] = _schema(
            schema, USES.get(resource, "Address" if tag == "logistics" else "")
        )
        base = f"/v1/{resource}"
        _crud(paths, base, schema, pascal(resource), [tag] if tag else [], slash=not tag)
        for sub in subs:
            sub_schema = schema + pascal(singular(sub))
            schemas[sub_schema] = _schema(sub_schema, USES.get(sub, ""), parent=schema)
            _crud(paths, f"{base}/{{id}}/{sub}", sub_schema, f"{schema}{pascal(sub)}",
                  [tag] if tag else [], slash=not tag)  # fmt: skip
    ok = {"200": {"description": "ok"}}
    for single in ("health", "ping", "status"):
        paths[f"/v1/{single}"] = {"get": {"operationId": f"get{pascal(single)}", "responses": ok}}
    paths["/v1/settings"] = {
        "get": {"operationId": "getSettings", "responses": ok},
        "put": {"operationId": "putSettings", "responses": ok},
    }
    schemas["Unused"] = _schema("Unused")
    if reverse_paths:
        paths = dict(reversed(list(paths.items())))
    return {
        "openapi": "3.0.3",
        "info": {"title": "Shop Suite", "version": "2.1", "x-providerName": "shop.example"},
        "servers": [{"url": "https://api.shop.example"}],
        "tags": [{"name": tag} for tag in TAGGED],
        "paths": paths,
        "components": {"schemas": schemas},
    }  # fmt: skip


def operations(document: dict) -> list[tuple[str, str]]:
    return sorted(
        (method, path) for path, item in document["paths"].items() for method in item
        if method in ("get", "post", "put", "patch", "delete")
    )  # fmt: skip


def references(value) -> set[str]:
    """Every schema a value reaches through `$ref` (the test's own reading of the document)."""
    return set(re.findall(r'"#/components/schemas/([^"]+)"', json.dumps(value)))


def reached(part_doc: dict) -> set[str]:
    schemas = part_doc.get("components", {}).get("schemas", {})
    found, pending = set(), references(part_doc["paths"])
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending |= references(schemas.get(name, {}))
    return found


@pytest.fixture(scope="module")
def family() -> tuple[dict, list[dict]]:
    theme = parse_theme_document(big_document(), "shop.json")
    return theme, split_theme(theme, max_tools=40)


def test_the_document_is_as_big_as_meant():
    assert len(operations(big_document())) == 500


def test_a_big_document_splits_into_parts_of_at_most_40_tools(family):
    theme, parts = family
    sizes = [len(part["tools"]) for part in parts]
    assert len(parts) >= 13 and max(sizes) <= 40 and min(sizes) >= 10, sizes
    every = [(t["http"]["method"].lower(), t["http"]["path"]) for p in parts for t in p["tools"]]
    assert sorted(every) == operations(big_document())  # each operation in exactly one part
    for part in parts:
        own = operations(part["raw_spec"])  # the part's document has the part's operations only
        assert own == sorted(
            (t["http"]["method"].lower(), t["http"]["path"]) for t in part["tools"]
        )
    # the names the document gives its tools, including those no function may carry
    assert {t["name"] for p in parts for t in p["tools"]} == {t["name"] for t in theme["tools"]}
    assert any("/" in t["name"] for p in parts for t in p["tools"])


def test_each_part_keeps_the_schemas_its_operations_use_and_only_those(family):
    _, parts = family
    for part in parts:
        document = part["raw_spec"]
        schemas = set(document["components"]["schemas"])
        assert reached(document) == schemas, part["title"]  # nothing dangling, nothing unrelated
        assert "Unused" not in schemas
    by_tool = {t["name"]: p for p in parts for t in p["tools"]}
    warehouses = by_tool["createWarehouses"]["raw_spec"]["components"]["schemas"]
    assert {"Warehouse", "Address"} <= set(warehouses)  # Warehouse refers to Address
    addresses = by_tool["listCustomerAddresses"]["raw_spec"]["components"]["schemas"]
    assert {"CustomerAddress", "Customer", "Address"} <= set(addresses)
    model = read_theme(by_tool["createWarehouses"])  # what a build of the part reads
    assert "warehouses" in {e.table for e in model.entities.values()}
    assert {p.original_name or p.name for p in model.plans} == {
        t["name"] for t in by_tool["createWarehouses"]["tools"]
    }


def test_tags_and_paths_decide_the_parts_with_readable_family_names(family):
    theme, parts = family
    for number, part in enumerate(parts, start=1):
        fam = part["provenance"]["family"]
        assert (fam["part"], fam["parts"], fam["title"]) == (number, len(parts), "Shop Suite")
        assert part["title"] == f"Shop Suite — {fam['label']}"
        identity = part["provenance"]["identity"]
        assert (
            identity["key"] == f"{fam['key']}#{fam['label']}" and identity["part"] == fam["label"]
        )
        assert len(part["name"]) <= 60 and part["name"].startswith("shop_suite_shop_example")
    assert len({p["name"] for p in parts}) == len(parts)
    assert len({p["provenance"]["identity"]["key"] for p in parts}) == len(parts)
    customers = [p for p in parts if any("customers" in t.get("tags", []) for t in p["tools"])]
    assert len(customers) >= 2  # 90 customer operations: split along their sub-resources
    assert all("customers" in p["provenance"]["family"]["label"] for p in customers)
    untagged = {p["name"] for p in parts for t in p["tools"] if t["name"].startswith("Webhooks/")}
    assert len(untagged) == 1  # an untagged resource stays together, grouped by its path


def test_the_same_document_gives_the_same_parts(family):
    _, parts = family
    again = split_theme(parse_theme_document(big_document(reverse_paths=True), "shop.json"), 40)
    assert [p["name"] for p in again] == [p["name"] for p in parts]
    assert [p["title"] for p in again] == [p["title"] for p in parts]
    assert [sorted(t["name"] for t in p["tools"]) for p in again] == [
        sorted(t["name"] for t in p["tools"]) for p in parts
    ]


def test_a_small_document_is_not_split():
    document = big_document()
    document["paths"] = dict(list(document["paths"].items())[:12])
    theme = parse_theme_document(document, "small.json")
    assert 20 < len(theme["tools"]) <= 40
    assert split_theme(theme, 40) == [theme]


def test_the_largest_part_follows_the_environment_variable(monkeypatch):
    theme = parse_theme_document(big_document(), "shop.json")
    monkeypatch.setenv("AW_THEME_MAX_TOOLS", "100")
    parts = split_theme(theme)
    assert 5 <= len(parts) < 13 and max(len(p["tools"]) for p in parts) <= 100


PLURAL = {"Address": "Addresses"}


def test_rpc_actions_are_grouped_by_the_entity_they_act_on():
    entities = ["Instance", "Volume", "Snapshot", "Address", "KeyPair", "Image", "Subnet", "Vpc"]
    verbs = ["Create", "Describe", "Delete", "Modify"]
    paths = {
        f"/#Action={verb}{PLURAL.get(entity, entity + 's') if verb == 'Describe' else entity}": {
            "post": {"operationId": f"{verb}{entity}", "responses": {"200": {"description": "ok"}}}
        }
        for entity in entities
        for verb in verbs
    }
    document = {"openapi": "3.0.0", "info": {"title": "Compute", "version": "1"}, "paths": paths}
    parts = split_theme(parse_theme_document(document, "compute.json"), max_tools=20)
    assert [len(p["tools"]) for p in parts] == [16, 16]  # groups of 4 packed evenly, none cut
    for entity in entities:  # the four operations on an entity land in the same part
        holding = [p for p in parts if any(t["name"].endswith(entity) for t in p["tools"])]
        assert len(holding) == 1, entity
    assert parts[0]["title"] == "Compute — Address, Image, Instance, KeyPair"


def test_an_mcp_server_with_many_tools_splits_its_tool_list_too():
    tools = [
        {
            "name": f"{verb}_{noun}",
            "description": f"{verb} a {noun}",
            "inputSchema": {"type": "object"},
        }
        for noun in ("issue", "label", "milestone", "comment", "release", "branch", "tag", "hook")
        for verb in ("get", "list", "create", "update", "delete", "search")
    ]
    theme = parse_theme_document({"tools": tools, "serverInfo": {"name": "tracker"}}, "mcp")
    parts = split_theme(theme, max_tools=20)
    assert len(parts) >= 3 and all(len(p["tools"]) <= 20 for p in parts)
    for part in parts:  # the part's own tools/list is what its build lists
        assert [t["name"] for t in part["raw_spec"]["tools"]] == [t["name"] for t in part["tools"]]
    issue = [p for p in parts if any(t["name"].endswith("_issue") for t in p["tools"])]
    assert len(issue) == 1


# --- through the real import and build -----------------------------------------------------


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


@pytest.mark.django_db(transaction=True)
def test_importing_a_big_document_stores_one_family_and_a_part_builds_alone(
    storage, client, reviewer, reviewer_api
):
    small = big_document()
    small["info"] = {"title": "Tiny Shop", "version": "1"}
    small["paths"] = dict(list(small["paths"].items())[:4])
    job = run_job("environments.import_themes", {"documents": [big_document(), small]})
    assert job.state == "succeeded", job.error
    expected = len(split_theme(parse_theme_document(big_document(), "shop.json"), 40))
    assert len(job.result["created"]) == expected + 1
    assert job.result["families"] == [
        {
            "key": "shop.example:Shop Suite/2.1",
            "title": "Shop Suite",
            "parts": expected,
            "tools": 500,
        }
    ]
    rows = list(Theme.objects.filter(provenance__family__key="shop.example:Shop Suite/2.1"))
    assert len(rows) == expected and all(r.duplicate_of is None for r in rows)
    assert len({r.name for r in rows}) == expected
    assert sum(len(r.raw_spec["tools"]) for r in rows) == 500
    assert Theme.objects.filter(title="Tiny Shop").count() == 1

    client.force_login(reviewer)
    page = client.get(reverse("theme-list"), {"q": "Shop Suite"}).content.decode()
    assert f"part 1 of {expected} of" in page and f"part {expected} of {expected} of" in page

    part = next(
        r for r in rows if any(t["name"] == "createWarehouses" for t in r.raw_spec["tools"])
    )
    response = reviewer_api.post(f"/api/themes/{part.pk}/build/", {}, format="json")
    assert response.status_code == 202, response.content
    job_id = response.json()["id"]
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=600, message="part build")
    built = Job.objects.get(pk=job_id)
    assert built.state == "succeeded", built.error
    environment = Environment.objects.get(pk=built.result["environment"])
    assert environment.name == part.name
    assert environment.build_yield["ingest"]["theme_tools"] == len(part.raw_spec["tools"])
    names = set(environment.tools.values_list("name", flat=True))
    assert "createWarehouses" in names and names <= {t["name"] for t in part.raw_spec["tools"]}
    assert {p.name for p in read_theme(theme_dict(part)).plans} == {
        t["name"] for t in part.raw_spec["tools"]
    }
    page = client.get(reverse("environment-detail", args=[environment.pk])).content.decode()
    assert "data-theme-family" in page and "of Shop Suite" in page
    assert Path(environment.package_path).is_relative_to(storage)


def test_a_part_of_one_tag_still_reads_the_entity_its_operation_names_carry():
    """`pulls/list`, `pulls/get`... are `pulls_...` as function names: that word names the
    entity, it is not a server's prefix to strip (a tag part is named this way throughout)."""
    number = {"name": "pull_number", "in": "path", "required": True, "schema": {"type": "integer"}}
    title = {"title": {"type": "string"}, "state": {"type": "string", "enum": ["open", "closed"]}}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": title}}}}
    ok = {"200": {"description": "ok"}}
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Pulls", "version": "1"},
        "paths": {
            "/pulls": {
                "get": {"operationId": "pulls/list", "summary": "List them", "responses": ok,
                        "parameters": [{"name": "state", "in": "query", "schema": {"type": "string"}}]},
                "post": {"operationId": "pulls/create", "requestBody": body, "responses": ok},
            },
            "/pulls/{pull_number}": {
                "parameters": [number],
                "get": {"operationId": "pulls/get", "responses": ok},
                "patch": {"operationId": "pulls/update", "requestBody": body, "responses": ok},
            },
        },
    }  # fmt: skip
    model = read_theme(parse_theme_document(document, "pulls.json"))
    plans = {p.original_name: p for p in model.plans}
    assert {p.name for p in model.plans} == {
        "pulls_list",
        "pulls_create",
        "pulls_get",
        "pulls_update",
    }
    assert all(not p.rejected for p in model.plans), [p.rejected for p in model.plans]
    assert plans["pulls/list"].entity == plans["pulls/create"].entity == "pull"
