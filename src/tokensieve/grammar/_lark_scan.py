"""The lexical layer of the Lark reader: spacing, names, numbers, string literals and regexes.

:class:`LarkScanner` reads the pieces of a Lark grammar text at a position
and turns literals (``"abc"``, ``"abc"i``, ``"a".."z"``) and regexes
(``/.../flags``, Python ``re`` syntax) into IR, with Lark's escape processing;
``lark._LarkParser`` builds the statements and expressions on it. Every error
is a :class:`~tokensieve.errors.GrammarError` at its position in the text.
"""

from __future__ import annotations

from ..errors import GrammarError, LimitExceeded
from ..ir.nodes import Node as IRNode
from ..ir.nodes import char_class, concat, literal, normalize_ranges
from ..limits import Limits
from ._pyregex import case_variants, parse_python_regex

__all__ = ["LarkScanner"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGITS = frozenset("0123456789")
_REGEX_FLAGS = frozenset("imslux")


class LarkScanner:
    """The text of a Lark grammar and the readers of its tokens.

    Parameters
    ----------
    src
        The grammar text.
    limits
        ``max_repetition`` bounds the numbers of ``x~m..n``; the regexes are
        parsed under these limits.
    """

    def __init__(self, src: str, limits: Limits) -> None:
        self.src = src
        self.n = len(src)
        self.limits = limits
        self.pos = 0

    def error(self, message: str, position: int) -> GrammarError:
        return GrammarError(message, self.src, position)

    # ------------------------------------------------------------ spacing
    def skip_inline(self, i: int) -> int:
        """Skip spaces, comments and backslash line continuations, but not line breaks."""
        src, n = self.src, self.n
        while i < n:
            c = src[i]
            if c in " \t\f":
                i += 1
            elif c == "#" or src.startswith("//", i):
                while i < n and src[i] != "\n":
                    i += 1
            elif c == "\\":
                j = i + 1
                while j < n and src[j] in " \t":
                    j += 1
                if src.startswith("\r\n", j):
                    i = j + 2
                elif src.startswith("\n", j):
                    i = j + 1
                else:
                    break
            else:
                break
        return i

    def skip_lines(self, i: int) -> int:
        """Skip white space, comments and line breaks."""
        while True:
            i = self.skip_inline(i)
            if i < self.n and self.src[i] in "\r\n":
                i += 1
            else:
                return i

    def end_of_line(self, i: int, what: str) -> None:
        i = self.skip_inline(i)
        if i < self.n and self.src[i] not in "\r\n":
            raise self.error(f"unexpected {self.src[i]!r} after {what}", i)
        self.pos = i

    def read_name(self, i: int) -> tuple[str, int]:
        j = i
        while j < self.n and self.src[j] in _NAME_CHARS:
            j += 1
        return self.src[i:j], j

    def is_terminal_name(self, name: str, pos: int) -> bool:
        letters = name.lstrip("_")
        if not letters or letters[0] in _DIGITS:
            raise self.error(f"invalid name {name!r}", pos)
        if letters == letters.lower():
            return False
        if letters == letters.upper():
            return True
        raise self.error(f"invalid name {name!r}: rule names are lowercase and terminal names uppercase", pos)

    def number(self, i: int) -> tuple[int, int]:
        j = i
        while j < self.n and self.src[j] in _DIGITS:
            j += 1
        if j == i:
            raise self.error("expected a number", i)
        text = self.src[i:j]
        limit = self.limits.max_repetition
        if len(text) > 18 or int(text) > limit:
            raise LimitExceeded("max_repetition", limit, f"repetition count {text} at position {i}")
        return int(text), j

    # ------------------------------------------------- literals and regexes
    def scan_string(self, i: int) -> tuple[str, int, int]:
        """The body of the string literal at ``i``, where the body starts, and the end of the quote."""
        src, n = self.src, self.n
        j = i + 1
        while True:
            if j >= n or src[j] in "\r\n":
                raise self.error("unterminated string literal", i)
            c = src[j]
            if c == '"':
                return src[i + 1 : j], i + 1, j + 1
            j += 2 if c == "\\" and j + 1 < n and src[j + 1] in '"\\' else 1

    def string_value(self, i: int) -> tuple[str, bool, int]:
        body, base, end = self.scan_string(i)
        chars, _ = self.unescape(body, base)
        value = "".join(chars).replace("\\\\", "\\")
        insensitive = end < self.n and self.src[end] == "i"
        return value, insensitive, end + (1 if insensitive else 0)

    def string_or_range(self, i: int) -> tuple[IRNode, int]:
        value, insensitive, end = self.string_value(i)
        k = self.skip_inline(end)
        if self.src.startswith("..", k):
            k = self.skip_inline(k + 2)
            if not self.src.startswith('"', k):
                raise self.error("expected a string after '..'", k)
            upper, _, end = self.string_value(k)
            if len(value) != 1 or len(upper) != 1:
                raise self.error("a range '..' needs two single-character strings", i)
            lo, hi = ord(value), ord(upper)
            if lo > hi:
                raise self.error("range out of order", i)
            return char_class([(lo, hi)]), end
        for ch in value:
            if 0xD800 <= ord(ch) <= 0xDFFF:
                raise self.error(f"lone surrogate U+{ord(ch):04X} cannot occur in UTF-8 text", i)
        if insensitive:
            return concat(
                *(char_class(normalize_ranges((v, v) for v in case_variants(ord(ch)))) for ch in value)
            ), end
        return literal(value), end

    def regex(self, i: int) -> tuple[IRNode, int]:
        src, n = self.src, self.n
        j = i + 1
        while True:
            if j >= n:
                raise self.error("unterminated regular expression", i)
            c = src[j]
            if c == "/":
                break
            j += 2 if c == "\\" and j + 1 < n and src[j + 1] in "/\\" else 1
        body = src[i + 1 : j]
        k = j + 1
        while k < n and src[k] in _REGEX_FLAGS:
            k += 1
        flags = src[j + 1 : k]
        if "l" in flags:
            raise self.error("the l (locale) flag is not supported", j + 1 + flags.index("l"))
        if "\n" in body and "x" not in flags:
            raise self.error("a regular expression may only span lines with the x (verbose) flag", i)
        chars, where = self.unescape(body, i + 1)
        node = parse_python_regex("".join(chars), flags, source=src, where=where, limits=self.limits)
        return node, k

    def unescape(self, body: str, base: int) -> tuple[list[str], list[int]]:
        """Lark's escape processing of a literal or regex body, keeping source offsets.

        ``\\n \\t \\r \\f \\xHH \\uHHHH \\UHHHHHHHH`` become the character and
        ``\\"`` a quote; ``\\\\`` and every other escape are kept, for the
        regex engine (literals then turn ``\\\\`` into one backslash).
        """
        out: list[str] = []
        where: list[int] = []
        i, n = 0, len(body)
        while i < n:
            c = body[i]
            pos = base + i
            if c != "\\":
                out.append(c)
                where.append(pos)
                i += 1
                continue
            if i + 1 >= n:
                raise self.error("bad escaping: the literal ends with a backslash", pos)
            e = body[i + 1]
            if e == "\\":
                if body.startswith('"', i + 2):  # Lark reads \\" in a regex as an escaped quote
                    out += ["\\", '"']
                    where += [pos, pos]
                    i += 3
                else:
                    out += ["\\", "\\"]
                    where += [pos, pos]
                    i += 2
            elif e in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[e]
                digits = body[i + 2 : i + 2 + width]
                if len(digits) != width or not all(h in "0123456789abcdefABCDEF" for h in digits):
                    raise self.error(f"bad escape: \\{e} needs {width} hex digits", pos)
                value = int(digits, 16)
                if value > 0x10FFFF:
                    raise self.error(f"bad escape: \\{e}{digits} is beyond U+10FFFF", pos)
                out.append(chr(value))
                where.append(pos)
                i += 2 + width
            elif e in "nftr":
                out.append({"n": "\n", "f": "\f", "t": "\t", "r": "\r"}[e])
                where.append(pos)
                i += 2
            elif e == '"':
                out.append('"')
                where.append(pos)
                i += 2
            else:
                out += ["\\", e]
                where += [pos, pos + 1]
                i += 2
        return out, where
