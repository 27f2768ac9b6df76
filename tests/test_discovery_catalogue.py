"""A fast build of a few starter-catalogue environments, in parallel processes."""

from __future__ import annotations

import json

from environments.discovery.catalogue import STARTER_SPECS, build_starter_catalogue, main
from environments.discovery.taxonomy import is_valid
from environments.package import load_package


def test_starter_specs_cover_the_brief():
    assert len(STARTER_SPECS) >= 20
    assert len({s["category"]["primary"] for s in STARTER_SPECS}) >= 8
    assert all(
        is_valid(s["category"]["primary"], s["category"]["secondary"]) for s in STARTER_SPECS
    )


def test_build_a_few_environments_in_parallel(tmp_path):
    wanted = {"iris", "http_status", "barley"}
    specs = [s for s in STARTER_SPECS if s["name"] in wanted]
    entries = build_starter_catalogue(tmp_path, workers=2, specs=specs)
    assert [e.name for e in entries] == [s["name"] for s in specs]
    assert all(e.path and e.verified for e in entries), [e.error or e.report for e in entries]
    for entry in entries:
        package = load_package(entry.path)
        assert package.manifest["category"] == entry.category
        assert set(package.manifest["tool_kinds"].values()) == {"read", "write"}
        assert package.provenance and package.manifest["tables"]
    barley = json.loads((tmp_path / "barley" / "v1" / "manifest.json").read_text())
    assert barley["tables"]["barley_yield"]["foreign_keys"]
    assert not (tmp_path / ".mining").exists()


def test_cli_builds_and_versions(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--workers", "1", "--only", "wheat"]) == 0
    assert main(["--out", str(tmp_path), "--workers", "1", "--only", "wheat"]) == 0
    assert (tmp_path / "wheat" / "v2" / "manifest.json").exists()
    assert "1 environments" in capsys.readouterr().out
