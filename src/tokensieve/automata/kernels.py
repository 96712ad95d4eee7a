"""The automata stage's JIT kernels: subset construction and minimisation.

The kernels are numba functions (:mod:`._subset_kernel`, :mod:`._minimize_kernel`);
importing numba and loading their machine code takes about half a second
(seconds the first time on a machine, when they compile), so nothing loads
them on import. :func:`load` does: from the thread that loads the compile
stage's walk kernels (:func:`~tokensieve.compile.frame_walk.load_kernel`),
or from a compile whose automaton is too large for the plain-Python code
(``wait=True``), which then waits for them. Small automata are built in
plain Python until the kernels are loaded, with the same results.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["load", "minimize_kernel", "subset_kernels"]

_MINIMIZE: list[Callable[..., Any]] = []
_SUBSETS: list[tuple[Callable[..., Any], Callable[..., Any]]] = []
_LOCK = threading.Lock()


def minimize_kernel(wait: bool = False) -> Callable[..., Any] | None:
    """The kernel of :func:`~tokensieve.automata.minimize_arrays.minimize_edges`: None before
    :func:`load`, unless ``wait`` (then loaded now)."""
    if wait and not _MINIMIZE:
        load()
    return _MINIMIZE[0] if _MINIMIZE else None


def subset_kernels(wait: bool = False) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The kernels of :func:`~tokensieve.automata.determinize.determinize` (closures, subsets): None
    before :func:`load`, unless ``wait`` (then loaded now)."""
    if wait and not _SUBSETS:
        load()
    return _SUBSETS[0] if _SUBSETS else None


def load() -> None:
    """Import and compile (or load from the cache) every kernel of the stage, with the argument types of
    real calls (once per process; a second caller waits for the first)."""
    with _LOCK:
        if _MINIMIZE and _SUBSETS:
            return
        from ._minimize_kernel import minimize_kernel as kernel
        from ._subset_kernel import closures_kernel, subsets_kernel

        one = np.zeros(1, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        kernel(1, np.zeros(2, dtype=np.int64), none.copy(), none.copy(), np.ones(1, dtype=bool), 0)
        # a one-node NFA that accepts the empty string
        cl_ptr, cl_pos, _ = closures_kernel(
            one.copy(), np.full(1, -1, dtype=np.int64), 0, 0, np.zeros(2, dtype=np.int64), none.copy()
        )
        subsets_kernel(cl_ptr, cl_pos, np.zeros(1, dtype=np.int64), none.copy(), 0, 1, 1, 1)
        _SUBSETS.append((closures_kernel, subsets_kernel))
        _MINIMIZE.append(kernel)
