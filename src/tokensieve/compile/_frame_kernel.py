"""The JIT kernel of :mod:`.frame_walk`: one frame walk, depth first over the token trie.

Imported only by :func:`~tokensieve.compile.frame_walk.frame_walk`, on the
first walk of a rule network, so that importing :mod:`tokensieve` does not
import numba. The kernel is compiled once per machine (``cache=True``: the
machine code is kept beside this module) and runs without the GIL.

Inside the walk, a *configuration* (the state on top and the frames pushed
since the origin) is interned to an id, and the set of configurations at a
trie node, closed under calls and returns, is interned too: a node's set and
a byte give the child's set through a table filled on first use, so a node
costs one lookup per child however many configurations it holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict


@njit(cache=True, nogil=True, inline="always")
def _grow(a: np.ndarray, need: int, fill: int) -> np.ndarray:  # pragma: no cover - compiled
    """``a`` with room for ``need`` rows at least (new rows set to ``fill``)."""
    size = a.shape[0]
    if size >= need:
        return a
    while size < need:
        size *= 2
    out = np.full((size,) + a.shape[1:], fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, nogil=True, inline="always")
def _collect(  # pragma: no cover - compiled
    q: int,
    pushed: int,
    num_states: int,
    ids: Dict,
    count: int,
    stamp: int,
    out: np.ndarray,
    n_out: int,
    cfg_state: np.ndarray,
    cfg_push: np.ndarray,
    reach_start: np.ndarray,
    reach_len: np.ndarray,
    mark: np.ndarray,
) -> tuple[int, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Append configuration (state ``q``, frames ``pushed``) to ``out[:n_out]`` unless marked with
    ``stamp``; interns it first (``q`` itself when nothing is pushed, else the next id, ``count``).

    Returns the new count, ``out`` and its length, and the per-configuration arrays (grown if need be).
    """
    nc = q
    if pushed != 0:
        key = pushed * num_states + q
        if key in ids:
            nc = ids[key]
        else:
            nc = count
            ids[key] = nc
            if nc >= cfg_state.shape[0]:
                cfg_state = _grow(cfg_state, nc + 1, 0)
                cfg_push = _grow(cfg_push, nc + 1, 0)
                reach_start = _grow(reach_start, nc + 1, -1)
                reach_len = _grow(reach_len, nc + 1, 0)
                mark = _grow(mark, nc + 1, 0)
            cfg_state[nc] = q
            cfg_push[nc] = pushed
            count += 1
    if mark[nc] != stamp:
        mark[nc] = stamp
        out = _grow(out, n_out + 1, 0)
        out[n_out] = nc
        n_out += 1
    return count, out, n_out, cfg_state, cfg_push, reach_start, reach_len, mark


@njit(cache=True, nogil=True, inline="always")
def _visit(  # pragma: no cover - compiled
    node: int,
    sid: int,
    loop_start: np.ndarray,
    loop_len: np.ndarray,
    loopers: np.ndarray,
    loops: np.ndarray,
    utf8: np.ndarray,
    child_start: np.ndarray,
    token_lo: np.ndarray,
    token_mid: np.ndarray,
    token_hi: np.ndarray,
    sub_bytes: np.ndarray,
    utf8_ok: np.ndarray,
    sorted_tokens: np.ndarray,
    mask: np.ndarray,
) -> bool:
    """Allow the tokens of ``node`` reached with set ``sid``; returns whether its whole subtree is allowed
    (the state of a member, one of the set's ``loopers``, loops on every byte below the node)."""
    closed = False
    if child_start[node + 1] > child_start[node]:
        a = loop_start[sid]
        for j in range(a, a + loop_len[sid]):
            q = loopers[j]
            if (
                (sub_bytes[node, 0] & ~loops[q, 0])
                | (sub_bytes[node, 1] & ~loops[q, 1])
                | (sub_bytes[node, 2] & ~loops[q, 2])
                | (sub_bytes[node, 3] & ~loops[q, 3])
            ) != 0:
                continue
            if utf8[q] and not utf8_ok[node] and (sub_bytes[node, 2] | sub_bytes[node, 3]) != 0:
                continue
            closed = True
            break
    end = token_hi[node] if closed else token_mid[node]
    for t in range(token_lo[node], end):
        tok = sorted_tokens[t]
        mask[tok >> 5] |= np.uint32(1) << np.uint32(tok & 31)
    return closed


@njit(cache=True, nogil=True, inline="always")
def _open_frame(  # pragma: no cover - compiled
    depth: int,
    node: int,
    sid: int,
    closed: bool,
    frame_node: np.ndarray,
    frame_set: np.ndarray,
    frame_next: np.ndarray,
    frame_end: np.ndarray,
    frame_live: np.ndarray,
    child_start: np.ndarray,
    live_start: np.ndarray,
    live_len: np.ndarray,
) -> None:
    """Put ``node`` with set ``sid`` on the walk's trie path: its children to try next, none when its
    subtree is ``closed``, by the set's live bytes when they are fewer than the children."""
    frame_node[depth] = node
    frame_set[depth] = sid
    first, last = child_start[node], child_start[node + 1]
    if closed:
        first = last
    frame_live[depth] = False
    if live_len[sid] < last - first:
        frame_live[depth] = True
        first, last = live_start[sid], live_start[sid] + live_len[sid]
    frame_next[depth] = first
    frame_end[depth] = last


@njit(cache=True, nogil=True)
def walk_kernel(  # noqa: C901 - one walk, kept whole for the compiler  # pragma: no cover - compiled
    trans: np.ndarray,
    accept: np.ndarray,
    special: np.ndarray,
    call_start: np.ndarray,
    call_callee: np.ndarray,
    call_ret: np.ndarray,
    has_loop: np.ndarray,
    loops: np.ndarray,
    utf8: np.ndarray,
    child_start: np.ndarray,
    child_ids: np.ndarray,
    child_byte: np.ndarray,
    token_lo: np.ndarray,
    token_mid: np.ndarray,
    token_hi: np.ndarray,
    sub_bytes: np.ndarray,
    utf8_ok: np.ndarray,
    sorted_tokens: np.ndarray,
    origin: int,
    below: np.ndarray,
    start_nodes: np.ndarray,
    max_stack_depth: int,
    max_trie_depth: int,
    mask: np.ndarray,
    seen_call: np.ndarray,
    seen_set: np.ndarray,
    call_id: int,
) -> tuple[np.ndarray, int, int]:
    """Walk the frame of global state ``origin`` with the frames ``below`` it (return states, bottom first;
    none: the frame alone) below each of ``start_nodes``.

    See :func:`~tokensieve.compile.frame_walk.frame_walk` for the contract.
    Writes the allowed tokens into ``mask`` (``uint32`` words) and returns the
    escape nodes (with repeats), their count, and the work done (trie nodes
    visited and configurations closed), or -1 when a path pushed more than
    ``max_stack_depth`` frames.
    """
    num_states = accept.shape[0]
    # with several start nodes, one below another, a node met again with the same set is not walked
    # again: per trie node, the call and the set it was last walked with
    single = start_nodes.shape[0] == 1
    # pushed frames: id -> (frames below, return state, depth); 0 is none
    push_below = np.zeros(64, dtype=np.int64)
    push_top = np.full(64, -1, dtype=np.int64)
    push_depth = np.zeros(64, dtype=np.int64)
    num_push = 1
    push_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    # configurations: id -> (state, pushed); the id of (q, nothing pushed) is q
    cap = num_states + 64
    cfg_state = np.empty(cap, dtype=np.int64)
    cfg_push = np.zeros(cap, dtype=np.int64)
    cfg_state[:num_states] = np.arange(num_states)
    num_cfg = num_states
    cfg_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    # per configuration, those reached from it by calls and returns (itself excluded), on first use
    reach_start = np.full(cap, -1, dtype=np.int64)
    reach_len = np.zeros(cap, dtype=np.int64)
    reach = np.empty(256, dtype=np.int64)
    num_reach = 0
    mark = np.zeros(cap, dtype=np.int64)  # stamps, to keep a list of configurations distinct
    stamp = 0
    # sets of configurations (sorted ids), closed: members, escape, looping members; child set per byte
    set_start = np.empty(64, dtype=np.int64)
    set_len = np.empty(64, dtype=np.int64)
    set_escape = np.zeros(64, dtype=np.bool_)
    set_next = np.full(64, -1, dtype=np.int64)  # the next set of the same hash
    set_trans = np.full((64, 256), -2, dtype=np.int32)  # -2: not known yet, -1: no path
    members = np.empty(1024, dtype=np.int64)
    loop_start = np.empty(64, dtype=np.int64)  # the distinct looping states of each set's members
    loop_len = np.empty(64, dtype=np.int64)
    loopers = np.empty(64, dtype=np.int64)
    num_loopers = 0
    live_start = np.empty(64, dtype=np.int64)  # the bytes on which some member moves, per set
    live_len = np.empty(64, dtype=np.int64)
    live = np.empty(1024, dtype=np.int64)
    num_live = 0
    num_members = 0
    num_sets = 0
    set_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    buf = np.empty(64, dtype=np.int64)
    # the trie path of the walk
    frame_node = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_live = np.zeros(max_trie_depth + 2, dtype=np.bool_)  # iterating the set's live bytes
    frame_set = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_next = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_end = np.empty(max_trie_depth + 2, dtype=np.int64)
    escapes = np.empty(64, dtype=np.int64)
    num_escapes = 0
    visits = 0  # trie nodes visited, and sets built
    origin_set = -1  # the set of the origin alone, once known
    # the frames below the origin's (bottom first), as pushed frames that count nothing toward the bound
    origin_cfg = origin
    for k in range(below.shape[0]):
        push_below = _grow(push_below, num_push + 1, 0)
        push_top = _grow(push_top, num_push + 1, -1)
        push_depth = _grow(push_depth, num_push + 1, 0)
        push_below[num_push] = num_push - 1 if k else 0
        push_top[num_push] = below[k]
        push_depth[num_push] = 0
        num_push += 1
    if below.shape[0]:
        origin_cfg = num_cfg
        cfg_ids[(num_push - 1) * num_states + origin] = origin_cfg  # (the frames are not interned)
        cfg_state[origin_cfg] = origin
        cfg_push[origin_cfg] = num_push - 1
        num_cfg += 1
    sid = -1
    for s in range(start_nodes.shape[0]):
        # from the set of the origin alone at the start node, then from each (set, byte) met below
        pending_set = -1
        pending_byte = 0
        known_set = -1
        node = start_nodes[s]
        depth = 0
        while True:
            # ---- the set of the next node: seeds (or the byte successors of a set), closed and interned
            known = known_set >= 0 or (pending_set < 0 and origin_set >= 0)
            if known:
                sid = known_set if known_set >= 0 else origin_set
                n_buf = 0
            elif pending_set >= 0:
                n_buf = 0
                stamp += 1
                a = set_start[pending_set]
                for j in range(a, a + set_len[pending_set]):
                    c = members[j]
                    t = trans[cfg_state[c] * 256 + pending_byte]
                    if t < 0:
                        continue
                    num_cfg, buf, n_buf, cfg_state, cfg_push, reach_start, reach_len, mark = _collect(
                        t, cfg_push[c], num_states, cfg_ids, num_cfg, stamp, buf, n_buf,
                        cfg_state, cfg_push, reach_start, reach_len, mark,
                    )
            else:
                stamp += 1
                n_buf = 1
                buf[0] = origin_cfg
                mark[origin_cfg] = stamp
            # the closure of each member under calls and returns (memoised per configuration)
            n_direct = n_buf
            for i in range(n_direct):
                c = buf[i]
                if not special[cfg_state[c]]:
                    continue
                if reach_start[c] < 0:
                    # configurations reached from c without a byte, by a search from c
                    stamp += 1
                    first = num_reach
                    todo = first
                    cur = c
                    mark[c] = stamp
                    while True:
                        q = cfg_state[cur]
                        p = cfg_push[cur]
                        if special[q]:
                            for k in range(-1, call_start[q + 1] - call_start[q]):
                                if k < 0:
                                    if not accept[q] or p == 0:
                                        continue
                                    nq = push_top[p]
                                    np_ = push_below[p]
                                else:
                                    e = call_start[q] + k
                                    nq = call_callee[e]
                                    ret = call_ret[e]
                                    np_ = p
                                    if ret >= 0:
                                        key = p * num_states + ret
                                        np_ = push_ids[key] if key in push_ids else -1
                                        if np_ < 0:
                                            if push_depth[p] + 1 > max_stack_depth:
                                                return escapes, num_escapes, -1
                                            np_ = num_push
                                            push_ids[key] = np_
                                            push_below = _grow(push_below, np_ + 1, 0)
                                            push_top = _grow(push_top, np_ + 1, -1)
                                            push_depth = _grow(push_depth, np_ + 1, 0)
                                            push_below[np_] = p
                                            push_top[np_] = ret
                                            push_depth[np_] = push_depth[p] + 1
                                            num_push += 1
                                num_cfg, reach, num_reach, cfg_state, cfg_push, reach_start, reach_len, mark = _collect(
                                    nq, np_, num_states, cfg_ids, num_cfg, stamp, reach, num_reach,
                                    cfg_state, cfg_push, reach_start, reach_len, mark,
                                )
                        if todo == num_reach:
                            break
                        cur = reach[todo]
                        todo += 1
                    reach_start[c] = first
                    reach_len[c] = num_reach - first
                    # the stamps of the search are spent: mark the list built so far again
                    stamp += 1
                    for j in range(n_buf):
                        mark[buf[j]] = stamp
                a = reach_start[c]
                for j in range(a, a + reach_len[c]):
                    r = reach[j]
                    if mark[r] == stamp:
                        continue
                    mark[r] = stamp
                    buf = _grow(buf, n_buf + 1, 0)
                    buf[n_buf] = r
                    n_buf += 1
            # intern the set (sorted ids)
            if known:
                pass
            elif n_buf == 0:
                sid = -1
            else:
                part = np.sort(buf[:n_buf])
                h = np.int64(n_buf)
                for j in range(n_buf):
                    h = h * np.int64(1000003) ^ part[j]
                sid = set_ids[h] if h in set_ids else -1
                while sid >= 0:
                    if set_len[sid] == n_buf:
                        a = set_start[sid]
                        same = True
                        for j in range(n_buf):
                            if members[a + j] != part[j]:
                                same = False
                                break
                        if same:
                            break
                    sid = set_next[sid]
                if sid < 0:
                    sid = num_sets
                    num_sets += 1
                    if sid >= set_start.shape[0]:
                        set_start = _grow(set_start, sid + 1, 0)
                        set_len = _grow(set_len, sid + 1, 0)
                        set_escape = _grow(set_escape, sid + 1, False)
                        set_next = _grow(set_next, sid + 1, -1)
                        set_trans = _grow(set_trans, sid + 1, -2)
                        loop_start = _grow(loop_start, sid + 1, 0)
                        loop_len = _grow(loop_len, sid + 1, 0)
                        live_start = _grow(live_start, sid + 1, 0)
                        live_len = _grow(live_len, sid + 1, 0)
                    members = _grow(members, num_members + n_buf, 0)
                    set_start[sid] = num_members
                    set_len[sid] = n_buf
                    esc = False
                    for j in range(n_buf):
                        members[num_members + j] = part[j]
                        if cfg_push[part[j]] == 0 and accept[cfg_state[part[j]]]:
                            esc = True
                    num_members += n_buf
                    set_escape[sid] = esc
                    loop_start[sid] = num_loopers
                    for j in range(n_buf):
                        q = cfg_state[part[j]]
                        if not has_loop[q]:
                            continue
                        new = True
                        for k in range(loop_start[sid], num_loopers):
                            if loopers[k] == q:
                                new = False
                                break
                        if new:
                            loopers = _grow(loopers, num_loopers + 1, 0)
                            loopers[num_loopers] = q
                            num_loopers += 1
                    loop_len[sid] = num_loopers - loop_start[sid]
                    live = _grow(live, num_live + 256, 0)
                    live_start[sid] = num_live
                    for byte in range(256):
                        for j in range(n_buf):
                            if trans[cfg_state[part[j]] * 256 + byte] >= 0:
                                live[num_live] = byte
                                num_live += 1
                                break
                    live_len[sid] = num_live - live_start[sid]
                    set_next[sid] = set_ids[h] if h in set_ids else -1
                    set_ids[h] = sid
            if known:
                pass
            elif pending_set >= 0:
                set_trans[pending_set, pending_byte] = sid
            else:
                origin_set = sid
            # ---- visit the node with its set
            visits += n_buf + 1
            known_set = -1
            if sid >= 0 and not single:
                if seen_call[node] == call_id and seen_set[node] == sid:
                    sid = -1  # walked below with this set already, from another start node
                else:
                    seen_call[node] = call_id
                    seen_set[node] = sid
            if sid >= 0:
                if set_escape[sid]:
                    escapes = _grow(escapes, num_escapes + 1, 0)
                    escapes[num_escapes] = node
                    num_escapes += 1
                closed = _visit(
                    node, sid, loop_start, loop_len, loopers, loops, utf8,
                    child_start, token_lo, token_mid, token_hi, sub_bytes, utf8_ok, sorted_tokens, mask,
                )
                _open_frame(
                    depth, node, sid, closed, frame_node, frame_set, frame_next, frame_end, frame_live,
                    child_start, live_start, live_len,
                )
                depth += 1
            # ---- the next child with a live path, backing up the trie path when a node has none left
            pending_set = -1
            known_set = -1
            while depth > 0:
                d = depth - 1
                sid = frame_set[d]
                while frame_next[d] < frame_end[d]:
                    e = frame_next[d]
                    frame_next[d] = e + 1
                    if frame_live[d]:
                        # by the set's live bytes: find the child along the byte
                        b = live[e]
                        nxt = set_trans[sid, b]
                        if nxt == -1:
                            continue
                        lo_e = child_start[frame_node[d]]
                        hi_e = child_start[frame_node[d] + 1]
                        while lo_e < hi_e:
                            mid = (lo_e + hi_e) >> 1
                            if child_byte[mid] < b:
                                lo_e = mid + 1
                            else:
                                hi_e = mid
                        if lo_e == child_start[frame_node[d] + 1] or child_byte[lo_e] != b:
                            continue
                        e = lo_e
                    else:
                        b = child_byte[e]
                        nxt = set_trans[sid, b]
                        if nxt == -1:
                            continue
                    node = child_ids[e]
                    if nxt == -2:
                        pending_set = sid
                        pending_byte = b
                        break
                    known_set = nxt  # a known set: visited below, with the others
                    break
                if pending_set >= 0 or known_set >= 0:
                    break
                depth -= 1
            if pending_set < 0 and known_set < 0:
                break
    return escapes, num_escapes, visits
