"""Server-rendered inline SVG charts for the console: line charts, bar charts, tool graphs.

Plain Python, no Django import and no JavaScript: each function returns an SVG string that
templates mark safe. Every label that reaches the SVG is XML-escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from html import escape

PALETTE = (
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#d97706",
    "#7c3aed",
    "#0891b2",
    "#db2777",
    "#4b5563",
    "#65a30d",
    "#9333ea",
)
FONT = 'font-family="system-ui, sans-serif"'
# Beyond this many lines one plot repeats colours and its legend crowds: small multiples instead.
MAX_LINES = len(PALETTE) // 2
LEGEND_CHAR_WIDTH = 7.0  # px per character at the legend's font size (12)


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}"
    return f"{value:.2f}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(1, count)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks, value = [], start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _empty(width: int, height: int, message: str) -> str:
    return (
        f'<svg class="chart chart-empty" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(message)}"><text x="{width / 2}" y="{height / 2}" '
        f'text-anchor="middle" fill="#6b7280" font-size="13" {FONT}>{escape(message)}</text></svg>'
    )


def _axis_titles(
    left: float, top: float, plot_w: float, plot_h: float, x_label: str, y_label: str
) -> list[str]:
    """The x title under the plot and the y title turned along its left edge (either optional)."""
    titles = []
    if x_label:
        titles.append(
            f'<text x="{left + plot_w / 2}" y="{top + plot_h + 30}" text-anchor="middle" '
            f'fill="#374151">{escape(x_label)}</text>'
        )
    if y_label:
        titles.append(
            f'<text transform="translate(12 {top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
            f'fill="#374151">{escape(y_label)}</text>'
        )
    return titles


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    width: int = 640,
    height: int = 260,
    y_range: tuple[float, float] | None = None,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
    empty_message: str = "No data yet",
    aria_label: str = "",
) -> str:
    """One polyline per named series of (x, y) points, with axes, ticks and a legend under the
    plot. More than ``MAX_LINES`` series become small multiples (``small_multiples``)."""
    points = [(x, y) for values in series.values() for x, y in values if y is not None]
    if not points:
        return _empty(width, height, empty_message)
    if len(series) > MAX_LINES:
        return small_multiples(
            series, y_range=y_range, x_label=x_label, y_label=y_label, title=title
        )
    left, right, top, bottom = 56, 16, 26 if title else 12, 44
    legend = len(series) > 1  # a single series is named by the chart's title
    longest = max((len(_clip(name, 40)) for name in series), default=1)
    room = (width - left - right) // (24 + LEGEND_CHAR_WIDTH * longest)
    legend_columns = max(1, min(4, int(room)))
    legend_rows = math.ceil(len(series) / legend_columns) if legend else 0
    bottom += 20 * legend_rows
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = [x for x, _ in points]
    x_low, x_high = min(xs), max(xs)
    if x_high == x_low:
        x_low, x_high = x_low - 1, x_high + 1
    if y_range is not None:
        y_ticks = nice_ticks(*y_range)
    else:
        ys = [y for _, y in points]
        y_ticks = nice_ticks(min(0.0, min(ys)), max(ys))
    y_low, y_high = y_ticks[0], y_ticks[-1]

    def sx(x: float) -> float:
        return left + (x - x_low) / (x_high - x_low) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    parts = [
        f'<svg class="chart chart-line" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(aria_label or title or y_label or "line chart")}" {FONT} '
        'font-size="12">'
    ]
    if title:
        parts.append(
            f'<text x="{left}" y="16" font-size="14" font-weight="600">{escape(title)}</text>'
        )
    for tick in y_ticks:
        y = sy(tick)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e7eb"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#6b7280">{_fmt(tick)}</text>'
        )
    x_ticks = sorted(set(xs))
    if len(x_ticks) > 10:
        x_ticks = nice_ticks(x_low, x_high, 8)
        x_ticks = [t for t in x_ticks if x_low <= t <= x_high]
    whole = all(float(t).is_integer() for t in x_ticks)
    for tick in x_ticks:
        x = sx(tick)
        text = f"{int(tick)}" if whole else _fmt(tick)
        parts.append(
            f'<text x="{x:.1f}" y="{top + plot_h + 15}" text-anchor="middle" fill="#6b7280">'
            f"{text}</text>"
        )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#9ca3af"/>'
    )
    parts += _axis_titles(left, top, plot_w, plot_h, x_label, y_label)
    for index, (name, values) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        clean = sorted((x, y) for x, y in values if y is not None)
        if not clean:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in clean)
        parts.append(
            f'<polyline class="series" data-series="{escape(name)}" points="{path}" fill="none" '
            f'stroke="{color}" stroke-width="2" stroke-linejoin="round"/>'
        )
        if len(clean) <= 40:
            for x, y in clean:
                parts.append(
                    f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}">'
                    f"<title>{escape(name)}: {_fmt(x)} → {y:.3g}</title></circle>"
                )
        if not legend:
            continue
        row, col = divmod(index, legend_columns)
        lx, ly = left + col * (plot_w / legend_columns), height - 20 * legend_rows + 20 * row + 4
        parts.append(
            f'<g class="legend-item"><rect x="{lx:.1f}" y="{ly:.1f}" width="10" height="10" '
            f'fill="{color}"/><text x="{lx + 14:.1f}" y="{ly + 9:.1f}" fill="#374151">'
            f"{escape(_clip(name, 40))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def small_multiples(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    y_range: tuple[float, float] | None = None,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
    panel_width: int = 320,
    panel_height: int = 150,
) -> str:
    """One small chart per series, side by side in a wrapping grid, each captioned with its
    name: tens of lines stay readable where one plot would repeat colours and crowd its legend.
    Every panel shares ``y_range`` (when given) so they compare at a glance; the y quantity is
    said once, in the heading."""
    panels = [
        (
            name,
            line_chart(
                {name: values},
                width=panel_width,
                height=panel_height,
                y_range=y_range,
                x_label=x_label,
                aria_label=f"{name}: {y_label}" if y_label else name,
            ),
        )
        for name, values in series.items()
    ]
    said = not y_label or y_label.lower() in title.lower()
    heading = title if said else f"{title} ({y_label})" if title else y_label
    return panel_grid(panels, title=heading)


def panel_grid(panels: Iterable[tuple[str, str]], *, title: str = "") -> str:
    """Charts laid out in a wrapping grid under one heading, each (caption, SVG) captioned in
    HTML, so a long caption wraps instead of being cut at the chart's edge."""
    heading = f'<div class="chart-grid-title">{escape(title)}</div>' if title else ""
    cells = "".join(
        f'<figure class="chart-panel"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'
        for caption, svg in panels
    )
    return f'<div class="chart-grid">{heading}{cells}</div>'


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def bar_chart(
    bars: Iterable[tuple[str, float]],
    *,
    width: int = 640,
    bar_height: int = 22,
    title: str = "",
    color: str = PALETTE[1],
    value_format: str = "{:g}",
    empty_message: str = "No data",
    limit: int = 20,
    label_words: Callable[[str], str] | None = None,
) -> str:
    """Horizontal bars, largest first, each labelled with its value. ``label_words`` writes a
    bar's key (an internal name, kept in ``data-label``) as the words a reader sees."""
    rows = sorted(((str(k), float(v)) for k, v in bars), key=lambda kv: (-kv[1], kv[0]))[:limit]
    if not rows:
        return _empty(width, 80, empty_message)
    label_w, value_w, top = 190, 56, 24 if title else 6
    height = top + len(rows) * (bar_height + 6) + 6
    high = max(v for _, v in rows) or 1.0
    plot_w = width - label_w - value_w
    parts = [
        f'<svg class="chart chart-bar" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title or "bar chart")}" {FONT} font-size="12">'
    ]
    if title:
        parts.append(f'<text x="0" y="15" font-size="13" font-weight="600">{escape(title)}</text>')
    for index, (label, value) in enumerate(rows):
        shown = label_words(label) if label_words else label
        y = top + index * (bar_height + 6)
        w = max(1.0, value / high * plot_w) if value > 0 else 0
        parts.append(
            f'<g class="bar" data-label="{escape(label)}" data-value="{value:g}">'
            f'<text x="{label_w - 8}" y="{y + bar_height * 0.7:.1f}" text-anchor="end" '
            f'fill="#374151">{escape(_clip(shown, 28))}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" rx="3" '
            f'fill="{color}"><title>{escape(shown)}: {value:g}</title></rect>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + bar_height * 0.7:.1f}" fill="#111827">'
            f"{escape(value_format.format(value))}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_columns(
    columns: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    width: int = 640,
    height: int = 240,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    empty_message: str = "No data",
) -> str:
    """Vertical columns in the given order (a distribution), each stacked by series."""
    totals = [sum(values[i] for values in series.values()) for i in range(len(columns))]
    if not columns or not any(totals):
        return _empty(width, 80, empty_message)
    left, right, top, bottom = 44, 12, 24 if title else 10, 40
    legend_rows = math.ceil(len(series) / 4)
    bottom += 18 * legend_rows
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = nice_ticks(0.0, max(totals), 4)
    high = ticks[-1] or 1.0
    slot = plot_w / len(columns)
    bar_w = max(2.0, slot * 0.7)
    parts = [
        f'<svg class="chart chart-columns" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title or "distribution")}" {FONT} font-size="11">'
    ]
    if title:
        parts.append(
            f'<text x="{left}" y="15" font-size="13" font-weight="600">{escape(title)}</text>'
        )
    for tick in ticks:
        y = top + plot_h - tick / high * plot_h
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e5e7eb"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#6b7280">{_fmt(tick)}</text>'
        )
    for index, label in enumerate(columns):
        x = left + index * slot + (slot - bar_w) / 2
        base = top + plot_h
        parts.append(
            f'<g class="column" data-label="{escape(label)}" data-value="{totals[index]:g}">'
        )
        for number, (name, values) in enumerate(series.items()):
            value = values[index]
            if value <= 0:
                continue
            h = value / high * plot_h
            base -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[number % len(PALETTE)]}" data-series="{escape(name)}">'
                f"<title>{escape(label)}, {escape(name)}: {value:g}</title></rect>"
            )
        parts.append(
            f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h + 14}" text-anchor="middle" '
            f'fill="#6b7280">{escape(_clip(label, 8))}</text></g>'
        )
    parts.append(
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#9ca3af"/>'
    )
    parts += _axis_titles(left, top, plot_w, plot_h, x_label, y_label)
    for index, name in enumerate(series):
        row, col = divmod(index, 4)
        lx, ly = left + col * (plot_w / 4), height - 18 * legend_rows + 18 * row + 4
        parts.append(
            f'<rect x="{lx:.1f}" y="{ly:.1f}" width="10" height="10" fill="{PALETTE[index % len(PALETTE)]}"/>'
            f'<text x="{lx + 14:.1f}" y="{ly + 9:.1f}" fill="#374151">{escape(_clip(name, 28))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


LENGTH_BUCKETS = (
    *((str(n), n, n) for n in range(1, 13)),
    ("13-16", 13, 16),
    ("17-24", 17, 24),
    ("25-40", 25, 40),
    (">40", 41, 10**9),
)


def difficulty_chart(
    counts: Iterable[tuple[int, str, int]],
    *,
    title: str = "Tasks by gold-run length",
    x_label: str = "tool calls in the gold run",
    empty_message: str = "No tasks yet",
) -> str:
    """The difficulty distribution: tasks per gold-run length (1..12, then wider buckets),
    stacked by a series label (task kind, tier). ``counts``: (length, series, tasks)."""
    rows = [(int(n or 0), str(label or "unknown"), int(k)) for n, label, k in counts]
    shown = [b for b in LENGTH_BUCKETS if any(b[1] <= n <= b[2] for n, _, _ in rows)]
    if rows:  # every length up to the longest, so gaps show
        longest = max(n for n, _, _ in rows)
        shown = [b for b in LENGTH_BUCKETS if b[1] <= max(longest, 1)]
    names = sorted({label for _, label, _ in rows})
    series = {name: [0.0] * len(shown) for name in names}
    for n, label, k in rows:
        for index, (_, low, high) in enumerate(shown):
            if low <= n <= high:
                series[label][index] += k
    return stacked_columns(
        [b[0] for b in shown],
        series,
        title=title,
        x_label=x_label,
        y_label="tasks",
        empty_message=empty_message,
    )


def _grid_layout(names: Sequence[str]) -> dict[str, tuple[float, float]]:
    columns = max(1, math.ceil(math.sqrt(len(names))))
    return {
        name: (40 + 220 * (i % columns), 40 + 70 * (i // columns)) for i, name in enumerate(names)
    }


def _edge_path(
    a: tuple[float, float],
    b: tuple[float, float],
    width: int,
    height: int,
    name: str,
    labels: list[str],
) -> str:
    """A curved arrow from box a to box b: sideways between columns, vertical within one."""
    (x1, y1), (x2, y2) = a, b
    if abs(x2 - x1) < 1:
        down = y2 > y1
        sx, sy = x1 + width / 2, y1 + height if down else y1
        ex, ey = x2 + width / 2, y2 if down else y2 + height
        bow = 60.0
        d = f"M {sx:.1f} {sy:.1f} C {sx + bow:.1f} {sy:.1f}, {ex + bow:.1f} {ey:.1f}, {ex:.1f} {ey:.1f}"
    else:
        forward = x2 > x1
        sx, sy = (x1 + width if forward else x1), y1 + height / 2
        ex, ey = (x2 if forward else x2 + width), y2 + height / 2
        bend = (ex - sx) / 2
        d = f"M {sx:.1f} {sy:.1f} C {sx + bend:.1f} {sy:.1f}, {ex - bend:.1f} {ey:.1f}, {ex:.1f} {ey:.1f}"
    detail = ": " + "; ".join(labels) if labels else ""
    return (
        f'<path class="edge" d="{d}" fill="none" stroke="#9ca3af" stroke-width="1.4" '
        f'marker-end="url(#arrow)"><title>{escape(name)}{escape(detail)}</title></path>'
    )


def tool_graph(nodes: Sequence[Mapping], edges: Sequence[Mapping], *, node_width: int = 170) -> str:
    """A tool dependency graph: boxes for tools (read/write coloured), arrows for data flow.

    ``nodes`` carry ``id`` (or ``name``), optional ``kind`` and ``x``/``y``; ``edges`` carry
    ``source``, ``target`` and optionally ``field`` -> ``param``. Missing positions get a grid.
    """
    if not nodes:
        return _empty(640, 120, "No tool graph for this environment")
    ids = [str(n.get("id") or n.get("name")) for n in nodes]
    fallback = _grid_layout(ids)
    position: dict[str, tuple[float, float]] = {}
    for node_id, node in zip(ids, nodes, strict=True):
        x, y = node.get("x"), node.get("y")
        ok = isinstance(x, int | float) and isinstance(y, int | float)
        position[node_id] = (float(x), float(y)) if ok else fallback[node_id]
    node_height = 34
    width = max(x for x, _ in position.values()) + node_width + 40
    height = max(y for _, y in position.values()) + node_height + 40
    parts = [
        f'<svg class="chart tool-graph" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" role="img" aria-label="tool dependency graph" {FONT} font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#6b7280"/></marker></defs>',
    ]
    links: dict[tuple[str, str], list[str]] = {}
    for edge in edges:
        source, target = str(edge.get("source")), str(edge.get("target"))
        if source in position and target in position and source != target:
            label = f"{edge.get('field', '')} → {edge.get('param', '')}".strip(" →")
            links.setdefault((source, target), []).append(label)
    for (source, target), labels in links.items():
        parts.append(
            _edge_path(
                position[source],
                position[target],
                node_width,
                node_height,
                f"{source} → {target}",
                [lb for lb in labels if lb],
            )
        )
    for node_id, node in zip(ids, nodes, strict=True):
        x, y = position[node_id]
        kind = str(node.get("kind") or "read")
        fill, stroke = ("#fef3c7", "#d97706") if kind == "write" else ("#dbeafe", "#2563eb")
        parts.append(
            f'<g class="node" data-tool="{escape(node_id)}" data-kind="{escape(kind)}">'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{node_width}" height="{node_height}" rx="6" '
            f'fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{x + node_width / 2:.1f}" y="{y + 21:.1f}" text-anchor="middle" '
            f'fill="#111827">{escape(_clip(str(node.get("label") or node_id), 24))}</text>'
            f"<title>{escape(node_id)} ({escape(kind)})</title></g>"
        )
    parts.append("</svg>")
    return "".join(parts)
