"""Request and response bodies of the OpenAI-compatible API, as pydantic models.

The request models accept what the OpenAI Python client and vLLM's server
clients send: ``response_format``, ``tools``/``tool_choice``, and vLLM's
constraint extensions (``structured_outputs`` and the older ``guided_*``
fields). Unknown fields are ignored, as OpenAI's own server does; fields of
the wrong type are refused (the application turns that into a 400).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChatCompletionRequest",
    "ChatMessage",
    "CompletionRequest",
    "ErrorDetail",
    "ErrorResponse",
    "FunctionDefinition",
    "JsonSchemaFormat",
    "ResponseFormat",
    "StreamOptions",
    "StructuredOutputs",
    "Tool",
    "ToolCall",
    "ToolChoiceFunction",
    "Usage",
]

GrammarSyntax = Literal["gbnf", "ebnf", "lark"]


class _Lenient(BaseModel):
    """Unknown fields are ignored; known ones are type-checked."""

    model_config = ConfigDict(extra="ignore")


class JsonSchemaFormat(_Lenient):
    """The ``json_schema`` member of ``response_format``."""

    name: str = "response"
    description: str | None = None
    schema_: dict[str, Any] | bool = Field(default_factory=dict, alias="schema")
    strict: bool | None = None

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ResponseFormat(_Lenient):
    """``response_format``: ``text``, ``json_object`` or ``json_schema``."""

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StructuredOutputs(_Lenient):
    """vLLM's ``structured_outputs``: exactly one constraint kind."""

    json_: dict[str, Any] | bool | str | None = Field(default=None, alias="json")
    regex: str | None = None
    choice: list[str] | None = Field(default=None, min_length=1)
    grammar: str | None = None
    grammar_syntax: GrammarSyntax | None = None

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class FunctionDefinition(_Lenient):
    """A function a tool call may name."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(_Lenient):
    """An entry of ``tools``."""

    type: Literal["function"] = "function"
    function: FunctionDefinition


class _NamedFunction(_Lenient):
    name: str


class ToolChoiceFunction(_Lenient):
    """``tool_choice`` naming one function."""

    type: Literal["function"] = "function"
    function: _NamedFunction


class ToolCallFunction(_Lenient):
    """The function of a tool call: its name and its arguments as JSON text."""

    name: str
    arguments: str


class ToolCall(_Lenient):
    """A tool call, in a response or in an assistant message of the history."""

    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class _ContentPart(_Lenient):
    type: str
    text: str | None = None


class ChatMessage(_Lenient):
    """A message of the conversation."""

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None

    def text(self) -> str:
        """The message's text (text parts joined; other parts are refused earlier)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text or "" for part in self.content)


class StreamOptions(_Lenient):
    """``stream_options``."""

    include_usage: bool = False


class _SamplingRequest(_Lenient):
    """Fields shared by both endpoints: sampling, limits and constraints."""

    model: str
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int | None = Field(default=None, ge=1)
    n: int = Field(default=1, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputs | None = None
    guided_json: dict[str, Any] | bool | str | None = None
    guided_regex: str | None = None
    guided_choice: list[str] | None = Field(default=None, min_length=1)
    guided_grammar: str | None = None
    #: extension: the syntax of ``guided_grammar`` (detected when absent)
    grammar_syntax: GrammarSyntax | None = None
    #: extension: ``false`` lets objects whose schema is silent about
    #: ``additionalProperties`` take keys beyond those the schema names
    closed_objects: bool | None = None

    def stop_list(self) -> list[str]:
        """``stop`` as a list of non-empty strings."""
        if self.stop is None:
            return []
        items = [self.stop] if isinstance(self.stop, str) else list(self.stop)
        return [s for s in items if s]


class ChatCompletionRequest(_SamplingRequest):
    """``POST /v1/chat/completions``."""

    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | ToolChoiceFunction | None = None
    parallel_tool_calls: bool = True


class CompletionRequest(_SamplingRequest):
    """``POST /v1/completions``."""

    prompt: str | list[str]
    logprobs: int | None = Field(default=None, ge=0, le=20)
    echo: bool = False


class Usage(BaseModel):
    """Token counts of a response."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ErrorDetail(BaseModel):
    """What went wrong: a message for a person, its kind, the request field at fault, a short code."""

    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(BaseModel):
    """Every failure's body, in OpenAI's shape."""

    error: ErrorDetail


# ------------------------------------------------------------------ responses
class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class TopLogprob(_Out):
    """One alternative token at a position."""

    token: str
    logprob: float
    bytes: list[int] | None = None


class TokenLogprob(_Out):
    """The chosen token at a position, with its alternatives."""

    token: str
    logprob: float
    bytes: list[int] | None = None
    top_logprobs: list[TopLogprob] = Field(default_factory=list)


class ChoiceLogprobs(_Out):
    """``choices[i].logprobs`` of a chat response."""

    content: list[TokenLogprob] | None = None


class AssistantMessage(_Out):
    """The generated message."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] | None = None


class ChatChoice(_Out):
    """One sample of a chat response."""

    index: int
    message: AssistantMessage
    finish_reason: str
    logprobs: ChoiceLogprobs | None = None


class ChatCompletion(_Out):
    """The body of a non-streamed chat response."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage


class ToolCallDelta(_Out):
    """A piece of a streamed tool call (``id``, ``type`` and ``name`` come with the first)."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: dict[str, str]


class ChunkDelta(_Out):
    """The new part of a streamed message."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(_Out):
    """One sample's part of a chunk."""

    index: int
    delta: ChunkDelta
    finish_reason: str | None = None
    logprobs: ChoiceLogprobs | None = None


class ChatCompletionChunk(_Out):
    """One server-sent event of a streamed chat response."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None


class CompletionLogprobs(_Out):
    """``choices[i].logprobs`` of a completion (the legacy layout)."""

    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float]] | None = None
    text_offset: list[int]


class CompletionChoice(_Out):
    """One sample of a completion (or a streamed piece of it)."""

    index: int
    text: str
    finish_reason: str | None = None
    logprobs: CompletionLogprobs | None = None


class Completion(_Out):
    """The body of a completion response, or one streamed event of it."""

    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[CompletionChoice]
    usage: Usage | None = None


class ModelCard(_Out):
    """An entry of ``GET /v1/models``."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "tokensieve"


class ModelList(_Out):
    """``GET /v1/models``."""

    object: Literal["list"] = "list"
    data: list[ModelCard]
