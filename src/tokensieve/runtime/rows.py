"""One request's decoding inside the batch engine, from its drawn token to its published text.

:class:`Row` is a request's state in :class:`~tokensieve.runtime.Engine`: its
prompt, matcher, budget and random generator, the tokens still to feed to the
model, and the text decoded so far, of which it publishes only what no stop
string can still claim (:meth:`Row.release`). :class:`RowAdvancer` does what
follows a step's forward pass for each row: it takes the drawn token (or draws
another that fits the constraint's token budget), appends the tokens the
constraint makes certain (jump-forward), finishes with the planned completion
when nothing the model likes fits, and ends the request with its finish reason.
The engine keeps admission, the loop, the batched step and its statistics.
"""

from __future__ import annotations

import codecs
import functools
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..errors import LimitExceeded
from ..matcher import GrammarMatcher
from .requests import RequestHandle, SamplingParams, StepOutput
from .sampling import BudgetCheck, choose_token

__all__ = ["MAX_FORCED", "Row", "RowAdvancer"]

#: Most tokens appended by jump-forward in one step.
MAX_FORCED = 32


class Row:
    """A request's decoding state inside the engine.

    Parameters
    ----------
    handle
        The caller's handle, to which outputs are published.
    prompt
        The prompt's token ids (fed to the model at the row's first step).
    params
        How to decode the request.
    constraint
        A compiled grammar, a ``concurrent.futures.Future`` of one (until the
        engine admits the row), or ``None``.
    """

    def __init__(
        self, handle: RequestHandle, prompt: list[int], params: SamplingParams, constraint: Any
    ) -> None:
        import torch

        self.handle = handle
        self.prompt = prompt
        self.params = params
        self.constraint = constraint  # a compiled grammar, a Future, or None
        self.matcher: GrammarMatcher | None = None
        self.budget: BudgetCheck | None = None
        self.generator = torch.Generator(device="cpu")
        if params.seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(params.seed))
        self.length = 0  # tokens in the row's cache slot
        self.pending: list[int] = prompt  # tokens to feed at the next step
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.full_text = ""  # decoded output, stop strings not yet cut
        self.released = 0  # characters of full_text published
        self.max_stop = max((len(s) for s in params.stop), default=0)
        self.ending: str | None = None  # the finish reason the last token decided
        self.stopped_by_string = False

    def release(self, piece: str) -> tuple[str, bool]:
        """Add decoded text; return what can be published now.

        Text that may still be the start of a stop string is held back until
        the next piece decides it; a stop string cuts the text before it.

        Parameters
        ----------
        piece
            The text the last token decoded to.

        Returns
        -------
        tuple of (str, bool)
            The text to publish, and whether a stop string ended the output.
        """
        before = len(self.full_text)
        self.full_text += piece
        if not self.params.stop:
            self.released = len(self.full_text)
            self.handle.text = self.full_text
            return piece, False
        full = self.full_text
        search_from = max(0, before - self.max_stop + 1)
        cut = min((i for i in (full.find(s, search_from) for s in self.params.stop) if i >= 0), default=-1)
        if cut >= 0:
            text = full[self.released : cut]
            self.full_text = full[:cut]
            self.released = cut
            self.handle.text = self.full_text
            return text, True
        hold = 0
        for stop in self.params.stop:
            for k in range(min(len(stop) - 1, len(full)), hold, -1):
                if full.endswith(stop[:k]):
                    hold = k
                    break
        upto = max(self.released, len(full) - hold)
        text = full[self.released : upto]
        self.released = upto
        self.handle.text = full[:upto]
        return text, False

    def flush(self) -> str:
        """Decode what the decoder still holds and release all text held back.

        Returns
        -------
        str
            The text not yet published (up to a stop string the tail completes).
        """
        tail = self.decoder.decode(b"", final=True)
        text, stopped = self.release(tail) if tail or self.params.stop else ("", False)
        if not stopped and self.released < len(self.full_text):
            text += self.full_text[self.released :]
            self.released = len(self.full_text)
            self.handle.text = self.full_text
        return text


class RowAdvancer:
    """Advances rows by their drawn tokens and ends them, for one model's vocabulary.

    Parameters
    ----------
    tokenizer
        The model's tokenizer (spells jump-forward text in its own tokens).
    vocab
        Every token's bytes, by id.
    stops
        The stop tokens' ids.
    stats
        The engine's counters: ``output_tokens``, ``forced_tokens`` and
        ``finish:<reason>`` are added to.
    lock
        The engine's lock, held while finish reasons are counted.
    """

    def __init__(
        self,
        tokenizer: Any,
        vocab: Sequence[bytes],
        stops: frozenset[int],
        stats: Counter[str],
        lock: threading.Condition,
    ) -> None:
        import torch

        self._torch = torch
        self._tokenizer = tokenizer
        self._vocab = vocab
        self._stops = stops
        self._stats = stats
        self._lock = lock

    def advance(self, row: Row, logits: Any, token: int | None, lp: Any) -> None:
        """Take the row's drawn token (or another that fits its budget), any forced ones after it; publish.

        Parameters
        ----------
        row
            The row, its last tokens fed to the model.
        logits
            Its masked logits (a token that does not fit the budget is set to
            ``-inf`` in place before drawing again).
        token
            The token drawn for it, or ``None`` when none could be.
        lp
            Its log-probabilities when the request asks for them, else ``None``.

        Raises
        ------
        LimitExceeded
            When the output cannot be completed within ``max_tokens``.
        """
        torch = self._torch
        params = row.params
        left = params.max_tokens - len(row.handle.token_ids)
        logprob = top = None
        fits = None
        if row.matcher is not None and row.budget is not None:
            fits = functools.partial(row.budget.token_fits, state=row.matcher.state, left=left)
        if token is not None and fits is not None and token not in self._stops and not fits(token):
            # the drawn token leaves the output unfinishable in time: draw again without it
            logits[token] = -float("inf")
            token = choose_token(
                torch,
                logits,
                temperature=params.temperature,
                generator=row.generator,
                stops=self._stops,
                fits=fits,
                top_p=params.top_p,
            )
        if token is None:
            self._complete_by_plan(row, left)
            return
        if lp is not None:
            logprob = float(lp[token])
            if params.top_logprobs:
                values, ids = torch.topk(lp, params.top_logprobs)
                top = [(int(t), float(v)) for t, v in zip(ids, values, strict=True) if v > -float("inf")]
        if token in self._stops:
            if row.matcher is not None:
                row.matcher.accept_token(token)
            self.finish(row, "stop", [])
            return
        outputs = [self._take(row, token, logprob, top, forced=False)]
        if row.ending is None and row.matcher is not None:
            self._jump_forward(row, outputs)
        if row.ending is not None:
            self.finish(row, row.ending, outputs, flush=not row.stopped_by_string)
        else:
            row.handle._publish(outputs)

    def finish(
        self,
        row: Row,
        reason: str,
        outputs: list[StepOutput],
        error: BaseException | None = None,
        *,
        flush: bool = True,
    ) -> None:
        """End a request: publish its last outputs and its finish reason (once).

        Parameters
        ----------
        row
            The row to end (nothing happens when its request is over already).
        reason
            One of :data:`~tokensieve.runtime.requests.FINISH_REASONS`.
        outputs
            Outputs not yet published.
        error
            The exception that ended the request, if any.
        flush
            For ``"stop"`` and ``"length"``: publish the text held back too.
        """
        handle = row.handle
        if handle.done:
            return
        outputs = list(outputs)
        if flush and reason in ("stop", "length"):
            text = row.flush()
            if text:
                outputs.append(StepOutput(None, text))
        with self._lock:
            self._stats[f"finish:{reason}"] += 1
        handle._publish(outputs, reason, error)

    def _jump_forward(self, row: Row, outputs: list[StepOutput]) -> None:
        """Append the tokens the constraint makes certain (they are fed to the model together).

        First the tokens that are the only ones allowed (``forced_tokens``); when there are
        none, the text that is the only one possible next (``find_jump_forward_string``), in
        the tokenizer's own tokens.
        """
        matcher, budget, params = row.matcher, row.budget, row.params
        assert matcher is not None and budget is not None
        room = params.max_tokens - len(row.handle.token_ids)
        tokens = matcher.forced_tokens(max_tokens=min(room, MAX_FORCED))
        if not tokens and room > 1 and not matcher.is_terminated():
            text = matcher.find_jump_forward_string()
            if text:
                tokens = list(self._tokenizer.encode(text, add_special_tokens=False))[:MAX_FORCED]
                if (
                    b"".join(self._vocab[t] if t < len(self._vocab) else b"\xff" for t in tokens)
                    != text.encode()
                ):
                    tokens = []  # not a plain spelling of the text: leave it to the model
        for forced in tokens:
            if forced in self._stops:
                matcher.accept_token(forced)
                row.ending = "stop"
                return
            room = params.max_tokens - len(row.handle.token_ids)
            if room < 1 or not budget.token_fits(forced, matcher.state, room):
                return
            top = [(forced, 0.0)] if params.top_logprobs else None
            outputs.append(self._take(row, forced, 0.0 if params.logprobs else None, top, forced=True))
            if row.ending is not None:
                return

    def _complete_by_plan(self, row: Row, left: int) -> None:
        """Nothing the model likes fits the budget: finish with the planned completion."""
        if row.matcher is None or row.budget is None:
            self.finish(row, "stop", [])
            return
        tokens = row.budget.planner.completion_tokens(row.matcher.state)
        if tokens is None or len(tokens) > left:
            raise LimitExceeded(
                "max_tokens", row.params.max_tokens, "the output cannot be completed within the budget"
            )
        outputs = []
        for t in tokens:
            outputs.append(self._take(row, t, None, None, forced=True))
            if row.ending is not None:
                break
        self.finish(row, row.ending or "length", outputs, flush=not row.stopped_by_string)

    def _take(self, row: Row, token: int, logprob: float | None, top: Any, *, forced: bool) -> StepOutput:
        """Append one output token; sets ``row.ending`` when it ends the output."""
        handle = row.handle
        if row.matcher is not None and not row.matcher.accept_token(token):  # pragma: no cover - masked out
            raise RuntimeError(f"token {token} was chosen but the grammar refuses it")
        handle.token_ids.append(token)
        row.pending.append(token)
        self._stats["output_tokens"] += 1
        if forced:
            handle.forced_tokens += 1
            self._stats["forced_tokens"] += 1
        piece = row.decoder.decode(self._vocab[token]) if token < len(self._vocab) else ""
        text, stopped = row.release(piece)
        if stopped:
            row.ending = "stop"
            row.stopped_by_string = True
        elif row.matcher is not None and row.matcher.is_terminated():
            row.ending = "stop"
        elif len(handle.token_ids) >= row.params.max_tokens:
            row.ending = "length"
        return StepOutput(token, text, logprob, top, forced)
