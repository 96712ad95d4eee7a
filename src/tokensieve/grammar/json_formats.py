"""JSON Schema ``format`` values as regex IR over the *decoded* string.

:func:`format_content` gives the language of a format as IR over the decoded
text; pass it through :func:`tokensieve.grammar.json_strings.json_string_content`
to get the encoded string content. Every format here is ASCII.

==========================  ====================================================
format                      language (exact unless said otherwise)
==========================  ====================================================
``date``                    RFC 3339 ``full-date``: days per month, Feb 29 in
                            Gregorian leap years only (year 0000 included)
``time``                    RFC 3339 ``full-time``: ``T``/``Z`` in either case,
                            fractions of any length, offsets ``+hh:mm``/
                            ``-hh:mm`` up to 23:59; second 60 (leap second)
                            only where the time is 23:59 UTC after applying
                            the offset
``date-time``               ``date`` ``T`` ``time``
``duration``                RFC 3339 Appendix A (ISO 8601 durations: ``P`` then
                            date elements in order, ``T`` time elements, or
                            weeks alone); upper-case designators only
``email``                   RFC 5321 ``Mailbox`` (section 4.1.2): dot-atom or
                            quoted local part, ``@``, a domain of letter-digit-
                            hyphen labels or an address literal
                            (``[192.0.2.1]``, ``[IPv6:...]``). Not enforced: the
                            size limits of section 4.5.3.1 (64 characters for
                            the local part, 255 for the domain, 63 for a
                            domain label)
``hostname``                RFC 1123 labels of 1 to 63 letters, digits and inner
                            hyphens, separated by dots. Not enforced: the total
                            length of 253, and IDNA rules for ``xn--`` labels
                            (Punycode validity)
``ipv4``                    four decimal octets 0 to 255 without leading zeros
``ipv6``                    RFC 4291 text forms: all ``::`` compressions,
                            embedded IPv4, hex in either case; no zone, no prefix
``uri``, ``uri-reference``  RFC 3986 ``URI`` and ``URI-reference`` (ASCII only)
``iri``, ``iri-reference``  RFC 3987 ``IRI`` and ``IRI-reference`` (``ucschar``
                            and, in queries, ``iprivate`` allowed unescaped)
``uri-template``            RFC 6570 (levels 1 to 4; the apostrophe counts as
                            a literal, per the errata; the reserved operators
                            ``= , ! @ |`` are rejected)
``uuid``                    RFC 4122 ``8-4-4-4-12`` hex digits, either case
``json-pointer``            RFC 6901 (``~`` only as ``~0`` or ``~1``)
``relative-json-pointer``   a non-negative integer, then ``#`` or a JSON pointer
==========================  ====================================================

Other names (``regex``, ``idn-email``, ``idn-hostname``, ...) give
``None``: the caller reports them as not enforced.
"""

from __future__ import annotations

from .._memo import memoized
from ..ir.nodes import Node, alt, concat, literal
from .regex import parse_regex

__all__ = ["FORMATS", "LEAP_OFFSET_MINUTES", "format_content"]

_DIGIT = "[0-9]"
_HEX = "[0-9A-Fa-f]"
_ALPHA = "[A-Za-z]"

# --- date and time (RFC 3339)
_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE = f"(?:[0-9]{{4}}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_FRAC = "(?:\\.[0-9]+)?"
_NUM_OFFSET = "[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]"
_OFFSET = f"(?:[Zz]|{_NUM_OFFSET})"
_ORDINARY_TIME = f"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]{_FRAC}{_OFFSET}"


#: Minutes of the numeric offsets with which a leap second is accepted: an exact
#: check of every offset needs an automaton remembering all 1,440 times of day.
LEAP_OFFSET_MINUTES = (0, 30, 45)


def _leap_second_times() -> Node:
    """``hh:mm:60[.f]offset`` where ``hh:mm`` minus the offset is 23:59 (see :data:`LEAP_OFFSET_MINUTES`)."""
    frac = parse_regex(_FRAC)
    parts: list[Node] = [
        concat(literal("23:59:60"), frac, parse_regex("[Zz]|[+-]00:00")),
    ]
    utc = 23 * 60 + 59
    for shift in range(1, 24 * 60):
        # local = utc + offset (mod one day); the offset is +shift or -(1440 - shift)
        local = (utc + shift) % 1440
        plus = f"+{shift // 60:02d}:{shift % 60:02d}"
        neg = 1440 - shift
        offsets = [literal(plus)] if shift % 60 in LEAP_OFFSET_MINUTES else []
        if neg < 24 * 60 and neg % 60 in LEAP_OFFSET_MINUTES:
            offsets.append(literal(f"-{neg // 60:02d}:{neg % 60:02d}"))
        if not offsets:
            continue
        parts.append(concat(literal(f"{local // 60:02d}:{local % 60:02d}:60"), frac, alt(*offsets)))
    return alt(*parts)


# --- internet addresses
_DEC_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])"
_IPV4 = f"{_DEC_OCTET}(?:\\.{_DEC_OCTET}){{3}}"
_H16 = f"{_HEX}{{1,4}}"
_LS32 = f"(?:{_H16}:{_H16}|{_IPV4})"


def _ipv6() -> str:
    forms = [
        f"(?:{_H16}:){{6}}{_LS32}",
        f"::(?:{_H16}:){{5}}{_LS32}",
        f"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
    ]
    for k, tail in ((1, f"(?:{_H16}:){{3}}{_LS32}"), (2, f"(?:{_H16}:){{2}}{_LS32}"), (3, f"{_H16}:{_LS32}")):
        forms.append(f"(?:(?:{_H16}:){{0,{k}}}{_H16})?::{tail}")
    forms.append(f"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}")
    forms.append(f"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}")
    forms.append(f"(?:(?:{_H16}:){{0,6}}{_H16})?::")
    return "(?:" + "|".join(forms) + ")"


_IPV6 = _ipv6()
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = f"{_LABEL}(?:\\.{_LABEL})*"

# --- e-mail (RFC 5321 Mailbox)
_ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_DOT_ATOM = f"{_ATEXT}+(?:\\.{_ATEXT}+)*"
_QUOTED = '"(?:[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]|\\\\[\\x20-\\x7E])*"'
#: RFC 5321 ``sub-domain`` without the label limit of 63: with it, the usual
#: ``maxLength: 254`` makes the e-mail automaton four times larger (31,000 states)
_EMAIL_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_EMAIL_DOMAIN = f"{_EMAIL_LABEL}(?:\\.{_EMAIL_LABEL})*"
_EMAIL = f"(?:{_DOT_ATOM}|{_QUOTED})@(?:{_EMAIL_DOMAIN}|\\[{_IPV4}\\]|\\[IPv6:{_IPV6}\\])"

# --- URIs (RFC 3986) and IRIs (RFC 3987)
_SUB_DELIMS = "!$&'()*+,;="
_PCT = f"%{_HEX}{_HEX}"
_SCHEME = f"{_ALPHA}[A-Za-z0-9+\\-.]*"
#: RFC 3987 ``ucschar`` and ``iprivate``, as class contents
_UCSCHAR = (
    "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF"
    + "".join(f"\\u{{{plane:X}0000}}-\\u{{{plane:X}FFFD}}" for plane in range(1, 14))
    + "\\u{E1000}-\\u{EFFFD}"
)
_IPRIVATE = "\\uE000-\\uF8FF\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}"


def _uri_patterns(unreserved: str, private: str) -> tuple[str, str]:
    """``(absolute, relative reference)`` patterns of RFC 3986, or RFC 3987 with wider classes."""
    pchar = f"(?:[{unreserved}{_SUB_DELIMS}:@]|{_PCT})"
    userinfo = f"(?:[{unreserved}{_SUB_DELIMS}:]|{_PCT})*"
    ipvfuture = f"[vV]{_HEX}+\\.[A-Za-z0-9\\-._~{_SUB_DELIMS}:]+"
    host = f"(?:\\[(?:{_IPV6}|{ipvfuture})\\]|(?:[{unreserved}{_SUB_DELIMS}]|{_PCT})*)"
    authority = f"(?:{userinfo}@)?{host}(?::[0-9]*)?"
    segment = f"{pchar}*"
    segment_nz = f"{pchar}+"
    segment_nz_nc = f"(?:[{unreserved}{_SUB_DELIMS}@]|{_PCT})+"
    path_abempty = f"(?:/{segment})*"
    path_absolute = f"/(?:{segment_nz}(?:/{segment})*)?"
    path_rootless = f"{segment_nz}(?:/{segment})*"
    path_noscheme = f"{segment_nz_nc}(?:/{segment})*"
    query = f"(?:{pchar}|[/?{private}])*"
    fragment = f"(?:{pchar}|[/?])*"
    tail = f"(?:\\?{query})?(?:#{fragment})?"
    absolute = f"{_SCHEME}:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless}|){tail}"
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme}|){tail}"
    return absolute, relative


_UNRESERVED = "A-Za-z0-9\\-._~"
_URI, _RELATIVE_REF = _uri_patterns(_UNRESERVED, "")
_IRI, _IRELATIVE_REF = _uri_patterns(_UNRESERVED + _UCSCHAR, _IPRIVATE)

# --- URI templates (RFC 6570; the apostrophe is a literal, as its errata say)
_VARCHAR = f"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = f"{_VARCHAR}(?:\\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\\*)?"
_EXPRESSION = f"\\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\\}}"
_TEMPLATE_LITERAL = f"(?:[!#$&'()*+,\\-./0-9:;=?@A-Z\\[\\]_a-z~{_UCSCHAR}{_IPRIVATE}]|{_PCT})"
_URI_TEMPLATE = f"(?:{_TEMPLATE_LITERAL}|{_EXPRESSION})*"

# --- durations (RFC 3339 Appendix A)
_DUR_SECOND = "[0-9]+S"
_DUR_MINUTE = f"[0-9]+M(?:{_DUR_SECOND})?"
_DUR_HOUR = f"[0-9]+H(?:{_DUR_MINUTE})?"
_DUR_TIME = f"T(?:{_DUR_HOUR}|{_DUR_MINUTE}|{_DUR_SECOND})"
_DUR_DAY = "[0-9]+D"
_DUR_MONTH = f"[0-9]+M(?:{_DUR_DAY})?"
_DUR_YEAR = f"[0-9]+Y(?:{_DUR_MONTH})?"
_DUR_DATE = f"(?:{_DUR_DAY}|{_DUR_MONTH}|{_DUR_YEAR})(?:{_DUR_TIME})?"
_DURATION = f"P(?:{_DUR_DATE}|{_DUR_TIME}|[0-9]+W)"

_JSON_POINTER = "(?:/(?:[^~/]|~[01])*)*"

_PATTERNS = {
    "date": _DATE,
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": f"(?:{_URI}|{_RELATIVE_REF})",
    "iri": _IRI,
    "iri-reference": f"(?:{_IRI}|{_IRELATIVE_REF})",
    "uri-template": _URI_TEMPLATE,
    "uuid": f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}",
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": f"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})",
}

#: The format names :func:`format_content` knows.
FORMATS = frozenset(_PATTERNS) | {"time", "date-time"}


@memoized(max_entries=32)
def format_content(name: str) -> Node | None:
    """The decoded-text language of a JSON Schema string ``format``.

    Parameters
    ----------
    name
        The ``format`` keyword's value (see the module docstring for the
        formats and what each enforces).

    Returns
    -------
    Node or None
        IR over the decoded string (full match), or ``None`` for a format this
        module does not know.
    """
    if name in ("time", "date-time"):
        time = alt(parse_regex(_ORDINARY_TIME), _leap_second_times())
        if name == "time":
            return time
        return concat(parse_regex(_DATE), parse_regex("[Tt]"), time)
    pattern = _PATTERNS.get(name)
    if pattern is None:
        return None
    return parse_regex(pattern)
