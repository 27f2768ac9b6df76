"""Themes from real spec formats, bulk import, near-duplicates, taxonomy classification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.discovery.classify import classify_offline, classify_theme
from environments.discovery.taxonomy import TAXONOMY, is_valid, secondary_names
from environments.discovery.themes import (
    ThemeError,
    deduplicate,
    find_near_duplicates,
    import_themes,
    load_theme_file,
    parse_mcp_spec,
    parse_openapi,
)
from tests.support.openai_server import ScriptedOpenAIServer, text_reply

THEMES = Path(__file__).parents[1] / "environments" / "data" / "themes"


def test_taxonomy_has_20_primary_and_50_secondary_categories():
    assert len(TAXONOMY) == 20
    assert len(secondary_names()) == len(set(secondary_names())) == 50


def test_mcp_tools_list_becomes_a_theme():
    theme = load_theme_file(THEMES / "mcp_time_server.json")
    assert theme["source_kind"] == "mcp_spec"
    assert theme["name"] == "mcp_server_time"
    assert [t["name"] for t in theme["tools"]] == ["get_current_time", "convert_time"]
    assert theme["tools"][1]["parameters"]["required"] == [
        "source_timezone",
        "time",
        "target_timezone",
    ]


def test_openapi_yaml_operations_become_tools():
    theme = load_theme_file(THEMES / "petstore_openapi.yaml")
    assert theme["source_kind"] == "tool_doc" and theme["title"] == "Swagger Petstore"
    tools = {t["name"]: t for t in theme["tools"]}
    assert set(tools) == {
        "addPet",
        "findPetsByStatus",
        "getPetById",
        "deletePet",
        "placeOrder",
        "getInventory",
    }
    assert tools["getPetById"]["parameters"]["required"] == ["petId"]
    assert tools["addPet"]["parameters"]["required"] == ["name", "photoUrls"]


def test_function_schemas_and_prd():
    weather = load_theme_file(THEMES / "weather_functions.json")
    assert weather["title"] == "Weather Station" and len(weather["tools"]) == 2
    prd = load_theme_file(THEMES / "library_prd.md")
    assert prd["source_kind"] == "prd" and prd["title"] == "Library Loans Service"
    assert "borrow_book" in [t["name"] for t in prd["tools"]]
    assert "public library" in prd["description"]


def test_malformed_specs_say_what_is_wrong():
    with pytest.raises(ThemeError, match="non-empty 'tools'"):
        parse_mcp_spec({"tools": []}, "empty.json")
    with pytest.raises(ThemeError, match="not an OpenAPI 3 or Swagger 2.0"):
        parse_openapi({"swagger": "1.2"}, "old.json")
    with pytest.raises(ThemeError, match="info.title is missing"):
        parse_openapi({"swagger": "2.0"}, "untitled.json")


def test_bulk_import_reports_bad_items_and_keeps_the_rest(tmp_path):
    good = json.loads((THEMES / "mcp_time_server.json").read_text())
    lines = [
        json.dumps(good),
        "{not json",
        json.dumps({"tools": "nope"}),
        json.dumps({"kind": "prd", "spec": "# Recipes\n\nFind recipes by ingredient."}),
    ]
    jsonl = tmp_path / "themes.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    result = import_themes(jsonl)
    assert [t["title"] for t in result.themes] == ["Time MCP Server", "Recipes"]
    assert [item for item, _ in result.errors] == ["themes.jsonl:2", "themes.jsonl:3"]
    folder = import_themes(THEMES)
    assert len(folder.themes) == 4 and folder.errors == []


def test_near_duplicates_by_name_and_by_description():
    a = {
        "name": "weather",
        "title": "Weather Station",
        "description": "Daily weather "
        "observations: temperature, precipitation and wind by station and date.",
        "tools": [],
    }
    b = dict(a, name="weather2", title="Station Weather")  # same words, other order
    c = dict(a, name="wx", title="Meteo", description=a["description"] + " Daily.")
    d = {
        "name": "pets",
        "title": "Pet Store",
        "description": "Pets, orders, inventory.",
        "tools": [],
    }
    pairs = find_near_duplicates([a, b, c, d])
    found = {(p["a"], p["b"]): p["reason"] for p in pairs}
    assert found[(0, 1)] == "same normalized name"
    assert "MinHash" in found[(0, 2)]
    assert not any(3 in key for key in found)
    kept, _ = deduplicate([a, b, c, d])
    assert [t["name"] for t in kept] == ["weather", "pets"]


def test_offline_classifier_is_deterministic():
    theme = load_theme_file(THEMES / "mcp_time_server.json")
    first = classify_offline(theme)
    assert (first.primary, first.secondary) == ("Reference & Standards", "Time Zones & Dates")
    assert classify_offline(theme) == first
    pets = classify_offline(load_theme_file(THEMES / "petstore_openapi.yaml"))
    assert pets.primary == "E-commerce & Retail"
    assert is_valid(pets.primary, pets.secondary)


def test_llm_classifier_and_its_fallback():
    from aw_site.llm import LLMSettings

    theme = load_theme_file(THEMES / "library_prd.md")
    answers = iter(
        [
            text_reply(
                '{"primary": "Education & Language", "secondary": "Courses & Learning", '
                '"tertiary": "Library loans"}'
            ),
            text_reply('{"primary": "Made Up", "secondary": "Nothing"}'),
        ]
    )
    with ScriptedOpenAIServer(lambda body: next(answers)) as server:
        settings = LLMSettings(base_url=server.base_url, model="m", api_key="k")
        by_llm = classify_theme(theme, settings)
        fallback = classify_theme(theme, settings)
    assert (by_llm.method, by_llm.tertiary) == ("llm", "Library loans")
    assert fallback.method in ("keywords", "fallback")
    assert "Library Loans Service" in json.dumps(server.requests[0]["messages"])
