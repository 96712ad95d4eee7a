"""Seeded generator of realistic valid instances for the corpus schemas.

Values are drawn from small pools chosen by the property name (a ``city`` gets a
city, an ``email`` an address, a ``notes`` field a sentence), by ``format``, or
from the schema's ``examples`` (every pattern-constrained string in the corpus
carries some). Every generated instance is checked with ``jsonschema`` (formats
included) by the caller; an invalid draw is retried with another seed.
"""

from __future__ import annotations

import json
import random
import unicodedata
import uuid
from typing import Any

Schema = dict[str, Any]

FIRST = ["Alice", "Bruno", "Chen", "Dana", "Émile", "Fatima", "Gustav", "Hana", "Ivan", "José", "Kofi",
         "Léa", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sven", "Tomás", "Uma", "Yuki"]
LAST = ["Anderson", "Becker", "Costa", "Dubois", "Eriksson", "Fischer", "García", "Hoffmann", "Ito",
        "Jansen", "Kowalski", "Larsen", "Müller", "Nakamura", "O'Brien", "Petrov", "Rossi", "Silva",
        "Tanaka", "Novák", "Walsh", "Zhang"]
CITIES = ["Berlin", "Lisbon", "Zürich", "São Paulo", "Osaka", "Toronto", "Nairobi", "Austin", "Kraków",
          "Melbourne", "Reykjavík", "Seattle", "Lyon", "Valencia", "Chennai", "Oslo"]
STREETS = ["12 Baker Street", "221B Elm Road", "4 Rue de la Paix", "77 Market St, Suite 300",
           "Hauptstraße 5", "1600 Pennsylvania Ave NW", "9 Harbour View", "350 Fifth Avenue"]
COMPANIES = ["Acme Corp", "Globex", "Initech", "Umbrella Logistics", "Northwind Traders", "Stark Analytics",
             "Blue Harbor Foods", "Zephyr Labs", "Contoso Ltd", "Tyrell Systems"]
WORDS = ["alpha", "blue", "cedar", "delta", "ember", "fjord", "granite", "harbor", "indigo", "juniper",
         "kepler", "lumen", "maple", "nova", "orbit", "pine", "quartz", "river", "summit", "tundra"]
SENTENCES = [
    "Please deliver to the back entrance.",
    "Customer asked for a callback after 5 pm.",
    "The build fails on the second stage when the cache is cold.",
    "Great product, arrived two days early!",
    "Needs review by the security team before release.",
    "Room with a view of the lake, if available.",
    "Intermittent timeouts when uploading files larger than 2 GB.",
    "Follow-up visit in three weeks; bring previous lab results.",
    "Replaced the \"legacy\" endpoint with the v2 API.",
    "Line one.\nLine two with a tab\tinside.",
    "Prix très raisonnable, service rapide.",
    "Works as described 👍",
]
TITLES = ["Quarterly report", "Fix login redirect", "Weekend in Lisbon", "Onboarding checklist",
          "Add dark mode", "Ergonomic office chair", "Annual check-up", "Database migration plan",
          "Summer sale", "Crash on startup with empty config"]
PRODUCTS = ["Wireless Mouse", "Stainless Steel Water Bottle", "Noise-Cancelling Headphones", "Yoga Mat",
            "Espresso Machine", "Trail Running Shoes", "USB-C Hub", "Cast Iron Skillet"]
TAGS = ["urgent", "backend", "frontend", "billing", "vip", "beta", "docs", "mobile", "infra", "sale"]
DOMAINS = ["example.com", "mail.example.org", "corp.example.net", "shop.example.io"]
LANGS = ["en", "de", "fr", "es", "ja", "pt"]
TIMEZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]
HOSTS = ["api.example.com", "db-primary.internal", "cache-01.example.net", "localhost"]
PATHS = ["/var/log/app.log", "/etc/service/config.yaml", "src/main.py", "/data/exports/2024-06.csv"]
COLORS = ["red", "green", "navy", "teal", "black", "white"]
IMAGES = ["nginx:1.25", "redis:7.2-alpine", "ghcr.io/example/api:2.3.1", "postgres:16"]
COMMANDS = ["pytest -q", "npm run build", "make lint", "cargo test --release", "./scripts/deploy.sh"]


def _rand_date(rng: random.Random) -> str:
    return f"{rng.randint(2019, 2027):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _rand_datetime(rng: random.Random) -> str:
    frac = rng.choice(["", ".000", ".250"])
    tz = rng.choice(["Z", "Z", "+02:00", "-05:00"])
    return f"{_rand_date(rng)}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{frac}{tz}"


def _by_format(fmt: str, rng: random.Random, hint: str) -> str | None:
    if fmt == "date":
        return _rand_date(rng)
    if fmt == "date-time":
        return _rand_datetime(rng)
    if fmt == "time":
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
    if fmt == "email":
        local = unicodedata.normalize("NFKD", rng.choice(FIRST).lower()).encode("ascii", "ignore").decode()
        return f"{local}.{rng.choice(WORDS)}@{rng.choice(DOMAINS)}"  # ASCII: "email" is not "idn-email"
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "uri":
        return rng.choice(
            [
                f"https://{rng.choice(DOMAINS)}/{rng.choice(WORDS)}/{rng.randint(1, 999)}",
                f"https://{rng.choice(HOSTS)}/v1/{rng.choice(WORDS)}?page={rng.randint(1, 9)}",
                f"http://{rng.choice(DOMAINS)}/",
            ]
        )
    if fmt == "ipv4":
        return ".".join(str(rng.randint(0, 255)) for _ in range(4))
    if fmt == "hostname":
        return rng.choice(HOSTS)
    return None


def _by_hint(hint: str, rng: random.Random) -> str:
    h = hint.lower()

    def has(*keys: str) -> bool:
        return any(k in h for k in keys)

    if has("first_name", "given"):
        return rng.choice(FIRST)
    if has("last_name", "family", "surname"):
        return rng.choice(LAST)
    if has("username", "login", "handle", "author", "assignee", "owner", "user"):
        return f"{rng.choice(FIRST).lower()}_{rng.choice(WORDS)}".replace("é", "e").replace("á", "a")
    if has("company", "organization", "organisation", "vendor", "merchant", "carrier", "airline", "brand"):
        return rng.choice(COMPANIES)
    if has("city", "town"):
        return rng.choice(CITIES)
    if has("street", "line1", "address_line", "line"):
        return rng.choice(STREETS)
    if has("product", "item_name"):
        return rng.choice(PRODUCTS)
    if has("name", "contact", "holder", "guest", "patient", "doctor", "passenger", "recipient"):
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if has("title", "subject", "headline", "summary"):
        return rng.choice(TITLES)
    if has("desc", "note", "comment", "body", "message", "text", "bio", "reason", "content", "instruction",
           "query", "prompt", "question", "answer", "detail"):
        return rng.choice(SENTENCES)
    if has("tag", "label", "keyword", "category", "topic"):
        return rng.choice(TAGS)
    if has("lang", "locale"):
        return rng.choice(LANGS)
    if has("timezone", "tz"):
        return rng.choice(TIMEZONES)
    if has("host"):
        return rng.choice(HOSTS)
    if has("path", "file", "dir"):
        return rng.choice(PATHS)
    if has("image"):
        return rng.choice(IMAGES)
    if has("command", "run", "script", "cmd"):
        return rng.choice(COMMANDS)
    if has("color", "colour"):
        return rng.choice(COLORS)
    if has("state", "region", "province"):
        return rng.choice(["California", "Bavaria", "Ontario", "Île-de-France", "Victoria"])
    if has("country"):
        return rng.choice(["Germany", "Portugal", "Japan", "Canada", "Kenya", "Brazil"])
    if has("key", "secret", "token"):
        return "".join(rng.choice("abcdef0123456789") for _ in range(24))
    if has("url", "link", "href", "endpoint", "website"):
        return f"https://{rng.choice(DOMAINS)}/{rng.choice(WORDS)}"
    if has("id", "ref", "code", "number"):
        return f"{rng.choice(WORDS)}-{rng.randint(100, 99999)}"
    return rng.choice([rng.choice(WORDS), f"{rng.choice(WORDS)} {rng.choice(WORDS)}", rng.choice(TITLES)])


def _fit_length(text: str, lo: int | None, hi: int | None, rng: random.Random) -> str:
    while lo is not None and len(text) < lo:
        text += " " + rng.choice(WORDS)
    if hi is not None and len(text) > hi:
        text = text[:hi].rstrip() or text[:hi]
        if lo is not None and len(text) < lo:
            text = text + "x" * (lo - len(text))
    return text


def _int_range(schema: Schema, hint: str) -> tuple[int, int]:
    lo = schema.get("minimum")
    hi = schema.get("maximum")
    if "exclusiveMinimum" in schema:
        lo = int(schema["exclusiveMinimum"]) + 1
    if "exclusiveMaximum" in schema:
        hi = int(schema["exclusiveMaximum"]) - 1
    h = hint.lower()
    default = (0, 500)
    if "year" in h:
        default = (1990, 2030)
    elif "port" in h:
        default = (1024, 65535)
    elif "age" in h:
        default = (18, 90)
    elif any(k in h for k in ("quantity", "count", "retries", "replicas", "nights", "guests", "seats")):
        default = (1, 8)
    elif any(k in h for k in ("cents", "amount", "price", "total")):
        default = (100, 250000)
    elif any(k in h for k in ("ms", "timeout", "seconds", "interval")):
        default = (1, 600)
    elif "id" in h:
        default = (1, 99999)
    lo = default[0] if lo is None else int(lo) if float(lo).is_integer() else int(lo) + 1
    hi = default[1] if hi is None else int(hi)
    if lo > hi:
        lo, hi = (hi, lo) if schema.get("minimum") is None else (lo, lo + 100)
    return lo, hi


def _number(schema: Schema, hint: str, rng: random.Random) -> float | int:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    h = hint.lower()
    if lo is None and hi is None:
        if "lat" in h:
            lo, hi = -90, 90
        elif "lon" in h or "lng" in h:
            lo, hi = -180, 180
        else:
            lo, hi = 0, 1000
    elif lo is None:
        lo = min(0, hi - 100)
    elif hi is None:
        hi = lo + 1000
    for _ in range(50):
        value = round(rng.uniform(lo, hi), rng.choice([1, 2, 2, 4]))
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            continue
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            continue
        if value < lo or value > hi:
            continue
        return int(value) if rng.random() < 0.15 and float(value).is_integer() else value
    return lo if "exclusiveMinimum" not in schema else (lo + hi) / 2


_MAP_KEYS = {
    "": ["env", "team", "tier", "region", "app", "owner", "version"],
    "rates": ["USD", "GBP", "JPY", "CHF", "BRL", "SEK"],
    "dependencies": ["lodash", "react", "express", "chalk", "zod", "axios"],
    "env": ["LOG_LEVEL", "DATABASE_URL", "PORT", "NODE_ENV", "FEATURE_X"],
    "environment": ["LOG_LEVEL", "DATABASE_URL", "PORT", "NODE_ENV", "FEATURE_X"],
    "variables": ["PYTHON_VERSION", "CACHE_DIR", "TARGET", "REGISTRY"],
    "headers": ["Authorization", "Content-Type", "X-Request-Id", "Accept"],
    "translations": ["en", "de", "fr", "es", "ja"],
    "attributes": ["color", "size", "material", "weight", "pattern"],
    "scores": ["math", "reading", "science", "history"],
}


class Generator:
    """Draws instances of one root schema (``$ref`` resolved against its ``$defs``)."""

    def __init__(self, root: Schema, rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            path = schema["$ref"]
            assert path.startswith("#/"), path
            node: Any = self.root
            for part in path[2:].split("/"):
                node = node[part]
            schema = node
        return schema

    def value(self, schema: Schema | bool, hint: str = "", depth: int = 0) -> Any:
        rng = self.rng
        if schema is True:
            return rng.choice(WORDS)
        assert isinstance(schema, dict)
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            choices = [v for v in schema["enum"] if v is not None] or schema["enum"]
            if None in schema["enum"] and rng.random() < 0.2:
                return None
            return rng.choice(choices)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = schema[key]
                non_null = [b for b in branches if self.resolve(b).get("type") != "null"]
                if len(non_null) < len(branches) and (rng.random() < 0.25 or depth > 4):
                    return None
                if depth > 3:
                    flat = [b for b in non_null if "$ref" not in json.dumps(self.resolve(b))] or non_null
                    return self.value(rng.choice(flat), hint, depth + 1)
                return self.value(rng.choice(non_null), hint, depth + 1)
        t = schema.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if k != "null"]
            if "null" in t and (not kinds or rng.random() < 0.2):
                return None
            t = rng.choice(kinds)
        if t == "object" or (t is None and "properties" in schema):
            return self.obj(schema, depth, hint)
        if t == "array":
            return self.array(schema, hint, depth)
        if t == "string":
            return self.string(schema, hint)
        if t == "integer":
            lo, hi = _int_range(schema, hint)
            mult = schema.get("multipleOf")
            if mult:
                first = -(-lo // mult) * mult
                steps = max(0, (hi - first) // mult)
                return first + mult * rng.randint(0, steps)
            return rng.randint(lo, hi)
        if t == "number":
            return _number(schema, hint, rng)
        if t == "boolean":
            return rng.random() < 0.5
        if t == "null":
            return None
        raise ValueError(f"cannot generate a value for {schema}")

    def obj(self, schema: Schema, depth: int, hint: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        required = set(schema.get("required", ()))
        keep = 0.65 if depth < 2 else 0.4
        for name, sub in schema.get("properties", {}).items():
            if name in required or self.rng.random() < keep:
                out[name] = self.value(sub, name, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not schema.get("properties") and self.rng.random() < 0.9:
            pool = _MAP_KEYS.get(hint, _MAP_KEYS[""])
            for _ in range(self.rng.randint(1, 3)):
                key = self.rng.choice(pool)
                out.setdefault(key, self.value(extra, key, depth + 1))
        while len(out) < schema.get("minProperties", 0):
            missing = [n for n in schema.get("properties", {}) if n not in out]
            if not missing:
                break
            out[missing[0]] = self.value(schema["properties"][missing[0]], missing[0], depth + 1)
        # keep schema order (engines that enforce the declared order need it)
        order = list(schema.get("properties", {}))
        return dict(sorted(out.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))

    def array(self, schema: Schema, hint: str, depth: int) -> list[Any]:
        rng = self.rng
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 4)
        top = min(hi, lo + (3 if depth < 3 else 1))
        n = lo if depth > 4 else rng.randint(lo, top)
        if "prefixItems" in schema:
            items = [self.value(s, hint, depth + 1) for s in schema["prefixItems"]]
            return items
        item_hint = hint[:-1] if hint.endswith("s") else hint
        out: list[Any] = []
        attempts = 0
        while len(out) < n and attempts < 50:
            attempts += 1
            v = self.value(schema.get("items", True), item_hint, depth + 1)
            if schema.get("uniqueItems") and v in out:
                continue
            out.append(v)
        return out

    def string(self, schema: Schema, hint: str) -> str:
        rng = self.rng
        if "examples" in schema:
            return str(rng.choice(schema["examples"]))
        if "pattern" in schema:
            raise ValueError(f"pattern string {hint!r} needs examples")
        text = None
        if "format" in schema:
            text = _by_format(schema["format"], rng, hint)
        if text is None:
            text = _by_hint(hint, rng)
        return _fit_length(text, schema.get("minLength"), schema.get("maxLength"), rng)
