"""Forms (sign-up, surveys, applications) and product catalog entries."""

from __future__ import annotations

from .common import (
    ADDRESS,
    COUNTRY,
    CURRENCY,
    DATE,
    DATETIME,
    EMAIL,
    HEX_COLOR,
    MONEY,
    PHONE,
    SLUG,
    URI,
    UUID,
    ZIP,
)
from .dsl import A, B, C, Corpus, E, I, N, O, S, maybe, null

forms = Corpus("forms")
catalog = Corpus("catalog")

forms.add(
    "signup_form",
    "Account sign-up form",
    O(
        {
            "email": EMAIL,
            "password": S(lo=8, hi=64),
            "name": S(lo=1, hi=80),
            "country": COUNTRY,
            "accept_terms": C(True),
            "newsletter": B(),
        }
    ),
    examples=3,
)
forms.add("contact_form", "Contact-us form", O({"name": S(lo=1, hi=80), "email": EMAIL, "topic": E("sales", "support", "press", "other"), "message": S(lo=10, hi=2000)}), examples=3)
forms.add(
    "customer_survey",
    "Customer satisfaction survey",
    O(
        {
            "respondent_id": UUID,
            "nps": I(lo=0, hi=10),
            "satisfaction": E("very_dissatisfied", "dissatisfied", "neutral", "satisfied", "very_satisfied"),
            "features_used": A(E("search", "reports", "api", "mobile_app", "integrations"), unique=True),
            "would_recommend": B(),
            "comments?": null(S(hi=2000)),
            "contact_ok": B(),
        }
    ),
    examples=3,
)
forms.add(
    "loan_application",
    "Personal loan application",
    O(
        {
            "applicant": O(
                {
                    "first_name": S(lo=1),
                    "last_name": S(lo=1),
                    "date_of_birth": DATE,
                    "email": EMAIL,
                    "phone": PHONE,
                    "address": ADDRESS,
                    "years_at_address": I(lo=0, hi=99),
                }
            ),
            "employment": O(
                {
                    "status": E("employed", "self_employed", "unemployed", "retired", "student"),
                    "employer?": S(),
                    "annual_income": N(lo=0),
                    "months_in_job?": I(lo=0),
                }
            ),
            "loan": O({"amount": N(lo=1000, hi=100000), "term_months": E(12, 24, 36, 48, 60), "purpose": E("car", "home_improvement", "debt_consolidation", "education", "other")}),
            "co_applicant?": null(O({"name": S(lo=1), "annual_income": N(lo=0)})),
            "consent_credit_check": C(True),
        }
    ),
)
forms.add(
    "patient_intake",
    "Clinic intake form",
    O(
        {
            "full_name": S(lo=1),
            "date_of_birth": DATE,
            "sex": E("female", "male", "other", "prefer_not_to_say"),
            "phone": PHONE,
            "emergency_contact": O({"name": S(lo=1), "relationship": S(lo=1), "phone": PHONE}),
            "allergies": A(S(lo=1), hi=5),
            "medications": A(O({"name": S(lo=1), "dose": S()}), hi=5),
            "conditions": A(E("diabetes", "hypertension", "asthma", "heart_disease", "none"), unique=True),
            "smoker": B(),
            "insurance": O({"provider": S(), "policy_number": S(lo=4)}),
            "reason_for_visit": S(lo=1),
        }
    ),
)
forms.add(
    "rsvp_form",
    "Event RSVP",
    O({"name": S(lo=1), "email": EMAIL, "attending": B(), "guests": I(lo=0, hi=4), "meal": null(E("meat", "fish", "vegetarian", "vegan")), "song_request?": S(hi=100)}),
    examples=3,
)
forms.add(
    "bug_report_form",
    "Bug report template",
    O(
        {
            "title": S(lo=5, hi=150),
            "version": S(pattern=r"^\d+\.\d+(\.\d+)?$", ex=["2.3", "1.14.2"]),
            "platform": E("windows", "macos", "linux", "ios", "android", "web"),
            "severity": E("blocker", "major", "minor", "trivial"),
            "steps_to_reproduce": A(S(lo=1), lo=1, hi=8),
            "expected": S(lo=1),
            "actual": S(lo=1),
            "logs?": S(),
            "screenshots": A(URI, hi=3),
        }
    ),
)
forms.add(
    "address_change_form",
    "Change-of-address request",
    O({"customer_id": I(lo=1), "old_zip": ZIP, "new_address": O({"street": S(lo=1), "city": S(lo=1), "zip": ZIP}), "effective_date": DATE, "forward_mail": B()}),
    examples=3,
)
forms.add(
    "volunteer_signup",
    "Volunteer registration",
    O(
        {
            "name": S(lo=1),
            "email": EMAIL,
            "age": I(lo=16, hi=100),
            "availability": A(E("mon", "tue", "wed", "thu", "fri", "sat", "sun"), lo=1, unique=True),
            "shifts": A(E("morning", "afternoon", "evening"), lo=1, unique=True),
            "skills": A(S(lo=1), hi=5),
            "background_check_consent": B(),
        }
    ),
    examples=3,
)
forms.add(
    "tax_residency_declaration",
    "Self-certification of tax residency",
    O(
        {
            "name": S(lo=1),
            "birth_date": DATE,
            "residencies": A(O({"country": COUNTRY, "tin": null(S(lo=5, hi=20)), "no_tin_reason": null(E("not_issued", "not_required", "unable_to_obtain"))}), lo=1, hi=3),
            "us_person": B(),
            "signed_at": DATETIME,
        }
    ),
)
forms.add(
    "course_feedback",
    "End-of-course feedback",
    O(
        {
            "course_code": S(pattern="^[A-Z]{2,4}[0-9]{3}$", ex=["CS101", "ECON210"]),
            "ratings": O({"content": I(lo=1, hi=5), "instructor": I(lo=1, hi=5), "materials": I(lo=1, hi=5), "workload": I(lo=1, hi=5)}),
            "hours_per_week": N(lo=0, hi=80),
            "liked_most?": S(hi=1000),
            "improve?": S(hi=1000),
            "anonymous": B(),
        }
    ),
    examples=3,
)
forms.add(
    "rental_application",
    "Apartment rental application",
    O(
        {
            "listing_id": I(lo=1),
            "applicants": A(O({"name": S(lo=1), "email": EMAIL, "monthly_income": N(lo=0), "employer": null(S())}), lo=1, hi=4),
            "move_in": DATE,
            "lease_months": E(6, 12, 24),
            "pets": A(O({"kind": E("dog", "cat", "bird", "other"), "weight_kg": null(N(lo=0))}), hi=3),
            "smokers": B(),
            "references": A(O({"name": S(lo=1), "phone": PHONE, "relation": S()}), hi=2),
        }
    ),
)
forms.add("newsletter_signup", "Newsletter sign-up", O({"email": EMAIL, "frequency": E("daily", "weekly", "monthly"), "topics": A(S(lo=1), hi=5, unique=True)}), examples=3)
forms.add(
    "warranty_registration",
    "Product warranty registration",
    O(
        {
            "serial_number": S(pattern="^[A-Z0-9]{10,16}$", ex=["C02XK1ABJGH5", "SN0012345678"]),
            "model": S(lo=1),
            "purchase_date": DATE,
            "retailer": S(),
            "owner": O({"name": S(lo=1), "email": EMAIL, "zip": ZIP}),
            "extended_warranty": B(),
        }
    ),
    examples=3,
)
forms.add(
    "event_registration",
    "Conference registration",
    O(
        {
            "attendee": O({"first_name": S(lo=1), "last_name": S(lo=1), "email": EMAIL, "company": null(S()), "job_title?": S()}),
            "ticket": E("student", "standard", "vip"),
            "workshops": A(E("intro_ml", "advanced_rust", "k8s_ops", "design_systems"), hi=2, unique=True),
            "dietary": null(S(hi=100)),
            "tshirt_size": E("XS", "S", "M", "L", "XL", "XXL"),
            "promo_code?": S(pattern="^[A-Z0-9]{5,12}$", ex=["EARLYBIRD", "SPEAKER24"]),
            "invoice_needed": B(),
        }
    ),
)

# --------------------------------------------------------------------------- catalog

DIMENSIONS = O({"length_cm": N(xlo=0), "width_cm": N(xlo=0), "height_cm": N(xlo=0), "weight_kg": N(xlo=0)})
SKU = S(pattern="^[A-Z]{3}-[0-9]{4}(-[A-Z0-9]{1,4})?$", ex=["MOU-1001", "TSH-2040-BLK", "SHO-0042-42"])

catalog.add(
    "product_basic",
    "Minimal product entry",
    O({"sku": SKU, "name": S(lo=1, hi=200), "price": N(lo=0), "in_stock": B()}),
    examples=3,
)
catalog.add(
    "product_full",
    "Full catalog product with variants, media and SEO",
    O(
        {
            "id": UUID,
            "sku": SKU,
            "name": S(lo=1, hi=200),
            "slug": SLUG,
            "brand": S(lo=1),
            "description": S(lo=1, hi=5000),
            "short_description?": S(hi=300),
            "category_path": A(S(lo=1), lo=1, hi=5),
            "price": MONEY,
            "compare_at_price?": null(MONEY),
            "tax_class": E("standard", "reduced", "zero"),
            "inventory": O({"quantity": I(lo=0), "backorder": B(), "warehouse?": S()}),
            "dimensions": DIMENSIONS,
            "variants": A(
                O({"sku": SKU, "options": O({"size?": E("XS", "S", "M", "L", "XL"), "color?": S()}), "price_delta": N(), "stock": I(lo=0)}),
                hi=4,
            ),
            "images": A(O({"url": URI, "alt": S(hi=200), "position": I(lo=0)}), lo=1, hi=5),
            "attributes": O({}, extra=S()),
            "rating?": O({"average": N(lo=0, hi=5), "count": I(lo=0)}),
            "seo": O({"title": S(hi=60), "meta_description": S(hi=160)}),
            "status": E("draft", "active", "archived"),
            "created_at": DATETIME,
            "updated_at": DATETIME,
        }
    ),
)
catalog.add(
    "book",
    "Book in a bookstore catalog",
    O(
        {
            "isbn13": S(pattern="^97[89][0-9]{10}$", ex=["9780262033848", "9780596007126", "9781449355739"]),
            "title": S(lo=1),
            "subtitle?": S(),
            "authors": A(S(lo=1), lo=1, hi=4),
            "publisher": S(),
            "published": S(pattern="^[0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?$", ex=["2009", "2015-06", "2021-03-14"]),
            "pages": I(lo=1, hi=5000),
            "language": E("en", "de", "fr", "es", "ja", "pt"),
            "format": E("hardcover", "paperback", "ebook", "audiobook"),
            "price": MONEY,
            "subjects": A(S(lo=1), hi=5),
        }
    ),
)
catalog.add(
    "apparel_item",
    "Clothing item",
    O(
        {
            "sku": SKU,
            "name": S(lo=1),
            "gender": E("women", "men", "unisex", "kids"),
            "sizes": A(E("XS", "S", "M", "L", "XL", "XXL"), lo=1, unique=True),
            "colors": A(O({"name": S(lo=1), "hex": HEX_COLOR}), lo=1, hi=5),
            "material": A(O({"fiber": E("cotton", "polyester", "wool", "linen", "elastane"), "percent": I(lo=1, hi=100)}), lo=1, hi=3),
            "care": A(E("machine_wash_cold", "hand_wash", "tumble_dry_low", "do_not_bleach", "iron_low"), unique=True),
            "price": N(lo=0),
            "currency": CURRENCY,
        }
    ),
)
catalog.add(
    "electronics_item",
    "Consumer electronics product",
    O(
        {
            "sku": SKU,
            "name": S(lo=1),
            "brand": S(lo=1),
            "category": E("laptop", "phone", "tablet", "headphones", "monitor", "camera"),
            "specs": O(
                {
                    "cpu?": S(),
                    "ram_gb?": E(4, 8, 16, 32, 64),
                    "storage_gb?": I(lo=0),
                    "screen_in?": N(xlo=0, hi=100),
                    "battery_mah?": I(lo=0),
                    "weight_g": I(lo=1),
                    "wireless": A(E("wifi6", "wifi7", "bluetooth5", "nfc", "5g"), unique=True),
                }
            ),
            "price": MONEY,
            "warranty_months": E(12, 24, 36),
            "energy_label?": E("A", "B", "C", "D", "E", "F", "G"),
            "release_date": DATE,
        }
    ),
)
catalog.add(
    "grocery_item",
    "Grocery product",
    O(
        {
            "gtin": S(pattern="^[0-9]{13}$", ex=["4006381333931", "5449000000996"]),
            "name": S(lo=1),
            "unit": E("piece", "kg", "g", "l", "ml", "pack"),
            "unit_price": N(lo=0),
            "organic": B(),
            "origin_country": COUNTRY,
            "best_before_days": I(lo=0, hi=3650),
            "allergens": A(E("gluten", "milk", "eggs", "nuts", "soy"), unique=True),
        }
    ),
    examples=3,
)
catalog.add(
    "wine_listing",
    "Wine list entry",
    O(
        {
            "name": S(lo=1),
            "winery": S(lo=1),
            "vintage": null(I(lo=1900, hi=2030)),
            "region": S(),
            "country": COUNTRY,
            "color": E("red", "white", "rose", "sparkling", "dessert"),
            "grapes": A(S(lo=1), lo=1, hi=4),
            "abv": N(lo=0, hi=25),
            "price_glass": null(N(lo=0)),
            "price_bottle": N(lo=0),
        }
    ),
    examples=3,
)
catalog.add(
    "menu_item",
    "Restaurant menu item",
    O(
        {
            "id": I(lo=1),
            "name": S(lo=1),
            "description?": S(hi=300),
            "price": N(lo=0),
            "category": E("starter", "main", "side", "dessert", "drink"),
            "dietary": A(E("vegetarian", "vegan", "gluten_free", "spicy"), unique=True),
            "option_groups": A(
                O({"name": S(lo=1), "required": B(), "max_choices": I(lo=1, hi=10), "choices": A(O({"name": S(lo=1), "price_delta": N(lo=0)}), lo=1, hi=5)}),
                hi=3,
            ),
            "available": B(),
        }
    ),
)
catalog.add(
    "car_listing",
    "Used car listing",
    O(
        {
            "listing_id": UUID,
            "make": S(lo=1),
            "model": S(lo=1),
            "year": I(lo=1950, hi=2030),
            "mileage_km": I(lo=0),
            "fuel": E("petrol", "diesel", "hybrid", "electric", "lpg"),
            "transmission": E("manual", "automatic"),
            "price": MONEY,
            "color": S(),
            "owners": I(lo=1, hi=10),
            "accident_free": B(),
            "features": A(S(lo=1), hi=8, unique=True),
            "seller": O({"type": E("dealer", "private"), "name": S(), "phone": PHONE}),
        }
    ),
)
catalog.add(
    "software_license_sku",
    "Software license offer",
    O(
        {
            "sku": S(pattern="^LIC-[A-Z]{2,6}-(M|Y)$", ex=["LIC-PRO-M", "LIC-TEAM-Y"]),
            "edition": E("personal", "pro", "team", "enterprise"),
            "billing": E("monthly", "yearly"),
            "price": MONEY,
            "seats": O({"min": I(lo=1), "max": null(I(lo=1))}),
            "features": A(S(lo=1), lo=1, hi=10),
            "trial_days": I(lo=0, hi=90, mult=7),
        }
    ),
    examples=3,
)
catalog.add(
    "furniture_item",
    "Furniture product",
    O(
        {
            "sku": SKU,
            "name": S(lo=1),
            "room": E("living", "bedroom", "office", "dining", "outdoor"),
            "dimensions": DIMENSIONS,
            "materials": A(E("oak", "pine", "steel", "glass", "fabric", "leather"), lo=1, unique=True),
            "assembly_required": B(),
            "price": MONEY,
            "delivery": O({"lead_time_days": I(lo=0, hi=120), "white_glove": B()}),
        }
    ),
)
catalog.add(
    "hotel_room_type",
    "Room type offered by a hotel",
    O(
        {
            "code": S(pattern="^[A-Z]{3,4}$", ex=["DBL", "KING", "STE"]),
            "name": S(lo=1),
            "max_occupancy": I(lo=1, hi=10),
            "beds": A(O({"type": E("single", "double", "queen", "king", "sofa"), "count": I(lo=1, hi=4)}), lo=1, hi=3),
            "size_m2": N(xlo=0),
            "amenities": A(S(lo=1), hi=8),
            "base_rate": MONEY,
            "smoking": B(),
        }
    ),
    examples=3,
)
catalog.add(
    "saas_plan",
    "Pricing page plan",
    O(
        {
            "id": S(pattern="^[a-z_]+$", ex=["free", "pro", "business"]),
            "name": S(lo=1),
            "monthly_price": MONEY,
            "yearly_price": null(MONEY),
            "limits": O({"projects": null(I(lo=1)), "storage_gb": I(lo=1), "api_calls_per_month": null(I(lo=0))}),
            "features": A(O({"name": S(lo=1), "included": B(), "note?": S()}), lo=1, hi=8),
            "highlighted": B(),
        }
    ),
)
catalog.add(
    "digital_download",
    "Digital download product",
    O({"id": UUID, "title": S(lo=1), "format": E("pdf", "epub", "mp3", "zip", "mp4"), "size_mb": N(lo=0), "price": MONEY, "download_url": URI, "drm": B()}),
    examples=3,
)
catalog.add(
    "course_listing",
    "Online course listing",
    O(
        {
            "id": I(lo=1),
            "title": S(lo=1),
            "instructor": O({"name": S(lo=1), "bio?": S()}),
            "level": E("beginner", "intermediate", "advanced"),
            "language": E("en", "de", "fr", "es", "pt"),
            "duration_hours": N(xlo=0),
            "modules": A(O({"title": S(lo=1), "lessons": I(lo=1, hi=50)}), lo=1, hi=8),
            "price": maybe(MONEY),
            "certificate": B(),
        }
    ),
)
