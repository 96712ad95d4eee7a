"""Failures in OpenAI's error shape: ``{"error": {"message", "type", "param", "code"}}``.

Every failure the server reports goes through :class:`APIError` or one of the
exception handlers installed by :func:`install_error_handlers`, so a client
never sees a framework stack trace: malformed JSON and fields of the wrong
type are 400, constraint errors 400 with the pointer or position, an unknown
path 404, an oversized body 413, a full queue 429 with ``Retry-After``.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import GrammarError, LimitExceeded, SchemaError, TokensieveError

__all__ = ["APIError", "BodyLimit", "constraint_error", "error_body", "install_error_handlers"]

logger = logging.getLogger("tokensieve")

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


class APIError(Exception):
    """A failure to report to the client.

    Parameters
    ----------
    status
        The HTTP status.
    message
        What is wrong, for a person.
    param
        The request field at fault (dotted path), if any.
    code
        A short machine-readable code.
    headers
        Extra response headers (``Retry-After`` for 429).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        """This error as a JSON response."""
        return JSONResponse(
            error_body(self.status, self.message, param=self.param, code=self.code),
            status_code=self.status,
            headers=self.headers,
        )


def error_body(
    status: int, message: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The OpenAI error object for a status and message.

    Parameters
    ----------
    status
        The HTTP status (it picks the error ``type``).
    message, param, code
        As in :class:`APIError`.

    Returns
    -------
    dict
    """
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def constraint_error(exc: TokensieveError, param: str) -> APIError:
    """A 400 for a constraint that cannot be compiled, saying where.

    Parameters
    ----------
    exc
        The compiler's error: a :class:`~tokensieve.SchemaError` carries the
        keyword's JSON pointer, a :class:`~tokensieve.GrammarError` the line
        and column, a :class:`~tokensieve.LimitExceeded` the limit's name.
    param
        The request field that held the constraint.

    Returns
    -------
    APIError
    """
    if isinstance(exc, SchemaError):
        return APIError(400, f"invalid schema in {param}: {exc}", param=param, code="invalid_schema")
    if isinstance(exc, GrammarError):
        return APIError(400, f"invalid constraint in {param}: {exc}", param=param, code="invalid_grammar")
    if isinstance(exc, LimitExceeded):
        return APIError(
            400,
            f"the constraint in {param} is too costly to compile: {exc}",
            param=param,
            code="constraint_too_costly",
        )
    return APIError(400, f"invalid constraint in {param}: {exc}", param=param, code="invalid_constraint")


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    errors = exc.errors()
    if not errors:
        return "invalid request", None
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    param = ".".join(loc) or None
    kind = first.get("type", "")
    if kind in ("json_invalid", "json_type"):
        return f"the request body is not valid JSON: {first.get('msg', '')}", None
    where = f" at {param}" if param else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid request{where}: {first.get('msg', 'invalid value')}{more}", param


def install_error_handlers(app: FastAPI) -> None:
    """Route every failure through the OpenAI error shape.

    Parameters
    ----------
    app
        The application.
    """

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, APIError)
        return exc.response()

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        message, param = _validation_message(exc)
        return APIError(400, message, param=param, code="invalid_request").response()

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        status = exc.status_code
        message = {404: f"no route {request.url.path}", 413: "the request body is too large"}.get(
            status, str(exc.detail)
        )
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(status)
        return APIError(status, message, code=code, headers=dict(exc.headers or {})).response()

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected failure on %s", request.url.path)
        return APIError(500, f"internal error: {type(exc).__name__}", code="internal_error").response()

    app.add_exception_handler(APIError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with a 413 in the OpenAI error shape.

    Starlette's own body limit answers in plain text whenever the request
    declares its length, so this middleware checks ``Content-Length`` first
    and counts the bytes of bodies sent without one; a body that runs over
    raises :class:`APIError` inside the route, which the error handlers answer.

    Parameters
    ----------
    app
        The application.
    max_bytes
        The largest body accepted.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _error(self) -> APIError:
        return APIError(
            413,
            f"the request body is larger than the limit max_body_bytes={self.max_bytes}",
            code="request_too_large",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._error().response()(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise self._error()
            return message

        await self.app(scope, counted, send)
