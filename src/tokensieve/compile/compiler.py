"""GrammarCompiler: constraints in, CompiledGrammar out."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..automata.blank_runs import RunsNotCountable
from ..automata.choices import choices_to_dfa
from ..automata.dfa import ByteDFA
from ..automata.gc_pause import gc_paused
from ..automata.pushdown import RuleNetwork, compile_grammar_automaton
from ..errors import GrammarError, LimitExceeded, SchemaError
from ..grammar.ebnf import parse_ebnf
from ..grammar.gbnf import parse_gbnf
from ..grammar.json_schema import canonical_key, schema_to_grammar
from ..grammar.lark import parse_lark
from ..grammar.regex import regex_to_dfa
from ..ir.grammar import Grammar
from ..limits import Limits
from . import background
from .compiled_grammar import CompiledGrammar
from .disk_cache import DiskCache, cache_key
from .frame_walk import kernel_ready, trie_arrays
from .pushdown import CompiledPushdownGrammar
from .vocab_cache import mask_builder_for

if TYPE_CHECKING:
    from ..vocab import TokenizerInfo

__all__ = ["GrammarCompiler"]

logger = logging.getLogger("tokensieve")


#: the compile-time walks of a recursive grammar get this many times the ``auto_precompute_work``
#: of a DFA (on the 15 recursive schemas of the JSON benchmark, twice the work gave +4 % compile
#: time and half the mean time per token)
_PUSHDOWN_WORK_SCALE = 2
#: with the walks ahead in the background, this much of their work (about 15 ms where the
#: benchmarks ran; times the scale above for recursive grammars) is still done before compile
#: returns: small automata are then whole at once, as the regexes and choice lists of the
#: benchmarks are (2,000 to 20,000 units), and decoding never meets their first visits
_BEFORE_RETURN_WORK = 100_000


class GrammarCompiler:
    """Compiles regexes and choice lists into :class:`CompiledGrammar` objects.

    Parameters
    ----------
    tokenizer_info
        The vocabulary to compile for. Its token trie and the arrays the
        walks read are built by the first compiler of a vocabulary (once per
        vocabulary per process, tens to a few hundred milliseconds for 131k
        tokens) and shared by all compilers.
    limits
        Resource bounds applied to every compilation.
    precompute
        ``True``: compute every automaton state's token mask at compile time,
        many states per walk of the token trie. ``False``: compute each state's
        mask lazily on first use (memoised; a miss also walks the not yet
        computed states a few bytes ahead). ``"auto"`` (default): eager for
        automata of at most ``auto_precompute_max_states`` states none of which
        is permissive (loops on many bytes, like ``[a-z]+`` or the inside of a
        string, or leaves on most bytes, like ``.``: such masks are large and
        each costs a walk of its own). Otherwise the grammar-wide tables of
        shared masks (which states share the mask of their short tokens, the
        chain lengths) are built, and then the masks of one state per class
        of states sharing a mask, restrictive states first, until
        ``auto_precompute_work`` is done (or, on a slow or busy machine,
        ``auto_precompute_budget_s`` has gone); the states left are computed
        on first use, and the other states of a class derive their mask from
        their class's on first use (tens of microseconds). With
        ``precompute_in_background`` and the JIT kernel loaded, all of that
        runs in the background thread and compile returns with the first
        mask: a mask needed before the thread has it is walked on its own by
        the kernel (its cost bounded by the trie's size); without the kernel,
        the first part of the walks runs before compile returns.
    auto_precompute_max_states
        The ``"auto"`` threshold for computing every state's mask (a batched
        walk of a few thousand restrictive states costs a few milliseconds).
    auto_precompute_work
        The ``"auto"`` budget for the masks of larger or permissive automata,
        in units of walking work (see
        :meth:`~tokensieve.compile.token_masks.TokenMaskBuilder.work_done`;
        the default is about 0.2 s where the benchmarks ran). Unlike time, the
        same states are computed ahead on every machine, so decoding meets
        the same first visits whatever the load was during compilation.
        ``None``: bounded by time alone. Recursive grammars get twice as
        much: a walk missed at a decoding step costs milliseconds there (the
        frames of the states near it, walked together), a fraction of one in
        a DFA.
    auto_precompute_budget_s
        The ``"auto"`` time bound on the same walks, in seconds, for slow or
        busy machines (``0`` computes only the start state's mask at compile
        time).
    precompute_in_background
        Where the ``"auto"`` walks within ``auto_precompute_work`` run:
        ``True`` (default), the first of them (about 15 ms of work: all of a
        small automaton's) before the compile returns, and the rest in a
        background thread after it (:mod:`~tokensieve.compile.background`),
        so that they do not delay the first token; a mask needed before the
        thread has walked it is computed on use. ``False``: all before the
        compile returns, so that decoding starts with them.
    cache_enabled
        Keep compiled grammars keyed by their source, so compiling the same
        constraint twice is free.
    max_cached_grammars
        How many compiled grammars the cache keeps (least recently used go first).
    cache_dir
        A folder where the automata built for each constraint are kept across
        processes (:class:`~tokensieve.compile.disk_cache.DiskCache`), keyed by
        the constraint and its options, the vocabulary's hash, the limits and
        the code that builds them: a second process compiling the same
        constraint skips the front end and the automaton construction (token
        masks are computed again, as ``precompute`` says). Entries are written
        atomically; a damaged one is a miss and is built again. ``None``
        (default): no disk cache.
    cache_dir_max_bytes
        The most bytes the folder's entries may take (least recently used are
        removed first).
    """

    def __init__(
        self,
        tokenizer_info: TokenizerInfo,
        *,
        limits: Limits | None = None,
        precompute: bool | Literal["auto"] = "auto",
        auto_precompute_max_states: int = 1 << 14,
        auto_precompute_work: int | None = 1_200_000,
        auto_precompute_budget_s: float = 0.4,
        precompute_in_background: bool = True,
        cache_enabled: bool = True,
        max_cached_grammars: int = 256,
        cache_dir: str | os.PathLike[str] | None = None,
        cache_dir_max_bytes: int = 1 << 30,
    ) -> None:
        self.tokenizer_info = tokenizer_info
        self.limits = limits or Limits()
        if precompute not in (True, False, "auto"):
            raise ValueError(f"precompute must be True, False or 'auto', not {precompute!r}")
        self.precompute = precompute
        self.auto_precompute_max_states = auto_precompute_max_states
        if not auto_precompute_budget_s >= 0:
            raise ValueError(f"auto_precompute_budget_s must be at least 0, not {auto_precompute_budget_s!r}")
        self.auto_precompute_budget_s = float(auto_precompute_budget_s)
        if auto_precompute_work is not None and not auto_precompute_work >= 0:
            raise ValueError(f"auto_precompute_work must be at least 0 or None, not {auto_precompute_work!r}")
        self.auto_precompute_work = auto_precompute_work
        self.precompute_in_background = bool(precompute_in_background)
        self.cache_enabled = cache_enabled
        self.max_cached_grammars = max_cached_grammars
        self._cache: OrderedDict[tuple[str, str], CompiledGrammar] = OrderedDict()
        self._lock = threading.Lock()
        #: the folder of built automata shared by processes (None: none)
        self.disk_cache = None if cache_dir is None else DiskCache(cache_dir, cache_dir_max_bytes)
        # the token trie and the frame walks' arrays of it: per vocabulary, now, not in the first compile
        trie_arrays(mask_builder_for(tokenizer_info))
        kernel_ready()  # the JIT kernels start loading now, in a thread, for the first compile to find them
        if precompute == "auto" and self.precompute_in_background and self._precompute_ahead:
            background.start()

    def compile_regex(self, pattern: str) -> CompiledGrammar:
        """Compile an ECMA-262 style pattern; the whole output must match it.

        Raises
        ------
        GrammarError
            For syntax errors and constructs that are not regular (lookaround,
            backreferences), with the position.
        LimitExceeded
            When the automaton would exceed ``limits``.
        """
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a str, not {type(pattern).__name__}")
        return self._compile(("regex", pattern), lambda: (regex_to_dfa(pattern, self.limits), ()), pattern)

    def compile_choices(self, choices: Sequence[str | bytes]) -> CompiledGrammar:
        """Compile a list of literal strings; the output must equal one of them.

        Raises
        ------
        GrammarError
            For an empty list.
        LimitExceeded
            When the list exceeds ``limits.max_choices`` or ``limits.max_choice_bytes``.
        """
        if isinstance(choices, (str, bytes)):
            raise TypeError("choices must be a sequence of strings, not a single string")
        items = list(choices)
        key = "\x00".join(c if isinstance(c, str) else c.decode("utf-8", "surrogateescape") for c in items)
        desc = f"{len(items)} choices"
        return self._compile(("choices", key), lambda: (choices_to_dfa(items, self.limits), ()), desc)

    def compile_grammar(
        self,
        grammar: str | Grammar,
        *,
        syntax: Literal["ebnf", "gbnf", "lark"] = "ebnf",
        root: str | None = None,
    ) -> CompiledGrammar | CompiledPushdownGrammar:
        """Compile a context-free grammar.

        Parameters
        ----------
        grammar
            Grammar text, or a :class:`~tokensieve.ir.grammar.Grammar` IR value.
        syntax
            The text's syntax: ``"ebnf"`` (W3C style, as xgrammar accepts),
            ``"gbnf"`` (llama.cpp) or ``"lark"``.
        root
            The start rule (default ``"root"``; ``"start"`` for Lark).

        Returns
        -------
        CompiledGrammar or CompiledPushdownGrammar
            A grammar that is regular (no recursive rule reachable from the root)
            compiles to a plain automaton, exactly as a regex does; a recursive
            one to a pushdown grammar. Both drive a :class:`~tokensieve.GrammarMatcher`.

        Raises
        ------
        GrammarError
            Bad grammar text (with line, column and excerpt), undefined rules,
            an empty language, or left recursion that cannot be rewritten.
        LimitExceeded
            When a configured limit is exceeded.
        """
        if isinstance(grammar, Grammar):
            ir = grammar if root is None or root == grammar.root else Grammar(grammar.rules, root, grammar.unordered)
            key_text = repr(sorted(ir.rules.items(), key=lambda kv: kv[0])) + "\x00" + ir.root
            if ir.unordered:
                key_text += "\x00" + repr(sorted(ir.unordered.items()))
            source = f"<grammar with {len(ir.rules)} rules>"
        elif isinstance(grammar, str):
            if len(grammar) > self.limits.max_pattern_length:
                raise LimitExceeded(
                    "max_pattern_length",
                    self.limits.max_pattern_length,
                    f"grammar text of {len(grammar)} characters",
                )
            if syntax == "gbnf":
                ir = parse_gbnf(grammar, root=root or "root")
            elif syntax == "ebnf":
                ir = parse_ebnf(grammar, root=root or "root")
            elif syntax == "lark":
                ir = parse_lark(grammar, root=root or "start")
            else:
                raise GrammarError(f"unknown grammar syntax {syntax!r}: use 'ebnf', 'gbnf' or 'lark'")
            key_text = f"{syntax}\x00{root}\x00{grammar}"
            source = grammar
        else:
            raise TypeError(f"grammar must be text or a Grammar, not {type(grammar).__name__}")
        return self._compile(
            ("grammar", key_text), lambda: (compile_grammar_automaton(ir, self.limits), ()), source
        )

    def compile_json_schema(
        self,
        schema: Any,
        *,
        whitespace: Literal["flexible", "compact"] = "flexible",
        indent: int | None = None,
        max_whitespace: int = 32,
        property_order: Literal["schema", "any"] = "schema",
        strict: bool = True,
        closed_objects: bool = False,
    ) -> CompiledGrammar | CompiledPushdownGrammar:
        """Compile a JSON Schema (draft 2020-12); the output is a valid instance, as JSON text.

        Parameters
        ----------
        schema
            A dict or bool, JSON text, a pydantic ``BaseModel`` subclass, or an
            OpenAI ``response_format`` wrapper (``{"type": "json_schema",
            "json_schema": {"name", "schema", "strict"}}`` or the inner form).
        whitespace
            ``"flexible"``: runs of at most ``max_whitespace`` JSON blanks
            between tokens (none before or after the value); ``"compact"``: none.
        indent
            Exactly the layout of ``json.dumps(indent=indent)`` (overrides
            ``whitespace``; recursive parts fall back to flexible, reported in
            ``unenforced``).
        max_whitespace
            Longest whitespace run in flexible mode.
        property_order
            ``"schema"`` (properties in schema order) or ``"any"``.
        strict
            Raise :class:`~tokensieve.SchemaError` for keywords that are not
            enforced exactly; when false they are listed in the result's
            ``unenforced`` attribute (``"<pointer>: <keyword> <why>"``).
        closed_objects
            ``True``: an object whose schemas (merged over ``allOf`` and
            ``$ref``) say nothing about extra keys (no ``additionalProperties``,
            ``patternProperties`` or ``unevaluatedProperties``) takes only the
            keys they name, as OpenAI's strict structured outputs do.
            ``False`` (default): JSON Schema's rule, any extra key.

        Returns
        -------
        CompiledGrammar or CompiledPushdownGrammar
            One automaton for schemas without recursion or values of
            unconstrained type; a pushdown grammar otherwise.

        Raises
        ------
        SchemaError
            Invalid, unsupported (strict) or unsatisfiable schemas, with the JSON
            pointer of the keyword.
        LimitExceeded
            When a configured limit is exceeded.
        """
        options = {
            "whitespace": whitespace,
            "indent": indent,
            "max_whitespace": max_whitespace,
            "property_order": property_order,
            "strict": strict,
            "closed_objects": closed_objects,
        }
        key_text = canonical_key(schema, options)
        if len(key_text) > self.limits.max_pattern_length * 8:
            raise LimitExceeded(
                "max_pattern_length",
                self.limits.max_pattern_length * 8,
                f"a schema of {len(key_text)} characters",
            )
        found: dict[str, tuple[str, ...]] = {}

        # the whitespace bound is counted into the automaton (see bound_blank_runs), or as a safeguard
        # written into the grammar when a run could start before a layout place
        runs = {"blank_runs": "automaton"}

        def lower(**extra: Any) -> Grammar:
            grammar, unenforced = schema_to_grammar(schema, limits=self.limits, **runs, **extra, **options)  # type: ignore[arg-type]
            found["unenforced"] = unenforced
            return grammar

        def automaton(grammar: Grammar) -> Any:
            if runs["blank_runs"] == "automaton":
                return compile_grammar_automaton(grammar, self.limits, blank_runs=max_whitespace)
            return compile_grammar_automaton(grammar, self.limits)

        def build() -> tuple[Any, tuple[str, ...]]:
            return build_automaton(), found.get("unenforced", ())

        def build_automaton() -> Any:
            try:
                try:
                    return automaton(lower())
                except RunsNotCountable:
                    runs["blank_runs"] = "grammar"
                    return automaton(lower())
            except GrammarError as exc:
                raise SchemaError(f"the schema cannot be compiled: {exc.message}", "") from None
            except LimitExceeded as exc:
                if strict:
                    raise
                failure = exc
            # lenient: leave out the long length and item bounds that make the automaton too large
            tried = found.get("unenforced")
            for bound in (256, 32):
                grammar = lower(relax_bounds=bound)
                if found["unenforced"] == tried:
                    # every bound left out is reported: none was, so this is the grammar that failed
                    continue
                tried = found["unenforced"]
                try:
                    return automaton(grammar)
                except LimitExceeded as exc:
                    failure = exc
            raise failure

        source = key_text if len(key_text) <= 200 else key_text[:197] + "..."
        return self._compile(("json_schema", key_text), build, source)

    def compile_builtin_json_grammar(
        self,
        *,
        whitespace: Literal["flexible", "compact"] = "flexible",
        indent: int | None = None,
        max_whitespace: int = 32,
    ) -> CompiledGrammar | CompiledPushdownGrammar:
        """Compile the grammar of any JSON value (the schema ``{}``).

        Parameters
        ----------
        whitespace, indent, max_whitespace
            As for :meth:`compile_json_schema`.
        """
        return self.compile_json_schema(
            {}, whitespace=whitespace, indent=indent, max_whitespace=max_whitespace, strict=False
        )

    def clear_cache(self) -> None:
        """Forget every cached compiled grammar."""
        with self._lock:
            self._cache.clear()

    @property
    def _precompute_ahead(self) -> bool:
        """Whether ``"auto"`` walks more than the start state at compile time."""
        return self.auto_precompute_budget_s > 0 and self.auto_precompute_work != 0

    def _built(
        self, key: tuple[str, str], build: Callable[[], tuple[Any, tuple[str, ...]]]
    ) -> tuple[ByteDFA | RuleNetwork, tuple[str, ...]]:
        """The automaton of ``key`` and its unenforced keywords: from the disk cache, or built (and kept there)."""
        disk = self.disk_cache
        if disk is None:
            with gc_paused():  # one pause over the lowering and the automata, no collection between them
                return build()
        info = self.tokenizer_info
        entry_key = cache_key(key[0], key[1], info.hash, info.vocab_size, self.limits)
        entry = disk.get(entry_key)
        if (
            isinstance(entry, dict)
            and isinstance(entry.get("automaton"), (ByteDFA, RuleNetwork))
            and isinstance(entry.get("unenforced"), tuple)
        ):
            logger.info("built %s automaton read from the disk cache", key[0])
            return entry["automaton"], entry["unenforced"]
        with gc_paused():
            automaton, unenforced = build()
        try:
            disk.put(entry_key, {"automaton": automaton, "unenforced": tuple(unenforced)})
        except OSError as exc:  # a full or read-only disk costs the cache, not the compile
            logger.warning("cannot write the disk cache entry: %s", exc)
        return automaton, unenforced

    def _compile(
        self, key: tuple[str, str], build: Callable[[], tuple[Any, tuple[str, ...]]], source: str
    ) -> CompiledGrammar:
        if self.cache_enabled:
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    logger.info("compiled %s grammar (cache hit)", key[0])
                    return hit
        t0 = time.perf_counter()
        try:
            dfa, unenforced = self._built(key, build)
        except RecursionError:
            # the front ends and automata builders recurse over the IR; a constraint whose IR
            # nests past the interpreter's stack (multipleOf 1e-200 spelled digit by digit) is
            # refused as too large, like any other bound, never as an untyped error
            raise LimitExceeded(
                "recursion_limit",
                sys.getrecursionlimit(),
                f"the {key[0]} constraint nests deeper than the interpreter's recursion limit",
            ) from None
        if isinstance(dfa, RuleNetwork):
            pda = CompiledPushdownGrammar(
                dfa, self.tokenizer_info, self.limits, kind=key[0], source=source, unenforced=unenforced
            )
            if self.precompute is not False:
                pda.token_mask(pda.start_state)
                if self.precompute is True:
                    pda.precompute()
                elif self._precompute_ahead:
                    work = self.auto_precompute_work
                    self._walk_ahead(pda, None if work is None else work * _PUSHDOWN_WORK_SCALE, _PUSHDOWN_WORK_SCALE)
            logger.info(
                "compiled %s grammar: %d rules, %d DFA states in %.2f ms",
                key[0],
                len(dfa.names),
                dfa.num_states,
                (time.perf_counter() - t0) * 1e3,
            )
            if self.cache_enabled:
                self._remember(key, pda)
            return pda  # type: ignore[return-value]
        compiled = CompiledGrammar(
            self.tokenizer_info, dfa, kind=key[0], source=source, limits=self.limits, unenforced=unenforced
        )
        if self.precompute is True:
            compiled.precompute()
        elif self.precompute == "auto":
            if (
                compiled.num_states <= self.auto_precompute_max_states
                and not compiled.automaton.is_permissive
            ):
                compiled.precompute()
            else:
                # with the kernel loaded, a mask first needed while decoding costs one walk of its own
                # (at most the trie's size): the analyses and walks ahead all go beside decoding
                aside = self._precompute_ahead and self.precompute_in_background and kernel_ready()
                compiled.prepare(shared_classes=not aside)
                compiled.token_mask(compiled.start_state)
                if self._precompute_ahead:
                    self._walk_ahead(compiled, self.auto_precompute_work, first=0 if aside else None)
        logger.info(
            "compiled %s grammar: %d states in %.2f ms",
            key[0],
            compiled.num_states,
            (time.perf_counter() - t0) * 1e3,
        )
        if self.cache_enabled:
            self._remember(key, compiled)
        return compiled

    def _walk_ahead(
        self,
        compiled: CompiledGrammar | CompiledPushdownGrammar,
        work: int | None,
        scale: int = 1,
        first: int | None = None,
    ) -> None:
        """The ``"auto"`` walks of ``compiled`` within ``work`` and the time bound: the first
        ``first`` units (default ``_BEFORE_RETURN_WORK * scale``) now, and the rest aside (or all now)."""
        seconds = self.auto_precompute_budget_s
        if not self.precompute_in_background:
            compiled.precompute(budget_s=seconds, budget_work=work)
            return
        if first is None:
            first = _BEFORE_RETURN_WORK * scale
        if first == 0:
            background.submit(compiled, seconds, work)
            return
        now = first if work is None else min(work, first)
        t0 = time.perf_counter()
        if compiled.precompute(budget_s=seconds, budget_work=now) or work == now:
            return  # every mask worth walking is known
        left_s = seconds - (time.perf_counter() - t0)  # one time bound over both parts, as over all at once
        if left_s > 0:
            background.submit(compiled, left_s, None if work is None else work - now)

    def _remember(self, key: tuple[str, str], compiled: Any) -> None:
        """Cache ``compiled``; evict the least recently used past the count or memory bounds.

        Masks are filled lazily while decoding, so the memory of every cached
        grammar is re-read here: all of them together stay within
        ``limits.max_mask_cache_bytes`` (the newest is always kept).
        """
        with self._lock:
            self._cache[key] = compiled
            while len(self._cache) > self.max_cached_grammars:
                self._cache.popitem(last=False)
            total = sum(_memory_bytes(g) for g in self._cache.values())
            while total > self.limits.max_mask_cache_bytes and len(self._cache) > 1:
                _, old = self._cache.popitem(last=False)
                total -= _memory_bytes(old)


def _memory_bytes(compiled: CompiledGrammar | CompiledPushdownGrammar) -> int:
    """Bytes a cached grammar holds (automaton, memoised walks and masks)."""
    return int(compiled.memory_size_bytes)
