"""One sample of a response as it is decoded: text, stop strings, tool calls, logprobs.

A :class:`ChoiceState` reads the engine's :class:`StepOutput` items of one
request handle and keeps what the response needs: the text (cut at the first
stop string, with the text that might begin one held back while streaming),
the tool calls read from it, the logprobs, and the finish reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .protocol import TokenLogprob, TopLogprob
from .tools import ToolCallReader

__all__ = ["ChoiceState"]


@dataclass
class ChoiceState:
    """The response-side state of one sample (see the module).

    Parameters
    ----------
    index
        The sample's index in ``choices``.
    stops
        Stop strings (the text ends before the first one).
    tools
        ``None``: plain text; ``"auto"``: text or tool calls; ``"required"``: tool calls.
    vocab
        Token id to bytes (for logprob token strings).
    max_tokens
        The sample's token budget.
    """

    index: int
    stops: list[str]
    tools: str | None
    vocab: list[bytes]
    max_tokens: int
    text: str = ""
    emitted: int = 0
    stopped: bool = False
    num_tokens: int = 0
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    reader: ToolCallReader | None = None

    def __post_init__(self) -> None:
        if self.tools is not None:
            self.reader = ToolCallReader(auto=self.tools == "auto")

    def token_text(self, token_id: int) -> str:
        """The text of one token (invalid UTF-8 replaced)."""
        if 0 <= token_id < len(self.vocab):
            return self.vocab[token_id].decode("utf-8", "replace")
        return ""

    def add(self, step: Any, *, with_logprobs: bool) -> None:
        """Take one engine output (ignored once a stop string ended the text)."""
        if self.stopped:
            return
        if step.token_id is not None:
            self.num_tokens += 1
            self.token_ids.append(int(step.token_id))
        self.text += step.text or ""
        if self.stops:
            cut = min((i for i in (self.text.find(s) for s in self.stops) if i >= 0), default=-1)
            if cut >= 0:
                self.text = self.text[:cut]
                self.stopped = True
        if with_logprobs and step.logprob is not None and step.token_id is not None:
            tops = step.top_logprobs or []
            if isinstance(tops, dict):
                tops = list(tops.items())
            self.logprobs.append(
                TokenLogprob(
                    token=self.token_text(step.token_id),
                    logprob=float(step.logprob),
                    bytes=list(self.vocab[step.token_id]) if 0 <= step.token_id < len(self.vocab) else None,
                    top_logprobs=[
                        TopLogprob(
                            token=self.token_text(int(t)), logprob=float(lp), bytes=list(self.vocab[int(t)])
                        )
                        for t, lp in tops
                        if 0 <= int(t) < len(self.vocab)
                    ],
                )
            )

    def pending(self, final: bool) -> str:
        """The text not yet handed out that can be now (all of it when ``final``)."""
        end = len(self.text)
        if not final and not self.stopped and self.stops:
            held = 0
            for s in self.stops:
                for k in range(min(len(s) - 1, end), 0, -1):
                    if self.text.endswith(s[:k]):
                        held = max(held, k)
                        break
            end -= held
        if end <= self.emitted:
            return ""
        piece = self.text[self.emitted : end]
        self.emitted = end
        return piece

    def read(self, piece: str) -> list[tuple[Any, ...]]:
        """The events of a piece of text: content, or tool-call pieces."""
        if not piece:
            return []
        if self.reader is None:
            return [("content", piece)]
        return self.reader.feed(piece)

    def finish_reason(self, engine_reason: str | None) -> str:
        """OpenAI's ``finish_reason``: ``tool_calls``, ``stop`` or ``length``.

        ``length`` whenever the budget was used up, also where the engine
        finished a constrained output with its planned completion (which it
        reports as ``stop``: nothing could follow).
        """
        if self.tool_calls:
            return "tool_calls"
        if self.stopped:
            return "stop"
        if engine_reason == "length" or self.num_tokens >= self.max_tokens:
            return "length"
        return "stop"

    def complete(self, compiled: Any) -> bool:
        """Whether the output's tokens form a complete member of the constraint's language."""
        from ..matcher import GrammarMatcher

        matcher = GrammarMatcher(compiled)
        return all(matcher.accept_token(t) for t in self.token_ids) and matcher.is_completed()

    @property
    def tool_calls(self) -> list[tuple[str, str, str]]:
        """(id, name, arguments) of the calls read so far."""
        if self.reader is None:
            return []
        return [(c.id, c.name, c.arguments) for c in self.reader.calls]
