"""API payloads: users, orders, invoices, payments, issues, travel, health, logistics..."""

from __future__ import annotations

from .common import (
    ADDRESS,
    CONTACT,
    COUNTRY,
    CURRENCY,
    CURRENCY_ENUM,
    DATE,
    DATETIME,
    EMAIL,
    GEO,
    IPV4,
    LANG,
    MONEY,
    MONEY_CENTS,
    PAGINATION,
    PHONE,
    SEMVER,
    SLUG,
    TAGS,
    URI,
    US_ADDRESS,
    USER_REF,
    UUID,
)
from .dsl import A, B, C, Corpus, E, I, N, O, S, null

api = Corpus("api")
add = api.add

add("user_minimal", "A user as returned by a sign-up endpoint", O({"id": I(lo=1), "email": EMAIL, "active": B()}), examples=3)
add(
    "user_profile",
    "Public profile of a user account",
    O(
        {
            "id": UUID,
            "username": S(lo=3, hi=20, pattern="^[a-z0-9_]{3,20}$", ex=["alice_w", "bruno99", "chen_li"]),
            "display_name": S(lo=1, hi=50),
            "email": EMAIL,
            "bio?": null(S(hi=160)),
            "avatar_url?": null(URI),
            "locale": LANG,
            "verified": B(),
            "followers": I(lo=0),
            "following": I(lo=0),
            "created_at": DATETIME,
        }
    ),
)
add(
    "user_create_request",
    "Body of POST /users",
    O(
        {
            "email": EMAIL,
            "password": S(lo=12, hi=128),
            "first_name": S(lo=1, hi=50),
            "last_name": S(lo=1, hi=50),
            "birth_date?": DATE,
            "marketing_opt_in": B(),
            "role": E("viewer", "editor", "admin"),
        }
    ),
)
add(
    "user_list_response",
    "A page of users",
    O(
        {
            "data": A(O({"id": I(lo=1), "name": S(), "email": EMAIL, "role": E("member", "owner", "guest")}), hi=5),
            "pagination": PAGINATION,
        }
    ),
)
add(
    "address_record",
    "A postal address with geocoding",
    O({"id": UUID, "label?": E("home", "work", "other"), "address": ADDRESS, "geo?": GEO, "is_default": B()}),
)
add("us_shipping_address", "US shipping address", O({"recipient": S(lo=1, hi=80), "address": US_ADDRESS, "phone?": PHONE}), examples=3)
add(
    "order",
    "An e-commerce order",
    O(
        {
            "order_id": S(pattern="^ORD-[0-9]{8}$", ex=["ORD-20240611", "ORD-00012345", "ORD-99887766"]),
            "customer_id": I(lo=1),
            "status": E("pending", "paid", "shipped", "delivered", "cancelled", "refunded"),
            "items": A(
                O(
                    {
                        "sku": S(pattern="^[A-Z]{3}-[0-9]{4}$", ex=["MOU-1001", "BTL-0420", "HDP-7781"]),
                        "product_name": S(lo=1, hi=120),
                        "quantity": I(lo=1, hi=99),
                        "unit_price": N(lo=0),
                    }
                ),
                lo=1,
                hi=20,
            ),
            "currency": CURRENCY,
            "subtotal": N(lo=0),
            "tax": N(lo=0),
            "shipping": N(lo=0),
            "total": N(lo=0),
            "shipping_address": ADDRESS,
            "billing_address?": ADDRESS,
            "placed_at": DATETIME,
            "notes?": null(S(hi=500)),
        }
    ),
)
add(
    "order_status_update",
    "Webhook body when an order changes status",
    O(
        {
            "order_id": S(pattern="^ORD-[0-9]{8}$", ex=["ORD-20240611", "ORD-00012345"]),
            "from": E("pending", "paid", "shipped", "delivered"),
            "to": E("paid", "shipped", "delivered", "cancelled"),
            "at": DATETIME,
            "tracking_number?": null(S(lo=8, hi=30)),
        }
    ),
    examples=3,
)
add(
    "cart",
    "Shopping cart contents",
    O(
        {
            "cart_id": UUID,
            "lines": A(O({"product_id": I(lo=1), "quantity": I(lo=1, hi=10), "price_cents": I(lo=0)}), hi=10),
            "coupon?": null(S(pattern="^[A-Z0-9]{6,10}$", ex=["SUMMER24", "WELCOME10", "FREESHIP"])),
            "currency": CURRENCY_ENUM,
        }
    ),
)
add(
    "invoice",
    "An invoice with line items and payment terms",
    O(
        {
            "invoice_number": S(pattern="^INV-[0-9]{4}-[0-9]{5}$", ex=["INV-2024-00042", "INV-2023-10001"]),
            "issue_date": DATE,
            "due_date": DATE,
            "seller": O({"name": S(lo=1), "vat_id": S(pattern="^[A-Z]{2}[0-9A-Z]{8,12}$", ex=["DE123456789", "PT509876543"]), "address": ADDRESS}),
            "buyer": O({"name": S(lo=1), "vat_id?": null(S(pattern="^[A-Z]{2}[0-9A-Z]{8,12}$", ex=["FR40303265045"])), "address": ADDRESS}),
            "lines": A(
                O(
                    {
                        "description": S(lo=1, hi=200),
                        "quantity": N(xlo=0),
                        "unit_price": N(lo=0),
                        "vat_rate": E(0, 7, 19, 23),
                        "line_total": N(lo=0),
                    }
                ),
                lo=1,
            ),
            "currency": CURRENCY,
            "net_total": N(lo=0),
            "vat_total": N(lo=0),
            "gross_total": N(lo=0),
            "payment_terms_days": I(lo=0, hi=120, mult=15),
            "paid": B(),
        }
    ),
)
add(
    "payment_intent",
    "A card payment intent",
    O(
        {
            "id": S(pattern="^pi_[A-Za-z0-9]{14}$", ex=["pi_3MtwBwLkdIwHu7", "pi_1Abc2Def3Ghi4J"]),
            "amount": I(lo=50),
            "currency": E("eur", "usd", "gbp"),
            "status": E("requires_payment_method", "requires_confirmation", "processing", "succeeded", "canceled"),
            "capture_method": E("automatic", "manual"),
            "customer?": null(S(pattern="^cus_[A-Za-z0-9]{10}$", ex=["cus_NffrFeUfNV"])),
            "description?": null(S(hi=200)),
            "metadata?": O({}, extra=S(hi=100)),
            "created": I(lo=1500000000),
            "livemode": B(),
        }
    ),
)
add(
    "refund_request",
    "Refund of a captured payment",
    O({"payment_id": UUID, "amount_cents": I(lo=1), "reason": E("duplicate", "fraudulent", "requested_by_customer"), "note?": S(hi=300)}),
    examples=3,
)
add(
    "bank_transfer",
    "SEPA credit transfer instruction",
    O(
        {
            "debtor_iban": S(pattern="^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", ex=["DE89370400440532013000", "PT50000201231234567890154"]),
            "creditor_iban": S(pattern="^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", ex=["FR1420041010050500013M02606", "NL91ABNA0417164300"]),
            "creditor_name": S(lo=1, hi=70),
            "amount": N(xlo=0, hi=999999999),
            "currency": C("EUR"),
            "remittance_info?": S(hi=140),
            "execution_date": DATE,
        }
    ),
)
add(
    "subscription",
    "A SaaS subscription",
    O(
        {
            "id": UUID,
            "customer_id": UUID,
            "plan": E("free", "starter", "pro", "enterprise"),
            "interval": E("month", "year"),
            "seats": I(lo=1, hi=1000),
            "price": MONEY,
            "trial_ends_at?": null(DATETIME),
            "current_period_start": DATETIME,
            "current_period_end": DATETIME,
            "cancel_at_period_end": B(),
            "addons": A(E("sso", "audit_log", "priority_support", "extra_storage"), unique=True),
        }
    ),
)
add(
    "github_issue",
    "An issue in a code-hosting service",
    O(
        {
            "id": I(lo=1),
            "number": I(lo=1),
            "title": S(lo=1, hi=256),
            "body?": null(S()),
            "state": E("open", "closed"),
            "state_reason?": null(E("completed", "not_planned", "reopened")),
            "user": USER_REF,
            "labels": A(O({"name": S(lo=1, hi=50), "color": S(pattern="^[0-9a-f]{6}$", ex=["d73a4a", "0075ca", "a2eeef"])}), hi=6),
            "assignees": A(USER_REF, hi=3),
            "milestone?": null(O({"title": S(), "due_on": null(DATETIME)})),
            "comments": I(lo=0),
            "locked": B(),
            "created_at": DATETIME,
            "updated_at": DATETIME,
            "closed_at": null(DATETIME),
            "html_url": URI,
        }
    ),
)
add(
    "pull_request_summary",
    "Pull request as listed in a review dashboard",
    O(
        {
            "number": I(lo=1),
            "title": S(lo=1),
            "draft": B(),
            "author": USER_REF,
            "head": S(lo=1, hi=100, pattern="^[A-Za-z0-9._/-]+$", ex=["feature/login", "fix-123", "release/2.4"]),
            "base": S(lo=1, hi=100, pattern="^[A-Za-z0-9._/-]+$", ex=["main", "develop"]),
            "additions": I(lo=0),
            "deletions": I(lo=0),
            "changed_files": I(lo=0),
            "review_decision": null(E("APPROVED", "CHANGES_REQUESTED", "REVIEW_REQUIRED")),
            "checks": E("pending", "success", "failure"),
        }
    ),
)
add(
    "commit",
    "A commit object",
    O(
        {
            "sha": S(pattern="^[0-9a-f]{40}$", ex=["9fceb02d0ae598e95dc970b74767f19372d61af8", "e5bd3914e2e596debea16f433f57875b5b90bcd6"]),
            "message": S(lo=1),
            "author": O({"name": S(), "email": EMAIL, "date": DATETIME}),
            "parents": A(S(pattern="^[0-9a-f]{40}$", ex=["7638417db6d59f3c431d3e1f261cc637155684cd"]), hi=2),
            "verified": B(),
        }
    ),
)
add(
    "release",
    "A software release",
    O(
        {
            "tag_name": S(pattern=r"^v\d+\.\d+\.\d+$", ex=["v1.2.0", "v0.14.3", "v10.0.1"]),
            "name": S(),
            "prerelease": B(),
            "published_at": DATETIME,
            "assets": A(O({"name": S(lo=1), "size": I(lo=0), "download_count": I(lo=0), "browser_download_url": URI}), hi=4),
        }
    ),
)
add(
    "weather_current",
    "Current weather observation",
    O(
        {
            "location": O({"name": S(), "country": COUNTRY, "lat": N(lo=-90, hi=90), "lon": N(lo=-180, hi=180)}),
            "observed_at": DATETIME,
            "temperature_c": N(lo=-90, hi=60),
            "feels_like_c": N(lo=-100, hi=70),
            "humidity": I(lo=0, hi=100),
            "pressure_hpa": N(lo=850, hi=1100),
            "wind": O({"speed_kmh": N(lo=0), "direction_deg": I(lo=0, hi=359), "gust_kmh?": null(N(lo=0))}),
            "conditions": E("clear", "partly_cloudy", "cloudy", "rain", "snow", "thunderstorm", "fog"),
            "uv_index?": I(lo=0, hi=11),
        }
    ),
)
add(
    "weather_forecast",
    "Multi-day forecast",
    O(
        {
            "city": S(),
            "units": E("metric", "imperial"),
            "days": A(
                O(
                    {
                        "date": DATE,
                        "min": N(),
                        "max": N(),
                        "precipitation_mm": N(lo=0),
                        "chance_of_rain": I(lo=0, hi=100),
                        "summary": S(hi=80),
                    }
                ),
                lo=1,
                hi=7,
            ),
        }
    ),
)
add(
    "flight_search_request",
    "Search for flights",
    O(
        {
            "origin": S(pattern="^[A-Z]{3}$", ex=["LIS", "FRA", "JFK", "NRT", "SFO"]),
            "destination": S(pattern="^[A-Z]{3}$", ex=["BER", "LHR", "YYZ", "HND", "MAD"]),
            "departure_date": DATE,
            "return_date?": null(DATE),
            "passengers": O({"adults": I(lo=1, hi=9), "children": I(lo=0, hi=8), "infants": I(lo=0, hi=4)}),
            "cabin": E("economy", "premium_economy", "business", "first"),
            "nonstop_only": B(),
            "max_price?": MONEY,
        }
    ),
)
add(
    "flight_booking",
    "A confirmed flight booking",
    O(
        {
            "pnr": S(pattern="^[A-Z0-9]{6}$", ex=["X7K2QP", "ABC123", "9ZZ4LM"]),
            "status": E("confirmed", "ticketed", "cancelled"),
            "segments": A(
                O(
                    {
                        "flight_number": S(pattern="^[A-Z0-9]{2}[0-9]{1,4}$", ex=["LH1234", "TP571", "BA9", "U28421"]),
                        "from": S(pattern="^[A-Z]{3}$", ex=["LIS", "FRA"]),
                        "to": S(pattern="^[A-Z]{3}$", ex=["BER", "MUC"]),
                        "departure": DATETIME,
                        "arrival": DATETIME,
                        "seat?": null(S(pattern="^[0-9]{1,2}[A-K]$", ex=["12A", "3F", "27C"])),
                    }
                ),
                lo=1,
                hi=4,
            ),
            "passengers": A(
                O({"first_name": S(lo=1), "last_name": S(lo=1), "type": E("adult", "child", "infant"), "frequent_flyer?": null(S(hi=20))}),
                lo=1,
                hi=9,
            ),
            "total": MONEY,
            "booked_at": DATETIME,
        }
    ),
)
add(
    "flight_status",
    "Live status of one flight",
    O(
        {
            "flight": S(pattern="^[A-Z0-9]{2}[0-9]{1,4}$", ex=["LH400", "AA100"]),
            "status": E("scheduled", "boarding", "departed", "in_air", "landed", "delayed", "cancelled"),
            "gate?": null(S(hi=5)),
            "delay_minutes": I(lo=0),
            "estimated_arrival": DATETIME,
        }
    ),
    examples=3,
)
add(
    "hotel_booking",
    "A hotel reservation",
    O(
        {
            "reservation_id": UUID,
            "hotel": O({"id": I(lo=1), "name": S(), "stars": I(lo=1, hi=5), "address": ADDRESS}),
            "check_in": DATE,
            "check_out": DATE,
            "rooms": A(
                O(
                    {
                        "type": E("single", "double", "twin", "suite", "family"),
                        "guests": I(lo=1, hi=6),
                        "rate_per_night": N(lo=0),
                        "breakfast": B(),
                    }
                ),
                lo=1,
                hi=5,
            ),
            "guest": CONTACT,
            "special_requests?": null(S(hi=500)),
            "currency": CURRENCY,
            "total": N(lo=0),
            "cancellable_until?": null(DATETIME),
        }
    ),
)
add(
    "hotel_search_result",
    "One hotel in a search result page",
    O(
        {
            "id": I(lo=1),
            "name": S(),
            "rating": N(lo=0, hi=10),
            "reviews": I(lo=0),
            "price_per_night": MONEY,
            "distance_km": N(lo=0),
            "amenities": A(E("wifi", "pool", "parking", "gym", "spa", "restaurant", "pets"), unique=True),
            "free_cancellation": B(),
        }
    ),
)
add(
    "medical_appointment",
    "Appointment at a clinic",
    O(
        {
            "appointment_id": UUID,
            "patient": O({"id": S(pattern="^P[0-9]{7}$", ex=["P0012345", "P9876543"]), "name": S(lo=1), "birth_date": DATE, "phone?": PHONE}),
            "practitioner": O({"id": I(lo=1), "name": S(lo=1), "specialty": E("general", "cardiology", "dermatology", "pediatrics", "orthopedics")}),
            "start": DATETIME,
            "duration_minutes": I(lo=5, hi=240, mult=5),
            "type": E("in_person", "video", "phone"),
            "reason": S(lo=1, hi=300),
            "status": E("booked", "arrived", "fulfilled", "cancelled", "noshow"),
            "insurance?": null(O({"provider": S(), "member_id": S(lo=4, hi=20)})),
        }
    ),
)
add(
    "lab_result",
    "A laboratory observation",
    O(
        {
            "code": S(pattern="^[0-9]{1,5}-[0-9]$", ex=["2345-7", "718-7", "4548-4"]),
            "display": S(),
            "value": N(),
            "unit": E("mg/dL", "g/dL", "%", "mmol/L", "10*3/uL"),
            "reference_range": O({"low": N(), "high": N()}),
            "flag": null(E("L", "H", "N")),
            "collected_at": DATETIME,
        }
    ),
    examples=3,
)
add(
    "prescription",
    "An e-prescription",
    O(
        {
            "id": UUID,
            "patient_id": S(pattern="^P[0-9]{7}$", ex=["P0012345"]),
            "medication": O({"name": S(lo=1), "strength": S(pattern="^[0-9]+(\\.[0-9]+)? ?(mg|mcg|g|ml)$", ex=["500 mg", "10mg", "2.5 ml"]), "form": E("tablet", "capsule", "syrup", "injection")}),
            "dosage": O({"amount": N(xlo=0), "frequency_per_day": I(lo=1, hi=6), "days": I(lo=1, hi=365)}),
            "refills": I(lo=0, hi=5),
            "substitution_allowed": B(),
            "prescribed_at": DATETIME,
        }
    ),
)
add(
    "shipment_tracking",
    "Parcel tracking history",
    O(
        {
            "tracking_number": S(pattern="^[A-Z]{2}[0-9]{9}[A-Z]{2}$", ex=["RR123456785DE", "LZ987654321CN"]),
            "carrier": E("dhl", "ups", "fedex", "usps", "postnl"),
            "status": E("label_created", "in_transit", "out_for_delivery", "delivered", "exception"),
            "events": A(O({"at": DATETIME, "location": S(), "description": S(lo=1)}), lo=1, hi=6),
            "estimated_delivery?": null(DATE),
            "weight_kg": N(xlo=0, hi=70),
        }
    ),
)
add(
    "delivery_quote",
    "Rate quote from a courier",
    O({"service": E("standard", "express", "overnight"), "price": MONEY, "eta_days": I(lo=0, hi=30), "carbon_neutral": B()}),
    examples=3,
)
add(
    "bank_account",
    "Bank account summary",
    O(
        {
            "account_id": UUID,
            "iban": S(pattern="^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$", ex=["DE89370400440532013000"]),
            "holder": S(lo=1),
            "type": E("checking", "savings", "credit"),
            "balance": MONEY,
            "available": MONEY,
            "overdraft_limit?": null(N(lo=0)),
            "opened_on": DATE,
        }
    ),
)
add(
    "transaction_list",
    "Account transactions",
    O(
        {
            "account_id": UUID,
            "transactions": A(
                O(
                    {
                        "id": UUID,
                        "booked_at": DATETIME,
                        "amount": N(),
                        "currency": CURRENCY,
                        "counterparty": S(),
                        "category": null(E("groceries", "rent", "salary", "travel", "utilities", "entertainment")),
                        "pending": B(),
                    }
                ),
                hi=6,
            ),
            "next_cursor": null(S(lo=1)),
        }
    ),
)
add(
    "exchange_rates",
    "Currency exchange rates",
    O({"base": CURRENCY, "date": DATE, "rates": O({}, extra=N(xlo=0), min_props=1)}),
)
add(
    "stock_quote",
    "Stock quote",
    O(
        {
            "symbol": S(pattern="^[A-Z]{1,5}$", ex=["AAPL", "MSFT", "SAP", "V"]),
            "exchange": E("NASDAQ", "NYSE", "XETRA", "LSE"),
            "price": N(xlo=0),
            "change": N(),
            "change_percent": N(),
            "volume": I(lo=0),
            "market_open": B(),
            "as_of": DATETIME,
        }
    ),
    examples=3,
)
add(
    "product_review",
    "Customer review of a product",
    O(
        {
            "review_id": UUID,
            "product_id": I(lo=1),
            "rating": I(lo=1, hi=5),
            "title": S(lo=1, hi=100),
            "body": S(lo=1, hi=5000),
            "verified_purchase": B(),
            "helpful_votes": I(lo=0),
            "author": O({"display_name": S(lo=1), "country?": COUNTRY}),
            "created_at": DATETIME,
            "images?": A(URI, hi=5),
        }
    ),
)
add(
    "restaurant_reservation",
    "Table reservation",
    O(
        {
            "restaurant_id": I(lo=1),
            "name": S(lo=1),
            "party_size": I(lo=1, hi=20),
            "date": DATE,
            "time": S(pattern="^([01][0-9]|2[0-3]):[0-5][0-9]$", ex=["19:30", "12:00", "20:45"]),
            "seating?": E("indoor", "outdoor", "bar"),
            "phone": PHONE,
            "occasion?": null(E("birthday", "anniversary", "business")),
        }
    ),
    examples=3,
)
add(
    "food_delivery_order",
    "Order to a food delivery service",
    O(
        {
            "restaurant_id": I(lo=1),
            "items": A(
                O(
                    {
                        "menu_item_id": I(lo=1),
                        "quantity": I(lo=1, hi=20),
                        "options": A(O({"group": S(), "choice": S()}), hi=4),
                        "special_instructions?": null(S(hi=200)),
                    }
                ),
                lo=1,
            ),
            "delivery": O({"address": ADDRESS, "geo": GEO, "instructions?": S(hi=300)}),
            "tip_cents": I(lo=0),
            "payment_method": E("card", "cash", "wallet"),
            "scheduled_for?": null(DATETIME),
        }
    ),
)
add(
    "ride_request",
    "Ride-hailing request",
    O({"rider_id": UUID, "pickup": GEO, "dropoff": GEO, "vehicle": E("standard", "xl", "comfort", "green"), "passengers": I(lo=1, hi=6)}),
    examples=3,
)
add(
    "vehicle_telemetry",
    "Telemetry sample from a vehicle",
    O(
        {
            "vin": S(pattern="^[A-HJ-NPR-Z0-9]{17}$", ex=["1HGCM82633A004352", "WVWZZZ1JZXW000001"]),
            "ts": DATETIME,
            "position": GEO,
            "speed_kmh": N(lo=0, hi=400),
            "fuel_level": N(lo=0, hi=1),
            "odometer_km": I(lo=0),
            "engine_on": B(),
            "dtc_codes": A(S(pattern="^[PCBU][0-9]{4}$", ex=["P0300", "P0420", "C1234"]), hi=5),
        }
    ),
)
add(
    "real_estate_listing",
    "Property listing",
    O(
        {
            "listing_id": I(lo=1),
            "type": E("apartment", "house", "townhouse", "land"),
            "operation": E("sale", "rent"),
            "price": MONEY,
            "area_m2": N(xlo=0),
            "bedrooms": I(lo=0, hi=20),
            "bathrooms": I(lo=0, hi=10),
            "floor?": null(I(lo=-2, hi=100)),
            "address": ADDRESS,
            "geo": GEO,
            "features": A(E("balcony", "elevator", "garage", "garden", "pool", "air_conditioning"), unique=True),
            "energy_rating": E("A", "B", "C", "D", "E", "F", "G"),
            "available_from?": DATE,
            "agent": CONTACT,
        }
    ),
)
add(
    "job_posting",
    "A job advertisement",
    O(
        {
            "id": I(lo=1),
            "title": S(lo=1, hi=120),
            "company": S(lo=1),
            "location": O({"city": S(), "country": COUNTRY, "remote": E("no", "hybrid", "full")}),
            "employment_type": E("full_time", "part_time", "contract", "internship"),
            "salary?": null(O({"min": I(lo=0), "max": I(lo=0), "currency": CURRENCY, "period": E("year", "month", "hour")})),
            "skills": A(S(lo=1, hi=40), lo=1, hi=10, unique=True),
            "posted_on": DATE,
            "apply_url": URI,
        }
    ),
)
add(
    "job_application",
    "Application to a job posting",
    O(
        {
            "job_id": I(lo=1),
            "applicant": O({"name": S(lo=1), "email": EMAIL, "phone?": PHONE, "linkedin?": null(URI)}),
            "resume_url": URI,
            "cover_letter?": S(hi=4000),
            "years_experience": I(lo=0, hi=60),
            "work_authorization": B(),
            "start_date?": DATE,
        }
    ),
)
add(
    "blog_post",
    "A blog post",
    O(
        {
            "id": I(lo=1),
            "slug": SLUG,
            "title": S(lo=1, hi=200),
            "excerpt?": S(hi=300),
            "content": S(lo=1),
            "author": O({"id": I(lo=1), "name": S()}),
            "tags": A(S(lo=1, hi=30), hi=8, unique=True),
            "status": E("draft", "scheduled", "published"),
            "published_at": null(DATETIME),
            "reading_time_min": I(lo=1),
        }
    ),
)
add(
    "support_ticket",
    "Customer support ticket",
    O(
        {
            "ticket_id": S(pattern="^TCK-[0-9]{6}$", ex=["TCK-004211", "TCK-120045"]),
            "subject": S(lo=1, hi=150),
            "description": S(lo=1),
            "priority": E("low", "normal", "high", "urgent"),
            "channel": E("email", "chat", "phone", "web"),
            "requester": CONTACT,
            "assignee_id": null(I(lo=1)),
            "tags": TAGS,
            "sla_due_at?": DATETIME,
        }
    ),
)
add(
    "calendar_event",
    "Calendar event",
    O(
        {
            "id": UUID,
            "summary": S(lo=1, hi=200),
            "location?": null(S()),
            "start": DATETIME,
            "end": DATETIME,
            "all_day": B(),
            "attendees": A(O({"email": EMAIL, "response": E("needsAction", "accepted", "declined", "tentative"), "optional": B()}), hi=8),
            "recurrence?": null(S(pattern="^RRULE:FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)(;COUNT=[0-9]+)?$", ex=["RRULE:FREQ=WEEKLY", "RRULE:FREQ=DAILY;COUNT=5"])),
            "reminders": A(O({"method": E("email", "popup"), "minutes": I(lo=0, hi=40320)}), hi=3),
        }
    ),
)
add(
    "contact_card",
    "Address book entry",
    O(
        {
            "id": UUID,
            "name": O({"given": S(lo=1), "family": S(lo=1), "middle?": S()}),
            "emails": A(O({"type": E("home", "work"), "address": EMAIL}), hi=3),
            "phones": A(O({"type": E("mobile", "home", "work"), "number": PHONE}), hi=3),
            "company?": null(S()),
            "birthday?": null(DATE),
            "favorite": B(),
        }
    ),
)
add(
    "geocode_result",
    "Reverse geocoding result",
    O(
        {
            "formatted_address": S(lo=1),
            "components": O({"street?": S(), "city": S(), "postal_code?": S(), "country_code": COUNTRY}),
            "location": GEO,
            "accuracy": E("rooftop", "street", "city", "region"),
            "confidence": N(lo=0, hi=1),
        }
    ),
    examples=3,
)
add(
    "ip_lookup",
    "IP address lookup",
    O({"ip": IPV4, "country": COUNTRY, "city?": null(S()), "asn": I(lo=1), "is_proxy": B()}),
    examples=3,
)
add(
    "auth_token_response",
    "OAuth token endpoint response",
    O(
        {
            "access_token": S(lo=20),
            "token_type": C("Bearer"),
            "expires_in": I(lo=1),
            "refresh_token?": S(lo=20),
            "scope": S(pattern="^[a-z:_]+( [a-z:_]+)*$", ex=["read write", "repo user:email", "openid profile email"]),
        }
    ),
    examples=3,
)
add(
    "api_error",
    "Error body of a REST API",
    O(
        {
            "error": O(
                {
                    "code": E("invalid_request", "unauthorized", "forbidden", "not_found", "rate_limited", "internal"),
                    "message": S(lo=1),
                    "status": I(lo=400, hi=599),
                    "details?": A(O({"field": S(), "issue": S()}), hi=5),
                    "request_id": UUID,
                }
            )
        }
    ),
    examples=3,
)
add(
    "rate_limit_status",
    "Rate-limit headers as JSON",
    O({"limit": I(lo=1), "remaining": I(lo=0), "reset_at": DATETIME, "window_seconds": E(60, 3600, 86400)}),
    examples=3,
)
add(
    "file_upload_response",
    "Result of a file upload",
    O(
        {
            "file_id": UUID,
            "filename": S(lo=1, hi=255),
            "mime_type": E("image/png", "image/jpeg", "application/pdf", "text/csv", "application/zip"),
            "size_bytes": I(lo=0, hi=5368709120),
            "sha256": S(pattern="^[0-9a-f]{64}$", ex=["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"]),
            "url": URI,
            "expires_at?": null(DATETIME),
        }
    ),
)
add(
    "search_response",
    "Full-text search results",
    O(
        {
            "query": S(lo=1),
            "took_ms": I(lo=0),
            "total": I(lo=0),
            "hits": A(O({"id": S(), "score": N(lo=0), "title": S(), "snippet": S(), "url": URI}), hi=5),
            "facets?": O({"category": A(O({"value": S(), "count": I(lo=0)}), hi=5)}),
            "next_page?": null(I(lo=2)),
        }
    ),
)
add(
    "iot_sensor_reading",
    "Batch of sensor readings",
    O(
        {
            "device_id": S(pattern="^dev-[0-9a-f]{8}$", ex=["dev-0a1b2c3d", "dev-deadbeef"]),
            "firmware": SEMVER,
            "readings": A(
                O({"ts": DATETIME, "sensor": E("temperature", "humidity", "co2", "pm25"), "value": N(), "unit": E("C", "%", "ppm", "ug/m3")}),
                lo=1,
                hi=8,
            ),
            "battery": I(lo=0, hi=100),
            "rssi": I(lo=-120, hi=0),
        }
    ),
)
add(
    "smart_home_device",
    "Smart home device state",
    O(
        {
            "id": S(lo=1),
            "type": E("light", "thermostat", "lock", "plug", "camera"),
            "room": S(),
            "online": B(),
            "state": O({"on?": B(), "brightness?": I(lo=0, hi=100), "target_temp_c?": N(lo=5, hi=30), "locked?": B()}),
        }
    ),
    examples=3,
)
add(
    "library_loan",
    "Book loan at a library",
    O(
        {
            "loan_id": I(lo=1),
            "isbn": S(pattern="^97[89][0-9]{10}$", ex=["9780262033848", "9781492052203"]),
            "title": S(lo=1),
            "member_id": I(lo=1),
            "borrowed_on": DATE,
            "due_on": DATE,
            "renewals": I(lo=0, hi=3),
            "returned_on?": null(DATE),
        }
    ),
    examples=3,
)
add(
    "student_record",
    "Student enrolment record",
    O(
        {
            "student_id": S(pattern="^S[0-9]{6}$", ex=["S202401", "S118977"]),
            "name": O({"first_name": S(lo=1), "last_name": S(lo=1)}),
            "email": EMAIL,
            "program": S(lo=1),
            "year": I(lo=1, hi=7),
            "courses": A(O({"code": S(pattern="^[A-Z]{2,4}[0-9]{3}$", ex=["CS101", "MATH241", "BIO310"]), "credits": I(lo=1, hi=10), "grade": null(E("A", "B", "C", "D", "F"))}), hi=6),
            "gpa?": null(N(lo=0, hi=4)),
            "scholarship": B(),
        }
    ),
)
add(
    "course_catalog_entry",
    "Course catalog entry",
    O(
        {
            "code": S(pattern="^[A-Z]{2,4}[0-9]{3}$", ex=["CS101", "HIST220"]),
            "title": S(lo=1),
            "credits": I(lo=1, hi=10),
            "prerequisites": A(S(pattern="^[A-Z]{2,4}[0-9]{3}$", ex=["CS100", "MATH101"]), hi=3, unique=True),
            "schedule": A(O({"day": E("mon", "tue", "wed", "thu", "fri"), "start": S(pattern="^[0-2][0-9]:[0-5][0-9]$", ex=["09:00", "14:30"]), "room": S()}), lo=1, hi=3),
            "capacity": I(lo=1),
        }
    ),
)
add(
    "event_ticket",
    "Concert ticket",
    O(
        {
            "ticket_id": UUID,
            "event": O({"name": S(lo=1), "venue": S(), "starts_at": DATETIME}),
            "section": S(pattern="^[A-Z]$", ex=["A", "C", "F"]),
            "row": I(lo=1, hi=60),
            "seat": I(lo=1, hi=120),
            "price": MONEY,
            "holder_name": S(lo=1),
            "barcode": S(pattern="^[0-9]{12}$", ex=["012345678905", "400638133393"]),
        }
    ),
    examples=3,
)
add(
    "donation",
    "Donation to a charity",
    O({"donor_email": EMAIL, "amount": MONEY_CENTS, "recurring": B(), "dedication?": null(S(hi=200)), "anonymous": B()}),
    examples=3,
)
add(
    "translation_request",
    "Machine translation request",
    O({"source_lang": LANG, "target_lang": LANG, "texts": A(S(lo=1, hi=5000), lo=1, hi=10), "formality?": E("default", "more", "less")}),
    examples=3,
)
add(
    "url_shortener",
    "Short link",
    O({"code": S(pattern="^[A-Za-z0-9]{6,8}$", ex=["aZ3k9Q", "Xy12Ab7C"]), "target": URI, "clicks": I(lo=0), "expires?": null(DATE)}),
    examples=3,
)
add(
    "package_metadata",
    "Package registry metadata",
    O(
        {
            "name": S(pattern="^[a-z0-9][a-z0-9._-]*$", ex=["requests", "left-pad", "numpy"]),
            "version": SEMVER,
            "description?": S(),
            "license": E("MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-only", "MPL-2.0"),
            "homepage?": URI,
            "dependencies": O({}, extra=S(pattern="^[~^>=<]*[0-9.]+$", ex=["^1.2.0", ">=2.0", "3.1.4"])),
            "keywords": A(S(lo=1), hi=8),
            "deprecated": B(),
        }
    ),
)
add(
    "poll",
    "A poll with options",
    O(
        {
            "id": I(lo=1),
            "question": S(lo=1, hi=300),
            "options": A(O({"id": I(lo=1), "text": S(lo=1, hi=100), "votes": I(lo=0)}), lo=2, hi=6),
            "multiple_choice": B(),
            "closes_at?": null(DATETIME),
        }
    ),
)
add(
    "insurance_claim",
    "Car insurance claim",
    O(
        {
            "claim_id": UUID,
            "policy_number": S(pattern="^POL-[0-9]{8}$", ex=["POL-00112233", "POL-55667788"]),
            "incident": O(
                {
                    "date": DATE,
                    "location": S(),
                    "type": E("collision", "theft", "vandalism", "weather", "glass"),
                    "description": S(lo=1),
                    "police_report?": null(S()),
                }
            ),
            "vehicles": A(O({"plate": S(lo=2, hi=12), "make": S(), "model": S(), "year": I(lo=1950, hi=2030)}), lo=1, hi=3),
            "injuries": B(),
            "estimated_damage": MONEY,
            "photos": A(URI, hi=4),
        }
    ),
)
add(
    "tax_form_summary",
    "Annual tax return summary",
    O(
        {
            "tax_year": I(lo=2000, hi=2030),
            "filing_status": E("single", "married_joint", "married_separate", "head_of_household"),
            "income": O({"wages": N(lo=0), "interest": N(lo=0), "dividends": N(lo=0), "capital_gains": N()}),
            "deductions": O({"standard": B(), "itemized_total?": N(lo=0)}),
            "dependents": I(lo=0, hi=20),
            "refund_or_owed": N(),
        }
    ),
)
add(
    "paginated_comments",
    "Cursor-paginated comments",
    O(
        {
            "items": A(O({"id": I(lo=1), "author": S(), "text": S(lo=1), "likes": I(lo=0), "created_at": DATETIME}), hi=5),
            "cursor": O({"next": null(S()), "prev": null(S())}),
        }
    ),
)
add(
    "warehouse_stock",
    "Stock levels per warehouse",
    O(
        {
            "sku": S(pattern="^[A-Z]{3}-[0-9]{4}$", ex=["MOU-1001", "BTL-0420"]),
            "locations": A(
                O({"warehouse": S(pattern="^WH-[A-Z]{3}$", ex=["WH-LIS", "WH-BER", "WH-NYC"]), "on_hand": I(lo=0), "reserved": I(lo=0), "bin?": S(hi=12)}),
                lo=1,
                hi=5,
            ),
            "reorder_point": I(lo=0),
            "discontinued": B(),
        }
    ),
)
add(
    "purchase_order",
    "Purchase order sent to a supplier",
    O(
        {
            "po_number": S(pattern="^PO-[0-9]{6}$", ex=["PO-100200", "PO-004512"]),
            "supplier": O({"id": I(lo=1), "name": S(lo=1), "contact": CONTACT}),
            "ship_to": ADDRESS,
            "lines": A(O({"sku": S(lo=1), "description": S(), "quantity": I(lo=1), "unit_cost": N(lo=0), "uom": E("each", "box", "kg", "m")}), lo=1, hi=8),
            "incoterm": E("EXW", "FOB", "CIF", "DAP", "DDP"),
            "currency": CURRENCY,
            "requested_delivery": DATE,
            "approved_by?": null(S()),
        }
    ),
)
add(
    "employee",
    "HR employee record",
    O(
        {
            "employee_id": I(lo=1),
            "name": S(lo=1),
            "work_email": EMAIL,
            "department": E("engineering", "sales", "marketing", "finance", "hr", "operations"),
            "title": S(),
            "manager_id": null(I(lo=1)),
            "hire_date": DATE,
            "salary": O({"amount": I(lo=0), "currency": CURRENCY, "period": E("year", "month")}),
            "location": O({"city": S(), "country": COUNTRY}),
            "skills": A(S(lo=1), hi=6, unique=True),
            "active": B(),
        }
    ),
)
add(
    "timesheet",
    "Weekly timesheet",
    O(
        {
            "employee_id": I(lo=1),
            "week_start": DATE,
            "entries": A(O({"date": DATE, "project": S(lo=1), "hours": N(lo=0, hi=24), "billable": B()}), lo=1, hi=7),
            "submitted": B(),
        }
    ),
)
add(
    "maps_directions",
    "Directions between two points",
    O(
        {
            "mode": E("driving", "walking", "bicycling", "transit"),
            "distance_m": I(lo=0),
            "duration_s": I(lo=0),
            "steps": A(O({"instruction": S(lo=1), "distance_m": I(lo=0), "maneuver": null(E("turn-left", "turn-right", "straight", "merge", "roundabout"))}), lo=1, hi=6),
            "warnings": A(S(), hi=2),
        }
    ),
)
add(
    "nutrition_facts",
    "Nutrition facts of a food",
    O(
        {
            "food": S(lo=1),
            "serving_size_g": N(xlo=0),
            "calories": I(lo=0, hi=2000),
            "macros": O({"protein_g": N(lo=0), "fat_g": N(lo=0), "carbs_g": N(lo=0), "fiber_g?": N(lo=0), "sugar_g?": N(lo=0)}),
            "allergens": A(E("gluten", "milk", "eggs", "nuts", "soy", "fish", "shellfish"), unique=True),
            "vegan": B(),
        }
    ),
)
add(
    "versioned_document",
    "Document with revision metadata",
    O(
        {
            "id": UUID,
            "revision": I(lo=1),
            "etag": S(pattern='^W/"[0-9a-f]{8}"$', ex=['W/"a1b2c3d4"', 'W/"00ff00ff"']),
            "content_type": E("text/markdown", "text/plain", "text/html"),
            "body": S(),
            "editors": A(EMAIL, lo=1, hi=4, unique=True),
            **{"locked_by?": null(EMAIL)},
        }
    ),
)
add(
    "login_audit",
    "Login attempt audit record",
    O({"user_id": I(lo=1), "ip": IPV4, "at": DATETIME, "success": B(), "method": E("password", "sso", "passkey", "otp"), "user_agent?": S(hi=300)}),
    examples=3,
)
add(
    "crm_account_export",
    "Wide CRM account record as exported to a data warehouse",
    O(
        {
            "account_id": UUID,
            "external_id": null(S(hi=64)),
            "name": S(lo=1, hi=255),
            "legal_name": null(S()),
            "domain": null(S(pattern="^([a-z0-9-]+\\.)+[a-z]{2,}$", ex=["example.com", "acme.io"])),
            "industry": E("software", "retail", "manufacturing", "finance", "healthcare", "education", "other"),
            "employees": null(I(lo=1)),
            "annual_revenue": null(N(lo=0)),
            "revenue_currency": CURRENCY,
            "tier": E("smb", "mid_market", "enterprise", "strategic"),
            "status": E("prospect", "active", "churned", "paused"),
            "owner_email": EMAIL,
            "created_at": DATETIME,
            "updated_at": DATETIME,
            "last_activity_at": null(DATETIME),
            "billing_address": ADDRESS,
            "shipping_address": null(ADDRESS),
            "phone": null(PHONE),
            "website": null(URI),
            "linkedin_url": null(URI),
            "twitter_handle": null(S(pattern="^@?[A-Za-z0-9_]{1,15}$", ex=["@acme", "northwind"])),
            "description": null(S(hi=2000)),
            "parent_account_id": null(UUID),
            "is_partner": B(),
            "is_reseller": B(),
            "nps": null(I(lo=-100, hi=100)),
            "health_score": I(lo=0, hi=100),
            "open_opportunities": I(lo=0),
            "pipeline_value": N(lo=0),
            "won_deals": I(lo=0),
            "lost_deals": I(lo=0),
            "arr": N(lo=0),
            "mrr": N(lo=0),
            "contract_start": null(DATE),
            "contract_end": null(DATE),
            "renewal_date": null(DATE),
            "payment_terms": E("net15", "net30", "net45", "net60", "prepaid"),
            "tax_exempt": B(),
            "vat_id": null(S(pattern="^[A-Z]{2}[0-9A-Z]{8,12}$", ex=["DE123456789"])),
            "preferred_language": LANG,
            "timezone": E("UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo"),
            "support_plan": E("none", "standard", "premium"),
            "csm_email": null(EMAIL),
            "sdr_email": null(EMAIL),
            "source": E("inbound", "outbound", "referral", "event", "partner"),
            "campaign": null(S()),
            "tags": TAGS,
            "products": A(E("core", "analytics", "api", "mobile", "sso"), unique=True),
            "seats_purchased": I(lo=0),
            "seats_active": I(lo=0),
            "trial": B(),
            "trial_ends": null(DATE),
            "do_not_contact": B(),
            "gdpr_consent": B(),
            "data_region": E("eu", "us", "apac"),
            "risk_flags": A(E("late_payment", "low_usage", "champion_left", "competitor_eval"), unique=True),
            "notes_count": I(lo=0),
            "custom_fields": O({}, extra={"type": ["string", "number", "boolean", "null"]}),
        }
    ),
)
add(
    "vehicle_inspection_report",
    "Periodic vehicle inspection report",
    O(
        {
            "report_id": UUID,
            "station": O({"id": S(pattern="^ST-[0-9]{4}$", ex=["ST-0042", "ST-1187"]), "name": S(lo=1), "address": ADDRESS}),
            "inspector": O({"name": S(lo=1), "license_number": S(lo=4, hi=20)}),
            "vehicle": O(
                {
                    "vin": S(pattern="^[A-HJ-NPR-Z0-9]{17}$", ex=["WVWZZZ1JZXW000001"]),
                    "plate": S(lo=2, hi=12),
                    "make": S(lo=1),
                    "model": S(lo=1),
                    "year": I(lo=1950, hi=2030),
                    "odometer_km": I(lo=0),
                    "fuel": E("petrol", "diesel", "electric", "hybrid"),
                }
            ),
            "date": DATE,
            "checks": O(
                {
                    name: E("pass", "minor", "major", "dangerous", "not_checked")
                    for name in (
                        "brakes_front",
                        "brakes_rear",
                        "parking_brake",
                        "steering",
                        "suspension",
                        "tyres",
                        "lights_front",
                        "lights_rear",
                        "indicators",
                        "wipers",
                        "windscreen",
                        "mirrors",
                        "seatbelts",
                        "horn",
                        "exhaust",
                        "emissions",
                        "body_corrosion",
                        "fuel_system",
                    )
                }
            ),
            "brake_efficiency_percent": O({"service": N(lo=0, hi=100), "parking": N(lo=0, hi=100)}),
            "emissions": null(O({"co_percent": N(lo=0), "hc_ppm": I(lo=0), "lambda": N(lo=0, hi=2)})),
            "defects": A(O({"code": S(pattern="^[0-9]\\.[0-9]\\.[0-9]$", ex=["1.1.4", "5.3.2"]), "severity": E("minor", "major", "dangerous"), "description": S(lo=1)}), hi=5),
            "result": E("pass", "pass_with_advisories", "fail"),
            "next_due": DATE,
            "fee": MONEY,
        }
    ),
)
