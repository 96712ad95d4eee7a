#!/usr/bin/env bash
# The long fuzz run: the hypothesis targets of tests/fuzz with many random
# examples, then coverage-guided runs of every target with atheris (when it is
# installed: pip install atheris).
#
#   scripts/fuzz.sh                       # defaults below
#   EXAMPLES=50000 ATHERIS_RUNS=200000 scripts/fuzz.sh
#
# A failing hypothesis example is kept in .hypothesis/ and replayed first on the
# next run; an atheris crash is written as crash-* in $OUT_DIR. Exit status:
# non-zero when any target found a crash or a hang.
set -uo pipefail
cd "$(dirname "$0")/.."

EXAMPLES=${EXAMPLES:-20000}          # hypothesis examples per target
ATHERIS_RUNS=${ATHERIS_RUNS:-100000} # atheris inputs per target, at most
ATHERIS_SECONDS=${ATHERIS_SECONDS:-600} # and at most this long per target
ATHERIS_TARGETS=${ATHERIS_TARGETS:-"regex gbnf ebnf lark schema gguf sentencepiece tekken"}
ATHERIS_RSS_MB=${ATHERIS_RSS_MB:-4096} # libFuzzer's out-of-memory stop, resident MB
OUT_DIR=${OUT_DIR:-/tmp/tokensieve-fuzz}
mkdir -p "$OUT_DIR"
status=0

echo "== hypothesis: $EXAMPLES examples per target, random seed"
TOKENSIEVE_FUZZ_RANDOM=1 TOKENSIEVE_FUZZ_EXAMPLES=$EXAMPLES \
  python3 -m pytest -q -p no:randomly tests/fuzz/test_fuzz_parsers.py tests/fuzz/test_fuzz_vocab.py \
  --hypothesis-show-statistics 2>&1 | tee "$OUT_DIR/hypothesis.log" | grep -E "::|passing|%|passed|failed|Falsifying"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if python3 -c "import atheris" 2>/dev/null; then
  for target in $ATHERIS_TARGETS; do
    echo "== atheris $target: at most $ATHERIS_RUNS runs or $ATHERIS_SECONDS s"
    mkdir -p "$OUT_DIR/corpus-$target"
    if ! python3 tests/fuzz/atheris_main.py "$target" "$OUT_DIR/corpus-$target" \
      -runs="$ATHERIS_RUNS" -max_total_time="$ATHERIS_SECONDS" -timeout=20 -rss_limit_mb="$ATHERIS_RSS_MB" -artifact_prefix="$OUT_DIR/$target-" \
      >"$OUT_DIR/atheris-$target.log" 2>&1; then
      status=1
      echo "   crash or hang: see $OUT_DIR/atheris-$target.log"
    fi
    grep -E "^#[0-9]+.*(DONE|exec/s)" "$OUT_DIR/atheris-$target.log" | tail -n 1 || true
    grep -E "ERROR|SUMMARY" "$OUT_DIR/atheris-$target.log" || true
  done
else
  echo "== atheris is not installed (pip install atheris): coverage-guided runs skipped"
fi
exit $status
