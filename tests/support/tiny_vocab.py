"""Small byte-level vocabularies built in memory."""

from __future__ import annotations

import random

EOS = 0
SPECIAL = 1


def make_tiny_vocab(seed: int = 0, extra: int = 400) -> list[bytes]:
    """All 256 single bytes, random ASCII words, and tokens that split UTF-8 characters."""
    rng = random.Random(seed)
    vocab: list[bytes] = [b"", b""]  # EOS, a special token
    vocab += [bytes([b]) for b in range(256)]
    alphabet = "abcdexyz0123456789-_. @:/é€😀"
    for _ in range(extra):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 6)))
        data = word.encode("utf-8")
        if rng.random() < 0.2 and len(data) > 2:
            # cut in the middle of the bytes: may split a multi-byte character
            data = data[: rng.randint(1, len(data) - 1)]
        vocab.append(data)
    vocab += ["é".encode()[:1] + b"x", "😀".encode()[:3], "😀".encode()[1:], b"2024", b"-0", b"1-"]
    return vocab
