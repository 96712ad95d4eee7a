"""tokenizer.json files built with ``tokenizers``, checked against its own decoder."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tokensieve.vocab import TokenizerInfo

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

CORPUS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "Héllo wörld: café, naïve, € 12.50 — 日本語のテキスト, 中文, русский текст 😀🎉",
    '{"name": "tokensieve", "ok": true, "n": [1, 2, 3]}\n\tindented  two  spaces',
    "def f(x):\n    return x * 2  # comment\n",
]
SAMPLES = CORPUS + ["fox 😀 日本 € wörld", "  leading spaces and trailing  ", "a\n\nb"]


def _contribution(tok: Tokenizer, prefix: int, token: int, special: bool) -> str:
    """The text ``token`` adds mid-text (between two ``prefix`` tokens), by the tokenizer's own decoder."""
    base = tok.decode([prefix], skip_special_tokens=False)
    tail = tok.decode([prefix, prefix], skip_special_tokens=False)[len(base) :]
    full = tok.decode([prefix, token, prefix], skip_special_tokens=special)
    assert full.startswith(base) and full.endswith(tail), (full, base, tail)
    return full[len(base) : len(full) - len(tail)]


def _check_against_decoder(tok: Tokenizer, info: TokenizerInfo, prefix_text: str = "a") -> None:
    """Every token (lossy for partial UTF-8) and exact round trips of sample texts."""
    data = json.loads(tok.to_str())
    special = {t["id"] for t in data["added_tokens"] if t["special"]}
    prefix = tok.token_to_id(prefix_text)
    assert prefix is not None
    assert info.num_real_tokens == tok.get_vocab_size()
    for token in range(tok.get_vocab_size()):
        expected = _contribution(tok, prefix, token, token in special)
        ours = info.decoded_vocab[token]
        assert ours.decode("utf-8", "replace") == expected, (token, tok.id_to_token(token), ours)
        assert (token in info.special_token_ids) == (token in special or not ours)
    for text in SAMPLES:
        ids = tok.encode(text, add_special_tokens=False).ids
        joined = b"".join(info.decoded_vocab[i] for i in ids)
        # decoded after the prefix, so that no start-of-output rule applies
        expected = tok.decode([prefix, *ids], skip_special_tokens=False)[len(tok.decode([prefix])) :]
        assert joined.decode("utf-8", "replace") == expected


def _byte_level_tokenizer() -> Tokenizer:
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS * 20, vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    )
    tok: Tokenizer = bpe._tokenizer
    # non-special added tokens go through the decoder too: "Ġyo" reads " yo", "é€" stays as is
    tok.add_tokens([AddedToken("Ġyo", special=False), AddedToken("<tool>", special=False), AddedToken("é€")])
    return tok


def _llama_style_tokenizer() -> Tokenizer:
    """BPE with byte fallback and the Llama decoder chain (Replace, ByteFallback, Fuse, Strip)."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{b:02X}>": 3 + b for b in range(256)})
    for piece in ["▁", "a", "b", "ab", "▁a", "▁ab", "▁▁", "é", "▁é", "▁hello", "日本", "▁▁▁▁", "<0x", "x>"]:
        vocab[piece] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens([AddedToken("<unk>"), AddedToken("<s>"), AddedToken("</s>")])
    return tok


def _metaspace_bpe_tokenizer() -> Tokenizer:
    sp = tokenizers.SentencePieceBPETokenizer()
    sp.train_from_iterator(CORPUS * 20, vocab_size=500, special_tokens=["<unk>", "</s>"])
    return sp._tokenizer


def _metaspace_unigram_tokenizer() -> Tokenizer:
    sp = tokenizers.SentencePieceUnigramTokenizer()
    sp.train_from_iterator(CORPUS * 20, vocab_size=300, special_tokens=["<unk>", "</s>"], unk_token="<unk>")
    return sp._tokenizer


def _wordpiece_tokenizer() -> Tokenizer:
    wp = tokenizers.BertWordPieceTokenizer(lowercase=False)
    wp.train_from_iterator(CORPUS * 20, vocab_size=400)
    return wp._tokenizer


BUILDERS = {
    "byte_level": (_byte_level_tokenizer, "a"),
    "llama_style": (_llama_style_tokenizer, "a"),
    "metaspace_bpe": (_metaspace_bpe_tokenizer, "a"),
    "metaspace_unigram": (_metaspace_unigram_tokenizer, "a"),
    "wordpiece": (_wordpiece_tokenizer, "a"),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_file_against_tokenizers_decoder(kind: str, tmp_path: Path) -> None:
    build, prefix = BUILDERS[kind]
    tok = build()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    info = TokenizerInfo.from_file(path)
    _check_against_decoder(tok, info, prefix)
    # the same through every entry point
    for other in (
        TokenizerInfo.from_file(tmp_path),
        TokenizerInfo.from_tokenizer_json(path),
        TokenizerInfo.from_huggingface(tok),
    ):
        assert other.decoded_vocab == info.decoded_vocab
        assert other.hash == info.hash


def test_byte_level_details(tmp_path: Path) -> None:
    tok = _byte_level_tokenizer()
    info = TokenizerInfo.from_huggingface(tok)
    vocab = tok.get_vocab(with_added_tokens=True)
    assert info.decoded_vocab[vocab["Ġyo"]] == b" yo"
    assert info.decoded_vocab[vocab["é€"]] == "é€".encode()
    assert info.decoded_vocab[vocab["<tool>"]] == b"<tool>"
    assert info.decoded_vocab[vocab["Ġ"]] == b" "
    for name in ("<|endoftext|>", "<|im_start|>", "<|im_end|>"):
        assert vocab[name] in info.special_token_ids
    # end-of-generation specials are stop tokens by name; <|im_start|> is not
    assert info.stop_token_ids == sorted([vocab["<|endoftext|>"], vocab["<|im_end|>"]])


def test_llama_style_details() -> None:
    tok = _llama_style_tokenizer()
    info = TokenizerInfo.from_huggingface(tok)
    vocab = tok.get_vocab()
    assert info.decoded_vocab[vocab["▁hello"]] == b" hello"  # leading space kept mid-text
    assert info.decoded_vocab[vocab["▁▁▁▁"]] == b"    "
    assert info.decoded_vocab[vocab["<0x41>"]] == b"A"
    assert info.decoded_vocab[vocab["<0xE2>"]] == b"\xe2"
    assert info.decoded_vocab[vocab["<0x"]] == b"<0x"  # not a byte token
    assert info.special_token_ids == [0, 1, 2]
    assert info.stop_token_ids == [2]
    # the first token of an output loses its leading space in the decoder, not in the vocabulary
    assert tok.decode([vocab["▁hello"]]) == "hello"


def test_byte_fallback_tokens_exact(byte_token_checker) -> None:
    tok = _llama_style_tokenizer()
    info = TokenizerInfo.from_huggingface(tok)
    vocab = tok.get_vocab()
    byte_ids = {b: vocab[f"<0x{b:02X}>"] for b in range(256)}
    a = vocab["a"]

    def decode_mid_text(ids: list[int]) -> str:
        return tok.decode([a, *ids])[1:]

    assert byte_token_checker(decode_mid_text, byte_ids, info.decoded_vocab) == 256 - 13


def test_byte_level_single_bytes_exact() -> None:
    """The 256 single-byte tokens, located through the tokenizer's own pre-tokenizer."""
    tok = _byte_level_tokenizer()
    info = TokenizerInfo.from_huggingface(tok)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    vocab = tok.get_vocab()
    checked = 0
    for text in ["a", "é", "€", "😀", "߿", "\U0010ffff", "\x00\x7f"] + [
        chr(c) for c in range(0x80, 0x800, 7)
    ]:
        chars = "".join(piece for piece, _ in pre.pre_tokenize_str(text))
        ids = [vocab[c] for c in chars]
        assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode()
        checked += len(ids)
    assert checked > 300


def test_decoder_steps_against_tokenizers(tmp_path: Path) -> None:
    """Less common decoder steps, each checked against tokenizers on a small vocabulary."""
    pieces = ["a", "b", "ab", "_x_", "__", "x</w>", "</w>", "  sp", "##ab", "c.", "X"]
    cases = [
        decoders.Replace("_", " "),
        decoders.Sequence([decoders.Strip(" ", 1, 1), decoders.Replace("_", "-")]),
        decoders.Sequence([decoders.Replace("_", " "), decoders.Fuse(), decoders.Strip(" ", 1, 0)]),
        decoders.BPEDecoder(suffix="</w>"),
        decoders.Metaspace(replacement="_", prepend_scheme="always"),
        decoders.WordPiece(prefix="##", cleanup=True),
        decoders.ByteLevel(),
    ]
    for decoder in cases:
        tok = Tokenizer(models.WordLevel(vocab={p: i for i, p in enumerate(pieces)}, unk_token="X"))
        tok.decoder = decoder
        info = TokenizerInfo.from_huggingface(tok)
        for i in range(len(pieces)):
            expected = _contribution(tok, 0, i, False)
            assert info.decoded_vocab[i].decode() == expected, (decoder, pieces[i])


def test_regex_replace(tmp_path: Path) -> None:
    tok = Tokenizer(models.WordLevel(vocab={"a": 0, "a1b22": 1, "X": 2}, unk_token="X"))
    tok.decoder = decoders.Replace(tokenizers.Regex(r"\d+"), "#")
    info = TokenizerInfo.from_huggingface(tok)
    assert info.decoded_vocab[1] == tok.decode([0, 1])[1:].encode() == b"a#b#"


def test_no_decoder_means_raw_text() -> None:
    tok = Tokenizer(models.WordLevel(vocab={"a": 0, "bc": 1, "X": 2}, unk_token="X"))
    info = TokenizerInfo.from_huggingface(tok)
    assert info.decoded_vocab == [b"a", b"bc", b"X"]


def test_model_folder_configs(tmp_path: Path) -> None:
    tok = _byte_level_tokenizer()
    tok.save(str(tmp_path / "tokenizer.json"))
    n = tok.get_vocab_size()
    eot = tok.token_to_id("<|im_end|>")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<|im_start|>"}}))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [eot, 5]}))
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": n + 40, "eos_token_id": 7}))
    for path in (tmp_path, tmp_path / "tokenizer.json"):
        info = TokenizerInfo.from_file(path)
        assert info.vocab_size == n + 40 and info.num_real_tokens == n
        assert info.decoded_vocab[n:] == [b""] * 40
        expected = {tok.token_to_id(t) for t in ("<|im_start|>", "<|im_end|>", "<|endoftext|>")} | {5, 7}
        assert set(info.stop_token_ids) == expected
    # explicit arguments win
    info = TokenizerInfo.from_file(tmp_path, vocab_size=n, stop_token_ids=[3])
    assert info.vocab_size == n and info.stop_token_ids == [3]


def test_transformers_object_matches_file(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    tok = _llama_style_tokenizer()
    tok.save(str(tmp_path / "tokenizer.json"))
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", bos_token="<s>")
    from_object = TokenizerInfo.from_huggingface(hf)
    from_file = TokenizerInfo.from_file(tmp_path / "tokenizer.json")
    assert from_object.decoded_vocab == from_file.decoded_vocab
    assert from_object.stop_token_ids == [hf.eos_token_id] == from_file.stop_token_ids
    assert set(hf.all_special_ids) <= set(from_object.special_token_ids)


def test_holes_in_ids_are_special(tmp_path: Path) -> None:
    data = {
        "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 3}, "unk_token": "a"},
        "added_tokens": [{"id": 5, "content": "<eos>", "special": True}],
        "decoder": None,
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    info = TokenizerInfo.from_file(path)
    assert info.decoded_vocab == [b"a", b"", b"", b"b", b"", b""]
    assert info.special_token_ids == [1, 2, 4, 5]
    assert info.stop_token_ids == [5]


def test_random_round_trips_byte_level() -> None:
    tok = _byte_level_tokenizer()
    info = TokenizerInfo.from_huggingface(tok)
    rng = random.Random(1)
    alphabet = 'abc xyz\n\t{}"é€日本😀ÿ\u0100'
    for _ in range(200):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        ids = tok.encode(text).ids
        assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode()
