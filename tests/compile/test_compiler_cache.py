"""The compiler's grammar cache stays within the mask-memory bound."""

from __future__ import annotations

from tokensieve import GrammarCompiler, Limits


def test_cache_evicts_least_recently_used_past_the_memory_bound(tiny_info) -> None:
    patterns = [r"[a-z]{1,8}", r"[0-9]{1,8}", r"[A-Z]{1,8}"]
    probe = GrammarCompiler(tiny_info, precompute=True, cache_enabled=False).compile_regex(patterns[0])
    one = probe.memory_size_bytes
    compiler = GrammarCompiler(
        tiny_info, precompute=True, limits=Limits(max_mask_cache_bytes=int(one * 2.5))
    )
    first = [compiler.compile_regex(p) for p in patterns]
    assert all(g.memory_size_bytes > 0.5 * one for g in first)
    # three grammars do not fit in 2.5 of them: the oldest was evicted, the newest kept
    assert compiler.compile_regex(patterns[2]) is first[2]
    assert compiler.compile_regex(patterns[0]) is not first[0]


def test_count_bound_still_applies(tiny_info) -> None:
    compiler = GrammarCompiler(tiny_info, max_cached_grammars=2)
    a = compiler.compile_regex("a+")
    compiler.compile_regex("b+")
    compiler.compile_regex("c+")
    assert compiler.compile_regex("a+") is not a
