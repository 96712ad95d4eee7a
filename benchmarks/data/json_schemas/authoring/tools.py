"""Tool/function-call argument schemas in the strict OpenAI style.

Every object closes with ``additionalProperties: false`` and lists every property
as required; an optional argument is ``anyOf: [..., {"type": "null"}]``.
"""

from __future__ import annotations

from .common import DATE, DATETIME, EMAIL, URI
from .dsl import A, B, Corpus, E, I, N, O, S, maybe

tools = Corpus("tools")


def tool(name: str, description: str, props: dict, examples: int = 2) -> None:
    tools.add(name, description, O(props), examples=examples)


UNIT = E("celsius", "fahrenheit")
LOCATION = S(desc="City and country, e.g. Paris, France")

tool("get_current_weather", "Get the current weather in a location", {"location": LOCATION, "unit": UNIT, "include_air_quality": B()}, 3)
tool(
    "get_weather_forecast",
    "Forecast for the next days",
    {"location": LOCATION, "days": I(lo=1, hi=14), "unit": UNIT, "include_hourly": B()},
    3,
)
tool(
    "search_flights",
    "Search flights between two airports",
    {
        "origin": S(pattern="^[A-Z]{3}$", ex=["LIS", "CDG", "SFO"], desc="IATA code"),
        "destination": S(pattern="^[A-Z]{3}$", ex=["JFK", "NRT", "BER"], desc="IATA code"),
        "date": DATE,
        "return_date": maybe(DATE),
        "adults": I(lo=1, hi=9),
        "cabin": E("economy", "premium_economy", "business", "first"),
        "max_stops": maybe(I(lo=0, hi=3)),
    },
)
tool(
    "book_hotel",
    "Book a hotel room",
    {
        "hotel_id": S(lo=1),
        "check_in": DATE,
        "check_out": DATE,
        "guests": I(lo=1, hi=8),
        "room_type": E("single", "double", "suite"),
        "guest_name": S(lo=1),
        "special_requests": maybe(S(hi=300)),
    },
)
tool("send_email", "Send an email", {"to": A(EMAIL, lo=1, hi=10), "cc": maybe(A(EMAIL, hi=5)), "subject": S(lo=1, hi=200), "body": S(lo=1), "importance": E("low", "normal", "high")})
tool("create_calendar_event", "Create an event", {"title": S(lo=1), "start": DATETIME, "end": DATETIME, "attendees": A(EMAIL, hi=10), "location": maybe(S()), "video_call": B()})
tool("set_reminder", "Set a reminder", {"text": S(lo=1, hi=200), "at": DATETIME, "repeat": E("none", "daily", "weekly", "monthly")}, 3)
tool("set_timer", "Start a countdown timer", {"minutes": I(lo=0, hi=600), "seconds": I(lo=0, hi=59), "label": maybe(S(hi=50))}, 3)
tool("convert_currency", "Convert an amount between currencies", {"amount": N(xlo=0), "from": S(pattern="^[A-Z]{3}$", ex=["EUR", "USD"]), "to": S(pattern="^[A-Z]{3}$", ex=["JPY", "GBP"])}, 3)
tool("convert_units", "Convert a quantity between units", {"value": N(), "from_unit": E("km", "mi", "kg", "lb", "l", "gal", "c", "f"), "to_unit": E("km", "mi", "kg", "lb", "l", "gal", "c", "f")}, 3)
tool("calculate", "Evaluate an arithmetic expression", {"expression": S(lo=1, hi=200), "precision": I(lo=0, hi=15), "angle_unit": E("degrees", "radians")}, 3)
tool("web_search", "Search the web", {"query": S(lo=1, hi=400), "num_results": I(lo=1, hi=20), "recency_days": maybe(I(lo=1, hi=365)), "safe_search": B()}, 3)
tool("fetch_url", "Fetch a web page", {"url": URI, "method": E("GET", "HEAD"), "timeout_s": I(lo=1, hi=60), "follow_redirects": B()}, 3)
tool(
    "query_database",
    "Run a read-only SQL query",
    {"sql": S(lo=1, hi=4000), "database": E("analytics", "billing", "crm"), "limit": I(lo=1, hi=1000), "params": A(maybe(S()), hi=5)},
)
tool(
    "create_github_issue",
    "Open an issue in a repository",
    {
        "repo": S(pattern="^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$", ex=["octo-org/widgets", "acme/api"]),
        "title": S(lo=1, hi=256),
        "body": S(),
        "labels": A(S(lo=1), hi=5),
        "assignee": maybe(S(lo=1)),
    },
)
tool("get_stock_price", "Latest price of a stock", {"ticker": S(pattern="^[A-Z]{1,5}$", ex=["AAPL", "NVDA", "SAP"]), "exchange": maybe(E("NASDAQ", "NYSE", "XETRA")), "include_history_days": maybe(I(lo=1, hi=365))}, 3)
tool("translate_text", "Translate text", {"text": S(lo=1), "source_language": maybe(E("en", "de", "fr", "es", "ja")), "target_language": E("en", "de", "fr", "es", "ja")}, 3)
tool("summarize_document", "Summarize a document", {"document_id": S(lo=1), "max_words": I(lo=10, hi=1000, mult=10), "style": E("bullet_points", "paragraph", "tldr")}, 3)
tool(
    "order_pizza",
    "Order pizzas for delivery",
    {
        "pizzas": A(
            O({"size": E("small", "medium", "large"), "crust": E("thin", "regular", "stuffed"), "toppings": A(E("cheese", "pepperoni", "mushroom", "olive", "onion", "pepper", "ham", "pineapple"), hi=6, unique=True), "quantity": I(lo=1, hi=10)}),
            lo=1,
            hi=5,
        ),
        "address": S(lo=1),
        "phone": S(pattern=r"^\+?[0-9 ]{7,15}$", ex=["+49 30 1234567", "5551234567"]),
        "tip_percent": I(lo=0, hi=30),
    },
)
tool(
    "schedule_meeting",
    "Find a slot and schedule a meeting",
    {"participants": A(EMAIL, lo=2, hi=8), "duration_minutes": E(15, 30, 45, 60, 90), "earliest": DATETIME, "latest": DATETIME, "topic": S(lo=1), "recurring": B()},
)
tool("get_directions", "Route between two places", {"origin": S(lo=1), "destination": S(lo=1), "mode": E("driving", "walking", "bicycling", "transit"), "avoid": A(E("tolls", "highways", "ferries"), unique=True), "depart_at": maybe(DATETIME)})
tool("play_music", "Play music", {"query": S(lo=1), "type": E("track", "album", "artist", "playlist"), "shuffle": B(), "volume": maybe(I(lo=0, hi=100))}, 3)
tool("control_light", "Switch or dim a light", {"room": E("living_room", "kitchen", "bedroom", "office", "bathroom"), "on": B(), "brightness": maybe(I(lo=0, hi=100)), "color": maybe(S(pattern="^#[0-9A-Fa-f]{6}$", ex=["#FFAA00", "#ffffff"]))}, 3)
tool("set_thermostat", "Set the thermostat", {"zone": S(lo=1), "target_celsius": N(lo=5, hi=30), "mode": E("heat", "cool", "auto", "off")}, 3)
tool(
    "create_support_ticket",
    "File a support ticket",
    {"customer_email": EMAIL, "category": E("billing", "technical", "account", "other"), "priority": E("low", "medium", "high"), "summary": S(lo=1, hi=150), "details": S(lo=1), "order_id": maybe(S(pattern="^ORD-[0-9]{8}$", ex=["ORD-20240611"]))},
)
tool("lookup_order", "Look up an order", {"order_id": S(pattern="^ORD-[0-9]{8}$", ex=["ORD-20240611", "ORD-00012345"]), "include_items": B(), "customer_email": maybe(EMAIL)}, 3)
tool("cancel_order", "Cancel an order", {"order_id": S(pattern="^ORD-[0-9]{8}$", ex=["ORD-00012345"]), "reason": E("changed_mind", "found_cheaper", "delivery_too_slow", "other"), "comment": maybe(S(hi=500))}, 3)
tool("issue_refund", "Refund part of an order", {"order_id": S(pattern="^ORD-[0-9]{8}$", ex=["ORD-99887766"]), "amount": N(xlo=0), "currency": E("EUR", "USD", "GBP"), "notify_customer": B()}, 3)
tool(
    "update_crm_contact",
    "Update a CRM contact",
    {
        "contact_id": I(lo=1),
        "fields": O({"email": maybe(EMAIL), "phone": maybe(S(pattern=r"^\+[1-9][0-9]{6,14}$", ex=["+14155550123"])), "company": maybe(S()), "lifecycle_stage": maybe(E("lead", "opportunity", "customer", "churned"))}),
        "note": maybe(S()),
    },
)
tool(
    "extract_invoice_fields",
    "Structured fields read from an invoice image",
    {
        "vendor_name": S(lo=1),
        "invoice_number": S(lo=1),
        "invoice_date": DATE,
        "due_date": maybe(DATE),
        "currency": S(pattern="^[A-Z]{3}$", ex=["EUR", "USD"]),
        "total": N(lo=0),
        "tax": maybe(N(lo=0)),
        "line_items": A(O({"description": S(lo=1), "quantity": N(xlo=0), "amount": N()}), hi=8),
    },
)
tool(
    "extract_person",
    "People mentioned in a text",
    {"people": A(O({"name": S(lo=1), "role": maybe(S()), "age": maybe(I(lo=0, hi=130)), "organization": maybe(S())}), hi=6)},
)
tool(
    "classify_sentiment",
    "Sentiment of a text",
    {"sentiment": E("positive", "neutral", "negative", "mixed"), "confidence": N(lo=0, hi=1), "aspects": A(O({"aspect": S(lo=1), "sentiment": E("positive", "neutral", "negative")}), hi=5)},
    3,
)
tool("classify_intent", "Intent of a user message", {"intent": E("greeting", "order_status", "refund", "complaint", "product_question", "other"), "confidence": N(lo=0, hi=1), "language": E("en", "de", "fr", "es")}, 3)
tool(
    "extract_entities",
    "Named entities in a text",
    {"entities": A(O({"text": S(lo=1), "type": E("PERSON", "ORG", "LOC", "DATE", "MONEY", "PRODUCT"), "start": I(lo=0), "end": I(lo=0)}), hi=8)},
)
tool("generate_image", "Generate an image from a prompt", {"prompt": S(lo=1, hi=1000), "size": E("256x256", "512x512", "1024x1024"), "style": E("photo", "illustration", "3d", "sketch"), "n": I(lo=1, hi=4), "seed": maybe(I(lo=0))}, 3)
tool("run_python", "Execute Python code in a sandbox", {"code": S(lo=1), "timeout_s": I(lo=1, hi=120), "packages": A(S(pattern="^[A-Za-z0-9_.-]+$", ex=["numpy", "pandas", "requests"]), hi=5, unique=True)}, 3)
tool(
    "file_operation",
    "Read, write or delete a file",
    {"operation": E("read", "write", "append", "delete"), "path": S(lo=1, hi=4096), "content": maybe(S()), "encoding": E("utf-8", "latin-1", "base64")},
    3,
)
tool("kubectl_scale", "Scale a deployment", {"namespace": S(pattern="^[a-z0-9-]+$", ex=["default", "payments"]), "deployment": S(pattern="^[a-z0-9-]+$", ex=["api", "worker"]), "replicas": I(lo=0, hi=50)}, 3)
tool(
    "create_jira_ticket",
    "Create a ticket in an issue tracker",
    {
        "project": S(pattern="^[A-Z][A-Z0-9]{1,9}$", ex=["PAY", "WEB", "OPS2"]),
        "type": E("bug", "task", "story", "epic"),
        "summary": S(lo=1, hi=255),
        "description": S(),
        "priority": E("lowest", "low", "medium", "high", "highest"),
        "story_points": maybe(E(1, 2, 3, 5, 8, 13)),
        "components": A(S(lo=1), hi=3, unique=True),
        "due_date": maybe(DATE),
    },
)
tool("post_slack_message", "Post a chat message", {"channel": S(pattern="^#[a-z0-9_-]{1,80}$", ex=["#general", "#deploys", "#team-payments"]), "text": S(lo=1, hi=4000), "thread_ts": maybe(S(pattern="^[0-9]{10}\\.[0-9]{6}$", ex=["1718000000.123456"])), "mention_channel": B()}, 3)
tool("add_to_cart", "Add a product to the cart", {"product_id": S(lo=1), "variant": maybe(O({"size": maybe(E("XS", "S", "M", "L", "XL")), "color": maybe(S())})), "quantity": I(lo=1, hi=99)}, 3)
tool(
    "search_products",
    "Search the product catalog",
    {
        "query": S(lo=1),
        "category": maybe(E("electronics", "books", "clothing", "home", "sports", "toys")),
        "price_range": maybe(O({"min": N(lo=0), "max": N(lo=0)})),
        "in_stock_only": B(),
        "sort_by": E("relevance", "price_asc", "price_desc", "rating", "newest"),
        "page": I(lo=1),
    },
)
tool(
    "book_restaurant",
    "Reserve a table",
    {"restaurant": S(lo=1), "date": DATE, "time": S(pattern="^([01][0-9]|2[0-3]):[0-5][0-9]$", ex=["19:30", "20:00"]), "party_size": I(lo=1, hi=20), "dietary": A(E("vegetarian", "vegan", "gluten_free", "halal", "kosher"), unique=True)},
    3,
)
tool(
    "log_workout",
    "Log a workout session",
    {"activity": E("run", "cycle", "swim", "walk", "strength", "yoga"), "duration_min": I(lo=1, hi=600), "distance_km": maybe(N(lo=0)), "avg_heart_rate": maybe(I(lo=30, hi=220)), "perceived_effort": I(lo=1, hi=10), "notes": maybe(S())},
    3,
)
tool(
    "log_meal",
    "Log a meal",
    {"meal": E("breakfast", "lunch", "dinner", "snack"), "foods": A(O({"name": S(lo=1), "grams": N(xlo=0), "calories": maybe(I(lo=0))}), lo=1, hi=6), "eaten_at": DATETIME},
)
tool(
    "create_playlist",
    "Create a playlist",
    {"name": S(lo=1, hi=100), "description": maybe(S(hi=300)), "public": B(), "tracks": A(O({"title": S(lo=1), "artist": S(lo=1)}), lo=1, hi=10)},
)
tool(
    "file_expense",
    "Submit an expense claim",
    {
        "date": DATE,
        "category": E("travel", "meals", "lodging", "supplies", "software", "other"),
        "amount": N(xlo=0),
        "currency": S(pattern="^[A-Z]{3}$", ex=["EUR", "USD", "CHF"]),
        "merchant": S(lo=1),
        "receipt_url": maybe(URI),
        "billable_to_client": maybe(S()),
    },
)
tool(
    "plan_trip",
    "Draft a multi-city itinerary",
    {
        "travelers": I(lo=1, hi=10),
        "budget": maybe(O({"amount": N(lo=0), "currency": S(pattern="^[A-Z]{3}$", ex=["EUR", "USD"])})),
        "stops": A(O({"city": S(lo=1), "nights": I(lo=1, hi=30), "interests": A(E("food", "museums", "nature", "nightlife", "shopping", "history"), hi=3, unique=True)}), lo=1, hi=5),
        "pace": E("relaxed", "moderate", "packed"),
    },
)
tool(
    "rename_variables",
    "Rename symbols in a code file",
    {"file": S(lo=1), "renames": A(O({"old": S(pattern="^[A-Za-z_][A-Za-z0-9_]*$", ex=["tmp", "data", "x1"]), "new": S(pattern="^[A-Za-z_][A-Za-z0-9_]*$", ex=["buffer", "records", "offset"])}), lo=1, hi=5), "dry_run": B()},
    3,
)
tool(
    "answer_with_citations",
    "An answer with its sources",
    {"answer": S(lo=1), "citations": A(O({"source_id": S(lo=1), "quote": S(lo=1, hi=500), "url": maybe(URI)}), hi=4), "confidence": E("low", "medium", "high")},
)
tool("rate_limit_user", "Temporarily limit a user", {"user_id": I(lo=1), "duration_minutes": I(lo=1, hi=10080), "reason": E("spam", "abuse", "suspicious_activity"), "notify": B()}, 3)
