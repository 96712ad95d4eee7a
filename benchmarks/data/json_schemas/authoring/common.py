"""Building blocks that many schemas share (addresses, money, contacts...), written once."""

from __future__ import annotations

from .dsl import A, B, E, I, N, O, S, null

COUNTRY = S(pattern="^[A-Z]{2}$", ex=["DE", "PT", "JP", "US", "KE", "BR", "CH"], desc="ISO 3166-1 alpha-2")
CURRENCY = S(pattern="^[A-Z]{3}$", ex=["EUR", "USD", "JPY", "GBP", "CHF"], desc="ISO 4217 code")
CURRENCY_ENUM = E("EUR", "USD", "GBP", "JPY", "CHF", "CAD")
ZIP = S(pattern=r"^\d{5}$", ex=["10115", "94103", "75001", "80331", "02139"])
POSTAL = S(lo=3, hi=10, pattern="^[A-Z0-9 -]{3,10}$", ex=["SW1A 1AA", "10115", "M5V 2T6", "1000-001"])
PHONE = S(pattern=r"^\+[1-9]\d{6,14}$", ex=["+4930123456", "+14155550123", "+351912345678"])
UUID = S(fmt="uuid")
EMAIL = S(fmt="email", hi=254)
URI = S(fmt="uri")
DATE = S(fmt="date")
DATETIME = S(fmt="date-time")
IPV4 = S(fmt="ipv4")
SEMVER = S(pattern=r"^\d+\.\d+\.\d+$", ex=["1.0.0", "2.14.3", "0.9.12"])
SLUG = S(lo=1, hi=40, pattern="^[a-z0-9]+(-[a-z0-9]+)*$", ex=["getting-started", "summer-sale-2024", "api"])
HEX_COLOR = S(pattern="^#[0-9a-fA-F]{6}$", ex=["#1E90FF", "#ff8800", "#000000"])
LANG = E("en", "de", "fr", "es", "ja", "pt")

ADDRESS = O(
    {
        "line1": S(lo=1, hi=100),
        "line2?": S(hi=100),
        "city": S(lo=1, hi=60),
        "state?": S(hi=60),
        "postal_code": POSTAL,
        "country": COUNTRY,
    }
)
US_ADDRESS = O({"street": S(lo=1, hi=80), "city": S(lo=1), "state": S(pattern="^[A-Z]{2}$", ex=["CA", "NY", "TX", "WA"]), "zip": ZIP})
MONEY = O({"amount": N(lo=0), "currency": CURRENCY})
MONEY_CENTS = O({"amount_cents": I(lo=0), "currency": CURRENCY_ENUM})
GEO = O({"lat": N(lo=-90, hi=90), "lon": N(lo=-180, hi=180)})
CONTACT = O({"name": S(lo=1, hi=80), "email": EMAIL, "phone?": PHONE})
PERSON_NAME = O({"first_name": S(lo=1, hi=50), "last_name": S(lo=1, hi=50)})
TIMESTAMPS = {"created_at": DATETIME, "updated_at?": DATETIME}
PAGINATION = O({"page": I(lo=1), "per_page": I(lo=1, hi=100), "total": I(lo=0)})
USER_REF = O({"id": I(lo=1), "login": S(lo=1, hi=39, pattern="^[a-zA-Z0-9-]+$", ex=["octo-cat", "dev42", "jmartin"])})
TAGS = A(S(lo=1, hi=30), hi=10, unique=True)
NULLABLE_STR = null(S())
FLAG = B()
