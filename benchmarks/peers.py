"""Uniform adapters over tokensieve and the peer engines.

Every adapter exposes the same four operations to the harness:

- :meth:`Engine.setup`: per-vocabulary preprocessing (building the engine's
  tokenizer object from the shared token-bytes list). Done once, not part of
  compile time; its duration is reported separately.
- :meth:`Engine.new_compiler`: fresh per-grammar state for one repetition, so
  that compile times are cold (no grammar cache hits). Not timed.
- :meth:`Engine.compile`: constraint → the engine's compiled object. Timed.
- :meth:`Engine.matcher`: a fresh per-sequence matcher that fills the shared
  int32 bitmask row (the ecosystem layout: token ``t`` allowed iff
  ``(mask[t >> 5] >> (t & 31)) & 1``).

All masks are written into numpy ``int32`` arrays of shape ``(1, ceil(V / 32))``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from vocabs import Vocab
from workloads import Workload

__all__ = [
    "Engine",
    "EngineMatcher",
    "ENGINES",
    "describe_engines",
    "engine_names",
    "make_engine",
    "run_metadata",
    "set_up_engines",
]


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class EngineMatcher(ABC):
    """Per-sequence state of one engine."""

    @abstractmethod
    def fill(self) -> None:
        """Write the next-token mask into the engine's bitmask row (the timed call)."""

    @abstractmethod
    def accept(self, token_id: int) -> bool:
        """Advance by one token; ``False`` if the engine rejects it."""

    @abstractmethod
    def is_terminated(self) -> bool:
        """Whether the matcher has finished (after accepting the stop token)."""


class Engine(ABC):
    """One constrained-decoding engine, configured for one vocabulary."""

    #: short name used on the command line and in tables
    name: str = ""
    #: installed distribution whose version is reported
    dist: str = ""
    #: how the engine caches across grammars/compilers, and what the harness does about it
    caching_note: str = ""
    #: how the workloads are expressed for this engine
    input_note: str = ""

    def __init__(self) -> None:
        self.vocab: Vocab | None = None
        self.bitmask: np.ndarray = np.zeros((1, 0), dtype=np.int32)

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """``None`` when the engine can run here, else why it is skipped."""
        module = cls.dist.replace("-", "_")
        if importlib.util.find_spec(module) is None:
            return f"{cls.dist} is not installed"
        return None

    @property
    def version(self) -> str:
        """Installed version of the engine's distribution."""
        return _version(self.dist)

    def setup(self, vocab: Vocab) -> None:
        """Build the engine's tokenizer from ``vocab`` and allocate the bitmask."""
        self.vocab = vocab
        self.bitmask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
        self._setup(vocab)

    @abstractmethod
    def _setup(self, vocab: Vocab) -> None: ...

    def new_compiler(self) -> None:
        """Start a repetition with no compiled-grammar cache (default: nothing to reset)."""
        return None

    @abstractmethod
    def compile(self, workload: Workload) -> Any:
        """Compile ``workload``'s constraint; raise on unsupported input."""

    @abstractmethod
    def matcher(self, compiled: Any) -> EngineMatcher:
        """A fresh matcher over ``compiled`` writing into :attr:`bitmask`."""


# --------------------------------------------------------------------------- tokensieve


class _OursMatcher(EngineMatcher):
    def __init__(self, matcher: Any, bitmask: np.ndarray) -> None:
        self._m = matcher
        self._bm = bitmask
        self.fill_next_token_bitmask = matcher.fill_next_token_bitmask

    def fill(self) -> None:
        self.fill_next_token_bitmask(self._bm, 0)

    def accept(self, token_id: int) -> bool:
        return bool(self._m.accept_token(token_id))

    def is_terminated(self) -> bool:
        return bool(self._m.is_terminated())


class TokensieveEngine(Engine):
    """tokensieve itself (``GrammarCompiler`` / ``GrammarMatcher``)."""

    name = "ours"
    dist = "tokensieve"
    caching_note = (
        "GrammarCompiler keeps compiled grammars keyed by source: a new compiler per repetition. "
        "The token trie is built once per vocabulary (setup) and shared by all compilers, like the peers' "
        "tokenizer objects. Default precompute='auto': every state's token mask at compile time for automata "
        "without permissive states (loops on many bytes); otherwise the grammar-wide tables of shared masks "
        "(which states share masks, chain lengths) and the start state's mask at compile time, and then, in a "
        "background thread once the compile has returned, one state's mask per class of states sharing a "
        "mask, within a work budget (about 0.2 s) while the walk goes on; the other states of a class derive "
        "their masks on first use, and a state not walked yet is walked on first use with the states a few "
        "bytes ahead. "
        "Process-wide memos of string-constraint automata stay warm across grammars, as in a server: "
        "format x length products and other intersections (64 entries), format automata, length-bounded "
        "strings and whitespace runs; the first schema that needs one pays for it."
    )
    input_note = "regexes via compile_regex; choice lists via compile_choices (native)"

    @classmethod
    def unavailable_reason(cls) -> str | None:
        if importlib.util.find_spec("tokensieve") is None:
            return "tokensieve is not installed"
        import tokensieve

        missing = [
            n for n in ("TokenizerInfo", "GrammarCompiler", "GrammarMatcher") if not hasattr(tokensieve, n)
        ]
        if missing:
            return f"tokensieve does not export {', '.join(missing)} yet"
        return None

    def _setup(self, vocab: Vocab) -> None:
        import tokensieve

        # Same stop set as the peers (tokensieve would also detect e.g. SmolLM2's <|endoftext|>).
        info = tokensieve.TokenizerInfo.from_file(str(vocab.path), stop_token_ids=[vocab.eos_token_id])
        decoded = list(info.decoded_vocab)
        if len(decoded) != vocab.vocab_size:
            raise RuntimeError(
                f"tokensieve reads {len(decoded)} tokens from {vocab.path}, harness {vocab.vocab_size}"
            )
        differ = [i for i, (a, b) in enumerate(zip(decoded, vocab.tokens, strict=True)) if bytes(a) != b]
        if differ:
            shown = ", ".join(f"{i}: {bytes(decoded[i])!r} vs {vocab.tokens[i]!r}" for i in differ[:5])
            raise RuntimeError(
                f"tokensieve's token bytes differ from the harness's at {len(differ)} ids ({shown})"
            )
        if list(info.stop_token_ids) != [vocab.eos_token_id]:
            raise RuntimeError(
                f"tokensieve's stop tokens are {list(info.stop_token_ids)}, not [{vocab.eos_token_id}]"
            )
        self._tokensieve = tokensieve
        self._info = info
        tokensieve.GrammarCompiler(info)  # builds the per-vocabulary token trie (shared, cached)
        # the frame-walk kernel of rule networks is loaded once per process (numba; in the background
        # on the first walk otherwise): part of the set-up, like the imports, not of any one compile
        from tokensieve.compile.frame_walk import load_kernel

        load_kernel()
        self._compiler: Any = None

    def new_compiler(self) -> None:
        self._compiler = self._tokensieve.GrammarCompiler(self._info)

    #: how JSON Schema workloads are compiled (json_bench.py)
    json_note = "compile_json_schema(schema, strict=False): flexible whitespace (runs of at most 32), properties in schema order"

    def compile(self, workload: Workload) -> Any:
        if workload.kind == "json_schema":  # json_bench.SchemaWorkload
            return self._compiler.compile_json_schema(workload.schema, strict=False)  # type: ignore[attr-defined]
        if workload.kind == "grammar":  # grammar_workloads.GrammarWorkload: the GBNF text
            return self._compiler.compile_grammar(workload.gbnf, syntax="gbnf")  # type: ignore[attr-defined]
        if workload.kind == "choices":
            return self._compiler.compile_choices(list(workload.constraint))
        return self._compiler.compile_regex(workload.as_regex())

    def matcher(self, compiled: Any) -> EngineMatcher:
        return _OursMatcher(self._tokensieve.GrammarMatcher(compiled), self.bitmask)


class TokensieveLazyEngine(TokensieveEngine):
    """tokensieve with ``precompute=False``: at compile time only the start state's mask.

    The other end of the trade between compile time and per-token time: every
    mask after the first is computed on first use (with the states a few bytes
    ahead) while decoding. Its masks must equal ``ours``'s, which the mask
    comparison checks.
    """

    name = "ours-lazy"
    caching_note = (
        "As ours, with GrammarCompiler(precompute=False): the automaton is built and minimised at "
        "compile time, the first mask is the start state's alone, and every other mask is walked on "
        "first use while decoding (memoised)."
    )

    def new_compiler(self) -> None:
        self._compiler = self._tokensieve.GrammarCompiler(self._info, precompute=False)


class TokensieveSyncEngine(TokensieveEngine):
    """tokensieve with ``precompute_in_background=False``: the budgeted walks before compile returns.

    What ``ours`` did before its walks ahead moved to a background thread:
    a longer compile, and decoding that starts with those masks known. Its
    masks must equal ``ours``'s, which the mask comparison checks.
    """

    name = "ours-sync"
    caching_note = (
        "As ours, with GrammarCompiler(precompute_in_background=False): the walks within the work budget "
        "run at compile time, before the first mask is returned."
    )

    def new_compiler(self) -> None:
        self._compiler = self._tokensieve.GrammarCompiler(self._info, precompute_in_background=False)


# --------------------------------------------------------------------------- xgrammar


class _XgrMatcher(EngineMatcher):
    def __init__(self, matcher: Any, bitmask: np.ndarray) -> None:
        self._m = matcher
        self._bm = bitmask
        self.fill_next_token_bitmask = matcher.fill_next_token_bitmask

    def fill(self) -> None:
        self.fill_next_token_bitmask(self._bm, 0)

    def accept(self, token_id: int) -> bool:
        return bool(self._m.accept_token(token_id))

    def is_terminated(self) -> bool:
        return bool(self._m.is_terminated())


class XgrammarEngine(Engine):
    """xgrammar: ``TokenizerInfo`` (RAW vocab) + ``GrammarCompiler.compile_regex``."""

    name = "xgrammar"
    dist = "xgrammar"
    caching_note = (
        "GrammarCompiler caches compiled grammars: a new GrammarCompiler(cache_enabled=False) per repetition. "
        "Compilation is eager (adaptive token-mask cache for every grammar state) and multi-threaded "
        "(max_threads=8, the default; the machine has 2 cores). TokenizerInfo (sorted vocab, prefix data) is "
        "built once per vocabulary (setup)."
    )
    input_note = "regexes via compile_regex; choice lists as an escaped alternation regex"

    def _setup(self, vocab: Vocab) -> None:
        import xgrammar as xgr

        self._xgr = xgr
        self._info = xgr.TokenizerInfo(
            encoded_vocab=vocab.tokens,
            vocab_type=xgr.VocabType.RAW,
            vocab_size=vocab.vocab_size,
            stop_token_ids=[vocab.eos_token_id],
        )
        self._compiler: Any = None

    def new_compiler(self) -> None:
        self._compiler = self._xgr.GrammarCompiler(self._info, cache_enabled=False)

    #: how JSON Schema workloads are compiled (json_bench.py)
    json_note = (
        "compile_json_schema(schema, any_whitespace=True, strict_mode=False): unlimited whitespace runs; "
        "strict_mode=False keeps JSON Schema's own defaults (the default strict_mode=True would close every "
        "object and array that the schema leaves open)"
    )

    def compile(self, workload: Workload) -> Any:
        if workload.kind == "json_schema":  # json_bench.SchemaWorkload
            return self._compiler.compile_json_schema(
                workload.schema, any_whitespace=True, strict_mode=False  # type: ignore[attr-defined]
            )
        if workload.kind == "grammar":  # grammar_workloads.GrammarWorkload: the GBNF text as EBNF
            return self._compiler.compile_grammar(workload.gbnf)  # type: ignore[attr-defined]
        return self._compiler.compile_regex(workload.as_regex())

    def matcher(self, compiled: Any) -> EngineMatcher:
        return _XgrMatcher(self._xgr.GrammarMatcher(compiled), self.bitmask)


# --------------------------------------------------------------------------- llguidance


class _RawTokenizer:
    """The duck-typed object ``llguidance.TokenizerWrapper`` wraps: raw token bytes plus an encoder."""

    def __init__(self, vocab: Vocab) -> None:
        self.tokens = vocab.tokens
        self.eos_token_id = vocab.eos_token_id
        self.bos_token_id = vocab.bos_token_id
        self.special_token_ids = vocab.special_token_ids
        self._encode = vocab.encode

    def __call__(self, text: bytes) -> list[int]:
        return self._encode(text.decode("utf-8", errors="replace"))


class _LlgMatcher(EngineMatcher):
    def __init__(self, matcher: Any, bitmask: np.ndarray, fill: Any) -> None:
        self._m = matcher
        self._bm = bitmask
        self._fill = fill

    def fill(self) -> None:
        self._fill(self._m, self._bm, 0)

    def accept(self, token_id: int) -> bool:
        return bool(self._m.consume_token(token_id))

    def is_terminated(self) -> bool:
        return bool(self._m.is_stopped()) and not self._m.is_error()


class LlguidanceEngine(Engine):
    """llguidance: ``LLTokenizer`` from a ``TokenizerWrapper`` + ``LLMatcher`` over a regex grammar."""

    name = "llguidance"
    dist = "llguidance"
    caching_note = (
        "No compiled-grammar cache: every LLMatcher(tokenizer, grammar) parses the grammar and builds its lexer "
        "afresh; the lexer DFA and token masks are computed lazily during mask computation. Walks use "
        "deep_copy() of the freshly compiled matcher. LLTokenizer (token trie, default 'slices') is built once "
        "per vocabulary (setup)."
    )
    input_note = (
        "LLMatcher.grammar_from_regex(pattern) (a Lark grammar 'start: /pattern/'); choice lists as an escaped "
        "alternation regex"
    )

    def _setup(self, vocab: Vocab) -> None:
        import llguidance
        import llguidance.numpy

        self._llg = llguidance
        self._fill = llguidance.numpy.fill_next_token_bitmask
        self._tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_RawTokenizer(vocab)))
        if self._tokenizer.vocab_size != vocab.vocab_size:
            raise RuntimeError(
                f"LLTokenizer has {self._tokenizer.vocab_size} tokens, expected {vocab.vocab_size}"
            )

    #: how JSON Schema workloads are compiled (json_bench.py)
    json_note = (
        "LLMatcher.grammar_from_json_schema(schema, defaults={'whitespace_flexible': True, 'lenient': True}): "
        "unlimited whitespace runs; lenient ignores keywords it does not implement instead of failing"
    )

    def compile(self, workload: Workload) -> Any:
        if workload.kind == "json_schema":  # json_bench.SchemaWorkload
            grammar = self._llg.LLMatcher.grammar_from_json_schema(
                workload.schema,  # type: ignore[attr-defined]
                defaults={"whitespace_flexible": True, "lenient": True},
            )
        elif workload.kind == "grammar":  # grammar_workloads.GrammarWorkload: the Lark text
            grammar = self._llg.LLMatcher.grammar_from_lark(workload.lark)  # type: ignore[attr-defined]
        else:
            grammar = self._llg.LLMatcher.grammar_from_regex(workload.as_regex())
        matcher = self._llg.LLMatcher(self._tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def matcher(self, compiled: Any) -> EngineMatcher:
        return _LlgMatcher(compiled.deep_copy(), self.bitmask, self._fill)


# --------------------------------------------------------------------------- outlines-core


class _OutlinesMatcher(EngineMatcher):
    """``Guide`` puts EOS in the mask of a final state but raises on ``advance(eos)``:
    accepting EOS is handled here (allowed exactly when the guide is finished)."""

    def __init__(self, guide: Any, bitmask: np.ndarray, eos_token_id: int) -> None:
        self._g = guide
        self._ptr = bitmask.ctypes.data
        self._numel = bitmask.size
        self._write = guide.write_mask_into
        self._eos = eos_token_id
        self._stopped = False

    def fill(self) -> None:
        self._write(self._ptr, self._numel, 4)

    def accept(self, token_id: int) -> bool:
        if self._stopped:
            return False
        if token_id == self._eos:
            self._stopped = bool(self._g.is_finished())
            return self._stopped
        try:
            self._g.advance(token_id, return_tokens=False)
        except ValueError:
            return False
        return True

    def is_terminated(self) -> bool:
        return self._stopped


class OutlinesEngine(Engine):
    """outlines-core: ``Vocabulary`` from raw bytes + ``Index(regex, vocabulary)`` + ``Guide``."""

    name = "outlines"
    dist = "outlines-core"
    caching_note = (
        "No cache: Index(regex, vocabulary) builds the full token-level transition table for every DFA state "
        "eagerly; Guide is a cheap cursor over it. Vocabulary is built once per vocabulary (setup)."
    )
    input_note = "Index(regex); choice lists as an escaped alternation regex"

    def _setup(self, vocab: Vocab) -> None:
        import outlines_core

        self._oc = outlines_core
        by_bytes: dict[bytes, list[int]] = {}
        for token_id, token in enumerate(vocab.tokens):
            if token and token_id != vocab.eos_token_id:
                by_bytes.setdefault(token, []).append(token_id)
        self._vocabulary = outlines_core.Vocabulary(vocab.eos_token_id, by_bytes)

    def compile(self, workload: Workload) -> Any:
        return self._oc.Index(workload.as_regex(), self._vocabulary)

    def matcher(self, compiled: Any) -> EngineMatcher:
        return _OutlinesMatcher(self._oc.Guide(compiled), self.bitmask, self._vocabulary.get_eos_token_id())


ENGINES: dict[str, type[Engine]] = {
    cls.name: cls
    for cls in (TokensieveEngine, TokensieveLazyEngine, TokensieveSyncEngine, XgrammarEngine, LlguidanceEngine, OutlinesEngine)
}


def make_engine(name: str) -> Engine:
    """Instantiate the adapter registered under ``name``."""
    try:
        return ENGINES[name]()
    except KeyError:
        raise ValueError(f"unknown engine {name!r}; expected one of {', '.join(ENGINES)}") from None


def set_up_engines(
    names: Sequence[str],
    vocab: Vocab,
    extra_unavailable: Callable[[str], str | None] | None = None,
) -> tuple[list[Engine], dict[str, str], dict[str, float]]:
    """Create and set up the named engines on ``vocab``, skipping those that cannot run.

    Parameters
    ----------
    names
        Engine names (keys of :data:`ENGINES`).
    vocab
        The vocabulary every engine is set up for.
    extra_unavailable
        Optional benchmark-specific check: a reason to skip an engine, or ``None``.

    Returns
    -------
    tuple
        ``(engines, skipped, setup_seconds)``: the engines that are ready, the
        reason for each skipped one, and each ready engine's set-up time.
        Progress goes to stderr.
    """
    engines: list[Engine] = []
    skipped: dict[str, str] = {}
    setup_s: dict[str, float] = {}
    for n in names:
        reason = ENGINES[n].unavailable_reason()
        if reason is None and extra_unavailable is not None:
            reason = extra_unavailable(n)
        if reason is not None:
            skipped[n] = reason
            print(f"skipping {n}: {reason}", file=sys.stderr)
            continue
        engine = make_engine(n)
        t = time.perf_counter()
        try:
            engine.setup(vocab)
        except Exception as exc:
            skipped[n] = f"setup failed: {type(exc).__name__}: {exc}"
            print(f"skipping {n}: {skipped[n]}", file=sys.stderr)
            continue
        setup_s[n] = time.perf_counter() - t
        print(f"{n} {engine.version}: tokenizer set up in {setup_s[n]:.2f} s", file=sys.stderr)
        engines.append(engine)
    return engines, skipped, setup_s


def engine_names(text: str, allowed: Sequence[str]) -> list[str] | None:
    """The engines of a comma-separated ``--engines`` value, or ``None`` (reason on stderr) if one is not allowed."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in ENGINES or n not in allowed:
            print(f"unknown engine {n!r}; expected one of {', '.join(allowed)}", file=sys.stderr)
            return None
    return names


def describe_engines(engines: Sequence[Engine], setup_s: dict[str, float]) -> str:
    """The report's sentence naming the engines and their per-vocabulary set-up times."""
    return (
        f"Engines: {', '.join(f'{e.name} ({e.dist} {e.version})' for e in engines) or 'none'}. "
        f"Per-vocabulary tokenizer setup (not in compile times): "
        f"{', '.join(f'{n} {s:.2f} s' for n, s in setup_s.items())}. "
    )


def run_metadata(vocab: Vocab, repeat: int) -> dict[str, Any]:
    """What every benchmark's JSON output records about the run: vocabulary, repetitions, machine."""
    return {
        "vocab": {"name": vocab.name, "vocab_size": vocab.vocab_size, "eos_token_id": vocab.eos_token_id},
        "repeat": repeat,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
