"""The code points of ECMA-262 Unicode property escapes (``\\p{...}``, ``\\P{...}``).

Supported: every General_Category value, by its short or long alias or its
other ECMA-262 alias (``\\p{L}``, ``\\p{Letter}``, ``\\p{Lu}``, ``\\p{digit}``,
``\\p{punct}``...), alone or as ``General_Category=...`` / ``gc=...``, and the
binary properties ``Any``, ``ASCII`` and ``Assigned``. The categories are those
of the running Python's :mod:`unicodedata` (``unicodedata.unidata_version``),
read once per process on first use (about 0.2 s); a JavaScript engine with a
newer Unicode version also counts the characters assigned since as letters,
digits and so on.

``Script``/``sc``, ``Script_Extensions``/``scx`` and the other binary
properties (``Alphabetic``, ``White_Space``, ``Emoji``...) need tables that
the standard library does not hold: they are reported as not supported, never
approximated.
"""

from __future__ import annotations

import threading
import unicodedata

import numpy as np

from .._memo import memoized
from ..ir.nodes import MAX_CODE_POINT, Ranges, normalize_ranges

__all__ = ["UnknownProperty", "UnsupportedProperty", "property_ranges"]


class UnknownProperty(ValueError):
    """The name is no Unicode property or value that ECMA-262 allows."""


class UnsupportedProperty(ValueError):
    """A valid property whose code points this module cannot list exactly."""


#: the General_Category values, by their short alias, each with its long and other aliases
_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Lu": ("Uppercase_Letter",),
    "Ll": ("Lowercase_Letter",),
    "Lt": ("Titlecase_Letter",),
    "Lm": ("Modifier_Letter",),
    "Lo": ("Other_Letter",),
    "Mn": ("Nonspacing_Mark",),
    "Mc": ("Spacing_Mark",),
    "Me": ("Enclosing_Mark",),
    "Nd": ("Decimal_Number", "digit"),
    "Nl": ("Letter_Number",),
    "No": ("Other_Number",),
    "Pc": ("Connector_Punctuation",),
    "Pd": ("Dash_Punctuation",),
    "Ps": ("Open_Punctuation",),
    "Pe": ("Close_Punctuation",),
    "Pi": ("Initial_Punctuation",),
    "Pf": ("Final_Punctuation",),
    "Po": ("Other_Punctuation",),
    "Sm": ("Math_Symbol",),
    "Sc": ("Currency_Symbol",),
    "Sk": ("Modifier_Symbol",),
    "So": ("Other_Symbol",),
    "Zs": ("Space_Separator",),
    "Zl": ("Line_Separator",),
    "Zp": ("Paragraph_Separator",),
    "Cc": ("Control", "cntrl"),
    "Cf": ("Format",),
    "Cs": ("Surrogate",),
    "Co": ("Private_Use",),
    "Cn": ("Unassigned",),
}
#: the groups of categories, by their short alias, with their aliases and members
_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "L": (("Letter",), ("Lu", "Ll", "Lt", "Lm", "Lo")),
    "LC": (("Cased_Letter",), ("Lu", "Ll", "Lt")),
    "M": (("Mark", "Combining_Mark"), ("Mn", "Mc", "Me")),
    "N": (("Number",), ("Nd", "Nl", "No")),
    "P": (("Punctuation", "punct"), ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")),
    "S": (("Symbol",), ("Sm", "Sc", "Sk", "So")),
    "Z": (("Separator",), ("Zs", "Zl", "Zp")),
    "C": (("Other",), ("Cc", "Cf", "Cs", "Co", "Cn")),
}
#: every name of a General_Category value -> the categories it stands for
_VALUES: dict[str, tuple[str, ...]] = {}
for _short, _aliases in _CATEGORIES.items():
    for _name in (_short, *_aliases):
        _VALUES[_name] = (_short,)
for _short, (_aliases, _members) in _GROUPS.items():
    for _name in (_short, *_aliases):
        _VALUES[_name] = _members
_CODES = {name: code for code, name in enumerate(_CATEGORIES)}

_GENERAL_CATEGORY = frozenset({"General_Category", "gc"})
_NOT_LISTED = frozenset({"Script", "sc", "Script_Extensions", "scx"})
#: the binary properties ECMA-262 allows (table "Binary Unicode property aliases"), bar the three listed here
_OTHER_BINARY = frozenset(
    """ASCII_Hex_Digit AHex Alphabetic Alpha Bidi_Control Bidi_C Bidi_Mirrored Bidi_M Case_Ignorable CI
    Cased Changes_When_Casefolded CWCF Changes_When_Casemapped CWCM Changes_When_Lowercased CWL
    Changes_When_NFKC_Casefolded CWKCF Changes_When_Titlecased CWT Changes_When_Uppercased CWU Dash
    Default_Ignorable_Code_Point DI Deprecated Dep Diacritic Dia Emoji Emoji_Component EComp
    Emoji_Modifier EMod Emoji_Modifier_Base EBase Emoji_Presentation EPres Extended_Pictographic ExtPict
    Extender Ext Grapheme_Base Gr_Base Grapheme_Extend Gr_Ext Hex_Digit Hex IDS_Binary_Operator IDSB
    IDS_Trinary_Operator IDST ID_Continue IDC ID_Start IDS Ideographic Ideo Join_Control Join_C
    Logical_Order_Exception LOE Lowercase Lower Math Noncharacter_Code_Point NChar Pattern_Syntax Pat_Syn
    Pattern_White_Space Pat_WS Quotation_Mark QMark Radical Regional_Indicator RI Sentence_Terminal STerm
    Soft_Dotted SD Terminal_Punctuation Term Unified_Ideograph UIdeo Uppercase Upper Variation_Selector VS
    White_Space space XID_Continue XIDC XID_Start XIDS""".split()
)

_lock = threading.Lock()
_table: np.ndarray | None = None


def _categories() -> np.ndarray:
    """``uint8 (0x110000,)``: the General_Category of every code point (codes of ``_CATEGORIES``)."""
    global _table
    with _lock:
        if _table is None:
            names = map(unicodedata.category, map(chr, range(MAX_CODE_POINT + 1)))
            _table = np.frombuffer(bytes(map(_CODES.__getitem__, names)), dtype=np.uint8)
        return _table


@memoized(max_entries=64)
def _ranges_of(categories: tuple[str, ...]) -> Ranges:
    """The code points whose General_Category is one of ``categories``, as ranges."""
    wanted = np.zeros(len(_CODES), dtype=bool)
    wanted[[_CODES[c] for c in categories]] = True
    inside = wanted.take(_categories())
    edges = np.flatnonzero(np.diff(inside.view(np.int8), prepend=0, append=0))
    starts, ends = edges[0::2], edges[1::2] - 1
    return normalize_ranges(zip(starts.tolist(), ends.tolist(), strict=True))


def property_ranges(text: str) -> Ranges:
    """The code points of ``\\p{text}``, as normalised ranges (surrogates left out).

    Parameters
    ----------
    text
        What stands between the braces: ``Name``, ``Name=Value``.

    Raises
    ------
    UnknownProperty
        For a name or value that ECMA-262 does not allow.
    UnsupportedProperty
        For ``Script``, ``Script_Extensions`` and the binary properties other
        than ``Any``, ``ASCII`` and ``Assigned``.
    """
    name, eq, value = text.partition("=")
    if eq:
        if name in _GENERAL_CATEGORY:
            if value not in _VALUES:
                raise UnknownProperty(f"unknown General_Category value {value!r}")
            return _ranges_of(_VALUES[value])
        if name in _NOT_LISTED:
            raise UnsupportedProperty(f"the {name} property is not supported (no script tables)")
        raise UnknownProperty(f"unknown Unicode property {name!r}")
    if text in _VALUES:
        return _ranges_of(_VALUES[text])
    if text == "Any":
        return normalize_ranges([(0, MAX_CODE_POINT)])
    if text == "ASCII":
        return ((0, 0x7F),)
    if text == "Assigned":
        return _ranges_of(tuple(c for c in _CATEGORIES if c != "Cn"))
    if text in _OTHER_BINARY:
        raise UnsupportedProperty(f"the binary property {text} is not supported (no table for it)")
    if text in _NOT_LISTED:
        raise UnknownProperty(f"{text} needs a value ({text}=...)")
    raise UnknownProperty(f"unknown Unicode property {text!r}")
