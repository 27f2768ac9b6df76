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


def test_many_series_become_small_multiples_with_one_line_each():
    series = {f"category {i}": [(1, i / 20), (2, i / 15)] for i in range(13)}
    html = charts.line_chart(series, y_range=(0.0, 1.0), title="Success rate by category")
    assert html.startswith('<div class="chart-grid">')
    assert html.count('class="chart-panel"') == 13
    assert ">Success rate by category</div>" in html
    assert html.count("<polyline") == 13
    assert 'class="legend-item"' not in html  # each panel is named by its title instead
    for i in range(13):
        assert f"<figcaption>category {i}</figcaption>" in html


def test_a_few_series_share_one_plot_with_a_legend_that_does_not_collide():
    names = [
        "sft loss on the warm-up demonstrations",
        "grpo loss",
        "a third series with a long name",
    ]
    svg = charts.line_chart({name: [(0, 0.1), (1, 0.2)] for name in names}, width=640)
    root = parse(svg)
    ns = "{http://www.w3.org/2000/svg}"
    items = root.findall(f".//{ns}g[@class='legend-item']") or root.findall(
        ".//g[@class='legend-item']"
    )
    entries = []
    for item in items:
        rect, text = item[0], item[1]
        entries.append((float(rect.get("y")), float(rect.get("x")), text.text))
    assert sorted(e[2] for e in entries) == sorted(names)
    for y, x, text in entries:  # each label ends before the next entry on its row begins
        end = x + 14 + charts.LEGEND_CHAR_WIDTH * len(text)
        later = [ox for oy, ox, _ in entries if oy == y and ox > x]
        assert not later or end <= min(later), text
        assert end <= 640, text


def test_plain_metric_names_come_from_one_mapping():
    from aw_site.metric_names import plain_metric_name

    assert plain_metric_name("frac_reward_zero_std") == "groups with no reward spread (share)"
    assert plain_metric_name("tools/call_frequency") == "tool calls per rollout"
    assert plain_metric_name("new/metric_key") == "new metric key"
