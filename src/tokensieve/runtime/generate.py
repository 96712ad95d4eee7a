"""Constrained, streamed generation with a local model.

Every step masks the logits with the matcher's bitmask, samples (greedy at
temperature 0, else a seeded multinomial draw), and yields the new text as
soon as it forms whole UTF-8 characters. The output always matches the
constraint: a token is only taken if the output can still be completed within
the tokens left (see :mod:`tokensieve.runtime.planner`); when none of the
model's choices fits any more, the output is finished with the fewest tokens
that complete it.
"""

from __future__ import annotations

import codecs
import functools
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..bitmask import apply_token_bitmask_inplace, bitmask_size
from ..errors import LimitExceeded
from ..matcher import GrammarMatcher
from .sampling import MAX_REJECTIONS, BudgetCheck, choose_token

__all__ = ["MAX_REJECTIONS", "GenerationStream", "build_prompt_ids", "generate", "stream_constrained"]

logger = logging.getLogger("tokensieve")

NextLogits = Callable[[int | None], Any]
"""Feeds the last chosen token (``None`` first: the prompt) and returns the next logits (1-D tensor)."""


class GenerationStream(Iterator[str]):
    """The text of a constrained generation, piece by piece.

    Iterating yields strings (each holding whole characters) as tokens are
    chosen; joined, they are the output. The attributes fill in as the
    stream is consumed.

    Attributes
    ----------
    token_ids : list of int
        The output's tokens (forced ones included, stop token excluded);
        never more than ``max_tokens``.
    text : str
        The output so far.
    finish_reason : str or None
        ``"stop"`` (the constraint was complete and a stop token was chosen,
        or nothing else could follow), ``"length"`` (``max_tokens`` was
        reached, with the output complete), or ``None`` while running.
    forced_tokens : int
        How many of the last :attr:`token_ids` were appended without sampling,
        to finish the output within ``max_tokens``.
    num_prompt_tokens : int
        Length of the prompt in tokens (0 when unknown).
    prefill_seconds, decode_seconds : float
        Time spent in the model on the prompt, and on the following steps.
    model_steps : int
        Model calls after the prompt.
    """

    def __init__(
        self,
        next_logits: NextLogits,
        compiled: Any,
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        num_prompt_tokens: int = 0,
    ) -> None:
        import torch

        self._torch = torch
        self._next_logits = next_logits
        self.compiled = compiled
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._generator = torch.Generator(device="cpu")
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(int(seed))
        self.token_ids: list[int] = []
        self.text = ""
        self.finish_reason: str | None = None
        self.forced_tokens = 0
        self.num_prompt_tokens = num_prompt_tokens
        self.prefill_seconds = 0.0
        self.decode_seconds = 0.0
        self.model_steps = 0
        self._pieces = self._run()

    def __iter__(self) -> GenerationStream:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    def read(self) -> str:
        """Consume the rest of the stream and return the whole output."""
        for _ in self:
            pass
        return self.text

    @property
    def tokens_per_second(self) -> float:
        """Model steps per second after the prompt (0 when there were none)."""
        return self.model_steps / self.decode_seconds if self.decode_seconds > 0 else 0.0

    # ------------------------------------------------------------ internals
    def _run(self) -> Iterator[str]:
        torch = self._torch
        compiled = self.compiled
        info = compiled.tokenizer_info
        vocab = info.decoded_vocab
        stops = info.stop_token_set
        budget = BudgetCheck(compiled)
        planner = budget.planner
        matcher = GrammarMatcher(compiled, terminate_without_stop_token=True)
        budget.check_start(matcher.state, self.max_tokens)

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        bitmask: np.ndarray | None = None
        last: int | None = None
        while True:
            if matcher.is_terminated():
                self.finish_reason = "stop"
                break
            left = self.max_tokens - len(self.token_ids)
            if left <= 0:
                if not matcher.is_completed():
                    raise LimitExceeded(
                        "max_tokens", self.max_tokens, "the output was not complete when the budget ran out"
                    )
                self.finish_reason = "length"
                break
            t0 = time.perf_counter()
            raw = self._next_logits(last)
            with torch.inference_mode():
                logits = raw.detach().reshape(-1).to(device="cpu", dtype=torch.float32).clone()
                if bitmask is None:
                    words = bitmask_size(max(int(logits.shape[0]), int(compiled.vocab_size)))
                    bitmask = np.zeros((1, words), dtype=np.int32)
                matcher.fill_next_token_bitmask(bitmask, 0)
                apply_token_bitmask_inplace(logits, bitmask[0])
                token = choose_token(
                    torch,
                    logits,
                    temperature=self.temperature,
                    generator=self._generator,
                    stops=stops,
                    fits=functools.partial(budget.token_fits, state=matcher.state, left=left),
                )
            elapsed = time.perf_counter() - t0
            if last is None:
                self.prefill_seconds += elapsed
            else:
                self.decode_seconds += elapsed
                self.model_steps += 1

            if token is None:  # nothing the model likes fits: finish with the planned completion
                forced = planner.completion_tokens(matcher.state)
                if forced is None or len(forced) > left:
                    raise LimitExceeded(
                        "max_tokens", self.max_tokens, "the output cannot be completed within the budget"
                    )
                for t in forced:
                    self._accept(matcher, t)
                    self.token_ids.append(t)
                    self.forced_tokens += 1
                    piece = decoder.decode(vocab[t])
                    if piece:
                        self.text += piece
                        yield piece
                self.finish_reason = "length"
                break
            if token in stops:
                self._accept(matcher, token)
                self.finish_reason = "stop"
                break
            self._accept(matcher, token)
            self.token_ids.append(token)
            last = token
            piece = decoder.decode(vocab[token])
            if piece:
                self.text += piece
                yield piece
        tail = decoder.decode(b"", final=True)
        if tail:
            self.text += tail
            yield tail

    def _accept(self, matcher: GrammarMatcher, token: int) -> None:
        if not matcher.accept_token(token):  # pragma: no cover - the mask forbids it
            raise RuntimeError(f"token {token} was chosen but the grammar refuses it")


def stream_constrained(
    next_logits: NextLogits,
    compiled: Any,
    *,
    max_tokens: int = 128,
    temperature: float = 0.7,
    seed: int | None = None,
    num_prompt_tokens: int = 0,
) -> GenerationStream:
    """Constrained sampling over any model that gives logits one step at a time.

    Parameters
    ----------
    next_logits
        Called with ``None`` first (the model reads the prompt), then with each
        chosen token; returns the logits of the next position as a 1-D tensor
        (at least as wide as the vocabulary's real tokens).
    compiled
        The constraint, compiled for the model's vocabulary.
    max_tokens
        Most tokens to generate (stop token not counted).
    temperature
        0 for greedy decoding; otherwise the softmax temperature.
    seed
        Seed of the sampler's random generator (``None``: a fresh random seed).
    num_prompt_tokens
        Reported back in :attr:`GenerationStream.num_prompt_tokens`.

    Returns
    -------
    GenerationStream
        Nothing runs until it is iterated.

    Raises
    ------
    ValueError
        For a ``max_tokens`` below 1 or a negative or non-finite temperature.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive integer, not {max_tokens!r}")
    if not isinstance(temperature, (int, float)) or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, not {temperature!r}")
    return GenerationStream(
        next_logits,
        compiled,
        max_tokens=max_tokens,
        temperature=float(temperature),
        seed=seed,
        num_prompt_tokens=num_prompt_tokens,
    )


def build_prompt_ids(
    tokenizer: Any,
    prompt: str | Sequence[Mapping[str, str]],
    *,
    chat: bool = True,
    system: str | None = None,
) -> list[int]:
    """Token ids of the prompt, through the tokenizer's chat template when there is one.

    Parameters
    ----------
    tokenizer
        A ``transformers`` tokenizer.
    prompt
        The user's message, or a list of chat messages (``{"role", "content"}``).
    chat
        Use the chat template (with the assistant turn opened). When the
        tokenizer has none, a plain string prompt is used as it is.
    system
        A system message put first (chat only).

    Returns
    -------
    list of int

    Raises
    ------
    ValueError
        For chat messages without a chat template, or an empty prompt.
    """
    template = getattr(tokenizer, "chat_template", None)
    if chat and template:
        messages: list[Mapping[str, str]] = (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        )
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    else:
        if not isinstance(prompt, str):
            raise ValueError("chat messages need a tokenizer with a chat template; pass a string prompt")
        if chat:
            logger.info("the tokenizer has no chat template; using the prompt as it is")
        ids = list(tokenizer(prompt)["input_ids"])
    if not ids:
        bos = getattr(tokenizer, "bos_token_id", None)
        if bos is None:
            raise ValueError("the prompt is empty and the tokenizer has no BOS token to start from")
        ids = [int(bos)]
    return [int(i) for i in ids]


def generate(
    model: Any,
    tokenizer: Any,
    compiled: Any,
    prompt: str | Sequence[Mapping[str, str]],
    *,
    max_tokens: int = 128,
    temperature: float = 0.7,
    seed: int | None = None,
    chat: bool = True,
    system: str | None = None,
) -> GenerationStream:
    """Generate text that matches ``compiled``, streamed as it is produced.

    Parameters
    ----------
    model
        A ``transformers`` causal language model (evaluation mode).
    tokenizer
        Its tokenizer.
    compiled
        The constraint, compiled for this tokenizer's vocabulary (for example
        with :attr:`tokensieve.runtime.LoadedModel.compiler`).
    prompt
        The user's message, or a list of chat messages.
    max_tokens
        Most tokens to generate. The output is complete however few there
        are, as long as the constraint's shortest output fits.
    temperature
        0 for greedy decoding; otherwise the softmax temperature.
    seed
        Seed of the sampler (``None``: a fresh random seed each call).
    chat
        Wrap the prompt in the tokenizer's chat template (instruct models).
    system
        A system message (chat only; the template's default otherwise).

    Returns
    -------
    GenerationStream
        An iterator of text pieces; nothing runs until it is iterated.

    Raises
    ------
    LimitExceeded
        (while iterating) When ``max_tokens`` is below the fewest tokens any
        output of the constraint needs.
    ValueError
        For bad arguments, or a grammar compiled for a smaller vocabulary.

    Examples
    --------
    >>> loaded = load_model()  # doctest: +SKIP
    >>> compiled = loaded.compiler.compile_regex(r"\\d{4}-\\d{2}-\\d{2}")  # doctest: +SKIP
    >>> for piece in generate(loaded.model, loaded.tokenizer, compiled, "When?"):  # doctest: +SKIP
    ...     print(piece, end="", flush=True)
    """
    import torch

    if len(tokenizer) > int(compiled.vocab_size):
        raise ValueError(
            f"the grammar was compiled for {compiled.vocab_size} tokens but the tokenizer has "
            f"{len(tokenizer)}: compile it with TokenizerInfo.from_huggingface(tokenizer)"
        )
    ids = build_prompt_ids(tokenizer, prompt, chat=chat, system=system)
    device = getattr(model, "device", torch.device("cpu"))
    state: dict[str, Any] = {"past": None}

    def next_logits(token: int | None) -> Any:
        with torch.inference_mode():
            if token is None:
                input_ids = torch.tensor([ids], dtype=torch.long, device=device)
            else:
                input_ids = torch.tensor([[token]], dtype=torch.long, device=device)
            out = model(input_ids=input_ids, past_key_values=state["past"], use_cache=True)
            state["past"] = out.past_key_values
            return out.logits[0, -1]

    return stream_constrained(
        next_logits,
        compiled,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        num_prompt_tokens=len(ids),
    )
