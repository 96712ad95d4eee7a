"""Generative retrieval over a synthetic catalog with constrained beam search.

A catalog of 1,000,000 items, each identified by a random semantic ID of 4
codebook tokens (codebook size 1,024). A small random torch model scores the
next token from a query embedding and the tokens chosen so far; constrained
beam search over a :class:`tokensieve.retrieval.StaticIndex` returns, per
query, the top-k items that exist in the catalog — and, with an item filter,
only items that are in stock.

Run::

    python examples/semantic_id_retrieval.py
    python examples/semantic_id_retrieval.py --items 100000 --queries 4 --top-k 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from tokensieve.retrieval import StaticIndex, constrained_beam_search


class ToyRetriever(torch.nn.Module):
    """Query embedding + embeddings of the tokens so far -> MLP -> next-token logits."""

    def __init__(self, vocab: int, length: int, dim: int = 64) -> None:
        super().__init__()
        self.token_embedding = torch.nn.Embedding(vocab * length, dim)  # one table per position
        self.vocab = vocab
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, 256), torch.nn.GELU(), torch.nn.Linear(256, vocab)
        )

    @torch.no_grad()
    def forward(self, query: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        h = query
        if prefix.shape[1]:
            offsets = torch.arange(prefix.shape[1]) * self.vocab
            h = h + self.token_embedding(prefix + offsets).sum(dim=1)
        return self.mlp(h)


def item_lookup(seqs: np.ndarray, vocab: int):
    """Map a semantic ID back to the ids of the items that carry it (sorted integer keys)."""
    weights = vocab ** np.arange(seqs.shape[1] - 1, -1, -1, dtype=np.int64)
    keys = seqs.astype(np.int64) @ weights
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]

    def lookup(seq: tuple[int, ...]) -> np.ndarray:
        key = int(np.asarray(seq, dtype=np.int64) @ weights)
        lo, hi = np.searchsorted(sorted_keys, [key, key + 1])
        return order[lo:hi]

    return lookup


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=1_000_000)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--length", type=int, default=4)
    p.add_argument("--queries", type=int, default=3)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--beam", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads; the step's tensors are small, and on a busy machine extra "
        "threads mostly wait for each other (0 keeps torch's default)",
    )
    args = p.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    catalog = rng.integers(0, args.vocab, (args.items, args.length))

    t0 = time.perf_counter()
    index = StaticIndex.from_sequences(catalog, args.vocab)
    print(
        f"index over {index.num_sequences:,} items ({index.num_unique:,} distinct IDs): "
        f"built in {time.perf_counter() - t0:.2f} s, {index.nbytes / 1e6:.1f} MB"
    )

    model = ToyRetriever(args.vocab, args.length)
    queries = torch.randn(args.queries, 64)
    beam = max(args.beam, args.top_k)

    def step_logits(prefix_tokens: torch.Tensor, step: int) -> torch.Tensor:
        # rows are (query, beam) pairs: row r belongs to query r // beam
        return model(queries.repeat_interleave(beam, dim=0), prefix_tokens)

    lookup = item_lookup(catalog, args.vocab)
    in_stock = rng.random(args.items) < 0.3
    for title, item_filter in (("all items", None), ("in stock only (30%)", index.make_filter(in_stock))):
        t0 = time.perf_counter()
        result = constrained_beam_search(
            step_logits,
            index,
            batch_size=args.queries,
            beam_width=beam,
            item_filter=item_filter,
            backend="torch",
        )
        elapsed = time.perf_counter() - t0
        print(f"\n{title}: beam search over {args.queries} queries x {beam} beams in {elapsed * 1e3:.0f} ms")
        for q in range(args.queries):
            print(f"  query {q}:")
            for seq, score in list(zip(result.sequences[q], result.scores[q], strict=True))[: args.top_k]:
                items = lookup(seq)
                if item_filter is not None:
                    items = items[in_stock[items]]
                assert items.size, "every result is a catalog item (in stock, with the filter)"
                print(f"    item {int(items[0]):>8}  id {seq}  log-prob {score:7.3f}")


if __name__ == "__main__":
    main()
