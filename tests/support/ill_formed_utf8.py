"""Byte sequences that are not UTF-8: overlong forms, surrogates, code points past U+10FFFF, stray bytes."""

ILL_FORMED_UTF8 = [
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xe0\x80\x80",
    b"\xed\xa0\x80",
    b"\xf0\x80\x80\x80",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\x80",
    b"\xbf",
    b"\xff",
]
