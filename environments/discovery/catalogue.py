"""The starter catalogue: real environments built offline from data packages in the venv.

Each environment goes through four stages, each a plain function of plain arguments with a
`progress(fraction, message)` callback, so a job queue can run them one by one:
`mine_environment` -> `design_tools` -> `verify_environment` -> `publish`.
`build_starter_catalogue` runs whole environments in parallel worker processes.

    python -m environments.discovery.catalogue --out DIR [--workers 2] [--only airports,iris]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .schema import read_schema
from .sources import mine_sources, read_provenance
from .sources.base import PROVENANCE_TABLE
from .taxonomy import is_valid
from .tool_generator import ToolSet, generate_tools
from .verification import verify_tools

Progress = Callable[[float, str], None]


def _quiet(fraction: float, message: str) -> None:
    return None


def _spec(name, title, primary, secondary, tertiary, description, datasets=None) -> dict:
    return {
        "name": name,
        "title": title,
        "description": description,
        "category": {"primary": primary, "secondary": secondary, "tertiary": tertiary},
        "datasets": datasets or [name],
        "files": [],
    }


T, G, GOV = "Travel & Transportation", "Geography & Places", "Government & Public Sector"
FIN, SCI, SW = "Finance & Banking", "Science & Research", "Software & Developer Tools"
W, FOOD, AUTO = "Weather & Environment", "Food & Agriculture", "Automotive & Vehicles"

STARTER_SPECS: list[dict] = [
    _spec(
        "airports",
        "World Airports",
        T,
        "Flights & Airports",
        "Airports",
        "Airports with IATA codes worldwide and the countries they are in.",
    ),
    _spec(
        "us_airports",
        "US Airports",
        T,
        "Flights & Airports",
        "US Airports",
        "FAA airports of the United States by state.",
    ),
    _spec(
        "countries",
        "Countries and Subdivisions",
        G,
        "Countries & Regions",
        "ISO 3166",
        "ISO 3166 countries and their subdivisions (states, provinces, regions).",
    ),
    _spec(
        "world_cities",
        "World Cities",
        G,
        "Cities & Populations",
        "Large Cities",
        "Cities over 100,000 people with their countries and continents (GeoNames).",
    ),
    _spec(
        "us_states",
        "US States",
        GOV,
        "Public Administration",
        "US States",
        "US states and territories: capitals, FIPS codes, statehood, time zones.",
    ),
    _spec(
        "us_counties",
        "US Counties",
        GOV,
        "Public Administration",
        "US Counties",
        "US counties with FIPS codes, by state.",
    ),
    _spec(
        "public_holidays",
        "Public Holidays",
        GOV,
        "Holidays & Observances",
        "Public Holidays",
        "Public holidays 2024-2026 of twelve countries.",
        ["public_holidays"],
    ),
    _spec(
        "currencies",
        "Currencies",
        FIN,
        "Currencies & Exchange",
        "ISO 4217",
        "ISO 4217 currencies and the countries that use them.",
    ),
    _spec(
        "stocks",
        "Stock Prices",
        FIN,
        "Stock Markets & Investing",
        "Monthly Prices",
        "Monthly closing prices of five large US stocks, 2000-2010.",
    ),
    _spec(
        "languages",
        "Languages",
        "Education & Language",
        "Languages & Scripts",
        "Languages",
        "ISO 639 languages, scripts, and the languages spoken per country.",
    ),
    _spec(
        "elements",
        "Periodic Table",
        SCI,
        "Chemistry & Materials",
        "Elements",
        "Chemical elements and their isotopes (masses, abundances).",
    ),
    _spec(
        "penguins",
        "Palmer Penguins",
        SCI,
        "Biology & Ecology",
        "Penguins",
        "Size measurements of Palmer Station penguins by species and island.",
    ),
    _spec(
        "iris",
        "Iris Flowers",
        SCI,
        "Biology & Ecology",
        "Iris",
        "Fisher's iris flower measurements by species.",
    ),
    _spec(
        "burtin",
        "Antibiotic Effectiveness",
        "Health & Medicine",
        "Pharmacy & Drugs",
        "Antibiotics",
        "Minimum inhibitory concentration of three antibiotics per bacterium.",
    ),
    _spec(
        "seattle_weather",
        "Seattle Weather",
        W,
        "Weather & Climate",
        "Daily Weather",
        "Daily Seattle weather 2012-2015: precipitation, temperatures, wind.",
    ),
    _spec(
        "iowa_electricity",
        "Iowa Electricity",
        W,
        "Energy & Utilities",
        "Generation",
        "Iowa net electricity generation by source and year.",
    ),
    _spec(
        "http_status",
        "HTTP Status Codes",
        SW,
        "Web Standards & Protocols",
        "HTTP",
        "HTTP status codes, phrases and descriptions by class.",
    ),
    _spec(
        "mime_types",
        "MIME Types",
        SW,
        "Web Standards & Protocols",
        "Media Types",
        "File extensions and their media (MIME) types.",
    ),
    _spec(
        "unicode_characters",
        "Unicode Characters",
        SW,
        "Data Formats & Encodings",
        "Unicode",
        "Unicode characters (Latin, Greek, currency) with general categories.",
    ),
    _spec(
        "time_zones",
        "Time Zones",
        "Reference & Standards",
        "Time Zones & Dates",
        "IANA Time Zones",
        "IANA time zones and the countries they cover.",
    ),
    _spec(
        "cars",
        "Classic Cars",
        AUTO,
        "Vehicle Specifications",
        "Car Models",
        "1970-1982 car models: mileage, cylinders, horsepower, weight, origin.",
    ),
    _spec(
        "driving",
        "Miles Driven",
        AUTO,
        "Driving & Fleet",
        "Driving and Gas Prices",
        "Miles driven per capita in the US against gas prices, by year.",
    ),
    _spec(
        "barley",
        "Barley Trials",
        FOOD,
        "Agriculture & Crops",
        "Barley",
        "Barley yields by variety, site and year (Minnesota trials 1931-32).",
    ),
    _spec(
        "wheat",
        "Wheat Prices",
        FOOD,
        "Agriculture & Crops",
        "Wheat",
        "Playfair's wheat prices and weekly wages, 1565-1821.",
    ),
    _spec(
        "us_employment",
        "US Employment",
        "Business & Employment",
        "Jobs & Labour Statistics",
        "Employment by Sector",
        "Monthly US employment by sector 2006-2015 (thousands of jobs).",
    ),
]


@dataclass
class CatalogueEntry:
    name: str
    category: dict
    path: str | None
    tools_total: int
    tools_verified: int
    verified: bool
    seconds: float
    tables: dict
    error: str | None = None
    report: str = ""


# --- stages ------------------------------------------------------------------------------


def mine_environment(spec: dict, workdir: str | Path, progress: Progress = _quiet) -> dict:
    """Stage 1: real data into one SQLite database (atomic). Returns db path and provenance."""
    if not is_valid(spec["category"]["primary"], spec["category"]["secondary"]):
        raise ValueError(f"{spec['name']}: category {spec['category']} is not in the taxonomy")
    progress(0.1, f"mining {spec['name']}")
    target = Path(workdir) / f"{spec['name']}.sqlite"
    target.unlink(missing_ok=True)
    files = [Path(f) for f in spec.get("files", [])]
    db_path = mine_sources(target, files=files, datasets=spec.get("datasets", []))
    progress(1.0, f"mined {spec['name']}")
    return {"db_path": str(db_path), "provenance": read_provenance(db_path)}


def design_tools(
    db_path: str | Path,
    label: str,
    llm_settings: Any = None,
    theme: dict | None = None,
    progress: Progress = _quiet,
) -> dict:
    """Stage 2: schema-driven tools, plus LLM domain tools when an LLM is configured."""
    progress(0.1, "generating schema tools")
    schema_tools = generate_tools(db_path, label)
    llm_tools = None
    if llm_settings is not None:
        from .tool_design_agent import design_domain_tools

        progress(0.5, "asking the LLM for domain tools")
        llm_tools = design_domain_tools(llm_settings, db_path, theme or {"title": label})
    progress(1.0, f"{len(schema_tools.names())} schema tools")
    return {
        "schema_tools": schema_tools.as_dict(),
        "llm_tools": llm_tools.as_dict() if llm_tools is not None else None,
    }


def verify_environment(
    name: str,
    db_path: str | Path,
    schema_tools: dict,
    llm_tools: dict | None = None,
    category: dict | None = None,
    threshold: float = 0.5,
    min_tools: int = 5,
    pool: Any = None,
    progress: Progress = _quiet,
) -> dict:
    """Stage 3: sandbox verification. Returns the report and the verified tools (plain dicts)."""
    report, kept = verify_tools(
        name,
        db_path,
        ToolSet.from_dict(schema_tools),
        ToolSet.from_dict(llm_tools) if llm_tools else None,
        pool=pool,
        threshold=threshold,
        min_tools=min_tools,
        category=category,
        progress=progress,
    )
    return {"report": report.as_dict(), "explanation": report.explain(), "tools": kept.as_dict()}


def publish(
    root: str | Path,
    spec: dict,
    db_path: str | Path,
    tools: dict,
    report: dict,
    progress: Progress = _quiet,
) -> str:
    """Stage 4: write the package (verified tools only) with write_package; returns its path."""
    from environments.package import write_package

    if not report.get("verified"):
        raise ValueError(f"{spec['name']}: not verified, not published ({report.get('summary')})")
    verified = ToolSet.from_dict(tools)
    names = [n for n in verified.names() if n in set(report["verified_tools"])]
    provenance = read_provenance(db_path)
    state = Path(db_path).with_suffix(".state.sqlite")
    shutil.copyfile(db_path, state)
    try:
        with sqlite3.connect(state) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {PROVENANCE_TABLE}")
        with sqlite3.connect(state) as conn:
            conn.execute("VACUUM")
        tables = {
            t.name: {
                "primary_key": [t.primary_key] if t.primary_key else [],
                "foreign_keys": [
                    {"column": c, "references": f"{rt}.{rc}"}
                    for c, (rt, rc) in t.foreign_keys.items()
                ],
            }
            for t in read_schema(state).values()
        }
        manifest = {
            "name": spec["name"],
            "version": spec.get("version") or next_version_on_disk(Path(root), spec["name"]),
            "title": spec["title"],
            "description": spec["description"],
            "category": spec["category"],
            "tools": verified.manifest_tools(names),
            "tool_kinds": {n: verified.kinds[n] for n in names},
            "tables": tables,
        }
        progress(0.5, f"publishing {len(names)} tools")
        path = write_package(
            root,
            manifest,
            state,
            verified.tools_source(names),
            verified.tests_source(names),
            provenance,
        )
    finally:
        state.unlink(missing_ok=True)
    progress(1.0, f"published {path}")
    return str(path)


def next_version_on_disk(root: Path, name: str) -> int:
    versions = [int(p.name[1:]) for p in (root / name).glob("v*") if p.name[1:].isdigit()]
    return max(versions, default=0) + 1


# --- whole environments ------------------------------------------------------------------


def build_environment(
    spec: dict, root: str | Path, workdir: str | Path, pool: Any = None
) -> CatalogueEntry:
    """All four stages for one spec; errors are recorded on the entry, never raised."""
    started = time.perf_counter()
    entry = CatalogueEntry(spec["name"], spec["category"], None, 0, 0, False, 0.0, {})
    try:
        mined = mine_environment(spec, workdir)
        designed = design_tools(mined["db_path"], spec["title"])
        entry.tools_total = len(designed["schema_tools"]["functions"])
        checked = verify_environment(
            spec["name"],
            mined["db_path"],
            designed["schema_tools"],
            designed["llm_tools"],
            spec["category"],
            pool=pool,
        )
        entry.tools_verified = len(checked["report"]["verified_tools"])
        entry.verified = checked["report"]["verified"]
        entry.report = checked["explanation"]
        if entry.verified:
            entry.path = publish(root, spec, mined["db_path"], checked["tools"], checked["report"])
            entry.tables = json.loads((Path(entry.path) / "manifest.json").read_text())["tables"]
    except Exception as exc:  # one broken source must not stop the catalogue
        entry.error = f"{type(exc).__name__}: {exc}"
    entry.seconds = time.perf_counter() - started
    return entry


def _build_batch(specs: list[dict], root: str, workdir: str) -> list[CatalogueEntry]:
    from environments.runtime import SandboxPool

    with SandboxPool(workers=1) as pool:
        return [build_environment(spec, root, workdir, pool) for spec in specs]


def build_starter_catalogue(
    root: Path,
    workers: int = 2,
    specs: list[dict] | None = None,
    progress: Progress = _quiet,
) -> list[CatalogueEntry]:
    """Build, verify and publish the starter catalogue under `root`, `workers` processes."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    workdir = root / ".mining"
    workdir.mkdir(exist_ok=True)
    specs = list(STARTER_SPECS if specs is None else specs)
    batches = [specs[i::workers] for i in range(max(1, workers))]
    entries: list[CatalogueEntry] = []
    try:
        if workers <= 1:
            entries = _build_batch(specs, str(root), str(workdir))
        else:
            with ProcessPoolExecutor(max_workers=workers) as executor:
                futures = [
                    executor.submit(_build_batch, batch, str(root), str(workdir))
                    for batch in batches
                    if batch
                ]
                for done, future in enumerate(as_completed(futures), start=1):
                    entries.extend(future.result())
                    progress(done / len(futures), f"{len(entries)} environments built")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    order = {spec["name"]: i for i, spec in enumerate(specs)}
    return sorted(entries, key=lambda e: order[e.name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the starter environment catalogue.")
    parser.add_argument("--out", required=True, help="package root (AW_STORAGE_ROOT/environments)")
    parser.add_argument("--workers", type=int, default=2, help="parallel build processes")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    args = parser.parse_args(argv)
    specs = STARTER_SPECS
    if args.only:
        wanted = set(args.only.split(","))
        specs = [s for s in STARTER_SPECS if s["name"] in wanted]
    started = time.perf_counter()
    entries = build_starter_catalogue(Path(args.out), args.workers, specs)
    for e in entries:
        status = "ok" if e.path else f"FAILED {e.error or e.report}"
        print(
            f"{e.name:20} {e.category['primary']:28} {e.tools_verified:3}/{e.tools_total:3} "
            f"tools {e.seconds:6.1f}s {status}"
        )
    published = [e for e in entries if e.path]
    print(
        f"{len(published)} environments, "
        f"{len({e.category['primary'] for e in published})} primary categories, "
        f"{sum(e.tools_verified for e in published)} verified tools in "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0 if len(published) == len(entries) else 1


if __name__ == "__main__":
    sys.exit(main())


def entry_dict(entry: CatalogueEntry) -> dict:
    return asdict(entry)
