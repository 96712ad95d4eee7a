"""String formats: the JSON-Schema-Test-Suite's optional format tests, plus brute-force oracles.

The suite lives at ``$TOKENSIEVE_SHARED_DATA/JSON-Schema-Test-Suite`` (default
``../shared/data`` beside the repository). Every valid instance of a format we
know must be accepted, every invalid one rejected, except the known exceptions
listed below with their reason. Each instance is checked on the decoded text
and, through :func:`json_string_content`, on its JSON encodings.
"""

from __future__ import annotations

import calendar
import ipaddress
import json
import os
import random
from pathlib import Path

import pytest

from tokensieve.automata import ir_to_dfa
from tokensieve.automata.dfa import ByteDFA
from tokensieve.grammar.json_formats import FORMATS, LEAP_OFFSET_MINUTES, format_content
from tokensieve.grammar.json_strings import json_string_content

_REPO = Path(__file__).resolve().parents[2]
_DATA = Path(os.environ.get("TOKENSIEVE_SHARED_DATA", _REPO.parent / "shared" / "data"))
_SUITE = _DATA / "JSON-Schema-Test-Suite" / "tests" / "draft2020-12" / "optional" / "format"

# Invalid instances we accept, with the reason (the language is not regular or too costly).
_IDNA = "IDNA validity of xn-- labels (Punycode decoding and IDNA2008 rules) is not checked"
KNOWN_ACCEPTED_INVALID = {
    "hostname": {
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk."
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk."
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk."
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk.com": "the total length limit "
        "of 253 is not enforced (the automaton would need about 16,000 states)",
        **{
            name: _IDNA
            for name in [
                "xn--X",
                "xn--07jt112bpxg.xn--9t4b11yi5a",
                "xn--hello-txk",
                "xn--hello-zed",
                "xn--hello-6bf",
                "xn--chb89f",
                "xn--07jceefgh4c",
                "xn--al-0ea",
                "xn--l-fda",
                "xn--la-0ea",
                "xn--l-gda",
                "xn--S-jib3p",
                "xn--wva3j",
                "xn--A-2hc5h",
                "xn--5db1e",
                "xn--A-2hc8h",
                "xn--5db3e",
                "xn--defabc-k64e",
                "xn--vek",
                "xn--ngb6iyr",
                "xn--11b2er09f",
                "xn--02b508i",
                "XN--aa---o47jg78q",
            ]
        },
    },
}
# Valid instances we reject, with the reason.
KNOWN_REJECTED_VALID: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module")
def automata() -> dict[str, tuple[ByteDFA, ByteDFA]]:
    out = {}
    for name in sorted(FORMATS):
        node = format_content(name)
        assert node is not None
        out[name] = (ir_to_dfa(node), ir_to_dfa(json_string_content(node)))
    return out


def _suite_cases(name: str) -> list[tuple[str, bool]]:
    path = _SUITE / f"{name}.json"
    if not path.exists():
        pytest.skip(f"JSON-Schema-Test-Suite not found at {_SUITE} (set TOKENSIEVE_SHARED_DATA)")
    cases = []
    for group in json.loads(path.read_text(encoding="utf-8")):
        for test in group["tests"]:
            if isinstance(test["data"], str):
                cases.append((test["data"], bool(test["valid"])))
    return cases


@pytest.mark.parametrize(
    "name",
    [
        "date",
        "time",
        "date-time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uri-template",
        "uuid",
        "json-pointer",
        "relative-json-pointer",
    ],
)
def test_suite(name: str, automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    decoded, encoded = automata[name]
    cases = _suite_cases(name)
    counts = {"valid accepted": 0, "valid rejected": 0, "invalid rejected": 0, "invalid accepted": 0}
    wrong: list[str] = []
    for text, valid in cases:
        got = decoded.accepts(text.encode("utf-8"))
        for enc in (json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]):
            assert encoded.accepts(enc.encode("utf-8")) == got, (name, text, enc)
        key = ("valid " if valid else "invalid ") + ("accepted" if got else "rejected")
        counts[key] += 1
        known = KNOWN_REJECTED_VALID if valid else KNOWN_ACCEPTED_INVALID
        if got != valid and text not in known.get(name, {}):
            wrong.append(f"{text!r} ({key})")
        if got == valid:
            assert text not in known.get(name, {}), f"{text!r} is listed as a known exception but passes"
    assert not wrong, f"{name}: {counts}: {wrong}"
    assert counts["valid accepted"] + counts["invalid rejected"] > 0


def test_unknown_formats() -> None:
    for name in ("regex", "idn-email", "idn-hostname", "bogus", "", "DATE"):
        assert format_content(name) is None


# --------------------------------------------------------- brute-force oracles
def test_date_every_day(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["date"][0]
    for year in (0, 1, 4, 100, 400, 1582, 1900, 1999, 2000, 2023, 2024, 2100, 9996, 9999):
        leap = calendar.isleap(year)
        days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        for month in range(0, 14):
            for day in range(0, 33):
                ok = 1 <= month <= 12 and 1 <= day <= days[month - 1]
                assert dfa.accepts(f"{year:04d}-{month:02d}-{day:02d}".encode()) == ok, (year, month, day)


def test_time_leap_seconds(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["time"][0]
    rng = random.Random(3)
    offsets = [("Z", 0), ("z", 0), ("+00:00", 0), ("-00:00", 0)]
    for _ in range(150):
        sign = rng.choice("+-")
        h, m = rng.randint(0, 23), rng.choice([0, 30, 45, rng.randint(0, 59)])
        offsets.append((f"{sign}{h:02d}:{m:02d}", (1 if sign == "+" else -1) * (60 * h + m)))
    for text, minutes in offsets:
        off_minutes = int(text[-2:]) if text[0] in "+-" else 0
        for hh in range(24):
            for mm in (0, 14, 29, 44, 59):
                for ss in (0, 59, 60, 61):
                    utc = (hh * 60 + mm - minutes) % 1440
                    ok = ss < 60 or (ss == 60 and utc == 23 * 60 + 59 and off_minutes in LEAP_OFFSET_MINUTES)
                    assert dfa.accepts(f"{hh:02d}:{mm:02d}:{ss:02d}{text}".encode()) == ok, (hh, mm, ss, text)
    assert not dfa.accepts(b"24:00:00Z") and not dfa.accepts(b"12:00:00+24:00")
    assert dfa.accepts(b"12:00:00.123456789+23:59")


def _ipv4_candidates(rng: random.Random) -> set[str]:
    pieces = ["0", "1", "9", "10", "25", "255", "256", "01", "00", "199", "249", "250", "300", "1000", ""]
    out = set()
    for _ in range(3000):
        n = rng.choice([3, 4, 4, 4, 5])
        out.add(".".join(rng.choice(pieces) for _ in range(n)))
    return out


def test_ipv4_against_ipaddress(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["ipv4"][0]
    for text in _ipv4_candidates(random.Random(5)):
        try:
            ipaddress.IPv4Address(text)
            ok = True
        except ValueError:
            ok = False
        assert dfa.accepts(text.encode()) == ok, text


def test_ipv6_against_ipaddress(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["ipv6"][0]
    rng = random.Random(6)
    groups = ["0", "1", "ff", "FFFF", "abcd", "12345", "g", "", "0000", "Ab1"]
    ipv4 = ["1.2.3.4", "255.255.255.255", "1.2.3", "01.2.3.4", "256.1.1.1"]
    texts = {"::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", ":::", "1:::2"}
    for _ in range(4000):
        n = rng.randint(1, 9)
        parts = [rng.choice(groups) for _ in range(n)]
        text = ":".join(parts)
        if rng.random() < 0.3:
            text = text.rsplit(":", 1)[0] + ":" + rng.choice(ipv4)
        if rng.random() < 0.3:
            i = rng.randint(0, len(text))
            text = text[:i] + ":" + text[i:]
        texts.add(text)
    for text in texts:
        try:
            ipaddress.IPv6Address(text)
            ok = "%" not in text
        except ValueError:
            ok = False
        assert dfa.accepts(text.encode()) == ok, text


def test_uuid(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["uuid"][0]
    rng = random.Random(8)
    alphabet = "0123456789abcdefABCDEFg-"
    for _ in range(2000):
        chars = [rng.choice("0123456789abcdefABCDEF") for _ in range(36)]
        for i in (8, 13, 18, 23):
            chars[i] = "-"
        if rng.random() < 0.5:
            chars[rng.randrange(36)] = rng.choice(alphabet)
        if rng.random() < 0.1:
            del chars[rng.randrange(36)]
        text = "".join(chars)
        ok = len(text) == 36 and all(
            (c == "-") if i in (8, 13, 18, 23) else (c in "0123456789abcdefABCDEF")
            for i, c in enumerate(text)
        )
        assert dfa.accepts(text.encode()) == ok, text


def test_hostname_label_lengths(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["hostname"][0]
    for n in range(0, 66):
        label = "a" * n
        assert dfa.accepts(label.encode()) == (1 <= n <= 63)
        assert dfa.accepts(f"x.{label}.com".encode()) == (1 <= n <= 63)
    for text, ok in [
        ("a-b", True),
        ("-ab", False),
        ("ab-", False),
        ("a_b", False),
        ("A.B.C", True),
        ("a..b", False),
    ]:
        assert dfa.accepts(text.encode()) == ok, text


def _rfc5321_domain(text: str) -> bool:
    # RFC 5321 section 4.1.2: sub-domain *("." sub-domain), sub-domain = Let-dig [Ldh-str]
    def sub_domain(label: str) -> bool:
        return (
            label != ""
            and all(c.isascii() and (c.isalnum() or c == "-") for c in label)
            and label[0] != "-"
            and label[-1] != "-"
        )

    return all(sub_domain(label) for label in text.split("."))


def test_email_domains_follow_the_mailbox_syntax_without_size_limits(
    automata: dict[str, tuple[ByteDFA, ByteDFA]],
) -> None:
    # the label limit of 63 is one of the size limits of section 4.5.3.1, reported as not enforced
    dfa = automata["email"][0]
    for n in (1, 63, 64, 200):
        assert dfa.accepts(f"joe@{'a' * n}.example".encode())
    rng = random.Random(5321)
    for _ in range(3000):
        domain = "".join(rng.choice("ab9-.") for _ in range(rng.randint(1, 80)))
        assert dfa.accepts(f"joe@{domain}".encode()) == _rfc5321_domain(domain), domain


def test_duration_brute_force(automata: dict[str, tuple[ByteDFA, ByteDFA]]) -> None:
    dfa = automata["duration"][0]
    date_units, time_units = "YMD", "HMS"

    def ok(text: str) -> bool:
        # independent reading of RFC 3339 Appendix A: P, date part, optional T part; or weeks alone
        if not text.startswith("P") or len(text) == 1:
            return False
        body = text[1:]
        if body.endswith("W"):
            return body[:-1].isdigit()
        date, _, time = body.partition("T")
        if "T" in body and not time:
            return False

        def units(part: str, allowed: str) -> str | None:
            out, num = "", ""
            for c in part:
                if c.isdigit():
                    num += c
                elif c in allowed and num:
                    out += c
                    num = ""
                else:
                    return None
            return out if not num else None

        d, t = units(date, date_units), units(time, time_units)
        if d is None or t is None or (not d and not t):
            return False
        contiguous = ("", "Y", "YM", "YMD", "M", "MD", "D")
        contiguous_t = ("", "H", "HM", "HMS", "M", "MS", "S")
        return d in contiguous and t in contiguous_t

    rng = random.Random(9)
    pieces = ["P", "T", "1", "12", "Y", "M", "D", "H", "S", "W", "0"]
    texts = {"P" + "".join(rng.choice(pieces[1:]) for _ in range(rng.randint(0, 7))) for _ in range(5000)}
    for text in texts:
        assert dfa.accepts(text.encode()) == ok(text), text
