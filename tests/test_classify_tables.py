"""An uploaded database is classified by its tables and columns, not only by its name."""

from __future__ import annotations

import pytest

from environments.discovery.classify import classify_offline, name_words


def database_theme(name: str, tables: dict[str, list[str]]) -> dict:
    return {"name": name, "title": name.title(), "description": "", "tables": tables}


CHINOOK = {
    "customers": ["customer_id", "first_name", "company", "country", "email", "support_rep_id"],
    "employees": ["employee_id", "last_name", "title", "reports_to", "hire_date"],
    "invoices": ["invoice_id", "customer_id", "invoice_date", "billing_city", "total"],
    "invoice_lines": ["invoice_line_id", "invoice_id", "track_id", "unit_price", "quantity"],
    "tracks": ["track_id", "name", "album_id", "genre_id", "composer", "milliseconds"],
    "albums": ["album_id", "title", "artist_id"],
    "artists": ["artist_id", "name"],
    "genres": ["genre_id", "name"],
    "playlists": ["playlist_id", "name"],
    "playlist_track": ["playlist_id", "track_id"],
}
BANK = {
    "accounts": ["account_id", "customer_id", "branch_id", "balance", "opened_on"],
    "transactions": ["transaction_id", "account_id", "amount", "kind", "posted_at"],
    "branches": ["branch_id", "city", "manager"],
    "loans": ["loan_id", "customer_id", "principal", "rate"],
    "customers": ["customer_id", "name", "email"],
}
RETAIL = {  # tau-bench's retail database, as the JSON loader lays it out
    "users": ["user_id", "name_first_name", "email", "address_city"],
    "user_payment_methods": ["user_id", "id", "source", "brand", "last_four", "balance"],
    "orders": ["order_id", "user_id", "status", "address_city"],
    "order_items": ["order_id", "item_id", "product_id", "price", "options_color"],
    "order_fulfillments": ["order_id", "tracking_id", "item_ids"],
    "order_payment_history": ["order_id", "transaction_type", "amount", "payment_method_id"],
    "products": ["product_id", "name"],
    "product_variants": ["product_id", "item_id", "price", "available"],
}
AIRLINE = {
    "flights": ["flight_number", "origin", "destination", "scheduled_departure_time_est"],
    "flight_dates": ["flight_number", "date", "status", "prices_economy"],
    "users": ["user_id", "membership"],
    "user_payment_methods": ["user_id", "id", "source", "brand", "amount"],
    "reservations": ["reservation_id", "user_id", "cabin", "flight_type", "insurance"],
    "reservation_flights": ["reservation_id", "flight_number", "date", "price"],
    "reservation_payment_history": ["reservation_id", "payment_id", "amount"],
}


@pytest.mark.parametrize(
    ("name", "tables", "primary", "secondary"),
    [
        ("chinook", CHINOOK, "Entertainment & Media", "Music & Audio"),
        ("store", CHINOOK, "Entertainment & Media", "Music & Audio"),
        ("bank", BANK, "Finance & Banking", "Banking & Payments"),
        ("ledger", BANK, "Finance & Banking", "Banking & Payments"),
        ("retail", RETAIL, "E-commerce & Retail", None),
        ("db", RETAIL, "E-commerce & Retail", None),
        (
            "shop",
            {
                "customers": ["customer_id"],
                "orders": ["order_id", "customer_id"],
                "order_lines": ["order_id", "sku"],
                "payments": ["order_id", "amount"],
            },
            "E-commerce & Retail",
            "Orders & Shopping",
        ),
        ("airline", AIRLINE, "Travel & Transportation", "Flights & Airports"),
        ("tau_db", AIRLINE, "Travel & Transportation", "Flights & Airports"),
    ],
)
def test_tables_decide_the_category(name, tables, primary, secondary):
    found = classify_offline(database_theme(name, tables))
    assert found.primary == primary, found
    assert secondary is None or found.secondary == secondary, found


def test_the_name_alone_still_classifies_a_theme_without_tables():
    found = classify_offline({"name": "currency_rates", "title": "Currency exchange rates"})
    assert found.secondary == "Currencies & Exchange"
    assert classify_offline({"name": "store"}).method == "keywords"
    assert classify_offline({"name": "zzqx"}).method == "fallback"


def test_name_words_split_snake_and_camel_case_and_singularise():
    assert name_words("invoice_lines") == {"invoice", "line"}
    assert name_words("InvoiceLine") == {"invoice", "line"}
    assert name_words("PlaylistTrack") == {"playlist", "track"}
    assert name_words("categories") == {"category"}
    assert name_words("AlbumId") == {"album", "id"}


def test_a_child_table_counts_for_its_head_noun_more_than_its_parent():
    """reservation_passengers is about passengers: an airline whose child tables repeat
    `reservation` is still no hotel."""
    tables = dict(
        AIRLINE,
        reservation_passengers=["reservation_id", "first_name", "dob"],
        user_reservations=["user_id", "position", "value"],
    )
    found = classify_offline(database_theme("tau_db", tables))
    assert found.secondary == "Flights & Airports", found
    hotel = classify_offline(
        database_theme(
            "stays",
            {
                "hotels": ["hotel_id"],
                "rooms": ["room_id", "hotel_id"],
                "reservations": ["reservation_id", "room_id", "guest"],
            },
        )
    )
    assert hotel.secondary == "Hotels & Lodging", hotel


def upload_theme(name: str, tables: dict[str, list[str]]) -> dict:
    """A theme as an upload build makes it: the description only names the file."""
    return {
        "name": name,
        "title": name.replace("_", " ").title(),
        "description": f"Built from the uploaded file {name}.csv.",
        "tables": tables,
    }


@pytest.mark.parametrize(
    ("name", "tables", "secondary"),
    [
        ("prices", {"prices": ["date", "open", "high", "low", "close", "volume"]}, None),
        ("ohlc", {"ohlc": ["date", "open", "high", "low", "close", "signal", "ret"]}, None),
        ("github", {"github": ["time", "count"]}, "Code & DevOps"),
        ("monarchs", {"monarchs": ["name", "start", "end", "index"]}, "Encyclopedic Data"),
        (
            "la_riots",
            {"la_riots": ["first_name", "age", "death_date", "address", "longitude", "latitude"]},
            "Law & Regulation",
        ),
    ],
)
def test_uploads_are_classified_by_their_names_and_columns_not_by_the_word_file(
    name, tables, secondary
):
    found = classify_offline(upload_theme(name, tables))
    assert found.secondary == (secondary or "Stock Markets & Investing"), found
    assert found.method == "keywords" and found.reason.startswith("matched "), found


def test_when_nothing_matches_the_fallback_is_neutral_and_says_so():
    found = classify_offline(upload_theme("zzqx", {"zzqx": ["a", "b", "qty"]}))
    assert (found.primary, found.secondary) == ("Reference & Standards", "Encyclopedic Data")
    assert found.method == "fallback" and found.score == 0
    assert "no category's keywords matched" in found.reason
    documents = classify_offline(upload_theme("notes", {"notes": ["title", "body"]}))
    assert documents.secondary == "Documents & Notes"  # real words still count


def test_domain_words_of_public_apis_reach_their_categories():
    """Words the public API directory uses for its rarer domains (a NASA or genome API, a
    hospital's FHIR server, a mortgage or recipe service) land in those domains, not in the
    developer-tools bucket most cloud documents fill."""
    from environments.discovery.classify import classify_offline

    cases = {
        "NASA asteroid and satellite feeds": "Physics & Astronomy",
        "Genome and protein sequences of wildlife": "Biology & Ecology",
        "Hospital FHIR server: patients and physicians": "Clinical & Diagnostic Data",
        "Mortgage and housing listings": "Property Listings",
        "Meal plans, cooking and grocery lists": "Recipes & Restaurants",
    }
    for title, secondary in cases.items():
        assert classify_offline({"title": title}).secondary == secondary, title
