"""Trimming and minimisation of DFAs over byte classes.

Automata here are partial: a state lists only its existing transitions as
``(class, target)`` pairs. :func:`trim` drops the states that cannot reach
acceptance; :func:`minimize` merges equivalent states with Hopcroft's partition
refinement (always queueing the smaller half of a split, so ``O(m log n)`` for
``m`` transitions and ``n`` states) and renumbers the result breadth-first from
the start state, so equal languages give identical tables.

Hopcroft's algorithm is usually stated for complete automata. Here the missing
transitions go to an implicit dead state that is never used as a splitter;
queueing *both* initial blocks (accepting and not) makes up for it: after both
have split, any two states in one block agree, for every class, on whether
they have a transition at all.

Automata of more than :data:`~tokensieve.automata.minimize_arrays.SMALL_EDGES`
transitions are trimmed and minimised on arrays (:mod:`.minimize_arrays`).
"""

from __future__ import annotations

from .determinize import Row

__all__ = ["trim", "minimize"]



def trim(rows: list[Row], accepting: list[bool], start: int = 0) -> tuple[list[Row], list[bool]] | None:
    """Remove the states that cannot reach an accepting state.

    Parameters
    ----------
    rows
        ``rows[s]``: the ``(class, target)`` transitions of state ``s``.
    accepting
        Whether each state accepts.
    start
        The start state; all states must be reachable from it.

    Returns
    -------
    tuple or None
        The trimmed ``(rows, accepting)`` with the start renumbered to 0 and the
        other survivors in their old order, or ``None`` when the language is empty.
    """
    n = len(rows)
    preds: list[list[int]] = [[] for _ in range(n)]
    for s, row in enumerate(rows):
        for _, t in row:
            preds[t].append(s)
    alive = [False] * n
    stack = [s for s in range(n) if accepting[s]]
    for s in stack:
        alive[s] = True
    while stack:
        t = stack.pop()
        for s in preds[t]:
            if not alive[s]:
                alive[s] = True
                stack.append(s)
    if not alive[start]:
        return None
    order = [start] + [s for s in range(n) if alive[s] and s != start]
    if len(order) == n and start == 0:
        return rows, accepting
    new = [-1] * n
    for i, s in enumerate(order):
        new[s] = i
    new_rows = [[(c, new[t]) for c, t in rows[s] if alive[t]] for s in order]
    return new_rows, [accepting[s] for s in order]


def minimize(rows: list[Row], accepting: list[bool], start: int = 0) -> tuple[list[Row], list[bool]]:
    """Minimise a trimmed partial DFA (every state reachable and co-reachable).

    Parameters
    ----------
    rows
        ``rows[s]``: the ``(class, target)`` transitions of state ``s``.
    accepting
        Whether each state accepts.
    start
        The start state.

    Returns
    -------
    tuple
        ``(rows, accepting)`` of the minimal DFA, numbered breadth-first from
        the start state (which becomes 0, successors by increasing class).
    """
    n = len(rows)
    acyclic = _classes_if_acyclic(rows, accepting, start)
    if acyclic is not None:
        block_of, reps = acyclic
        blocks: list[set[int]] = [{r} for r in reps]  # one member is all the renumbering needs
    else:
        block_of = [0] * n
        blocks = []
        for part in ({s for s in range(n) if accepting[s]}, {s for s in range(n) if not accepting[s]}):
            if part:
                for s in part:
                    block_of[s] = len(blocks)
                blocks.append(part)
        _refine(rows, blocks, block_of)

    order = {block_of[start]: 0}
    todo = [block_of[start]]
    new_rows: list[Row] = []
    new_acc: list[bool] = []
    for b in todo:
        rep = next(iter(blocks[b]))
        row: Row = []
        for c, t in rows[rep]:
            tb = block_of[t]
            j = order.get(tb)
            if j is None:
                j = order[tb] = len(todo)
                todo.append(tb)
            row.append((c, j))
        new_rows.append(row)
        new_acc.append(accepting[rep])
    return new_rows, new_acc


def _classes_if_acyclic(
    rows: list[Row], accepting: list[bool], start: int
) -> tuple[list[int], list[int]] | None:
    """Equivalence classes of an acyclic automaton, or ``None`` if it has a cycle.

    Without cycles, two states are equivalent iff they agree on acceptance and
    go, class by class, to equivalent states: one pass in reverse topological
    order, interning ``(accepting, ((class, class of target), ...))`` signatures.
    Returns the class of every state and one member of each class.
    """
    n = len(rows)
    state_of = [0] * n  # 0: new, 1: on the stack, 2: done
    order: list[int] = []
    for root in [start, *range(n)]:
        if state_of[root]:
            continue
        state_of[root] = 1
        stack = [(root, 0)]
        while stack:
            s, i = stack[-1]
            row = rows[s]
            if i < len(row):
                stack[-1] = (s, i + 1)
                t = row[i][1]
                mark = state_of[t]
                if mark == 1:
                    return None  # a cycle
                if mark == 0:
                    state_of[t] = 1
                    stack.append((t, 0))
            else:
                state_of[s] = 2
                order.append(s)
                stack.pop()
    cls = [0] * n
    ids: dict[tuple[object, ...], int] = {}
    reps: list[int] = []
    for s in order:  # targets before sources
        key = (accepting[s], tuple((c, cls[t]) for c, t in rows[s]))
        k = ids.get(key)
        if k is None:
            k = ids[key] = len(reps)
            reps.append(s)
        cls[s] = k
    return cls, reps


def _refine(rows: list[Row], blocks: list[set[int]], block_of: list[int]) -> None:
    """Hopcroft's refinement of ``blocks`` in place."""
    n = len(rows)
    incoming: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for s, row in enumerate(rows):
        for c, t in row:
            incoming[t].append((c, s))
    pending = set(range(len(blocks)))
    while pending:
        splitter = blocks[pending.pop()]
        by_class: dict[int, list[int]] = {}
        for t in splitter:
            for c, s in incoming[t]:
                lst = by_class.get(c)
                if lst is None:
                    by_class[c] = [s]
                else:
                    lst.append(s)
        for sources in by_class.values():
            touched: dict[int, list[int]] = {}
            for s in sources:
                b = block_of[s]
                lst = touched.get(b)
                if lst is None:
                    touched[b] = [s]
                else:
                    lst.append(s)
            for b, inside in touched.items():
                whole = blocks[b]
                if len(inside) == len(whole):
                    continue
                if 2 * len(inside) <= len(whole):
                    moved = set(inside)
                else:
                    moved = whole.difference(inside)
                whole -= moved
                nb = len(blocks)
                blocks.append(moved)
                for s in moved:
                    block_of[s] = nb
                pending.add(nb)

