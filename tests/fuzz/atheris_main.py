"""Coverage-guided fuzzing of the front ends and tokenizer readers with atheris.

Usage (``scripts/fuzz.sh`` runs every target this way)::

    python3 tests/fuzz/atheris_main.py TARGET [libFuzzer flags, e.g. -runs=100000 -timeout=20]

``TARGET`` is one of ``regex``, ``gbnf``, ``ebnf``, ``lark``, ``schema``,
``gguf``, ``sentencepiece``, ``tekken``. The text targets decode the input
as UTF-8 (with replacement); the file targets overwrite a real file's bytes
at the input's first bytes' offset. Any exception other than a
``TokensieveError`` is a crash; libFuzzer's ``-timeout`` and
``-rss_limit_mb`` catch hangs and memory blow-ups.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with atheris.instrument_imports(include=["tokensieve"]):
    from tokensieve import GrammarMatcher, TokenizerInfo, TokensieveError

from hostile.corpus import real_file_bytes, tekken_small_bytes  # noqa: E402
from hostile.harness import tiny_compiler  # noqa: E402

TEXT_TARGETS = ("regex", "gbnf", "ebnf", "lark", "schema")
#: starting inputs of the text targets, written into an empty corpus folder
SEEDS = {
    "regex": ["[a-z]+@[0-9]{3}", "(?:ab|c)*d?", "\\d{2,4}-\\w+", "(?=a)[a-c]{1,5}", "\\p{Lu}\\u00e9."],
    "gbnf": ['root ::= "a" root | "b"', 'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"'],
    "ebnf": ['root ::= "a" root | "b"', 'root ::= item ("," item)*\nitem ::= [a-z]+ | "(" root ")"'],
    "lark": ['start: item ("," item)*\nitem: WORD | "(" start ")"\nWORD: /[a-z]+/', 'start: "a" start | "b"'],
    "schema": [
        '{"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}, "required": ["a"]}',
        '{"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"}',
        '{"anyOf": [{"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}, {"enum": [1, "x", null]}]}',
    ],
}
FILE_TARGETS = {"gguf": ".gguf", "sentencepiece": ".model", "tekken": ".json"}


def main() -> None:
    target = sys.argv[1]
    compiler = tiny_compiler()
    folder = Path(tempfile.mkdtemp(prefix="tokensieve-atheris-"))
    seed = b""
    if target in FILE_TARGETS:
        data = tekken_small_bytes() if target == "tekken" else real_file_bytes(target)
        if data is None:
            sys.exit(f"the real {target} file is not installed")
        seed = data[: 2 << 20]  # a GGUF file's metadata lies in its first 2 MiB

    def one_input(data: bytes) -> None:
        try:
            if target in TEXT_TARGETS:
                text = data.decode("utf-8", "replace")
                if target == "regex":
                    compiled = compiler.compile_regex(text)
                elif target == "schema":
                    compiled = compiler.compile_json_schema(text)
                else:
                    compiled = compiler.compile_grammar(text, syntax=target)
                GrammarMatcher(compiled).next_token_mask()
            else:
                fdp = atheris.FuzzedDataProvider(data)
                at = fdp.ConsumeIntInRange(0, len(seed) - 1)
                patch = fdp.ConsumeBytes(fdp.remaining_bytes())
                mutated = seed[:at] + patch + seed[at + len(patch) :]
                path = folder / f"input{FILE_TARGETS[target]}"
                path.write_bytes(mutated)
                TokenizerInfo.from_file(path)
        except TokensieveError:
            pass

    corpus = next((Path(a) for a in sys.argv[2:] if not a.startswith("-")), None)
    if corpus is not None and target in SEEDS and not any(corpus.iterdir()):
        for i, text in enumerate(SEEDS[target]):
            (corpus / f"seed-{i}").write_text(text)
    atheris.Setup([sys.argv[0], *sys.argv[2:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
