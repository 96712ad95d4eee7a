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

The kernel allocates nothing that grows: its tables come from the caller (a
workspace, see :class:`~tokensieve.compile.frame_walk.Workspace`), and when
one is full it stops and says so, and the caller walks again with larger
ones. (Arrays rebound inside the loop would cost reference counting on every
step.)
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict

#: columns of the per-configuration table
_STATE, _PUSHED, _REACH_AT, _REACH_LEN, _MARK, _WALK = range(6)
#: columns of the per-configuration table (the first ``num_states`` rows are the states with nothing
#: pushed, filled by the caller); ``_WALK``: the walk whose closure list ``_REACH_AT`` is
#: columns of the per-set table
_AT, _LEN, _ESCAPES, _NEXT, _LOOP_AT, _LOOP_LEN, _LIVE_AT, _LIVE_LEN = range(8)
#: the status of a walk that ran out of room in its workspace
FULL = -2
#: the status of a walk that pushed more frames than the bound
TOO_DEEP = -1


@njit(cache=True, nogil=True, inline="always")
def _config(q: int, pushed: int, num_states: int, ids: Dict, cfg: np.ndarray, count: int) -> tuple[int, int]:
    """The id of configuration (state ``q``, frames ``pushed``) and the new count of ids: ``q`` itself
    when nothing is pushed, else interned in ``ids`` and ``cfg`` (-1 when ``cfg`` is full)."""
    if pushed == 0:
        return q, count
    key = pushed * num_states + q
    if key in ids:
        return ids[key], count
    if count == cfg.shape[0]:
        return -1, count
    ids[key] = count
    cfg[count, _STATE] = q
    cfg[count, _PUSHED] = pushed
    cfg[count, _WALK] = -1
    return count, count + 1


@njit(cache=True, nogil=True, inline="always")
def _listed(c: int, stamp: int, cfg: np.ndarray, out: np.ndarray, n_out: int) -> int:
    """Append configuration ``c`` to ``out[:n_out]`` unless marked with ``stamp`` already; the new
    length, or -1 when ``c`` is -1 or ``out`` is full."""
    if c < 0 or n_out < 0:
        return -1
    if cfg[c, _MARK] == stamp:
        return n_out
    if n_out == out.shape[0]:
        return -1
    cfg[c, _MARK] = stamp
    out[n_out] = c
    return n_out + 1


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
    child_bits: np.ndarray,
    origins: np.ndarray,
    below: np.ndarray,
    start_nodes: np.ndarray,
    max_stack_depth: int,
    max_trie_depth: int,
    masks: np.ndarray,
    escape_ends: np.ndarray,
    seen_call: np.ndarray,
    seen_set: np.ndarray,
    first_call: int,
    pushes: np.ndarray,
    cfg: np.ndarray,
    reach: np.ndarray,
    buf: np.ndarray,
    sets: np.ndarray,
    set_trans: np.ndarray,
    set_bits: np.ndarray,
    members: np.ndarray,
    loopers: np.ndarray,
    live: np.ndarray,
    escapes: np.ndarray,
    stamps: np.ndarray,
) -> tuple[int, int]:
    """Walk the frame of each global state of ``origins`` with the frames ``below`` it (return states,
    bottom first; none: the frame alone) below each of ``start_nodes``.

    See :func:`~tokensieve.compile.frame_walk.frame_walks` for the contract.
    Writes the tokens each origin allows into its row of ``masks`` (``uint32``
    words), its escape nodes into ``escapes`` (those of origin ``o`` end at
    ``escape_ends[o]``). ``seen_call``, ``seen_set`` (per trie node) and the
    call ids from ``first_call`` (one per origin): with several start nodes, one
    below another, a node met again with the same set is not walked again.
    ``child_bits``: per trie node, the bytes of its children (``uint64 (N,
    4)``), met with each set's live bytes (``set_bits``) to skip a node none of
    whose children a member can read. The workspace tables (``pushes`` to
    ``escapes``) are overwritten; ``stamps`` holds counters kept across walks,
    and the first ``num_states`` rows of ``cfg`` the states with nothing pushed
    (``(q, 0)``), filled by the caller.

    Returns ``(number of escape nodes, work)``: the work is the trie nodes
    visited and configurations closed, or :data:`TOO_DEEP` when a path pushed
    more than ``max_stack_depth`` frames, or :data:`FULL` when a table of the
    workspace is full.
    """
    num_states = accept.shape[0]
    single = start_nodes.shape[0] == 1
    # pushed frames: id -> (frames below, return state, depth); 0 is none
    pushes[0, 0] = 0
    pushes[0, 1] = -1
    pushes[0, 2] = 0
    num_push = 1
    push_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    # configurations: id -> (state, pushed, reach, mark); the id of (q, nothing pushed) is q
    walk_id = stamps[1] + 1  # closure lists of earlier walks are gone
    stamps[1] = walk_id
    num_cfg = num_states
    cfg_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    num_reach = 0
    stamp = stamps[0]
    # sets of configurations (sorted ids), closed under calls and returns
    num_sets = 0
    num_members = 0
    num_loopers = 0
    num_live = 0
    set_ids = Dict.empty(key_type=types.int64, value_type=types.int64)
    # the trie path of the walk
    frame_node = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_live = np.zeros(max_trie_depth + 2, dtype=np.bool_)  # iterating the set's live bytes
    frame_set = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_next = np.empty(max_trie_depth + 2, dtype=np.int64)
    frame_end = np.empty(max_trie_depth + 2, dtype=np.int64)
    num_escapes = 0
    visits = 0
    # the frames below the origins' (bottom first), as pushed frames that count nothing toward the bound
    if below.shape[0] + 1 > pushes.shape[0]:
        return 0, FULL
    for k in range(below.shape[0]):
        pushes[num_push, 0] = num_push - 1 if k else 0
        pushes[num_push, 1] = below[k]
        pushes[num_push, 2] = 0
        num_push += 1
    sid = -1
    for o in range(origins.shape[0]):
        origin = origins[o]
        mask = masks[o]
        call_id = first_call + o  # (a node met with the same set from another origin is walked again)
        origin_set = -1  # the set of the origin alone, once known
        origin_cfg = origin
        if below.shape[0]:
            key = (num_push - 1) * num_states + origin  # (the frames are not interned)
            if key in cfg_ids:
                origin_cfg = cfg_ids[key]
            else:
                if num_cfg == cfg.shape[0]:
                    return 0, FULL
                origin_cfg = num_cfg
                cfg_ids[key] = origin_cfg
                cfg[origin_cfg, _STATE] = origin
                cfg[origin_cfg, _PUSHED] = num_push - 1
                cfg[origin_cfg, _WALK] = -1
                num_cfg += 1
        for s in range(start_nodes.shape[0]):
            # from the set of the origin alone at the start node, then from each (set, byte) met below
            pending_set = -1
            pending_byte = 0
            known_set = -1
            node = start_nodes[s]
            depth = 0
            while True:
                # ---- the set of the next node: known, or the origin's or a set's byte successors, closed
                known = known_set >= 0 or (pending_set < 0 and origin_set >= 0)
                n_buf = 0
                if known:
                    sid = known_set if known_set >= 0 else origin_set
                else:
                    stamp += 1
                    if pending_set < 0:
                        buf[0] = origin_cfg
                        cfg[origin_cfg, _MARK] = stamp
                        n_buf = 1
                    a = sets[pending_set, _AT] if pending_set >= 0 else 0
                    z = a + sets[pending_set, _LEN] if pending_set >= 0 else 0
                    for j in range(a, z):
                        c = members[j]
                        t = trans[cfg[c, _STATE] * 256 + pending_byte]
                        if t < 0:
                            continue
                        nc, num_cfg = _config(t, cfg[c, _PUSHED], num_states, cfg_ids, cfg, num_cfg)
                        n_buf = _listed(nc, stamp, cfg, buf, n_buf)
                        if n_buf < 0:
                            stamps[0] = stamp
                            return 0, FULL
                    # the closure of each of them under calls and returns (memoised per configuration)
                    n_direct = n_buf
                    for i in range(n_direct):
                        c = buf[i]
                        if not special[cfg[c, _STATE]]:
                            continue
                        if cfg[c, _WALK] != walk_id:
                            # the configurations reached from c without a byte: a search from c, listed in reach
                            stamp += 1
                            first = num_reach
                            todo = first
                            cur = c
                            cfg[c, _MARK] = stamp
                            while True:
                                q = cfg[cur, _STATE]
                                p = cfg[cur, _PUSHED]
                                for k in range(-1, call_start[q + 1] - call_start[q]):
                                    if k < 0:
                                        if not accept[q] or p == 0:
                                            continue
                                        nq = pushes[p, 1]
                                        np_ = pushes[p, 0]
                                    else:
                                        e = call_start[q] + k
                                        nq = call_callee[e]
                                        ret = call_ret[e]
                                        np_ = p
                                        if ret >= 0:
                                            key = p * num_states + ret
                                            if key in push_ids:
                                                np_ = push_ids[key]
                                            else:
                                                if pushes[p, 2] + 1 > max_stack_depth:
                                                    stamps[0] = stamp
                                                    return 0, TOO_DEEP
                                                if num_push == pushes.shape[0]:
                                                    stamps[0] = stamp
                                                    return 0, FULL
                                                np_ = num_push
                                                num_push += 1
                                                push_ids[key] = np_
                                                pushes[np_, 0] = p
                                                pushes[np_, 1] = ret
                                                pushes[np_, 2] = pushes[p, 2] + 1
                                    nc, num_cfg = _config(nq, np_, num_states, cfg_ids, cfg, num_cfg)
                                    num_reach = _listed(nc, stamp, cfg, reach, num_reach)
                                    if num_reach < 0:
                                        stamps[0] = stamp
                                        return 0, FULL
                                if todo == num_reach:
                                    break
                                cur = reach[todo]
                                todo += 1
                            cfg[c, _REACH_AT] = first
                            cfg[c, _WALK] = walk_id
                            cfg[c, _REACH_LEN] = num_reach - first
                            # the search spent the stamp: mark the list built so far again
                            stamp += 1
                            for j in range(n_buf):
                                cfg[buf[j], _MARK] = stamp
                        a = cfg[c, _REACH_AT]
                        for j in range(a, a + cfg[c, _REACH_LEN]):
                            n_buf = _listed(reach[j], stamp, cfg, buf, n_buf)
                            if n_buf < 0:
                                stamps[0] = stamp
                                return 0, FULL
                    # intern the set (its ids sorted)
                    sid = -1
                    if n_buf:
                        part = np.sort(buf[:n_buf])
                        h = np.int64(n_buf)
                        for j in range(n_buf):
                            h = h * np.int64(1000003) ^ part[j]
                        sid = set_ids[h] if h in set_ids else -1
                        while sid >= 0:
                            if sets[sid, _LEN] == n_buf:
                                a = sets[sid, _AT]
                                same = True
                                for j in range(n_buf):
                                    if members[a + j] != part[j]:
                                        same = False
                                        break
                                if same:
                                    break
                            sid = sets[sid, _NEXT]
                        if sid < 0:
                            if (
                                num_sets == sets.shape[0]
                                or num_members + n_buf > members.shape[0]
                                or num_loopers + n_buf > loopers.shape[0]
                                or num_live + 256 > live.shape[0]
                            ):
                                stamps[0] = stamp
                                return 0, FULL
                            sid = num_sets
                            num_sets += 1
                            set_trans[sid, :] = -2  # -2: not known yet, -1: no path
                            sets[sid, _AT] = num_members
                            sets[sid, _LEN] = n_buf
                            escaping = 0
                            for j in range(n_buf):
                                members[num_members + j] = part[j]
                                if cfg[part[j], _PUSHED] == 0 and accept[cfg[part[j], _STATE]]:
                                    escaping = 1
                            num_members += n_buf
                            sets[sid, _ESCAPES] = escaping
                            # the distinct states of its members that loop on some byte
                            sets[sid, _LOOP_AT] = num_loopers
                            for j in range(n_buf):
                                q = cfg[part[j], _STATE]
                                if not has_loop[q]:
                                    continue
                                new = True
                                for k in range(sets[sid, _LOOP_AT], num_loopers):
                                    if loopers[k] == q:
                                        new = False
                                        break
                                if new:
                                    loopers[num_loopers] = q
                                    num_loopers += 1
                            sets[sid, _LOOP_LEN] = num_loopers - sets[sid, _LOOP_AT]
                            # the bytes on which some member moves
                            sets[sid, _LIVE_AT] = num_live
                            for byte in range(256):
                                for j in range(n_buf):
                                    if trans[cfg[part[j], _STATE] * 256 + byte] >= 0:
                                        live[num_live] = byte
                                        num_live += 1
                                        break
                            sets[sid, _LIVE_LEN] = num_live - sets[sid, _LIVE_AT]
                            set_bits[sid, :] = 0
                            for j in range(sets[sid, _LIVE_AT], num_live):
                                set_bits[sid, live[j] >> 6] |= np.uint64(1) << np.uint64(live[j] & 63)
                            sets[sid, _NEXT] = set_ids[h] if h in set_ids else -1
                            set_ids[h] = sid
                    if pending_set >= 0:
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
                    if sets[sid, _ESCAPES]:
                        if num_escapes == escapes.shape[0]:
                            stamps[0] = stamp
                            return 0, FULL
                        escapes[num_escapes] = node
                        num_escapes += 1
                    # the node's tokens, and those below when a member loops on every byte below the node
                    first, last = child_start[node], child_start[node + 1]
                    closed = False
                    if last > first:
                        for j in range(sets[sid, _LOOP_AT], sets[sid, _LOOP_AT] + sets[sid, _LOOP_LEN]):
                            q = loopers[j]
                            if (
                                (sub_bytes[node, 0] & ~loops[q, 0])
                                | (sub_bytes[node, 1] & ~loops[q, 1])
                                | (sub_bytes[node, 2] & ~loops[q, 2])
                                | (sub_bytes[node, 3] & ~loops[q, 3])
                            ) != 0:
                                continue
                            kind = utf8[q]
                            if kind and not utf8_ok[kind - 1, node] and (sub_bytes[node, 2] | sub_bytes[node, 3]) != 0:
                                continue
                            closed = True
                            break
                    for t in range(token_lo[node], token_hi[node] if closed else token_mid[node]):
                        tok = sorted_tokens[t]
                        mask[tok >> 5] |= np.uint32(1) << np.uint32(tok & 31)
                    # on the trie path: the children to try, by the set's live bytes when they are fewer
                    frame_node[depth] = node
                    frame_set[depth] = sid
                    if closed or not (
                        (child_bits[node, 0] & set_bits[sid, 0])
                        | (child_bits[node, 1] & set_bits[sid, 1])
                        | (child_bits[node, 2] & set_bits[sid, 2])
                        | (child_bits[node, 3] & set_bits[sid, 3])
                    ):
                        first = last  # allowed whole, or no child along a live byte
                    frame_live[depth] = sets[sid, _LIVE_LEN] < last - first
                    if frame_live[depth]:
                        first = sets[sid, _LIVE_AT]
                        last = first + sets[sid, _LIVE_LEN]
                    frame_next[depth] = first
                    frame_end[depth] = last
                    depth += 1
                # ---- the next child with a live path, backing up the trie path when a node has none left
                pending_set = -1
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
                            end_e = hi_e
                            while lo_e < hi_e:
                                mid = (lo_e + hi_e) >> 1
                                if child_byte[mid] < b:
                                    lo_e = mid + 1
                                else:
                                    hi_e = mid
                            if lo_e == end_e or child_byte[lo_e] != b:
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
                        else:
                            known_set = nxt
                        break
                    if pending_set >= 0 or known_set >= 0:
                        break
                    depth -= 1
                if pending_set < 0 and known_set < 0:
                    break
        escape_ends[o] = num_escapes
    stamps[0] = stamp
    return num_escapes, visits
