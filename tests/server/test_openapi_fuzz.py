"""The server's API contract, fuzzed from its own OpenAPI document with schemathesis.

Requests valid and invalid under the document go to a real ``tokensieve serve``
process with the real model, its limits set low so that every accepted request
is cheap (a few tokens). Every response must be below 500, its status and body
as the document declares (schemathesis' own checks), and every error in
OpenAI's shape ``{"error": {"message", "type", "param", "code"}}`` with a
string message and type (checked here too, independently of the document).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from server.server_support import MODEL_ID, ServerProcess  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.model]

EXAMPLES = 15  # per operation (schemathesis adds its own coverage cases)
CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_server() -> Iterator[ServerProcess]:
    proc = ServerProcess(
        "--max-tokens-limit",
        "8",
        "--default-max-tokens",
        "4",
        "--max-n",
        "2",
        "--compile-timeout",
        "10",
        "--max-body-bytes",
        "100000",
    )
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def api_schema(api_server: ServerProcess) -> Any:
    schema = schemathesis.openapi.from_url(api_server.base + "/openapi.json")
    schema.config.generation.update(
        modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE],
        max_examples=EXAMPLES,
        deterministic=True,
    )
    return schema


api = schemathesis.pytest.from_fixture("api_schema")


@api.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_no_5xx_and_every_error_in_openai_shape(case: Any, api_server: ServerProcess) -> None:
    if isinstance(case.body, dict) and isinstance(case.body.get("model"), str):
        case.body["model"] = MODEL_ID  # the served model, so that requests get past the model check
    response = case.call(base_url=api_server.base, timeout=120)
    assert response.status_code < 500, (case.as_curl_command(), response.text[:500])
    case.validate_response(response, checks=CHECKS)  # statuses and bodies as the document says
    if response.status_code >= 400:
        body = response.json()
        assert set(body) == {"error"}, body
        error = body["error"]
        assert set(error) == {"message", "type", "param", "code"}, error
        assert isinstance(error["message"], str) and error["message"]
        assert isinstance(error["type"], str) and error["type"]
        assert error["param"] is None or isinstance(error["param"], str)
        assert error["code"] is None or isinstance(error["code"], str)
