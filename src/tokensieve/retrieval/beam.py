"""Constrained beam search over a :class:`StaticIndex`.

Each step scores every (batch x beam) row at once:

* log-softmax over the model's full row (masking happens after normalisation,
  as in Hugging Face's beam search, so scores are the model's log-probabilities);
* dense levels: the packed masks are expanded to a ``rows x num_columns``
  boolean matrix and top-k runs over ``beam x num_columns`` candidates per query;
* sparse levels: only the level's fixed-width CSR slice is scored
  (``rows x width`` candidates), and the next node of a chosen slot is its edge
  id + 1, so no search is needed.

Guarantees: beams are distinct (only beam 0 of each query is live at the
first step, and two children of one prefix differ in their token); every
returned sequence is a catalog item (and an allowed one under a filter); when
fewer continuations exist than beams, the missing beams are dropped (marked
dead with a score of ``-inf``), never filled with invalid sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import _numpy_step as nps
from ._errors import CatalogError
from .index import StaticIndex

__all__ = ["BeamSearchResult", "constrained_beam_search"]


@dataclass
class BeamSearchResult:
    """Results of :func:`constrained_beam_search`, best first per query.

    Attributes
    ----------
    sequences : list of list of tuple of int
        ``sequences[q]``: the distinct catalog items found for query ``q``
        (end token stripped); at most ``beam_width``, fewer when the catalog
        (or the filter) has fewer.
    scores : list of numpy.ndarray
        ``scores[q]``: float64 ranking scores, same order (sum of token
        log-probabilities, divided by the item's length when
        ``length_normalize``).
    log_probs : list of numpy.ndarray
        ``log_probs[q]``: unnormalised sums of token log-probabilities.
    """

    sequences: list[list[tuple[int, ...]]]
    scores: list[np.ndarray]
    log_probs: list[np.ndarray] = field(default_factory=list)

    @property
    def num_results(self) -> np.ndarray:
        """Number of results per query."""
        return np.array([len(s) for s in self.sequences], dtype=np.int64)


# --------------------------------------------------------------------------- ops


class _NumpyOps:
    neg_inf = -np.inf

    def __init__(self) -> None:
        self.step = nps

    def zeros(self, shape: Any, dtype: str) -> np.ndarray:
        return np.zeros(shape, dtype=np.float64 if dtype == "float" else np.int64)

    def arange(self, n: int) -> np.ndarray:
        return np.arange(n, dtype=np.int64)

    def to_logits(self, x: Any) -> np.ndarray:
        if not isinstance(x, np.ndarray):
            x = x.detach().float().cpu().numpy()
        return x

    def logsumexp(self, x: np.ndarray) -> np.ndarray:
        top = np.max(x, axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return (np.log(np.exp(x - top).sum(axis=1, dtype=np.float64)) + top[:, 0]).astype(np.float64)

    def topk(self, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if k < keys.shape[1]:
            part = np.argpartition(-keys, k - 1, axis=1)[:, :k]
        else:
            part = np.broadcast_to(np.arange(keys.shape[1]), keys.shape)
        vals = np.take_along_axis(keys, part, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        return np.take_along_axis(vals, order, axis=1), np.take_along_axis(part, order, axis=1)

    def where(self, cond: Any, a: Any, b: Any) -> np.ndarray:
        return np.where(cond, a, b)

    def isfinite(self, x: np.ndarray) -> np.ndarray:
        return np.isfinite(x)

    def take_rows(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return x[rows]

    def gather2(self, x: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.take_along_axis(x, cols, axis=1)

    def cat_col(self, hist: np.ndarray, col: np.ndarray) -> np.ndarray:
        return np.concatenate([hist, col[:, None]], axis=1)

    def append_float_col(self, x: np.ndarray, col: np.ndarray) -> np.ndarray:
        return np.concatenate([x.astype(np.float64, copy=False), col[:, None].astype(np.float64)], axis=1)

    def numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    def full_like_int(self, x: np.ndarray, value: int) -> np.ndarray:
        return np.full(x.shape, value, dtype=np.int64)


class _TorchOps:
    neg_inf = float("-inf")

    def __init__(self, device: Any) -> None:
        import torch

        from . import _torch_step

        self.torch = torch
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.step = _torch_step

    def zeros(self, shape: Any, dtype: str) -> Any:
        t = self.torch
        return t.zeros(shape, dtype=t.float64 if dtype == "float" else t.int64, device=self.device)

    def arange(self, n: int) -> Any:
        return self.torch.arange(n, dtype=self.torch.int64, device=self.device)

    def to_logits(self, x: Any) -> Any:
        t = self.torch
        if not isinstance(x, t.Tensor):
            x = t.as_tensor(np.asarray(x))
        return x.to(self.device)

    def logsumexp(self, x: Any) -> Any:
        return self.torch.logsumexp(x.double(), dim=1)

    def topk(self, keys: Any, k: int) -> tuple[Any, Any]:
        return self.torch.topk(keys, k, dim=1, sorted=True)

    def where(self, cond: Any, a: Any, b: Any) -> Any:
        t = self.torch
        if not isinstance(a, t.Tensor):
            a = t.tensor(a, dtype=b.dtype if isinstance(b, t.Tensor) else None, device=self.device)
        if not isinstance(b, t.Tensor):
            b = t.tensor(b, dtype=a.dtype, device=self.device)
        return t.where(cond, a, b)

    def isfinite(self, x: Any) -> Any:
        return self.torch.isfinite(x)

    def take_rows(self, x: Any, rows: Any) -> Any:
        return x[rows]

    def gather2(self, x: Any, cols: Any) -> Any:
        return x.gather(1, cols)

    def cat_col(self, hist: Any, col: Any) -> Any:
        return self.torch.cat([hist, col[:, None]], dim=1)

    def append_float_col(self, x: Any, col: Any) -> Any:
        return self.torch.cat([x.double(), col[:, None].double()], dim=1)

    def numpy(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    def full_like_int(self, x: Any, value: int) -> Any:
        return self.torch.full(x.shape, value, dtype=self.torch.int64, device=self.device)


# ------------------------------------------------------------------ beam search


def constrained_beam_search(
    step_logits_fn: Callable[[Any, int], Any],
    index: StaticIndex,
    *,
    batch_size: int,
    beam_width: int,
    length_normalize: bool = False,
    item_filter: Any = None,
    backend: Literal["numpy", "torch"] = "numpy",
    device: Any = None,
) -> BeamSearchResult:
    """Beam search that only produces catalog items.

    Parameters
    ----------
    step_logits_fn
        ``step_logits_fn(prefix_tokens, step)`` gets the ``(batch_size *
        beam_width, step)`` int64 tokens chosen so far (row ``q * beam_width +
        b`` is beam ``b`` of query ``q``; numpy, or torch on ``device``) and
        returns ``(rows, C)`` logits with ``C >= index.num_columns``, or
        ``C == index.vocab_size`` when the end token is the extra column
        ``vocab_size`` (then ending an item is free: log-probability 0). Rows that
        already ended carry ``index.eos_token`` after their item; dead rows
        (no continuation left) carry token 0; their logits are ignored.
    index
        The catalog.
    batch_size, beam_width
        Queries and beams per query (positive).
    length_normalize
        Rank by mean token log-probability (sum divided by item length,
        end token not counted) instead of the sum.
    item_filter
        Optional :class:`ItemFilter` or boolean vector over the items; only
        allowed items are returned.
    backend, device
        ``"numpy"`` (default) or ``"torch"`` (tensors on ``device``).

    Returns
    -------
    BeamSearchResult
        Up to ``beam_width`` distinct catalog items per query, best first.

    Raises
    ------
    CatalogError
        On non-positive sizes or logits of the wrong shape.
    """
    for name, value in (("batch_size", batch_size), ("beam_width", beam_width)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise CatalogError(f"{name} must be a positive integer, got {value!r}")
    if backend not in ("numpy", "torch"):
        raise CatalogError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    ops: Any = _NumpyOps() if backend == "numpy" else _TorchOps(device)
    filt = index._as_filter(item_filter)
    search = _Search(index, ops, int(batch_size), int(beam_width), bool(length_normalize), filt)
    for level in range(index.num_levels):
        logits = step_logits_fn(search.history, level)
        search.step(ops.to_logits(logits), level)
        if search.finished():
            break
    return search.result()


class _Search:
    """State of one beam search: nodes, scores, lengths and token history per row."""

    def __init__(self, ix: StaticIndex, ops: Any, batch: int, beam: int, normalize: bool, filt: Any) -> None:
        self.ix, self.ops, self.batch, self.beam, self.normalize, self.filt = (
            ix,
            ops,
            batch,
            beam,
            normalize,
            filt,
        )
        rows = batch * beam
        self.rows = rows
        self.nodes = ops.zeros(rows, "int")
        score = ops.zeros((batch, beam), "float")
        score[:, 1:] = ops.neg_inf  # one live beam per query: no duplicates at step 0
        self.scores = score.reshape(rows)
        self.lengths = ops.zeros(rows, "int")
        self.history = ops.zeros((rows, 0), "int")
        self.query_base = (ops.arange(batch) * beam)[:, None]
        eos = ix.eos_token
        self.eos = -1 if eos is None else eos

    def _check_logits(self, logits: Any) -> None:
        shape = tuple(logits.shape)
        if len(shape) != 2 or shape[0] != self.rows or shape[1] < self.ix._tables.min_logit_columns:
            raise CatalogError(
                f"step_logits_fn returned shape {shape}; need ({self.rows}, >= num_columns={self.ix.num_columns})"
            )

    def _normalised(self, logits: Any) -> tuple[Any, Any]:
        """``logits`` and per-row log-normalisers; rows with NaN or +inf are repaired.

        A row whose log-sum-exp is not finite holds NaN or +inf logits: its +inf
        tokens get log-probability 0 and every other token -inf (a NaN-only row
        has no continuation), so no NaN reaches the scores.
        """
        ops = self.ops
        lse = ops.logsumexp(logits)
        bad = ~ops.isfinite(lse)
        if bool(bad.any()):
            logits = ops.where(bad[:, None], ops.where(logits == float("inf"), 0.0, ops.neg_inf), logits)
            lse = ops.where(bad, 0.0, lse)
        return logits, lse

    def step(self, logits: Any, level: int) -> None:
        """Advance every row by one token (``level`` tokens chosen so far)."""
        ix, ops = self.ix, self.ops
        self._check_logits(logits)
        logits, lse = self._normalised(logits)
        if logits.shape[1] < ix.num_columns:
            # No end column (``vocab_size`` columns): ending costs nothing, so
            # the end token's logit is the normaliser (log-probability 0).
            logits = ops.append_float_col(logits, lse)
        base = (self.scores - lse)[:, None]  # score + log-softmax = score - lse + logit
        end = ix.end_node
        at_end = None if end is None else self.nodes == end
        if level < ix.dense_depth:
            width = ix.num_columns
            allowed = ops.step.allowed_bool(ix._tables, self.nodes, level, self.filt)
            cand = ops.where(allowed, logits[:, :width] + base, ops.neg_inf)
            if at_end is not None and bool(at_end.any()):
                # finished rows: only the end token, at no cost
                eos_only = ops.where(ops.arange(width)[None, :] == self.eos, 0.0, ops.neg_inf)
                cand = ops.where(at_end[:, None], self.scores[:, None] + eos_only, cand)
            cand_tok = None
        else:
            start, _, cand_tok, valid = ops.step.candidates(ix._tables, self.nodes, level, self.filt)
            cand = ops.gather2(logits, cand_tok) + base
            if at_end is not None:  # END's only edge (slot 0) is the end token, at no cost
                cand[:, 0] = ops.where(at_end, self.scores, cand[:, 0])
            cand = ops.where(valid, cand, ops.neg_inf)
            width = cand_tok.shape[1]
        if self.normalize:
            grows = (ops.arange(width)[None, :] if cand_tok is None else cand_tok) != self.eos
            cand_len = self.lengths[:, None] + grows
            key = cand / ops.where(cand_len > 0, cand_len, 1)
        else:
            key = cand
        top_key, top_idx = ops.topk(key.reshape(self.batch, self.beam * width), self.beam)
        parent = (self.query_base + top_idx // width).reshape(-1)
        slot = (top_idx % width).reshape(-1)
        live = top_key.reshape(-1) > ops.neg_inf
        new_scores = ops.gather2(cand.reshape(self.batch, self.beam * width), top_idx).reshape(-1)
        parent_nodes = ops.take_rows(self.nodes, parent)
        if cand_tok is None:
            tok = slot
            nxt, _ = ops.step.follow(ix._tables, parent_nodes, ops.where(live, tok, 0), level)
        else:
            tok = cand_tok[parent, slot]
            nxt = ops.take_rows(start, parent) + slot + 1
            if end is not None:
                nxt = ops.where(tok == self.eos, end, nxt)
        # Dead rows (fewer continuations than beams) park on any node of the
        # next level with a score of -inf; they are never returned.
        starts = ix._tables.starts
        placeholder = starts[min(level + 1, len(starts) - 2)]
        self.nodes = ops.where(live, nxt, placeholder)
        tok = ops.where(live, tok, 0)
        self.scores = ops.where(live, new_scores, ops.neg_inf)
        self.lengths = ops.take_rows(self.lengths, parent) + (tok != self.eos) * live
        self.history = ops.cat_col(ops.take_rows(self.history, parent), tok)

    def finished(self) -> bool:
        end = self.ix.end_node
        if end is None:
            return False
        live = self.scores > self.ops.neg_inf
        return not bool((live & (self.nodes != end)).any())

    def result(self) -> BeamSearchResult:
        ops = self.ops
        scores = ops.numpy(self.scores).astype(np.float64)
        lengths = ops.numpy(self.lengths)
        hist = ops.numpy(self.history)
        nodes = ops.numpy(self.nodes)
        ix = self.ix
        live = np.isfinite(scores)
        if ix.end_node is not None:
            live &= nodes == ix.end_node
        else:
            live &= hist.shape[1] == ix.num_levels
        keys = np.where(lengths > 0, scores / np.maximum(lengths, 1), scores) if self.normalize else scores
        sequences: list[list[tuple[int, ...]]] = []
        out_scores: list[np.ndarray] = []
        out_lp: list[np.ndarray] = []
        for q in range(self.batch):
            rows = np.arange(q * self.beam, (q + 1) * self.beam)
            rows = rows[live[rows]]
            rows = rows[np.argsort(-keys[rows], kind="stable")]
            sequences.append([tuple(int(t) for t in hist[r, : lengths[r]]) for r in rows])
            out_scores.append(keys[rows])
            out_lp.append(scores[rows])
        return BeamSearchResult(sequences=sequences, scores=out_scores, log_probs=out_lp)
