"""Schemas with ``$defs``/``$ref``: shared definitions, and recursive structures (trees, threads)."""

from __future__ import annotations

from .common import ADDRESS, CURRENCY, DATETIME, EMAIL, MONEY, URI, UUID
from .dsl import A, B, C, Corpus, E, I, N, O, S, maybe, null, ref

recursive = Corpus("defs")
add = recursive.add

add(
    "comment_thread",
    "Comments with nested replies",
    O({"post_id": I(lo=1), "comments": A(ref("comment"), hi=3)}),
    defs={
        "comment": O(
            {
                "id": I(lo=1),
                "author": S(lo=1),
                "text": S(lo=1, hi=2000),
                "created_at": DATETIME,
                "score": I(),
                "replies": A(ref("comment"), hi=3),
            }
        )
    },
)
add(
    "category_tree",
    "Product category tree",
    ref("category"),
    defs={"category": O({"id": I(lo=1), "name": S(lo=1), "slug": S(pattern="^[a-z0-9-]+$", ex=["electronics", "home-garden", "books"]), "children": A(ref("category"), hi=3)})},
)
add(
    "file_system_tree",
    "Directory listing, recursively",
    ref("node"),
    defs={
        "node": {
            "oneOf": [
                O({"type": C("file"), "name": S(lo=1, hi=255), "size": I(lo=0), "modified": DATETIME}),
                O({"type": C("directory"), "name": S(lo=1, hi=255), "entries": A(ref("node"), hi=4)}),
            ]
        }
    },
)
add(
    "org_chart",
    "Organisation chart",
    O({"company": S(lo=1), "ceo": ref("employee")}),
    defs={"employee": O({"name": S(lo=1), "title": S(lo=1), "email": EMAIL, "reports": A(ref("employee"), hi=3)})},
)
add(
    "filter_expression",
    "Boolean filter expression for a query API",
    ref("expr"),
    defs={
        "expr": {
            "anyOf": [
                ref("comparison"),
                O({"and": A(ref("expr"), lo=1, hi=4)}),
                O({"or": A(ref("expr"), lo=1, hi=4)}),
                O({"not": ref("expr")}),
            ]
        },
        "comparison": O(
            {
                "field": S(pattern="^[a-z_][a-z0-9_.]*$", ex=["status", "price", "customer.country", "created_at"]),
                "op": E("eq", "ne", "lt", "lte", "gt", "gte", "in", "contains"),
                "value": {"type": ["string", "number", "boolean", "null"]},
            }
        ),
    },
)
add(
    "navigation_menu",
    "Site navigation menu with submenus",
    O({"items": A(ref("item"), lo=1, hi=5)}),
    defs={"item": O({"label": S(lo=1, hi=40), "href?": S(pattern="^/", ex=["/", "/pricing", "/docs/getting-started"]), "icon?": S(), "children?": A(ref("item"), hi=4)})},
)
add(
    "bill_of_materials",
    "Nested bill of materials",
    ref("part"),
    defs={
        "part": O(
            {
                "part_number": S(pattern="^[A-Z]{2}-[0-9]{5}$", ex=["BR-10023", "FR-00420", "WH-55001"]),
                "description": S(lo=1),
                "quantity": I(lo=1, hi=1000),
                "unit_cost": N(lo=0),
                "components": A(ref("part"), hi=3),
            }
        )
    },
)
add(
    "todo_list_nested",
    "Outline of tasks with subtasks",
    O({"title": S(lo=1), "owner": EMAIL, "tasks": A(ref("task"), hi=4)}),
    defs={"task": O({"id": I(lo=1), "text": S(lo=1, hi=200), "done": B(), "due?": null(S(fmt="date")), "subtasks": A(ref("task"), hi=3)})},
)
add(
    "decision_tree",
    "A decision tree model",
    ref("node"),
    defs={
        "node": {
            "anyOf": [
                O({"feature": S(lo=1), "threshold": N(), "left": ref("node"), "right": ref("node")}),
                O({"leaf": C(True), "prediction": E("yes", "no"), "probability": N(lo=0, hi=1)}),
            ]
        }
    },
)
add(
    "json_ast",
    "Abstract syntax tree of arithmetic expressions",
    ref("expr"),
    defs={
        "expr": {
            "oneOf": [
                O({"kind": C("num"), "value": N()}),
                O({"kind": C("var"), "name": S(pattern="^[a-z][a-z0-9]*$", ex=["x", "rate", "n1"])}),
                O({"kind": C("binop"), "op": E("+", "-", "*", "/"), "lhs": ref("expr"), "rhs": ref("expr")}),
                O({"kind": C("call"), "fn": E("sin", "cos", "sqrt", "abs"), "args": A(ref("expr"), lo=1, hi=2)}),
            ]
        }
    },
)
add(
    "linked_list",
    "Singly linked list",
    ref("node"),
    defs={"node": O({"value": I(), "next": {"anyOf": [ref("node"), {"type": "null"}]}})},
)
add(
    "mind_map",
    "Mind map",
    O({"title": S(lo=1), "root": ref("idea")}),
    defs={"idea": O({"text": S(lo=1, hi=120), "color?": E("red", "green", "blue", "yellow"), "children": A(ref("idea"), hi=3)})},
)
add(
    "invoice_with_defs",
    "Invoice whose parties and lines are $defs",
    O({"number": S(lo=1), "seller": ref("party"), "buyer": ref("party"), "lines": A(ref("line"), lo=1, hi=5), "total": ref("money")}),
    defs={
        "party": O({"name": S(lo=1), "email": EMAIL, "address": ref("address")}),
        "address": ADDRESS,
        "line": O({"description": S(lo=1), "quantity": I(lo=1), "unit_price": ref("money")}),
        "money": O({"amount": N(lo=0), "currency": CURRENCY}),
    },
)
add(
    "order_with_defs",
    "Order referencing shared definitions",
    O({"id": UUID, "customer": ref("customer"), "shipping": ref("address"), "billing": {"anyOf": [ref("address"), {"type": "null"}]}, "items": A(ref("item"), lo=1, hi=4)}),
    defs={
        "customer": O({"id": I(lo=1), "name": S(lo=1), "email": EMAIL}),
        "address": ADDRESS,
        "item": O({"sku": S(lo=1), "quantity": I(lo=1), "price": MONEY}),
    },
)
add(
    "api_spec_fragment",
    "A small API description with reusable parameters",
    O(
        {
            "name": S(lo=1),
            "base_url": URI,
            "endpoints": A(
                O({"path": S(pattern="^/", ex=["/users", "/orders/{id}"]), "method": E("GET", "POST", "PUT", "DELETE"), "params": A(ref("param"), hi=4), "auth": B()}),
                lo=1,
                hi=4,
            ),
        }
    ),
    defs={"param": O({"name": S(lo=1), "in": E("query", "path", "header"), "required": B(), "type": E("string", "integer", "boolean")})},
)
add(
    "tool_call_with_defs",
    "Strict tool arguments whose nested objects are $defs",
    O({"recipients": A(ref("recipient"), lo=1, hi=5), "message": ref("message"), "send_at": maybe(S(fmt="date-time"))}),
    defs={
        "recipient": O({"name": S(lo=1), "channel": E("email", "sms", "push"), "address": S(lo=3)}),
        "message": O({"subject": maybe(S(hi=120)), "body": S(lo=1), "priority": E("low", "normal", "high")}),
    },
)
add(
    "social_graph",
    "User with followers, shallowly recursive",
    ref("user"),
    defs={"user": O({"handle": S(pattern="^@[a-z0-9_]{2,15}$", ex=["@alice", "@dev_ops", "@bruno99"]), "verified": B(), "followers": A(ref("user"), hi=2), "website": null(URI)})},
)
