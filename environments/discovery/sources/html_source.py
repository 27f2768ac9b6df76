"""HTML files -> tables, with the standard library's html.parser and no network.

Every <table> becomes a table (header from <th> cells, name from its caption, id or the heading
before it). A page without tables becomes one `<page>_section` table of (heading, text) sections,
so prose pages (docs, wiki articles) still land as queryable rows.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from .base import DatabaseBuilder, SourceError, TableSpec, sql_name


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.sections: list[dict] = []
        self.title = ""
        self._stack: list[dict] = []
        self._row: list[str] | None = None
        self._row_is_header = False
        self._cell: list[str] | None = None
        self._text: list[str] = []
        self._heading: list[str] | None = None
        self._last_heading = ""
        self._in_title = False
        self._caption: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "table":
            self._stack.append(
                {
                    "name": attrs.get("id") or "",
                    "heading": self._last_heading,
                    "rows": [],
                    "header": None,
                }
            )
        elif tag == "caption" and self._stack:
            self._caption = []
        elif tag == "tr" and self._stack:
            self._row, self._row_is_header = [], True
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            if tag == "td":
                self._row_is_header = False
        elif tag in ("h1", "h2", "h3", "h4") and not self._stack:
            self._flush_section()
            self._heading = []

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag == "caption" and self._caption is not None and self._stack:
            self._stack[-1]["name"] = " ".join("".join(self._caption).split())
            self._caption = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._stack:
            table = self._stack[-1]
            if self._row_is_header and table["header"] is None and not table["rows"]:
                table["header"] = self._row
            elif self._row:
                table["rows"].append(self._row)
            self._row = None
        elif tag == "table" and self._stack:
            self.tables.append(self._stack.pop())
        elif tag in ("h1", "h2", "h3", "h4") and self._heading is not None:
            self._last_heading = " ".join("".join(self._heading).split())
            self._heading = None

    def handle_data(self, data):
        if self._skip:
            return
        if self._in_title:
            self.title += data
            return
        if self._caption is not None:
            self._caption.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._heading is not None:
            self._heading.append(data)
        elif not self._stack:
            self._text.append(data)

    def _flush_section(self):
        text = " ".join("".join(self._text).split())
        if text or self._last_heading:
            self.sections.append({"heading": self._last_heading or "(top)", "text": text})
        self._text = []

    def close(self):
        super().close()
        self._flush_section()


def parse_html(text: str) -> _PageParser:
    parser = _PageParser()
    parser.feed(text)
    parser.close()
    return parser


def load_html(
    builder: DatabaseBuilder, path: Path, table: str | None = None, *, source: str | None = None
) -> list[TableSpec]:
    path = Path(path)
    source = source or str(path)
    label = source if ":" in source else path.name
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{label}: cannot read ({exc})") from exc
    if "<" not in text:
        raise SourceError(f"{label}: not an HTML document")
    page = parse_html(text)
    specs = []
    for index, found in enumerate(page.tables, start=1):
        header = found["header"]
        if not header:
            raise SourceError(f"{label}: table {index} has no header row (<th> cells)")
        rows = []
        for row_no, cells in enumerate(found["rows"], start=1):
            if len(cells) != len(header):
                raise SourceError(
                    f"{label}: table {index} row {row_no} has {len(cells)} cells, "
                    f"header has {len(header)}"
                )
            rows.append(dict(zip(header, cells, strict=True)))
        name = (
            found["name"]
            or found["heading"]
            or f"{table or Path(source.split(':')[-1]).stem}_{index}"
        )
        detail = f"<table> {index} of {label}, {len(rows)} rows"
        specs.append(
            builder.add_table(sql_name(name), rows, source=source, kind="html", detail=detail)
        )
    if not specs:
        sections = [s for s in page.sections if s["text"] or s["heading"] != "(top)"]
        if not sections:
            raise SourceError(f"{label}: no tables and no text sections found")
        rows = [{"section_no": i, **s} for i, s in enumerate(sections, start=1)]
        name = f"{table or Path(source.split(':')[-1]).stem}_section"
        detail = f"sections of page {page.title.strip() or label}"
        specs.append(builder.add_table(name, rows, source=source, kind="html", detail=detail))
    return specs
