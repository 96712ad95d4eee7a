"""A small Llama-family forward pass with a static, slot-based KV cache.

The engine decodes many sequences at once. Each sequence owns a *slot*: one
row of a key/value cache allocated once, ``(slots, kv_heads, max_len,
head_dim)`` per layer, so a decoding step writes one position per row and
never re-grows a tensor. The forward pass reads the weights of a
``transformers`` ``LlamaForCausalLM`` (SmolLM2 is one) in one of three
formats:

``"fp32"``
    The weights as loaded; logits equal ``transformers``' within float32
    rounding.
``"bf16"``
    bfloat16 weights and matrix products (oneDNN prepacked weights where torch
    has them, which use AMX or AVX-512 BF16 where the CPU has them); the
    residual stream, norms and rotary embedding stay in float32, attention
    reads bfloat16 keys and values.
``"int8"``
    Weight-only int8 with one scale per output channel
    (``torch._weight_int8pack_mm``), activations in bfloat16.

A step packs every row's new tokens one after another (no padding), so one
matrix product per weight serves all rows; the number of torch operations per
layer does not grow with the sequences' lengths. Every row's result is the
same whatever else is in the batch (see ``_attention_plan`` and
``_MAX_ROWS``), which is what lets a seeded request decode to the same tokens
alone or batched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["WEIGHT_FORMATS", "FastLlama", "supports"]

#: The weight formats :class:`FastLlama` offers.
WEIGHT_FORMATS = ("fp32", "bf16", "int8")

#: A row of one token attends over its length rounded up to a multiple of this.
_SPAN_BUCKET = 64

#: Most rows one matrix product takes at once.
_MAX_ROWS = 64


def supports(model: Any) -> bool:
    """Whether :class:`FastLlama` can run ``model`` (a plain Llama-family ``transformers`` model).

    Parameters
    ----------
    model
        A ``transformers`` causal language model.

    Returns
    -------
    bool
    """
    config = getattr(model, "config", None)
    if config is None or getattr(config, "model_type", None) not in ("llama",):
        return False
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(inner, "rotary_emb"):
        return False
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return False
    if getattr(config, "hidden_act", "silu") != "silu":
        return False
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    return rope.get("rope_type", "default") != "dynamic"


class _Linear:
    """``x @ w.T`` in one weight format (no bias)."""

    def __init__(self, torch: Any, weight: Any, fmt: str) -> None:
        self.fmt = fmt
        self.out_features = int(weight.shape[0])
        w = weight.detach()
        self._torch = torch
        self._packed = None
        if fmt == "fp32":
            self.weight = w.to(torch.float32).contiguous()
        elif fmt == "bf16":
            self.weight = w.to(torch.bfloat16).contiguous()
            if torch.backends.mkldnn.is_available():
                try:
                    self._packed = torch.ops.mkldnn._reorder_linear_weight(self.weight, 1)
                except (RuntimeError, AttributeError):  # pragma: no cover - torch without oneDNN packing
                    self._packed = None
        elif fmt == "int8":
            w32 = w.to(torch.float32)
            scale = (w32.abs().amax(dim=1) / 127.0).clamp(min=1e-12)
            self.weight = torch.round(w32 / scale[:, None]).clamp(-127, 127).to(torch.int8).contiguous()
            self.scale = scale.to(torch.bfloat16).contiguous()
        else:  # pragma: no cover - checked by FastLlama
            raise ValueError(fmt)

    def __call__(self, x: Any) -> Any:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        if flat.shape[0] > _MAX_ROWS:
            # oneDNN changes its blocking above some rows: bounded calls keep each row's result
            # independent of how many rows are computed with it
            out = self._torch.cat(
                [self._rows(flat[i : i + _MAX_ROWS]) for i in range(0, flat.shape[0], _MAX_ROWS)]
            )
        else:
            out = self._rows(flat)
        return out.reshape(*shape[:-1], self.out_features)

    def _rows(self, flat: Any) -> Any:
        torch = self._torch
        if self.fmt == "fp32":
            out = torch.nn.functional.linear(flat, self.weight)
        elif self.fmt == "bf16":
            if self._packed is not None:
                out = torch.ops.mkldnn._linear_pointwise(flat, self._packed, None, "none", [], "")
            else:
                out = torch.nn.functional.linear(flat, self.weight)
        else:
            out = torch._weight_int8pack_mm(flat, self.weight, self.scale)
        return out

    @property
    def nbytes(self) -> int:
        extra = self.scale.numel() * 2 if self.fmt == "int8" else 0
        return int(self.weight.numel() * self.weight.element_size()) + int(extra)


class _Layer:
    def __init__(self, torch: Any, layer: Any, fmt: str) -> None:
        attn, mlp = layer.self_attn, layer.mlp
        self.qkv = _Linear(
            torch, torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight], dim=0), fmt
        )
        self.o = _Linear(torch, attn.o_proj.weight, fmt)
        self.gate_up = _Linear(torch, torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight], dim=0), fmt)
        self.down = _Linear(torch, mlp.down_proj.weight, fmt)
        self.norm1 = layer.input_layernorm.weight.detach().to(torch.float32).contiguous()
        self.norm2 = layer.post_attention_layernorm.weight.detach().to(torch.float32).contiguous()


class FastLlama:
    """A Llama-family model over a static KV cache of ``max_slots`` sequences.

    Parameters
    ----------
    model
        A ``transformers`` Llama-family causal LM (see :func:`supports`); its
        weights are copied into the chosen format.
    weights
        ``"fp32"``, ``"bf16"`` or ``"int8"`` (see the module notes).
    max_slots
        How many sequences the cache holds.
    max_len
        The most tokens (prompt and output) one sequence may hold.

    Raises
    ------
    ValueError
        For an unknown weight format, a model it cannot run, or sizes below 1.
    """

    def __init__(
        self, model: Any, *, weights: str = "bf16", max_slots: int = 16, max_len: int = 2048
    ) -> None:
        import torch

        if weights not in WEIGHT_FORMATS:
            raise ValueError(f"weights must be one of {', '.join(WEIGHT_FORMATS)}, not {weights!r}")
        if not supports(model):
            raise ValueError("FastLlama runs plain Llama-family models only")
        if max_slots < 1 or max_len < 1:
            raise ValueError("max_slots and max_len must be at least 1")
        self._torch = torch
        config = model.config
        self.weights = weights
        self.max_slots = int(max_slots)
        self.max_len = int(max_len)
        self.num_heads = int(config.num_attention_heads)
        self.num_kv_heads = int(getattr(config, "num_key_value_heads", None) or self.num_heads)
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self.num_heads)
        self.eps = float(config.rms_norm_eps)
        self.act_dtype = torch.float32 if weights == "fp32" else torch.bfloat16
        inner = model.model
        with torch.no_grad():
            self.embed = inner.embed_tokens.weight.detach().to(self.act_dtype).contiguous()
            self.layers = [_Layer(torch, layer, weights) for layer in inner.layers]
            self.final_norm = inner.norm.weight.detach().to(torch.float32).contiguous()
            self.lm_head = _Linear(torch, model.get_output_embeddings().weight, weights)
            rotary = inner.rotary_emb
            inv_freq = rotary.inv_freq.detach().to(torch.float32)
            scaling = float(getattr(rotary, "attention_scaling", 1.0))
            positions = torch.arange(self.max_len, dtype=torch.float32)
            freqs = torch.outer(positions, inv_freq)
            emb = torch.cat([freqs, freqs], dim=-1)
            self.cos = (emb.cos() * scaling).contiguous()
            self.sin = (emb.sin() * scaling).contiguous()
        self.vocab_size = int(self.lm_head.out_features)
        shape = (self.max_slots, self.num_kv_heads, self.max_len, self.head_dim)
        # torch.zeros maps untouched pages lazily: memory grows with the positions written
        self.k_cache = [torch.zeros(shape, dtype=self.act_dtype) for _ in self.layers]
        self.v_cache = [torch.zeros(shape, dtype=self.act_dtype) for _ in self.layers]
        self._scale = 1.0 / math.sqrt(self.head_dim)

    # ------------------------------------------------------------------ API
    @property
    def weight_bytes(self) -> int:
        """Bytes of weights one forward pass reads (the embedding table excluded)."""
        total = self.lm_head.nbytes
        for layer in self.layers:
            total += layer.qkv.nbytes + layer.o.nbytes + layer.gate_up.nbytes + layer.down.nbytes
        return total

    def move_slot(self, src: int, dst: int, length: int) -> None:
        """Copy the first ``length`` cached positions of slot ``src`` into slot ``dst``."""
        if src == dst or length <= 0:
            return
        for k, v in zip(self.k_cache, self.v_cache, strict=True):
            k[dst, :, :length] = k[src, :, :length]
            v[dst, :, :length] = v[src, :, :length]

    def forward(
        self,
        first_slot: int,
        chunks: Sequence[Sequence[int]],
        starts: Sequence[int],
        *,
        every_position: bool = False,
    ) -> Any:
        """Run ``chunks[i]`` at positions ``starts[i]...`` in slot ``first_slot + i``.

        Parameters
        ----------
        first_slot
            The slot of the first row; rows take consecutive slots.
        chunks
            Each row's new tokens (at least one each; rows may differ in length).
        starts
            Each row's position of its first new token (the tokens before it
            are in the row's slot already).
        every_position
            Return the logits after every new token, not only each row's last.

        Returns
        -------
        torch.Tensor
            float32 ``(rows, vocab)``: the logits after each row's last token
            (with ``every_position``: ``(tokens, vocab)``, the rows' tokens one
            after another).

        Raises
        ------
        ValueError
            When a row runs past ``max_len`` or the slots past ``max_slots``.
        """
        torch = self._torch
        n = len(chunks)
        if n == 0 or first_slot < 0 or first_slot + n > self.max_slots:
            raise ValueError(f"rows {first_slot}..{first_slot + n - 1} outside the {self.max_slots} slots")
        lengths = [len(c) for c in chunks]
        if min(lengths) < 1:
            raise ValueError("every row needs at least one token")
        for start, length in zip(starts, lengths, strict=True):
            if start < 0 or start + length > self.max_len:
                raise ValueError(f"a sequence of {start + length} tokens exceeds max_len={self.max_len}")
        with torch.inference_mode():
            return self._forward(first_slot, chunks, list(starts), lengths, every_position)

    # ------------------------------------------------------------ internals
    def _forward(
        self,
        first_slot: int,
        chunks: Sequence[Sequence[int]],
        starts: list[int],
        lengths: list[int],
        every_position: bool = False,
    ) -> Any:
        """The rows' tokens packed one after another (no padding), attention row by row."""
        torch = self._torch
        n = len(chunks)
        heads, kv_heads, hd = self.num_heads, self.num_kv_heads, self.head_dim
        group = heads // kv_heads
        act = self.act_dtype
        flat: list[int] = []
        for chunk in chunks:
            flat.extend(chunk)
        tokens = torch.as_tensor(flat, dtype=torch.long)
        lengths_t = torch.as_tensor(lengths, dtype=torch.long)
        slots = torch.repeat_interleave(torch.arange(first_slot, first_slot + n), lengths_t)
        offsets = [0]
        for length in lengths:
            offsets.append(offsets[-1] + length)
        ends = torch.as_tensor(offsets[1:], dtype=torch.long)
        # position of each packed token: its row's start plus its index inside the row
        positions = torch.arange(len(flat)) - torch.repeat_interleave(ends - lengths_t, lengths_t)
        positions += torch.repeat_interleave(torch.as_tensor(starts, dtype=torch.long), lengths_t)
        cos = self.cos[positions][:, None, :]  # (tokens, 1, hd)
        sin = self.sin[positions][:, None, :]
        plan = self._attention_plan(first_slot, starts, lengths, offsets, positions)
        half = hd // 2
        x = self.embed[tokens].to(torch.float32)  # residual stream in float32
        for layer, k_cache, v_cache in zip(self.layers, self.k_cache, self.v_cache, strict=True):
            h = _rms_norm(torch, x, layer.norm1, self.eps).to(act)
            qkv = layer.qkv(h).to(torch.float32)  # (tokens, (heads + 2 kv) * hd)
            qk = qkv[:, : (heads + kv_heads) * hd].reshape(-1, heads + kv_heads, hd)
            rotated = torch.cat([-qk[..., half:], qk[..., :half]], dim=-1)
            qk = qk * cos + rotated * sin
            k_cache[slots, :, positions] = qk[:, heads:].to(act)
            v_cache[slots, :, positions] = qkv[:, (heads + kv_heads) * hd :].reshape(-1, kv_heads, hd).to(act)
            # the query heads that share a key head go along the query axis: (tokens, kv, group, hd)
            q = qk[:, :heads].to(act).reshape(-1, kv_heads, group, hd)
            out = self._attend(plan, q, k_cache, v_cache)
            x = x + layer.o(out.reshape(-1, heads * hd)).to(torch.float32)
            h = _rms_norm(torch, x, layer.norm2, self.eps).to(act)
            gate, up = layer.gate_up(h).chunk(2, dim=-1)
            x = x + layer.down(torch.nn.functional.silu(gate) * up).to(torch.float32)
        final = _rms_norm(torch, x if every_position else x[ends - 1], self.final_norm, self.eps).to(act)
        return self.lm_head(final).to(torch.float32)

    def _attention_plan(
        self, first_slot: int, starts: list[int], lengths: list[int], offsets: list[int], positions: Any
    ) -> list[tuple[Any, Any, Any, Any]]:
        """How the rows attend, the same for every layer: ``(query rows, slots, span, mask)`` per call.

        Every row's attention is computed the same way whatever else is in the batch, so a
        sequence decodes to the same tokens alone or batched: a row of one token attends over
        its length rounded up to a multiple of :data:`_SPAN_BUCKET` (the positions past its own
        masked), in one call with the other such rows of the same rounded length; a row of
        several tokens (a prompt, or jump-forward tokens) attends on its own.
        """
        torch = self._torch
        group = self.num_heads // self.num_kv_heads
        act = self.act_dtype
        plan: list[tuple[Any, Any, Any, Any]] = []
        buckets: dict[int, list[int]] = {}
        for i, length in enumerate(lengths):
            if length == 1:
                span = min(-(-(starts[i] + 1) // _SPAN_BUCKET) * _SPAN_BUCKET, self.max_len)
                buckets.setdefault(span, []).append(i)
                continue
            span = starts[i] + length
            allowed = torch.arange(span)[None, :] <= positions[offsets[i] : offsets[i + 1], None]
            mask = torch.zeros(allowed.shape, dtype=act).masked_fill_(~allowed, -math.inf)
            # queries ordered (kv head, group, token): the mask repeats for each group member
            plan.append(
                (
                    slice(offsets[i], offsets[i + 1]),
                    slice(first_slot + i, first_slot + i + 1),
                    span,
                    mask.repeat(group, 1),
                )
            )
        for span, rows in buckets.items():
            index = torch.as_tensor([offsets[i] for i in rows], dtype=torch.long)
            slots = [first_slot + i for i in rows]
            where: Any = (
                slice(slots[0], slots[-1] + 1)
                if slots == list(range(slots[0], slots[-1] + 1))
                else torch.as_tensor(slots, dtype=torch.long)
            )
            pos = torch.as_tensor([starts[i] for i in rows], dtype=torch.long)
            allowed = torch.arange(span)[None, :] <= pos[:, None]  # (rows, span)
            mask = torch.zeros(allowed.shape, dtype=act).masked_fill_(~allowed, -math.inf)
            plan.append((index, where, span, mask[:, None, None, :].expand(len(rows), 1, group, span)))
        return plan

    def _attend(self, plan: list[tuple[Any, Any, Any, Any]], q: Any, k_cache: Any, v_cache: Any) -> Any:
        """Attention output ``(tokens, kv, group, hd)`` for queries ``q`` of the same layout."""
        torch = self._torch
        tokens, kv_heads, group, hd = q.shape
        out = torch.empty_like(q)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        for rows, slots, span, mask in plan:
            keys = k_cache[slots, :, :span]
            values = v_cache[slots, :, :span]
            if isinstance(rows, slice):  # one row of several tokens
                count = rows.stop - rows.start
                qi = q[rows].permute(1, 2, 0, 3).reshape(1, kv_heads, group * count, hd)
                oi = sdpa(qi, keys, values, attn_mask=mask[None, None], scale=self._scale)
                out[rows] = oi.reshape(kv_heads, group, count, hd).permute(2, 0, 1, 3)
            else:  # one token for each of several rows
                if keys.dim() == 3:  # pragma: no cover - a single slot indexed by a tensor
                    keys, values = keys[None], values[None]
                out[rows] = sdpa(q[rows], keys, values, attn_mask=mask, scale=self._scale)
        return out


def _rms_norm(torch: Any, x: Any, weight: Any, eps: float) -> Any:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight
