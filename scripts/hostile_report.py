"""Run the hostile-input corpus and write its table of figures to docs/reliability.md.

Usage::

    python3 scripts/hostile_report.py [--seconds 20] [--only SUBSTRING ...] [--print]

Each input of ``tests/hostile/corpus.py`` runs in a forked child under the
default limits (on the tiny test vocabulary), as the test does, with the
full time limit for every input (the test gives the known hangs less). The
table replaces the part of ``docs/reliability.md`` between the
``hostile-table`` markers; ``--print`` prints it instead.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hostile.corpus import CASES, action, real_file_bytes  # noqa: E402
from hostile.harness import run_isolated, tiny_compiler  # noqa: E402

DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- hostile-table: begin -->"
END = "<!-- hostile-table: end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def build_table(seconds: float, only: list[str]) -> str:
    """The markdown table of every case's ending, time and peak memory."""
    compiler = tiny_compiler()
    folder = Path(tempfile.mkdtemp(prefix="tokensieve-hostile-"))
    rows = [
        "| input | ending | error | s | peak MiB |",
        "|---|---|---|---:|---:|",
    ]
    for case in CASES:
        if only and not any(s in case.name for s in only):
            continue
        if case.needs and real_file_bytes(case.needs) is None:
            rows.append(f"| {_cell(case.name)} | skipped (file not installed) | | | |")
            continue
        out = run_isolated(action(case, compiler, folder), seconds=seconds)
        ending = {"ok": "compiled", "typed": "typed error"}.get(out.kind, f"**{out.kind}**")
        if out.kind == "typed" and not out.located:
            ending += " (no place named)"
        error = f"{out.error_type}: {out.message}" if out.error_type else out.message
        error = error.replace(f"{folder}/", "")
        rows.append(
            f"| {_cell(case.name)} | {ending} | {_cell(error[:140])} | {out.seconds:.2f} "
            f"| {out.peak_rss_bytes / 2**20:.0f} |"
        )
        print(rows[-1], flush=True)
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    head = (
        f"Run on {stamp}, Python {platform.python_version()}, limit {seconds:g} s per input, "
        "with `python3 scripts/hostile_report.py`. Peak MiB: the child's peak resident memory "
        "less its resident memory before the call."
    )
    return "\n".join([head, "", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--print", action="store_true", dest="print_only")
    args = parser.parse_args()
    table = build_table(args.seconds, args.only)
    if args.print_only:
        print(table)
        return
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table + "\n" + text[end:])
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
