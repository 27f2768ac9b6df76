"""Loading and publishing environment packages: every malformed part is named."""

from __future__ import annotations

import json

import pytest

from environments.package import PackageError, content_hash, load_package, write_package
from tests.support.sample_package import build_sample_package


@pytest.fixture
def path(tmp_path):
    return build_sample_package(tmp_path)


def _edit_manifest(path, change):
    manifest = json.loads((path / "manifest.json").read_text())
    change(manifest)
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_sample_package_loads(path):
    package = load_package(path)
    assert package.name == "bookstore"
    assert package.tool_names[:2] == ["get_book", "search_books"]
    assert package.tool_kind("place_order") == "write"
    assert package.tool_tests["get_book"] == ["test_get_book__existing", "test_get_book__missing"]
    assert package.content_hash == content_hash(path)


@pytest.mark.parametrize(
    "missing", ["manifest.json", "state.sqlite", "tools.py", "provenance.json"]
)
def test_missing_file_is_named(path, missing):
    (path / missing).unlink()
    with pytest.raises(PackageError, match=f"missing file {missing}"):
        load_package(path)


def test_bad_json_is_named(path):
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(PackageError, match="manifest.json: invalid JSON"):
        load_package(path)


def test_tool_missing_from_source_is_named(path):
    source = (path / "tools.py").read_text().replace("def update_stock(", "def _gone(")
    (path / "tools.py").write_text(source)
    with pytest.raises(
        PackageError, match="tool 'update_stock' from manifest.json has no function"
    ):
        load_package(path)


def test_tools_source_is_parsed_not_imported(path, tmp_path):
    marker = tmp_path / "imported"
    (path / "tools.py").write_text(
        (path / "tools.py").read_text() + f"\nopen({str(marker)!r}, 'w').write('x')\n"
    )
    load_package(path)
    assert not marker.exists()


def test_syntax_error_is_named(path):
    (path / "tools.py").write_text("def get_book(db:\n")
    with pytest.raises(PackageError, match="tools.py: syntax error at line 1"):
        load_package(path)


def test_schema_not_an_object_is_named(path):
    _edit_manifest(path, lambda m: m["tools"][0]["function"].update(parameters={"type": "string"}))
    with pytest.raises(PackageError, match="'get_book': parameters must be a JSON schema"):
        load_package(path)


def test_invalid_json_schema_is_named(path):
    def change(manifest):
        manifest["tools"][0]["function"]["parameters"]["properties"]["book_id"] = {"type": 7}

    _edit_manifest(path, change)
    with pytest.raises(PackageError, match="not a valid JSON schema"):
        load_package(path)


def test_bad_tool_kind_and_missing_key(path):
    _edit_manifest(path, lambda m: m["tool_kinds"].update(get_book="delete"))
    with pytest.raises(PackageError, match="must be read or write"):
        load_package(path)
    _edit_manifest(path, lambda m: m.pop("category"))
    with pytest.raises(PackageError, match="missing key 'category'"):
        load_package(path)


def test_state_not_a_database(path):
    (path / "state.sqlite").write_bytes(b"hello" * 100)
    with pytest.raises(PackageError, match="state.sqlite: not a readable SQLite database"):
        load_package(path)


def test_test_for_unknown_tool(path):
    (path / "tool_tests.py").write_text("def test_fly__high(call):\n    pass\n")
    with pytest.raises(PackageError, match="unknown tool 'fly'"):
        load_package(path)


def test_provenance_entries_checked(path):
    (path / "provenance.json").write_text(json.dumps([{"table": "book"}]))
    with pytest.raises(PackageError, match="provenance.json: entry 0 needs keys"):
        load_package(path)


def test_write_package_publishes_an_immutable_version(path, tmp_path):
    package = load_package(path)
    manifest = dict(package.manifest, version=2)
    published = write_package(
        tmp_path / "store",
        manifest,
        package.state_path,
        package.tools_source,
        package.tests_source,
        package.provenance,
    )
    assert published == tmp_path / "store" / "bookstore" / "v2"
    assert load_package(published).version == 2
    with pytest.raises(PackageError, match="immutable"):
        write_package(
            tmp_path / "store",
            manifest,
            package.state_path,
            package.tools_source,
            package.tests_source,
            package.provenance,
        )


def test_write_package_refuses_invalid_content(path, tmp_path):
    package = load_package(path)
    with pytest.raises(PackageError, match="has no function"):
        write_package(
            tmp_path / "store",
            package.manifest,
            package.state_path,
            "def other(db):\n    pass\n",
            "",
            package.provenance,
        )
    assert not (tmp_path / "store" / "bookstore" / "v1").exists()


def test_a_tool_whose_own_name_holds_double_underscores_keeps_its_tests(tmp_path):
    """BikeWise's `GET /v2/incidents.{format}` becomes `GET__version_incidents___format_`: its
    test `test_GET__version_incidents___format___base` was read as a test of a tool `GET`, and
    the whole build failed with "tests unknown tool"."""
    name = "GET__version_incidents___format_"
    schema = {
        "type": "function",
        "function": {
            "name": name,
            "description": "Incidents in one format.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    source = f"def {name}(db):\n    return []\n"
    path = build_sample_package(tmp_path, extra_tools=[(schema, "read", source)])
    with (path / "tool_tests.py").open("a") as tests:
        tests.write(f"\n\ndef test_{name}__base(call):\n    assert call({name!r}) == []\n")
    package = load_package(path)
    assert package.tool_tests[name] == [f"test_{name}__base"]
