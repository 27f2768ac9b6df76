"""The inline SVG charts: well-formed, escaped, and honest about empty data."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from aw_site import charts


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_line_chart_has_one_polyline_per_series_and_parses():
    svg = charts.line_chart({"reward": [(0, 0.1), (1, 0.3), (2, 0.5)], "kl": [(0, 0.0), (2, 0.02)]})
    root = parse(svg)
    lines = root.findall("{http://www.w3.org/2000/svg}polyline") or root.findall("polyline")
    assert len(lines) == 2


def test_line_chart_escapes_names_and_handles_empty():
    svg = charts.line_chart({"<script>": [(1, 0.5)]})
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    parse(svg)
    empty = charts.line_chart({}, empty_message="No scores yet")
    assert "No scores yet" in empty
    parse(empty)


def test_bar_chart_sorts_largest_first():
    svg = charts.bar_chart([("tool_error", 2), ("wrong_answer", 7)])
    parse(svg)
    assert svg.index('data-label="wrong_answer"') < svg.index('data-label="tool_error"')


def test_tool_graph_draws_nodes_and_edges_with_fallback_layout():
    svg = charts.tool_graph(
        [{"id": "get_author", "kind": "read"}, {"id": "add_book", "kind": "write"}],
        [
            {"source": "get_author", "target": "add_book", "field": "id", "param": "author_id"},
            {"source": "get_author", "target": "missing"},
        ],
    )
    parse(svg)
    assert svg.count('class="node"') == 2 and svg.count('class="edge"') == 1


def test_nice_ticks_cover_the_range():
    ticks = charts.nice_ticks(0, 0.87)
    assert ticks[0] <= 0 and ticks[-1] >= 0.87
