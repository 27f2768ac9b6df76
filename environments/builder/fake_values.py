"""Values that look real for generated rows, from Faker chosen by a field's format and name.

A theme's database is invented where no local data answers it; invented rows should still read
like the API's own (an `email` an address, a `city` a city, a `price` a price), so tools and
tasks built on them look like the real service. This module is one table from JSON-schema
formats and field-name words to Faker providers (seeded per value, so a build is repeatable
and one field's values do not shift when another field is added), numeric ranges for names
that have a natural one (latitude, price, age), and `shaped_like` for ids the document shows
one example of. What to do with the document's own examples, enums and patterns is decided by
the caller (`theme_data.Generator`); this module only proposes a value and names its provider.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from faker import Faker

from environments.discovery.naming import singular

from .theme_model import words

LOCALE = "en_US"
# Fixed bounds, never "now": the same document and seed give the same rows on any day.
FIRST_DAY, LAST_DAY = date(2019, 1, 1), date(2025, 12, 31)
BIRTH_FIRST, BIRTH_LAST = date(1950, 1, 1), date(2005, 12, 31)
_START = datetime.combine(FIRST_DAY, time())
_END = datetime.combine(LAST_DAY, time(23, 59, 59))

Make = Callable[[Faker], Any]


@dataclass(frozen=True)
class FakeRule:
    """One Faker provider for a string field (its name is shown in the provenance)."""

    provider: str
    make: Make


@dataclass(frozen=True)
class NumberRule:
    """A natural range for a numeric field (intersected with the document's bounds)."""

    label: str
    low: float
    high: float
    decimals: int = 0


def _rule(provider: str, make: Make | None = None) -> FakeRule:
    return FakeRule(provider, make or (lambda fake: getattr(fake, provider)()))


def _title(fake: Faker) -> str:
    return fake.sentence(nb_words=4).rstrip(".")


def _datetime(fake: Faker) -> str:
    moment = fake.date_time_between_dates(_START, _END)
    return moment.replace(microsecond=0).isoformat() + "Z"


def _date(fake: Faker) -> str:
    return fake.date_between_dates(FIRST_DAY, LAST_DAY).isoformat()


def _birth_date(fake: Faker) -> str:
    return fake.date_between_dates(BIRTH_FIRST, BIRTH_LAST).isoformat()


EMAIL = _rule("safe_email")
URL = _rule("url")
PHONE = _rule("basic_phone_number")  # no extensions ("x4047")
PERSON = _rule("name")
COMPANY = _rule("company")
TEXT = _rule("sentence")

# JSON-schema / OpenAPI `format` -> provider: a format is the document's own word for a value.
FORMAT_RULES: dict[str, FakeRule] = {
    "email": EMAIL,
    "idn-email": EMAIL,
    "uri": URL,
    "url": URL,
    "iri": URL,
    "uri-reference": _rule("uri_path", lambda fake: "/" + fake.uri_path()),
    "hostname": _rule("hostname"),
    "idn-hostname": _rule("hostname"),
    "ipv4": _rule("ipv4"),
    "ip": _rule("ipv4"),
    "ipv6": _rule("ipv6"),
    "uuid": _rule("uuid4"),
    "guid": _rule("uuid4"),
    "date-time": _rule("date_time", _datetime),
    "date": _rule("date", _date),
    "time": _rule("time"),
    "password": _rule("password"),
    "byte": _rule("binary", lambda fake: base64.b64encode(fake.binary(12)).decode()),
    "phone": PHONE,
    "tel": PHONE,
    "iso-4217": _rule("currency_code"),
    "currency": _rule("currency_code"),
    "country-code": _rule("country_code"),
    "language": _rule("language_code"),
    "mac": _rule("mac_address"),
}

# Field-name words -> provider. A key matches when the field's words end with it (the last
# word singular: `emails` -> email); the longest matching key wins (`email address` before
# `address`, `company name` before `name`), so `phone_type` is no phone and `home_phone` is.
NAME_RULES: dict[str, FakeRule] = {
    "email": EMAIL,
    "e mail": EMAIL,
    "email address": EMAIL,
    "mail": EMAIL,
    "first name": _rule("first_name"),
    "firstname": _rule("first_name"),
    "given name": _rule("first_name"),
    "forename": _rule("first_name"),
    "middle name": _rule("first_name"),
    "last name": _rule("last_name"),
    "lastname": _rule("last_name"),
    "surname": _rule("last_name"),
    "family name": _rule("last_name"),
    "full name": PERSON,
    "fullname": PERSON,
    "person name": PERSON,
    "contact name": PERSON,
    "customer name": PERSON,
    "author": PERSON,
    "author name": PERSON,
    "owner name": PERSON,
    "owner": PERSON,
    "person": PERSON,
    "customer": PERSON,
    "assignee name": PERSON,
    "display name": PERSON,
    "username": _rule("user_name"),
    "user name": _rule("user_name"),
    "login": _rule("user_name"),
    "screen name": _rule("user_name"),
    "nickname": _rule("user_name"),
    "handle": _rule("user_name"),
    "company": COMPANY,
    "company name": COMPANY,
    "organization": COMPANY,
    "organisation": COMPANY,
    "organization name": COMPANY,
    "employer": COMPANY,
    "vendor name": COMPANY,
    "supplier name": COMPANY,
    "merchant name": COMPANY,
    "business name": COMPANY,
    "job title": _rule("job"),
    "job": _rule("job"),
    "occupation": _rule("job"),
    "phone": PHONE,
    "phone number": PHONE,
    "telephone": PHONE,
    "mobile": PHONE,
    "mobile number": PHONE,
    "cell": PHONE,
    "fax": PHONE,
    "msisdn": _rule("msisdn"),
    "address": _rule("street_address"),
    "street": _rule("street_address"),
    "street address": _rule("street_address"),
    "address line": _rule("street_address"),
    "address line 1": _rule("street_address"),
    "line 1": _rule("street_address"),
    "line1": _rule("street_address"),
    "address1": _rule("street_address"),
    "address line 2": _rule("secondary_address"),
    "line 2": _rule("secondary_address"),
    "line2": _rule("secondary_address"),
    "address2": _rule("secondary_address"),
    "street name": _rule("street_name"),
    "building number": _rule("building_number"),
    "city": _rule("city"),
    "town": _rule("city"),
    "locality": _rule("city"),
    "city name": _rule("city"),
    "state": _rule("state"),
    "province": _rule("state"),
    "region": _rule("state"),
    "county": _rule("state"),
    "state code": _rule("state_abbr"),
    "country": _rule("country"),
    "country name": _rule("country"),
    "country code": _rule("country_code"),
    "country iso code": _rule("country_code"),
    "iso country code": _rule("country_code"),
    "country iso": _rule("country_code"),
    "currency iso code": _rule("currency_code"),
    "postcode": _rule("postcode"),
    "postal code": _rule("postcode"),
    "post code": _rule("postcode"),
    "zip": _rule("postcode"),
    "zipcode": _rule("postcode"),
    "zip code": _rule("postcode"),
    "currency": _rule("currency_code"),
    "currency code": _rule("currency_code"),
    "currency name": _rule("currency_name"),
    "url": URL,
    "uri": URL,
    "website": URL,
    "homepage": URL,
    "home page": URL,
    "web site": URL,
    "link": URL,
    "href": URL,
    "image": _rule("image_url"),
    "image url": _rule("image_url"),
    "avatar": _rule("image_url"),
    "avatar url": _rule("image_url"),
    "photo": _rule("image_url"),
    "photo url": _rule("image_url"),
    "logo": _rule("image_url"),
    "thumbnail": _rule("image_url"),
    "domain": _rule("domain_name"),
    "domain name": _rule("domain_name"),
    "host": _rule("hostname"),
    "hostname": _rule("hostname"),
    "host name": _rule("hostname"),
    "ip": _rule("ipv4"),
    "ip address": _rule("ipv4"),
    "ipv4": _rule("ipv4"),
    "ipv4 address": _rule("ipv4"),
    "ipv6": _rule("ipv6"),
    "ipv6 address": _rule("ipv6"),
    "mac address": _rule("mac_address"),
    "color": _rule("color_name"),
    "colour": _rule("color_name"),
    "hex color": _rule("hex_color"),
    "color hex": _rule("hex_color"),
    "description": _rule("paragraph", lambda fake: fake.paragraph(nb_sentences=2)),
    "summary": TEXT,
    "note": TEXT,
    "comment": TEXT,
    "body": _rule("paragraph", lambda fake: fake.paragraph(nb_sentences=2)),
    "content": _rule("paragraph", lambda fake: fake.paragraph(nb_sentences=2)),
    "message": TEXT,
    "text": TEXT,
    "bio": TEXT,
    "biography": TEXT,
    "detail": TEXT,
    "observation": TEXT,
    "reason": TEXT,
    "title": _rule("sentence", _title),
    "subject": _rule("sentence", _title),
    "headline": _rule("sentence", _title),
    "caption": _rule("sentence", _title),
    "language": _rule("language_code"),
    "language code": _rule("language_code"),
    "locale": _rule("locale"),
    "timezone": _rule("timezone"),
    "time zone": _rule("timezone"),
    "tz": _rule("timezone"),
    "mime type": _rule("mime_type"),
    "media type": _rule("mime_type"),
    "content type": _rule("mime_type"),
    "file name": _rule("file_name"),
    "filename": _rule("file_name"),
    "file extension": _rule("file_extension"),
    "extension": _rule("file_extension"),
    "slug": _rule("slug"),
    "tag": _rule("word"),
    "keyword": _rule("word"),
    "label": _rule("word"),
    "iban": _rule("iban"),
    "swift": _rule("swift"),
    "bic": _rule("swift"),
    "swift code": _rule("swift"),
    "card number": _rule("credit_card_number"),
    "credit card number": _rule("credit_card_number"),
    "account number": _rule("bban"),
    "routing number": _rule("aba"),
    "isbn": _rule("isbn13"),
    "ean": _rule("ean13"),
    "barcode": _rule("ean13"),
    "license plate": _rule("license_plate"),
    "ssn": _rule("ssn"),
    "password": _rule("password"),
    "birthday": _rule("date_of_birth", _birth_date),
    "birth date": _rule("date_of_birth", _birth_date),
    "birthdate": _rule("date_of_birth", _birth_date),
    "date of birth": _rule("date_of_birth", _birth_date),
    "dob": _rule("date_of_birth", _birth_date),
}

# An entity's own `name`: a person's is a person's name, a company's a company's.
ENTITY_NAME_RULES: dict[str, FakeRule] = {
    **dict.fromkeys(
        "person user customer contact member author employee owner lead candidate applicant "
        "student teacher patient driver agent assignee reviewer participant attendee passenger "
        "guest traveler traveller recipient sender buyer seller client friend speaker "
        "artist actor player host pet_owner".split(),
        PERSON,
    ),
    **dict.fromkeys(
        "company organization organisation vendor supplier merchant business employer "
        "account_holder tenant brand".split(),
        COMPANY,
    ),
    "city": _rule("city"),
    "country": _rule("country"),
    "street": _rule("street_name"),
}

NUMBER_RULES: dict[str, NumberRule] = {
    "latitude": NumberRule("latitude", -90, 90, 6),
    "lat": NumberRule("latitude", -90, 90, 6),
    "longitude": NumberRule("longitude", -180, 180, 6),
    "lng": NumberRule("longitude", -180, 180, 6),
    "lon": NumberRule("longitude", -180, 180, 6),
    "long": NumberRule("longitude", -180, 180, 6),
    **{
        word: NumberRule("money", 1, 2000, 2)
        for word in "price amount cost total subtotal balance fee salary tax discount "
        "revenue payment charge budget".split()
    },
    "age": NumberRule("age", 18, 90),
    "year": NumberRule("year", 1990, 2025),
    "percent": NumberRule("percent", 0, 100, 1),
    "percentage": NumberRule("percent", 0, 100, 1),
    "rating": NumberRule("rating", 1, 5, 1),
    "score": NumberRule("score", 0, 100, 1),
    "quantity": NumberRule("quantity", 1, 50),
    "qty": NumberRule("quantity", 1, 50),
    "count": NumberRule("count", 0, 500),
    "port": NumberRule("port", 1024, 65535),
    "weight": NumberRule("weight", 0.1, 100, 2),
    "height": NumberRule("height", 1, 250, 1),
    "width": NumberRule("width", 1, 250, 1),
    "duration": NumberRule("duration", 1, 3600),
}


def _keys_of(name: str) -> list[str]:
    """The word suffixes of a field name, longest first, last word singular (`home_emails` ->
    `home email`, `email`)."""
    parts = words(name)
    if not parts:
        return []
    parts[-1] = singular(parts[-1])
    return [" ".join(parts[i:]) for i in range(len(parts))]


def name_rule(field_name: str, entity_name: str = "") -> FakeRule | None:
    """The provider a string field's name asks for, or None (`name` alone asks by entity)."""
    for key in _keys_of(field_name):
        if key in NAME_RULES:
            return NAME_RULES[key]
        joined = key.replace(" ", "")
        if joined != key and joined in NAME_RULES:
            return NAME_RULES[joined]
    parts = words(field_name)
    if parts == ["name"]:  # an entity's own name: a person's, a company's
        return ENTITY_NAME_RULES.get(entity_name)
    if len(parts) >= 2 and parts[-1] == "name":  # passenger_name, supplier_name
        return ENTITY_NAME_RULES.get(parts[-2])
    return None


def number_rule(field_name: str) -> NumberRule | None:
    parts = words(field_name)
    return NUMBER_RULES.get(parts[-1]) if parts else None


class FakeValues:
    """One seeded Faker for one build: `string`, `number` and `date` values by field."""

    def __init__(self, seed: str, locale: str = LOCALE) -> None:
        self.seed = seed
        self.faker = Faker(locale)

    def seeded(self, *parts: Any) -> Faker:
        digest = hashlib.sha256("/".join([self.seed, "faker", *map(str, parts)]).encode())
        self.faker.seed_instance(int.from_bytes(digest.digest()[:8], "big"))
        return self.faker

    def string(
        self, field_name: str, fmt: str, entity_name: str, parts: tuple
    ) -> tuple[str, str] | None:
        """(value, provider) for a string field by its format, then its name; None if neither
        names a provider."""
        rule = FORMAT_RULES.get(fmt) or name_rule(field_name, entity_name)
        if rule is None:
            return None
        value = rule.make(self.seeded(*parts))
        return str(value), rule.provider

    def date(self, field_name: str, with_time: bool, parts: tuple) -> tuple[str, str]:
        """A date (or date-time) within fixed years; a birth date for a birthday field."""
        rule = name_rule(field_name)
        fake = self.seeded(*parts)
        if rule is not None and rule.provider == "date_of_birth":
            day = rule.make(fake)
            return (f"{day}T{fake.time()}Z" if with_time else day), rule.provider
        return (_datetime(fake), "date_time") if with_time else (_date(fake), "date")

    def number(
        self,
        field_name: str,
        integer: bool,
        minimum: float | None,
        maximum: float | None,
        rng: random.Random,
    ) -> tuple[float | int, str] | None:
        """A value in the field's natural range, within the document's bounds; None when the
        name has no natural range."""
        rule = number_rule(field_name)
        if rule is None:
            return None
        low = rule.low if minimum is None else max(rule.low, minimum)
        high = rule.high if maximum is None else min(rule.high, maximum)
        if low > high:  # the document's bounds exclude the natural range: the document wins
            low = minimum if minimum is not None else high
            high = maximum if maximum is not None else low
        if integer:
            return rng.randint(
                int(-(-low // 1)), max(int(-(-low // 1)), int(high // 1))
            ), rule.label
        return round(rng.uniform(low, high), rule.decimals or 2), rule.label


def shaped_like(example: str, rng: random.Random) -> str:
    """Another id of the example's shape: its digits become other digits, letters and
    separators stay (`cus_8Fk2` -> `cus_3Fk7`, `US123945459` -> `US804417226`, a hex digest
    another hex digest), so ids look like the document's own."""
    return "".join(
        rng.choice("123456789" if i == 0 and c != "0" else string.digits) if c.isdigit() else c
        for i, c in enumerate(example)
    )


ID_WORDS = {"id", "ids", "key", "token", "number", "no", "code", "ref", "reference", "sku"}


def looks_like_id(example: Any, field_name: str = "") -> bool:
    """An example worth varying by shape: a token with digits, or a number written in groups
    (`46 115 614 695`); never a sentence, and a media type or version string (`application/
    vnd.api.v10+json`) only where the field's name says it is an id."""
    if not isinstance(example, str) or not 0 < len(example) <= 64:
        return False
    digits = sum(c.isdigit() for c in example)
    letters = sum(c.isalpha() for c in example)
    if not digits or (any(c.isspace() for c in example) and digits < 2 * letters):
        return False
    return digits * 3 >= letters or words(field_name)[-1:] in ([w] for w in ID_WORDS)
