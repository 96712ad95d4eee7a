"""Coverage-guided fuzzing of the front ends and tokenizer readers with atheris.

Usage (``scripts/fuzz.sh`` runs every target this way)::

    python3 tests/fuzz/atheris_main.py TARGET [libFuzzer flags, e.g. -runs=100000 -timeout=20]

``TARGET`` is one of ``regex``, ``gbnf``, ``ebnf``, ``lark``, ``schema``,
``gguf``, ``sentencepiece``, ``tekken``. The text targets decode the input
as UTF-8 (with replacement); the file targets overwrite a real file's bytes
at the input's first bytes' offset. Any exception other than a
``TokensieveError`` is a crash; libFuzzer's ``-timeout`` and
``-rss_limit_mb`` catch hangs and memory blow-ups.

Comparisons are not traced (atheris' data-flow feedback) unless
``TOKENSIEVE_ATHERIS_DATAFLOW=1``: atheris 3.0.0 keeps a reference to the
result of every traced comparison that is not a ``bool``, so each elementwise
comparison of numpy arrays in the code under test leaks its result array (a
run grows by gigabytes in 100,000 inputs, and libFuzzer stops it as out of
memory). Coverage feedback is unchanged.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

if os.environ.get("TOKENSIEVE_ATHERIS_DATAFLOW") == "1":
    instrumented = atheris.instrument_imports(include=["tokensieve"])
else:
    from atheris.import_hook import HookManager

    instrumented = HookManager({"tokensieve"}, set(), True, trace_dataflow=False)
with instrumented:
    from tokensieve import TokenizerInfo, TokensieveError

from fuzz.text_inputs import SEEDS, TEXT_TARGETS, run_text  # noqa: E402
from hostile.corpus import real_file_bytes, tekken_small_bytes  # noqa: E402
from hostile.harness import tiny_compiler  # noqa: E402

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
                run_text(compiler, target, data.decode("utf-8", "replace"))
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
