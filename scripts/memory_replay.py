"""Resident memory of one process fed many distinct fuzz inputs, without atheris.

Every input is compiled by a compiler without a cache of compiled grammars
(as in the fuzz targets) and its first mask taken; the resident memory and the
bytes the per-process memos count are printed every ``--every`` inputs. With
the process-wide memo budget the memory flattens after warm-up; with
``TOKENSIEVE_MEMORY_BUDGET=none`` it shows what the memos' own bounds allow.

    python3 scripts/memory_replay.py                      # 6,000 inputs, GBNF
    python3 scripts/memory_replay.py --target schema --inputs 3000
    TOKENSIEVE_MEMORY_BUDGET=none python3 scripts/memory_replay.py

The inputs are the files of an atheris corpus folder (``--corpus``, e.g. one
that ``scripts/fuzz.sh`` left) or else the targets' seeds, each mutated by a
seeded random generator (characters inserted, deleted, duplicated, spliced
from another input) until that many distinct inputs were made.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz.text_inputs import SEEDS, TEXT_TARGETS, run_text  # noqa: E402
from hostile.harness import tiny_compiler  # noqa: E402

from tokensieve import TokensieveError  # noqa: E402
from tokensieve._memo import memory_budget, memory_in_use  # noqa: E402


def resident_mib() -> float:
    """The process's resident memory in MiB (Linux ``/proc``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def mutate(rng: random.Random, text: str, pool: list[str]) -> str:
    """``text`` with one to four random edits."""
    for _ in range(rng.randint(1, 4)):
        i, j = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        op = rng.randrange(4)
        if op == 0:
            other = rng.choice(pool)
            k = rng.randrange(len(other) + 1)
            text = text[:i] + other[k : k + rng.randint(1, 12)] + text[i:]
        elif op == 1:
            text = text[:i] + text[j:]
        elif op == 2:
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0x800)])) + text[i:]
    return text[:4000]


def inputs(target: str, corpus: Path | None, count: int, seed: int) -> list[str]:
    """``count`` distinct inputs for ``target``."""
    pool = list(SEEDS[target])
    if corpus is not None and corpus.is_dir():
        pool += [p.read_bytes().decode("utf-8", "replace") for p in sorted(corpus.iterdir()) if p.is_file()]
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        text = mutate(rng, rng.choice(pool), pool)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", choices=TEXT_TARGETS, default="gbnf")
    parser.add_argument("--inputs", type=int, default=6000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--corpus", type=Path, default=None, help="an atheris corpus folder of the target")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    texts = inputs(args.target, args.corpus, args.inputs, args.seed)
    compiler = tiny_compiler()
    budget = memory_budget()
    print(
        f"target {args.target}, {len(texts)} distinct inputs, memo budget "
        f"{'none' if budget is None else f'{budget / 2**20:.0f} MiB'}, resident {resident_mib():.0f} MiB"
    )
    print(f"{'inputs':>8} {'seconds':>8} {'resident MiB':>13} {'memos MiB':>10} {'errors':>7}")
    start, errors = time.perf_counter(), 0
    for n, text in enumerate(texts, 1):
        try:
            run_text(compiler, args.target, text)
        except TokensieveError:
            errors += 1
        if n % args.every == 0 or n == len(texts):
            print(
                f"{n:>8} {time.perf_counter() - start:>8.0f} {resident_mib():>13.0f} "
                f"{memory_in_use() / 2**20:>10.1f} {errors:>7}",
                flush=True,
            )


if __name__ == "__main__":
    main()
