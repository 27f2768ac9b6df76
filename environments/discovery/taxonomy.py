"""Three-level environment taxonomy: 20 primary and 50 secondary categories as data.

Tertiary categories are free-form topics (e.g. "Airports") chosen per theme, so they live on the
theme, not here. Each secondary carries the keywords the offline classifier scores against.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Secondary:
    name: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class Primary:
    name: str
    secondaries: tuple[Secondary, ...]


def _p(name: str, *secondaries: tuple[str, str]) -> Primary:
    return Primary(name, tuple(Secondary(s, tuple(k.split())) for s, k in secondaries))


TAXONOMY: tuple[Primary, ...] = (
    _p(
        "Travel & Transportation",
        (
            "Flights & Airports",
            "flight airport airline iata icao runway airfield boarding gate passenger baggage "
            "cabin seat departure arrival",
        ),
        ("Rail & Public Transit", "train rail railway station transit bus metro subway route stop"),
        ("Hotels & Lodging", "hotel lodging room reservation booking check-in guest stay trip"),
    ),
    _p(
        "Geography & Places",
        ("Countries & Regions", "country countries region subdivision province territory iso3166"),
        ("Cities & Populations", "city cities town population municipality county capital"),
        ("Maps & Geocoding", "map geocode latitude longitude coordinate postal address location"),
    ),
    _p(
        "Finance & Banking",
        ("Currencies & Exchange", "currency currencies exchange forex iso4217 money rate"),
        (
            "Stock Markets & Investing",
            "stock stocks ticker share portfolio market price invest ohlc open high low close "
            "volume dividend equity candlestick",
        ),
        (
            "Banking & Payments",
            "bank account payment transfer transaction invoice card balance loan deposit "
            "withdrawal branch teller",
        ),
    ),
    _p(
        "E-commerce & Retail",
        (
            "Orders & Shopping",
            "order orders cart checkout shopping refund shipment customer store shop purchase",
        ),
        ("Products & Inventory", "product products inventory stock sku catalog warehouse item"),
    ),
    _p(
        "Science & Research",
        ("Chemistry & Materials", "element chemical chemistry isotope atom molecule periodic mass"),
        (
            "Biology & Ecology",
            "species penguin flower iris biology ecology animal plant organism gene genome protein dna "
            "wildlife",
        ),
        (
            "Physics & Astronomy",
            "physics astronomy planet star orbit constant particle telescope space nasa satellite "
            "asteroid spacecraft astronaut",
        ),
    ),
    _p(
        "Health & Medicine",
        (
            "Clinical & Diagnostic Data",
            "patient clinical diagnosis tumor cancer diabetes disease medical hospital doctor "
            "physician symptom fhir vaccine healthcare",
        ),
        ("Pharmacy & Drugs", "drug medication pharmacy prescription antibiotic bacteria dosage"),
        ("Fitness & Nutrition", "fitness exercise workout nutrition calorie diet health"),
    ),
    _p(
        "Weather & Environment",
        ("Weather & Climate", "weather climate temperature precipitation wind rain forecast"),
        ("Energy & Utilities", "energy electricity power utility fuel solar emission grid"),
    ),
    _p(
        "Government & Public Sector",
        ("Public Administration", "state government federal fips census agency public official"),
        ("Holidays & Observances", "holiday holidays observance festival public-holiday vacation"),
        (
            "Law & Regulation",
            "law legal regulation court statute compliance license permit crime police riot "
            "homicide arrest victim",
        ),
    ),
    _p(
        "Education & Language",
        ("Languages & Scripts", "language languages script alphabet linguistic iso639 dialect"),
        ("Courses & Learning", "course student teacher school lesson grade enrollment university"),
    ),
    _p(
        "Software & Developer Tools",
        ("Web Standards & Protocols", "http status mime protocol port header url web api"),
        (
            "Code & DevOps",
            "code repository repo git github gitlab commit pull issue deploy build pipeline fork",
        ),
        ("Data Formats & Encodings", "unicode character encoding codepoint emoji format charset"),
    ),
    _p(
        "Communication & Messaging",
        ("Email & Chat", "email mail message inbox chat thread send reply slack"),
        ("Social Media", "post tweet follower social like comment feed profile"),
    ),
    _p(
        "Productivity & Office",
        ("Calendars & Scheduling", "calendar event meeting schedule appointment reminder"),
        ("Documents & Notes", "document note notes file folder spreadsheet page wiki"),
        ("Project & Task Management", "task todo project ticket milestone sprint assignee kanban"),
    ),
    _p(
        "Entertainment & Media",
        ("Movies & TV", "movie film tv show episode actor director imdb rating"),
        ("Music & Audio", "music song album artist playlist track audio podcast"),
        ("Games", "game games player level score pokemon chess tournament"),
    ),
    _p(
        "Sports & Recreation",
        (
            "Team Sports",
            "team league match season football basketball baseball soccer sport stadium fixture",
        ),
        ("Outdoor Activities", "hiking park trail outdoor camping climbing cycling"),
    ),
    _p(
        "Food & Agriculture",
        (
            "Recipes & Restaurants",
            "recipe restaurant menu dish ingredient food cuisine wine meal cooking grocery",
        ),
        ("Agriculture & Crops", "crop barley wheat yield farm harvest agriculture variety"),
    ),
    _p(
        "Automotive & Vehicles",
        (
            "Vehicle Specifications",
            "car cars vehicle horsepower engine cylinders mpg model vin automotive",
        ),
        (
            "Driving & Fleet",
            "driving driver fleet mileage traffic fuel gas road parking telematics",
        ),
    ),
    _p(
        "Real Estate & Housing",
        (
            "Property Listings",
            "property listing house apartment rent sale realtor bedroom mortgage realestate housing",
        ),
        ("Property Management", "tenant lease landlord maintenance building unit"),
    ),
    _p(
        "Business & Employment",
        ("Jobs & Labour Statistics", "job jobs employment unemployment labour labor workforce"),
        ("CRM & Sales", "crm lead sales deal opportunity contact pipeline account"),
    ),
    _p(
        "Reference & Standards",
        ("Time Zones & Dates", "timezone time zone tz utc offset clock date dst"),
        ("Units & Measurements", "unit units measurement conversion metric si quantity"),
        (
            "Encyclopedic Data",
            "reference encyclopedia dataset facts lookup catalogue history historical monarch "
            "king queen reign dynasty emperor president era",
        ),
    ),
    _p(
        "Security & Identity",
        ("Authentication & Access", "auth login password token user role permission identity"),
        ("Threat Intelligence", "vulnerability cve threat malware exploit security incident"),
    ),
)


def primary_names() -> list[str]:
    return [p.name for p in TAXONOMY]


def secondary_names() -> list[str]:
    return [s.name for p in TAXONOMY for s in p.secondaries]


def primary_of(secondary: str) -> str:
    """The primary category a secondary category belongs to (KeyError when unknown)."""
    for p in TAXONOMY:
        if any(s.name == secondary for s in p.secondaries):
            return p.name
    raise KeyError(f"unknown secondary category {secondary!r}")


def is_valid(primary: str, secondary: str) -> bool:
    try:
        return primary_of(secondary) == primary
    except KeyError:
        return False


assert len(TAXONOMY) == 20, len(TAXONOMY)
assert len(secondary_names()) == 50, len(secondary_names())
