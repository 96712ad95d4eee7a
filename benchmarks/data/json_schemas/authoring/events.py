"""Events: webhooks, analytics, audit logs, domain events, some as tagged unions (oneOf/anyOf)."""

from __future__ import annotations

from .common import COUNTRY, CURRENCY, DATETIME, EMAIL, GEO, IPV4, SEMVER, URI, UUID
from .dsl import A, B, C, Corpus, E, I, N, O, S, maybe, null

events = Corpus("events")
add = events.add

ENVELOPE = {"id": UUID, "occurred_at": DATETIME, "source": S(lo=1)}

add(
    "page_view",
    "Analytics page view",
    O(
        {
            "event": C("page_view"),
            "anonymous_id": UUID,
            "user_id": null(I(lo=1)),
            "url": URI,
            "referrer": null(URI),
            "title": S(),
            "ts": DATETIME,
            "viewport": O({"width": I(lo=1, hi=10000), "height": I(lo=1, hi=10000)}),
            "utm?": O({"source?": S(), "medium?": S(), "campaign?": S()}),
        }
    ),
)
add(
    "click_event",
    "UI click",
    O({"event": C("click"), "element_id": S(lo=1), "text": null(S(hi=200)), "x": I(lo=0), "y": I(lo=0), "ts": DATETIME}),
    examples=3,
)
add(
    "purchase_completed",
    "Checkout completed event",
    O(
        {
            **ENVELOPE,
            "type": C("purchase.completed"),
            "order_id": S(lo=1),
            "revenue": N(lo=0),
            "currency": CURRENCY,
            "products": A(O({"id": S(lo=1), "name": S(), "price": N(lo=0), "quantity": I(lo=1)}), lo=1, hi=6),
            "coupon": null(S()),
        }
    ),
)
add(
    "audit_log_entry",
    "Administrative audit log entry",
    O(
        {
            **ENVELOPE,
            "actor": O({"type": E("user", "service", "system"), "id": S(lo=1), "ip": null(IPV4)}),
            "action": S(pattern="^[a-z]+\\.[a-z_]+$", ex=["user.login", "project.delete", "role.assign"]),
            "target": O({"type": S(lo=1), "id": S(lo=1)}),
            "outcome": E("success", "failure"),
            "changes?": A(O({"field": S(lo=1), "old": null(S()), "new": null(S())}), hi=4),
        }
    ),
)
add(
    "webhook_payment",
    "Payment provider webhook (tagged union on type)",
    O(
        {
            "id": S(pattern="^evt_[A-Za-z0-9]{12}$", ex=["evt_1NG8Du2eZvKY", "evt_9ZyXwVuTsRqP"]),
            "created": I(lo=0),
            "data": {
                "oneOf": [
                    O({"type": C("payment.succeeded"), "amount": I(lo=1), "currency": CURRENCY, "payment_id": S(lo=1)}),
                    O({"type": C("payment.failed"), "payment_id": S(lo=1), "failure_code": E("card_declined", "insufficient_funds", "expired_card")}),
                    O({"type": C("refund.created"), "refund_id": S(lo=1), "amount": I(lo=1)}),
                ]
            },
        }
    ),
    examples=3,
)
add(
    "repo_push_event",
    "Repository push webhook",
    O(
        {
            "ref": S(pattern="^refs/(heads|tags)/.+$", ex=["refs/heads/main", "refs/tags/v1.2.0", "refs/heads/feature/login"]),
            "before": S(pattern="^[0-9a-f]{40}$", ex=["0000000000000000000000000000000000000000"]),
            "after": S(pattern="^[0-9a-f]{40}$", ex=["9fceb02d0ae598e95dc970b74767f19372d61af8"]),
            "repository": O({"id": I(lo=1), "full_name": S(pattern="^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$", ex=["octo-org/widgets"]), "private": B()}),
            "pusher": O({"name": S(), "email": EMAIL}),
            "commits": A(O({"id": S(pattern="^[0-9a-f]{40}$", ex=["e5bd3914e2e596debea16f433f57875b5b90bcd6"]), "message": S(lo=1), "added": A(S(), hi=3), "removed": A(S(), hi=3), "modified": A(S(), hi=3)}), hi=3),
            "forced": B(),
        }
    ),
)
add(
    "user_signed_up",
    "Domain event: user signed up",
    O({**ENVELOPE, "type": C("user.signed_up"), "user_id": UUID, "email": EMAIL, "plan": E("free", "trial", "pro"), "referral_code": null(S(hi=20))}),
    examples=3,
)
add(
    "inventory_adjusted",
    "Domain event: stock adjusted",
    O({**ENVELOPE, "type": C("inventory.adjusted"), "sku": S(lo=1), "warehouse": S(lo=1), "delta": I(), "reason": E("sale", "return", "damage", "recount", "transfer")}),
    examples=3,
)
add(
    "sensor_alert",
    "Threshold alert from an IoT device",
    O(
        {
            "device_id": S(lo=1),
            "metric": E("temperature", "pressure", "vibration", "humidity"),
            "value": N(),
            "threshold": N(),
            "severity": E("warning", "critical"),
            "location": GEO,
            "triggered_at": DATETIME,
            "acknowledged": B(),
        }
    ),
    examples=3,
)
add(
    "app_crash_report",
    "Crash report from a client application",
    O(
        {
            "report_id": UUID,
            "app_version": SEMVER,
            "os": O({"name": E("ios", "android", "windows", "macos", "linux"), "version": S(lo=1)}),
            "device_model": S(),
            "exception": O({"type": S(lo=1), "message": S(), "stacktrace": A(O({"function": S(), "file": S(), "line": I(lo=0)}), lo=1, hi=6)}),
            "breadcrumbs": A(O({"ts": DATETIME, "category": S(), "message": S()}), hi=4),
            "user_id": null(S()),
            "occurred_at": DATETIME,
        }
    ),
)
add(
    "log_line",
    "A structured application log line",
    O(
        {
            "ts": DATETIME,
            "level": E("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
            "logger": S(pattern="^[a-z_][a-z0-9_.]*$", ex=["app.http", "worker.jobs", "db.pool"]),
            "msg": S(),
            "trace_id?": S(pattern="^[0-9a-f]{32}$", ex=["4bf92f3577b34da6a3ce929d0e0e4736"]),
            "span_id?": S(pattern="^[0-9a-f]{16}$", ex=["00f067aa0ba902b7"]),
            "http?": O({"method": E("GET", "POST", "PUT", "DELETE"), "path": S(), "status": I(lo=100, hi=599), "duration_ms": N(lo=0)}),
        },
        extra=None,
    ),
    examples=3,
)
add(
    "trace_span",
    "A distributed tracing span",
    O(
        {
            "trace_id": S(pattern="^[0-9a-f]{32}$", ex=["4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"]),
            "span_id": S(pattern="^[0-9a-f]{16}$", ex=["00f067aa0ba902b7", "b7ad6b7169203331"]),
            "parent_span_id": null(S(pattern="^[0-9a-f]{16}$", ex=["53995c3f42cd8ad8"])),
            "name": S(lo=1),
            "kind": E("internal", "server", "client", "producer", "consumer"),
            "start_unix_nano": I(lo=0),
            "duration_ns": I(lo=0),
            "status": O({"code": E("unset", "ok", "error"), "message?": S()}),
            "attributes": O({}, extra={"type": ["string", "number", "boolean"]}),
        }
    ),
)
add(
    "chat_message_event",
    "Message posted in a chat room",
    O(
        {
            "room_id": S(lo=1),
            "message": O(
                {
                    "id": UUID,
                    "author": O({"id": I(lo=1), "display_name": S(lo=1)}),
                    "text": S(lo=1, hi=4000),
                    "mentions": A(I(lo=1), hi=5, unique=True),
                    "attachments": A(O({"kind": E("image", "file", "link"), "url": URI, "size_bytes?": I(lo=0)}), hi=3),
                    "reply_to": null(UUID),
                }
            ),
            "sent_at": DATETIME,
        }
    ),
)
add(
    "email_delivery_event",
    "Email delivery status callback",
    O(
        {
            "message_id": S(lo=1),
            "recipient": EMAIL,
            "event": E("delivered", "opened", "clicked", "bounced", "complained", "unsubscribed"),
            "timestamp": I(lo=0),
            "bounce?": O({"type": E("hard", "soft"), "reason": S()}),
            "url?": URI,
            "user_agent?": S(),
        }
    ),
    examples=3,
)
add(
    "game_match_result",
    "Result of an online match",
    O(
        {
            "match_id": UUID,
            "mode": E("ranked", "casual", "tournament"),
            "map": S(lo=1),
            "duration_s": I(lo=0),
            "teams": A(
                O({"team": E("red", "blue"), "score": I(lo=0), "players": A(O({"player_id": I(lo=1), "kills": I(lo=0), "deaths": I(lo=0), "assists": I(lo=0), "mvp": B()}), lo=1, hi=5)}),
                lo=2,
                hi=2,
            ),
            "winner": E("red", "blue", "draw"),
        }
    ),
)
add(
    "deployment_event",
    "Deployment started/finished notification",
    O(
        {
            **ENVELOPE,
            "service": S(lo=1),
            "environment": E("dev", "staging", "production"),
            "version": SEMVER,
            "status": E("started", "succeeded", "failed", "rolled_back"),
            "commit": S(pattern="^[0-9a-f]{7,40}$", ex=["9fceb02", "e5bd3914e2e596debea16f433f57875b5b90bcd6"]),
            "triggered_by": S(),
            "duration_s": null(I(lo=0)),
        }
    ),
    examples=3,
)
add(
    "security_alert",
    "Security detection",
    O(
        {
            "alert_id": UUID,
            "rule": S(lo=1),
            "severity": I(lo=1, hi=10),
            "tactic": E("initial_access", "execution", "persistence", "privilege_escalation", "exfiltration"),
            "host": O({"hostname": S(lo=1), "ip": IPV4, "os": S()}),
            "indicators": A({"anyOf": [O({"kind": C("ip"), "value": IPV4}), O({"kind": C("domain"), "value": S(lo=1)}), O({"kind": C("sha256"), "value": S(pattern="^[0-9a-f]{64}$", ex=["e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"])})]}, hi=4),
            "detected_at": DATETIME,
        }
    ),
)
add(
    "ad_impression",
    "Advertising impression",
    O(
        {
            "impression_id": UUID,
            "campaign_id": I(lo=1),
            "creative_id": I(lo=1),
            "placement": E("banner", "sidebar", "interstitial", "native", "video"),
            "cost_micros": I(lo=0),
            "country": COUNTRY,
            "device": E("desktop", "mobile", "tablet", "tv"),
            "viewable": B(),
            "ts": DATETIME,
        }
    ),
    examples=3,
)
add(
    "queue_message",
    "Job queued for a background worker (tagged union on task)",
    O(
        {
            "job_id": UUID,
            "attempt": I(lo=1, hi=10),
            "payload": {
                "anyOf": [
                    O({"task": C("send_email"), "to": EMAIL, "template": S(lo=1)}),
                    O({"task": C("resize_image"), "url": URI, "width": I(lo=1, hi=8000), "height": I(lo=1, hi=8000)}),
                    O({"task": C("generate_report"), "report": E("sales", "inventory", "churn"), "month": S(pattern="^[0-9]{4}-[0-9]{2}$", ex=["2024-06", "2023-12"])}),
                ]
            },
            "enqueued_at": DATETIME,
        }
    ),
    examples=3,
)
add(
    "cdc_change",
    "Change-data-capture record",
    O(
        {
            "op": E("c", "u", "d"),
            "table": S(lo=1),
            "ts_ms": I(lo=0),
            "before": null(O({"id": I(lo=1), "name": S(), "email": EMAIL, "updated_at": DATETIME})),
            "after": null(O({"id": I(lo=1), "name": S(), "email": EMAIL, "updated_at": DATETIME})),
            "tx_id": I(lo=0),
        }
    ),
)
add(
    "notification_push",
    "Push notification payload",
    O(
        {
            "to": S(lo=10),
            "notification": O({"title": S(lo=1, hi=65), "body": S(hi=240), "image?": URI}),
            "data": O({}, extra=S()),
            "priority": E("normal", "high"),
            "ttl_s": I(lo=0, hi=2419200),
            "collapse_key?": S(hi=64),
        }
    ),
    examples=3,
)
add(
    "metric_batch",
    "Batch of metric samples",
    O(
        {
            "resource": O({"service": S(lo=1), "host": S(lo=1), "region": E("eu-west-1", "us-east-1", "ap-northeast-1")}),
            "metrics": A(
                O({"name": S(pattern="^[a-z_][a-z0-9_]*$", ex=["http_requests_total", "cpu_seconds", "queue_depth"]), "kind": E("counter", "gauge", "histogram"), "value": N(), "labels": O({}, extra=S()), "ts": I(lo=0)}),
                lo=1,
                hi=6,
            ),
        }
    ),
)
add(
    "form_submission_event",
    "A form was submitted",
    O({**ENVELOPE, "form_id": S(lo=1), "fields": O({}, extra={"type": ["string", "number", "boolean", "null"]}), "spam_score": N(lo=0, hi=1)}),
    examples=3,
)
add(
    "subscription_changed",
    "Subscription plan change event",
    O(
        {
            **ENVELOPE,
            "type": C("subscription.changed"),
            "subscription_id": UUID,
            "previous_plan": E("free", "starter", "pro", "enterprise"),
            "new_plan": E("free", "starter", "pro", "enterprise"),
            "proration": maybe(O({"amount_cents": I(), "currency": CURRENCY})),
            "effective": E("immediately", "period_end"),
        }
    ),
    examples=3,
)
add(
    "geofence_event",
    "Device entered or left a geofence",
    O({"device_id": S(lo=1), "fence_id": S(lo=1), "transition": E("enter", "exit", "dwell"), "position": GEO, "accuracy_m": N(lo=0), "at": DATETIME}),
    examples=3,
)
add(
    "cloud_event_envelope",
    "A CloudEvents-style envelope",
    O(
        {
            "specversion": C("1.0"),
            "id": S(lo=1),
            "source": S(lo=1),
            "type": S(pattern="^[a-z]+(\\.[a-z]+)+$", ex=["com.example.order.created", "io.acme.user.deleted"]),
            "time": DATETIME,
            "datacontenttype": C("application/json"),
            "subject?": S(),
            "data": O({"entity_id": S(lo=1), "attributes": O({}, extra=S())}),
        }
    ),
)
add(
    "experiment_exposure",
    "A/B test exposure",
    O({"experiment": S(pattern="^[a-z0-9_]+$", ex=["checkout_button_color", "pricing_v2"]), "variant": E("control", "treatment_a", "treatment_b"), "user_id": UUID, "ts": DATETIME}),
    examples=3,
)
