"""Nested JSON: objects keyed by dates become series rows; lists of ids become links."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from environments.discovery.schema import read_schema
from environments.discovery.sources import mine_sources
from environments.discovery.sources.base import read_provenance
from environments.discovery.tool_generator import generate_tools
from environments.discovery.verification import verify_tools
from environments.runtime import SandboxPool
from tests.test_domain_rules import Tools

ROUTES = {"HAT001": ("SFO", "JFK"), "HAT002": ("JFK", "ORD"), "HAT003": ("ORD", "SEA")}
DAYS = ["2024-05-01", "2024-05-02", "2024-05-03", "2024-05-04"]


def day_record(flight: int, day: int) -> dict:
    """A cancelled day has only a status and a flown one no prices: the shapes differ."""
    if day == 0:
        return {"status": "landed", "actual_departure_time_est": f"{DAYS[0]}T06:1{flight}:00"}
    if (flight, day) == (3, 1):
        return {"status": "cancelled"}
    return {
        "status": "available",
        "prices": {"basic_economy": 60 + 10 * flight + day, "economy": 120 + 10 * flight + day},
        "available_seats": {"basic_economy": 9 - day, "economy": 20 + flight},
    }


def airline_document() -> dict:
    flights = {
        number: {
            "flight_number": number,
            "origin": origin,
            "destination": destination,
            "scheduled_departure_time_est": "06:00:00",
            "dates": {d: day_record(n, i) for i, d in enumerate(DAYS)},
        }
        for n, (number, (origin, destination)) in enumerate(ROUTES.items(), start=1)
    }
    users = {}
    for user_id, first, reservations in [
        ("mia_li_3668", "Mia", ["NOJOQA", "AJVCTQ"]),
        ("omar_rossi_1241", "Omar", ["KXPLMB"]),
        ("ana_kim_77", "Ana", ["ZZTOPQ"]),
    ]:
        users[user_id] = {
            "user_id": user_id,
            "name": {"first_name": first, "last_name": "Test"},
            "payment_methods": {
                f"credit_card_{len(first)}00": {
                    "source": "credit_card",
                    "brand": "visa",
                    "last_four": "7447",
                    "id": f"credit_card_{len(first)}00",
                }
            },
            "membership": "gold",
            "reservations": reservations,
        }
    reservations = {}
    for rid, user_id, number, date in [
        ("NOJOQA", "mia_li_3668", "HAT001", DAYS[0]),
        ("AJVCTQ", "mia_li_3668", "HAT002", DAYS[2]),
        ("KXPLMB", "omar_rossi_1241", "HAT003", DAYS[3]),
        ("ZZTOPQ", "ana_kim_77", "HAT001", DAYS[1]),
    ]:
        reservations[rid] = {
            "reservation_id": rid,
            "user_id": user_id,
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": number, "date": date, "price": 140}],
            "payment_history": [{"payment_id": "credit_card_300", "amount": 140}],
            "created_at": "2024-04-14T06:33:04",
            "insurance": "no",
        }
    return {"flights": flights, "users": users, "reservations": reservations}


@pytest.fixture(scope="module")
def airline_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("airline")
    path = folder / "db.json"
    path.write_text(json.dumps(airline_document()))
    return mine_sources(folder / "airline.sqlite", files=[path])


def test_dated_objects_become_a_series_table_keyed_by_parent_and_date(airline_db):
    schema = read_schema(airline_db)
    series = schema["flight_dates"]
    kinds = {c.name: c.kind for c in series.columns}
    assert kinds["date"] == "date"
    assert kinds["prices_economy"] == "integer" and kinds["status"] == "text"
    assert kinds["actual_departure_time_est"] == "datetime"
    assert series.key_columns == ["flight_number", "date"] and series.primary_key == ""
    assert series.foreign_keys["flight_number"] == ("flights", "flight_number")
    assert series.row_count == len(ROUTES) * len(DAYS)
    assert not any(name.endswith(("_key", "_value")) for name in kinds)
    with sqlite3.connect(airline_db) as conn:
        row = conn.execute(
            "SELECT status, prices_economy FROM flight_dates "
            "WHERE flight_number = 'HAT002' AND date = '2024-05-03'"
        ).fetchone()
    assert row == ("available", 120 + 20 + 2)


def test_a_list_of_ids_without_digits_links_to_its_table(airline_db):
    schema = read_schema(airline_db)
    links = schema["user_reservations"]
    assert [c.name for c in links.columns] == ["user_id", "reservation_id"]
    assert links.key_columns == ["user_id", "reservation_id"]
    assert links.foreign_keys["reservation_id"] == ("reservations", "reservation_id")
    assert links.foreign_keys["user_id"] == ("users", "user_id")
    assert ("user_reservations", "reservation_id") in schema["reservations"].children


def test_a_linked_list_gets_the_link_tools(airline_db):
    """A list of ids is a link table, so reservations are listed for a user, and added and
    removed, like any many-to-many link."""
    tools = set(generate_tools(airline_db, "an airline").schemas)
    assert {
        "list_reservations_for_user",
        "list_users_for_reservation",
        "add_reservation_to_user",
        "remove_reservation_from_user",
    } <= tools


def test_a_list_repeating_a_value_keeps_its_position_and_an_unlinked_one_says_why(tmp_path):
    document = {
        "carts": [
            {"cart_id": "C1", "product_ids": ["P100", "P200", "P100"], "coupons": ["X9", "Q7"]},
            {"cart_id": "C2", "product_ids": ["P200"], "coupons": ["Q7"]},
        ],
        "products": [{"product_id": "P100", "name": "tea"}, {"product_id": "P200", "name": "jam"}],
        "coupons": [{"coupon_id": "Q7", "percent": 10}],
    }
    path = tmp_path / "cart.json"
    path.write_text(json.dumps(document))
    db = mine_sources(tmp_path / "cart.sqlite", files=[path])
    schema = read_schema(db)
    items = schema["cart_product_ids"]
    assert [c.name for c in items.columns] == ["cart_id", "position", "product_id"]
    assert items.key_columns == ["cart_id", "position"]
    assert items.foreign_keys["product_id"] == ("products", "product_id")
    assert "value" in {c.name for c in schema["cart_coupons"].columns}
    notes = [p["detail"] for p in read_provenance(db) if p["table"] == "cart_coupons"]
    assert (
        "cart_coupons.value: 1 of 2 values name no coupons row, so the list is not linked" in notes
    )


def test_search_filters_the_series_by_date(airline_db, tmp_path):
    tools = generate_tools(airline_db, "an airline")
    search = tools.schemas["search_flight_dates"]["function"]["parameters"]["properties"]
    assert {"date", "min_date", "max_date", "flight_number"} <= set(search)
    run = Tools(tools, airline_db, tmp_path)
    one_day = run("search_flight_dates", date="2024-05-03")
    assert one_day["total"] == 3
    assert {r["flight_number"] for r in one_day["rows"]} == set(ROUTES)
    window = run(
        "search_flight_dates", flight_number="HAT003", min_date="2024-05-02", max_date="2024-05-04"
    )
    assert [r["date"] for r in window["rows"]] == DAYS[1:]
    assert [r["status"] for r in window["rows"]] == ["cancelled", "available", "available"]
    with pytest.raises(ValueError, match="date"):
        run("search_flight_dates", date="May 3rd")
    added = run("add_flight_date", flight_number="HAT001", date="2024-05-05", status="available")
    assert added["date"] == "2024-05-05"
    with pytest.raises(ValueError, match="already exists"):
        run("add_flight_date", flight_number="HAT001", date="2024-05-05")
    with pytest.raises(LookupError, match="flight_number"):
        run("add_flight_date", flight_number="HAT999", date="2024-05-05")


def test_airline_tools_verify_including_the_series_tools(airline_db):
    tools = generate_tools(airline_db, "an airline")
    with SandboxPool(workers=1) as pool:
        report, kept = verify_tools("airline", airline_db, tools, pool=pool)
    assert report.verified, report.explain()
    for name in ("search_flight_dates", "add_flight_date", "remove_flight_date"):
        assert name in kept.names(), report.explain()


@pytest.mark.parametrize(
    ("keys", "column", "kind"),
    [
        (["2024-01", "2024-02", "2024-03"], "month", "text"),
        (["2021", "2022", "2023"], "year", "integer"),
        (["2024-05-01T08:00:00", "2024-05-01T09:30:00"], "time", "datetime"),
    ],
)
def test_other_ordered_keys_make_series_too(tmp_path, keys, column, kind):
    document = {
        "stations": {
            f"ST{n}": {
                "station_id": f"ST{n}",
                "readings": {
                    k: {"rain_mm": n + i, "wind": {"max": 3 * i}} for i, k in enumerate(keys)
                },
            }
            for n in range(1, 4)
        }
    }
    path = tmp_path / "weather.json"
    path.write_text(json.dumps(document))
    schema = read_schema(mine_sources(tmp_path / "weather.sqlite", files=[path]))
    series = schema["station_readings"]
    assert series.key_columns == ["station_id", column]
    assert series.column(column).kind == kind
    assert {c.name for c in series.columns} >= {"rain_mm", "wind_max"}
    assert series.row_count == 3 * len(keys)


def test_a_top_level_date_keyed_document_is_a_series(tmp_path):
    path = tmp_path / "rates.json"
    path.write_text(
        json.dumps({f"2024-03-0{d}": {"usd": 1.08 + d / 100, "gbp": 0.85} for d in range(1, 6)})
    )
    schema = read_schema(mine_sources(tmp_path / "rates.sqlite", files=[path]))
    table = schema["rates"]
    assert table.primary_key == "date" and table.column("date").kind == "date"
    assert table.row_count == 5


def test_lists_that_are_not_ids_stay_unlinked(tmp_path):
    document = {
        "products": {
            "P100": {"product_id": "P100", "tags": ["red wine", "dry"], "sizes": [1, 2]},
            "P200": {"product_id": "P200", "tags": ["white wine"], "sizes": [2]},
        },
        "bins": [{"bin": 1, "aisle": "A"}, {"bin": 2, "aisle": "B"}],
        "bundles": {
            "B1": {"bundle_id": "B1", "product_ids": ["P100", "P200"]},
            "B2": {"bundle_id": "B2", "product_ids": ["P200"]},
        },
    }
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(document))
    schema = read_schema(mine_sources(tmp_path / "shop.sqlite", files=[path]))
    assert "value" not in schema["product_tags"].foreign_keys
    assert "value" not in schema["product_sizes"].foreign_keys  # numbers link only by name
    assert schema["bundle_product_ids"].foreign_keys["product_id"] == ("products", "product_id")


def test_a_series_of_plain_values_becomes_parent_date_value_rows(tmp_path):
    document = {
        "museums": [
            {"museum_id": "M1", "visitors": {"2024-05-01": 140, "2024-05-02": 152}},
            {"museum_id": "M2", "visitors": {"2024-05-01": 90}},
        ],
        "inflation": {"2024-01": 3.1, "2024-02": 3.2, "2024-03": 3.5},
    }
    path = tmp_path / "city.json"
    path.write_text(json.dumps(document))
    schema = read_schema(mine_sources(tmp_path / "city.sqlite", files=[path]))
    visitors = schema["museum_visitors"]
    assert [c.name for c in visitors.columns] == ["museum_id", "date", "value"]
    assert visitors.key_columns == ["museum_id", "date"]
    assert visitors.column("date").kind == "date" and visitors.column("value").kind == "integer"
    assert visitors.foreign_keys["museum_id"] == ("museums", "museum_id")
    assert visitors.row_count == 3
    inflation = schema["inflation"]
    assert inflation.primary_key == "month" and inflation.row_count == 3
    assert inflation.column("value").kind == "real"


@pytest.mark.django_db(transaction=True)
def test_an_uploaded_airline_builds_with_series_links_and_its_category(
    reviewer_api, settings, tmp_path
):
    """Through the REST upload: the series and link tools are published, the id list is a
    foreign key, and the unnamed category is read from the tables (flights, reservations)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from aw_site.models import Job
    from environments.models import Environment
    from tests.support.worker import wait_for

    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    content = json.dumps(airline_document()).encode()
    file = SimpleUploadedFile("db.json", content, content_type="application/octet-stream")
    response = reviewer_api.post(
        "/api/environments/build/", {"file": file, "name": "tau_db"}, format="multipart"
    )
    assert response.status_code == 202, response.content[:500]
    job_id = response.json()["id"]
    wait_for(lambda: Job.objects.get(pk=job_id).is_finished, timeout=180, message="airline")
    job = Job.objects.get(pk=job_id)
    assert job.state == "succeeded", (job.error, job.log_tail[-1500:])
    environment = Environment.objects.get(pk=job.result["environment"])
    assert environment.status == Environment.Status.VERIFIED
    tools = {t["function"]["name"] for t in environment.manifest["tools"]}
    assert {"search_flight_dates", "add_flight_date", "remove_flight_date"} <= tools
    schema = environment.build_yield["schema"]
    assert (
        "user_reservations.reservation_id -> reservations.reservation_id" in schema["foreign_keys"]
    )
    assert schema["category"]["secondary"] == "Flights & Airports", schema["category"]
    assert schema["category_classified"] and "flight" in schema["category_reason"], schema
