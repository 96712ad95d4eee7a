"""Timings of the boolean operations on byte DFAs (``tokensieve.automata.ops``).

Usage::

    python benchmarks/automata_ops_bench.py [--repeat N]

Prints a markdown table: per case, the operand and result sizes and the best
wall and CPU times over ``N`` repetitions (default 5); on a shared machine the
CPU time is the steadier figure. No peer engine has an equivalent
operation, so there are no ratios.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import numpy as np

from tokensieve import LimitExceeded, Limits
from tokensieve.automata import ByteDFA, ir_to_dfa
from tokensieve.automata.ops import dfa_to_ir, difference, intersect
from tokensieve.grammar import ir
from tokensieve.grammar.regex import regex_to_dfa


def multiples_of(k: int) -> ByteDFA:
    """Decimal numerals (no leading zero) of the multiples of ``k``: ``k + 2`` states.

    States ``0..k-1`` are remainders, ``k`` is the start and ``k + 1`` the numeral "0".
    """
    table = np.full((k + 2, 256), -1, dtype=np.int32)
    rem = np.arange(k)
    for d in range(10):
        table[:k, 0x30 + d] = (rem * 10 + d) % k
        table[k, 0x30 + d] = d % k if d else k + 1
    accepting = np.zeros(k + 2, dtype=bool)
    accepting[[0, k + 1]] = True
    return ByteDFA(table, accepting, k)


def _cases() -> list[tuple[str, Callable[[], object], tuple[int, ...]]]:
    a999 = regex_to_dfa("[a-z]{0,999}")
    m999 = regex_to_dfa("[a-m]{0,999}")
    email = regex_to_dfa(r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}")
    length = regex_to_dfa(r"[\s\S]{5,999}")
    number = regex_to_dfa(r"-?(0|[1-9][0-9]{0,7})")
    mult997, mult991 = multiples_of(997), multiples_of(991)
    big = dfa_to_ir(intersect(email, length))
    quoted = ir.concat(ir.literal('"'), big, ir.literal('"'))
    limits = Limits(max_dfa_states=100_000)

    def until_limit() -> object:
        try:
            return intersect(mult997, mult991, limits)
        except LimitExceeded as exc:
            return exc

    return [
        ("[a-z]{0,999} ∩ [a-m]{0,999}", lambda: intersect(a999, m999), (a999.num_states, m999.num_states)),
        ("[a-z]{0,999} − [a-m]{0,999}", lambda: difference(a999, m999), (a999.num_states, m999.num_states)),
        ("email ∩ [\\s\\S]{5,999}", lambda: intersect(email, length), (email.num_states, length.num_states)),
        (
            "integer ∩ multiples of 997",
            lambda: intersect(number, mult997),
            (number.num_states, mult997.num_states),
        ),
        (
            "multiples of 997 ∩ of 991 (stops at 100k states)",
            until_limit,
            (mult997.num_states, mult991.num_states),
        ),
        ('embed: ir_to_dfa("\\"" + Automaton + "\\"")', lambda: ir_to_dfa(quoted), (big.num_states,)),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per case (best is reported)")
    args = parser.parse_args(argv)
    print(f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}\n")
    print("| case | operand states | result | wall | CPU |")
    print("|---|---|---|---|---|")
    for name, run, sizes in _cases():
        best = cpu = float("inf")
        result: object = None
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            result = run()
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        shown = f"{result.num_states} states" if isinstance(result, ByteDFA) else type(result).__name__
        print(
            f"| {name} | {' × '.join(map(str, sizes))} | {shown} | {best * 1e3:.1f} ms | {cpu * 1e3:.1f} ms |"
        )


if __name__ == "__main__":
    main()
