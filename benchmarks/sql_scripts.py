"""Hand-written SQL scripts: build time, tables, foreign keys, kept CHECK rules and tools.

Generates (seeded, deterministic) a PostgreSQL and a MySQL script of about 3 MB each in the style
sample databases are published in by hand (a leading block comment, CREATE DATABASE and
`\\c` / USE, DROP ... IF EXISTS, serial / identity / AUTO_INCREMENT keys, ALTER TABLE ... ADD
CONSTRAINT foreign keys, CHECK and ENUM rules, N'...' literals with embedded quotes, multi-row
INSERTs, a link table) and builds each through the entry point users have
(``manage.py build_environment --file``, see ``byod_build.build``) in a scratch database and
storage root.

    .venv/bin/python benchmarks/sql_scripts.py [--keep DIR] [--megabytes 3]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from byod_build import build  # noqa: E402

FIRST = ("Ada", "Bram", "Chen", "Dora", "Eoin", "Fatima", "Gwen", "Hiro", "Ines", "Jonas")
LAST = ("O'Brien", "Lindqvist", "Silva", "D'Souza", "Nowak", "Okafor", "Price", "Wei", "Kaur")
GENRES = ("Drama", "Comedy", "Documentary", "Horror", "Children's", "Sci-Fi", "Western", "Music")
RATINGS = ("G", "PG", "PG-13", "R")
STATUSES = ("out", "returned", "late")
TABLES = (
    "country", "city", "store", "category", "film", "tag", "film_tag", "customer", "rental",
    "payment",
)  # fmt: skip


def _text(value: str) -> str:
    return "N'" + value.replace("'", "''") + "'"


def _rows(rng: random.Random, films: int, customers: int, rentals: int) -> dict[str, list]:
    """The rows of every table, identical for both dialects (keys are numbered 1..n)."""
    countries = [(f"Country {i}",) for i in range(1, 21)]
    cities = [(f"City {i}", rng.randint(1, len(countries))) for i in range(1, 201)]
    stores = [(rng.randint(1, len(cities)), f"Store {i}") for i in range(1, 11)]
    categories = [(g,) for g in GENRES]
    film_rows = []
    for i in range(1, films + 1):
        title = f"{rng.choice(('The', 'A', 'Our'))} {rng.choice(LAST)} Affair {i}"
        film_rows.append(
            (
                title,
                rng.randint(1, len(categories)),
                rng.choice(RATINGS),
                round(rng.uniform(0.99, 4.99), 2),
                f"{rng.randint(1990, 2023)}/{rng.randint(1, 12)}/{rng.randint(1, 28)}",
            )
        )
    tags = [(f"tag-{i}",) for i in range(1, 41)]
    film_tags = sorted(
        {(rng.randint(1, films), rng.randint(1, len(tags))) for _ in range(films * 2)}
    )
    customer_rows = []
    for i in range(1, customers + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        customer_rows.append(
            (
                rng.randint(1, len(stores)),
                first,
                last,
                f"{first.lower()}.{i}@example.org",
                rng.random() < 0.9,
                f"20{rng.randint(10, 23)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            )
        )
    rental_rows, payment_rows = [], []
    for i in range(1, rentals + 1):
        day = f"2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        status = rng.choice(STATUSES)
        customer = rng.randint(1, customers)
        rental_rows.append(
            (
                rng.randint(1, films),
                customer,
                rng.randint(1, len(stores)),
                f"{day} {rng.randint(8, 20):02d}:00:00",
                None if status == "out" else f"{day} 21:00:00",
                status,
            )
        )
        payment_rows.append((i, customer, round(rng.uniform(0.99, 20), 2), f"{day} 21:05:00"))
    return {
        "country": countries,
        "city": cities,
        "store": stores,
        "category": categories,
        "film": film_rows,
        "tag": tags,
        "film_tag": film_tags,
        "customer": customer_rows,
        "rental": rental_rows,
        "payment": payment_rows,
    }


COLUMNS = {
    "country": ("name",),
    "city": ("name", "country_id"),
    "store": ("city_id", "name"),
    "category": ("name",),
    "film": ("title", "category_id", "rating", "rental_rate", "released"),
    "tag": ("name",),
    "film_tag": ("film_id", "tag_id"),
    "customer": ("store_id", "first_name", "last_name", "email", "active", "joined"),
    "rental": ("film_id", "customer_id", "store_id", "rented_at", "returned_at", "status"),
    "payment": ("rental_id", "customer_id", "amount", "paid_at"),
}
KEYS = [
    ("city", "country_id", "country"),
    ("store", "city_id", "city"),
    ("film", "category_id", "category"),
    ("film_tag", "film_id", "film"),
    ("film_tag", "tag_id", "tag"),
    ("customer", "store_id", "store"),
    ("rental", "film_id", "film"),
    ("rental", "customer_id", "customer"),
    ("rental", "store_id", "store"),
    ("payment", "rental_id", "rental"),
    ("payment", "customer_id", "customer"),
]


def _value(value, dialect: str) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return ("TRUE" if value else "FALSE") if dialect == "postgres" else str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return _text(value)


def _inserts(rows: dict[str, list], dialect: str, quote) -> list[str]:
    out = []
    for table in TABLES:
        cols = ", ".join(quote(c) for c in COLUMNS[table])
        data = rows[table]
        for start in range(0, len(data), 500):
            values = ",\n  ".join(
                "(" + ", ".join(_value(v, dialect) for v in row) + ")"
                for row in data[start : start + 500]
            )
            out.append(f"INSERT INTO {quote(table)} ({cols}) VALUES\n  {values};\n")
    return out


def postgres_script(path: Path, rows: dict[str, list]) -> Path:
    ddl = f"""/*******************************************************************************
   Reel Rentals sample database - PostgreSQL version (generated for the benchmark)
********************************************************************************/
DROP DATABASE IF EXISTS reel_rentals;
CREATE DATABASE reel_rentals ENCODING 'UTF8';
\\c reel_rentals;
SET client_encoding = 'UTF8';

CREATE TYPE mpaa_rating AS ENUM ({", ".join(f"'{r}'" for r in RATINGS)});

DROP TABLE IF EXISTS country;
CREATE TABLE country (country_id SERIAL PRIMARY KEY, name VARCHAR(50) NOT NULL);
CREATE TABLE city (city_id SERIAL PRIMARY KEY, name VARCHAR(50) NOT NULL,
    country_id INT NOT NULL);
CREATE TABLE store (store_id SERIAL PRIMARY KEY, city_id INT NOT NULL, name VARCHAR(40) NOT NULL);
CREATE TABLE category (category_id SERIAL PRIMARY KEY, name VARCHAR(25) NOT NULL UNIQUE);
CREATE TABLE film (
    film_id INT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title CHARACTER VARYING(255) NOT NULL,
    category_id INT NOT NULL,
    rating mpaa_rating NOT NULL DEFAULT 'G',
    rental_rate NUMERIC(4,2) NOT NULL DEFAULT 4.99 CHECK (rental_rate >= 0),
    released DATE
);
CREATE TABLE tag (tag_id SERIAL PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE film_tag (film_id INT NOT NULL, tag_id INT NOT NULL, PRIMARY KEY (film_id, tag_id));
CREATE TABLE customer (
    customer_id BIGSERIAL PRIMARY KEY,
    store_id INT NOT NULL,
    first_name VARCHAR(45) NOT NULL,
    last_name VARCHAR(45) NOT NULL,
    email VARCHAR(80) NOT NULL UNIQUE,
    active BOOLEAN NOT NULL DEFAULT TRUE,
    joined DATE NOT NULL
);
CREATE TABLE rental (
    rental_id SERIAL PRIMARY KEY,
    film_id INT NOT NULL,
    customer_id BIGINT NOT NULL,
    store_id INT NOT NULL,
    rented_at TIMESTAMPTZ NOT NULL,
    returned_at TIMESTAMPTZ,
    status VARCHAR(10) NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in STATUSES)}))
);
CREATE TABLE payment (
    payment_id SERIAL PRIMARY KEY,
    rental_id INT NOT NULL,
    customer_id BIGINT NOT NULL,
    amount NUMERIC(5,2) NOT NULL,
    paid_at TIMESTAMP NOT NULL,
    CONSTRAINT payment_amount_check CHECK (amount >= 0 AND amount <= 100)
);
"""
    keys = "".join(
        f"ALTER TABLE {t} ADD CONSTRAINT fk_{t}_{c} FOREIGN KEY ({c}) REFERENCES {r} ({r}_id);\n"
        for t, c, r in KEYS
    )
    path.write_text(ddl + keys + "".join(_inserts(rows, "postgres", lambda n: n)))
    return path


def mysql_script(path: Path, rows: dict[str, list]) -> Path:
    def q(name: str) -> str:
        return f"`{name}`"

    engine = ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;"
    ddl = f"""/*
 * Reel Rentals sample database - MySQL version (generated for the benchmark)
 */
DROP DATABASE IF EXISTS `reel_rentals`;
CREATE DATABASE `reel_rentals` DEFAULT CHARACTER SET utf8mb4;
USE `reel_rentals`;
SET NAMES utf8mb4;

DROP TABLE IF EXISTS `country`;
CREATE TABLE `country` (`country_id` SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `name` VARCHAR(50) NOT NULL, PRIMARY KEY (`country_id`){engine}
CREATE TABLE `city` (`city_id` SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `name` VARCHAR(50) NOT NULL, `country_id` SMALLINT UNSIGNED NOT NULL,
  PRIMARY KEY (`city_id`){engine}
CREATE TABLE `store` (`store_id` TINYINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `city_id` SMALLINT UNSIGNED NOT NULL, `name` VARCHAR(40) NOT NULL, PRIMARY KEY (`store_id`){engine}
CREATE TABLE `category` (`category_id` TINYINT UNSIGNED NOT NULL AUTO_INCREMENT,
  `name` VARCHAR(25) NOT NULL, PRIMARY KEY (`category_id`), UNIQUE KEY `uq_name` (`name`){engine}
CREATE TABLE `film` (
  `film_id` INT UNSIGNED NOT NULL AUTO_INCREMENT,
  `title` VARCHAR(255) NOT NULL,
  `category_id` TINYINT UNSIGNED NOT NULL,
  `rating` ENUM({",".join(f"'{r}'" for r in RATINGS)}) NOT NULL DEFAULT 'G',
  `rental_rate` DECIMAL(4,2) NOT NULL DEFAULT 4.99,
  `released` DATE DEFAULT NULL,
  PRIMARY KEY (`film_id`),
  CONSTRAINT `chk_rate` CHECK (`rental_rate` >= 0)
{engine}
CREATE TABLE `tag` (`tag_id` SMALLINT UNSIGNED NOT NULL AUTO_INCREMENT, `name` VARCHAR(30) NOT NULL,
  PRIMARY KEY (`tag_id`){engine}
CREATE TABLE `film_tag` (`film_id` INT UNSIGNED NOT NULL, `tag_id` SMALLINT UNSIGNED NOT NULL,
  PRIMARY KEY (`film_id`, `tag_id`){engine}
CREATE TABLE `customer` (
  `customer_id` INT UNSIGNED NOT NULL AUTO_INCREMENT,
  `store_id` TINYINT UNSIGNED NOT NULL,
  `first_name` VARCHAR(45) NOT NULL,
  `last_name` VARCHAR(45) NOT NULL,
  `email` VARCHAR(80) NOT NULL,
  `active` TINYINT(1) NOT NULL DEFAULT 1,
  `joined` DATE NOT NULL,
  PRIMARY KEY (`customer_id`),
  UNIQUE KEY `uq_email` (`email`)
{engine}
CREATE TABLE `rental` (
  `rental_id` INT UNSIGNED NOT NULL AUTO_INCREMENT,
  `film_id` INT UNSIGNED NOT NULL,
  `customer_id` INT UNSIGNED NOT NULL,
  `store_id` TINYINT UNSIGNED NOT NULL,
  `rented_at` DATETIME NOT NULL,
  `returned_at` DATETIME DEFAULT NULL,
  `status` ENUM({",".join(f"'{s}'" for s in STATUSES)}) NOT NULL,
  PRIMARY KEY (`rental_id`)
{engine}
CREATE TABLE `payment` (
  `payment_id` INT UNSIGNED NOT NULL AUTO_INCREMENT,
  `rental_id` INT UNSIGNED NOT NULL,
  `customer_id` INT UNSIGNED NOT NULL,
  `amount` DECIMAL(5,2) NOT NULL,
  `paid_at` DATETIME NOT NULL,
  PRIMARY KEY (`payment_id`),
  CONSTRAINT `chk_amount` CHECK (`amount` BETWEEN 0 AND 100)
{engine}
"""
    keys = "".join(
        f"ALTER TABLE {q(t)} ADD CONSTRAINT {q(f'fk_{t}_{c}')} FOREIGN KEY ({q(c)}) "
        f"REFERENCES {q(r)} ({q(r + '_id')});\n"
        for t, c, r in KEYS
    )
    path.write_text(ddl + keys + "".join(_inserts(rows, "mysql", q)))
    return path


def checks_kept(scratch: Path) -> int:
    """CHECK rules in the published state database of the build in `scratch`."""
    states = sorted((scratch / "storage").rglob("state.sqlite"))
    with sqlite3.connect(states[-1]) as conn:
        return sum(
            (sql or "").count("CHECK (") for (sql,) in conn.execute("SELECT sql FROM sqlite_master")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", default="", help="keep the generated scripts and builds here")
    parser.add_argument("--megabytes", type=float, default=3.0, help="size of each script")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="aw-sql-scripts-"))
    work.mkdir(parents=True, exist_ok=True)
    scale = args.megabytes / 3.0
    rows = _rows(random.Random(28), int(2600 * scale), int(4000 * scale), int(21500 * scale))
    inputs = [
        (postgres_script(work / "reel_rentals_pg.sql", rows), "reel_pg"),
        (mysql_script(work / "reel_rentals_mysql.sql", rows), "reel_mysql"),
    ]
    results = []
    for path, name in inputs:
        result = build(path, name, work / name)
        result["checks"] = checks_kept(work / name)
        results.append(result)
        print(json.dumps(result), flush=True)
    print()
    print(
        "| script | size | build | tables | rows | foreign keys | CHECK rules kept | tools verified |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r['file']} | {r['megabytes']:.1f} MB | {r['seconds']:.1f} s | {r['tables']} | "
            f"{r['rows']:,} | {r['foreign_keys']} | {r['checks']} | "
            f"{r['verified']}/{r['tools']} |"
        )


if __name__ == "__main__":
    main()
