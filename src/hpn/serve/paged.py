"""Paged KV storage: an instance's blocks as one tensor, written by slot and read by table.

After vLLM v1 (v0.11): the KV memory of an instance is allocated once, cut into
`num_blocks` blocks of `block_tokens` tokens (`gpu_model_runner._allocate_kv_cache_tensors`);
a forward writes each new token's K/V into its slot, ``block_table[pos // B] * B + pos % B``
(`reshape_and_cache` with the step's ``slot_mapping``), and attention reads a request's
context through its block table (`paged_attention`). Here:

- `KVStore`: one tensor ``[num_blocks, block_elems]`` in the instance's dtype, where a
  block's row is long enough for the largest served model; a model views a block as
  ``[layers, 2, block_tokens, kv_heads, head_dim]`` (vLLM's flash layout per layer, all
  layers of a block in one row), so the memory the block allocator hands out is the
  memory that exists, whichever model holds it. Blocks are zeroed when taken (vLLM
  allocates the whole cache zeroed; here pages are touched as blocks are used).
- `PagedCache` (`_cache_class`): a transformers `Cache` whose layers write the forward's
  K/V into their slots and, in a decode step, return each request's context gathered
  through its block table (``index_select`` of its blocks, right-padded to the batch's
  longest context and masked). There is no paged-attention kernel on CPU: the gather is
  one copy of the batch's context per layer and step, the cost of reading through a table
  (transformers' `DynamicCache` copies as much: it concatenates every step).
- `swap`: a request's blocks copied device -> host (``[blocks, elems]``) -> the blocks
  allocated on the destination (vLLM v0's swap-out/swap-in of block lists).
"""

from __future__ import annotations

import functools
from typing import Any

from hpn.serve.kv import BLOCK_TOKENS, KVManager, blocks_for


def kv_dims(config) -> tuple[int, int, int]:
    """(layers, kv heads, head dim) of a transformers config."""
    heads = config.num_attention_heads
    kv = getattr(config, "num_key_value_heads", None) or heads
    hd = getattr(config, "head_dim", None) or config.hidden_size // heads
    return int(config.num_hidden_layers), int(kv), int(hd)


def block_elems(config, block_tokens: int = BLOCK_TOKENS) -> int:
    """Elements one block of `block_tokens` tokens holds for a model."""
    layers, kv, hd = kv_dims(config)
    return 2 * layers * block_tokens * kv * hd


class KVStore:
    """The KV memory of one instance: `num_blocks` rows of `elems` elements."""

    def __init__(self, num_blocks: int, elems: int, block_tokens: int, device, dtype):
        import torch

        self.block_tokens = block_tokens
        self.elems = elems
        self.device = device
        self.data = torch.empty(num_blocks, elems, device=device, dtype=dtype)
        self._views: dict[tuple[int, int, int], Any] = {}

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size()

    def view(self, config):
        """The blocks as ``[blocks, layers, 2, block_tokens, kv_heads, head_dim]`` for a model."""
        dims = kv_dims(config)
        v = self._views.get(dims)
        if v is None:
            layers, kv, hd = dims
            n = 2 * layers * self.block_tokens * kv * hd
            if n > self.elems:
                raise ValueError(f"a block holds {self.elems} elements, the model needs {n}")
            v = self.data[:, :n].view(-1, layers, 2, self.block_tokens, kv, hd)
            self._views[dims] = v
        return v

    def zero(self, blocks: list[int]) -> None:
        import torch

        if blocks:
            self.data.index_fill_(0, torch.tensor(blocks, device=self.device), 0)


def kv_pool(config, num_blocks: int, device, dtype, block_tokens: int = BLOCK_TOKENS):
    """A `KVManager` with its own store, sized for one model (profiles, benches, tests)."""
    store = KVStore(num_blocks, block_elems(config, block_tokens), block_tokens, device, dtype)
    return KVManager(num_blocks, block_tokens, store)


class _Plan:
    """Where one forward's new K/V go and what its attention reads.

    ``blk``/``off``: the slot of each new token (block id, offset in the block); ``rows``/
    ``cols``: which (batch row, query column) each of them is (prefill; None in a decode
    step: one token per row); ``table``: the batch's block tables, right-padded with each
    row's first block (decode only; None in a prefill, which attends to its own K/V)."""

    def __init__(self, blk, off, rows=None, cols=None, table=None, width=0):
        self.blk, self.off, self.rows, self.cols, self.table = blk, off, rows, cols, table
        self.width = width  # decode: the columns attention reads (the longest context)


@functools.cache
def _cache_class():
    """`PagedCache`, a transformers `Cache` whose layers write the forward's K/V into their
    slots and read a decode step's contexts through the block tables (built on first use:
    importing transformers costs seconds)."""
    from transformers.cache_utils import Cache, DynamicLayer

    class _PagedLayer(DynamicLayer):
        def __init__(self, pool, plan: _Plan):
            super().__init__()
            self.k, self.v = pool[:, 0], pool[:, 1]  # [blocks, B, H, D] each (strided views)
            self.plan = plan
            self.is_initialized = True
            self.device = pool.device
            self.length = 0 if plan.table is None else plan.width - 1

        def lazy_initialization(self, key_states, value_states) -> None:  # pragma: no cover
            pass

        def update(self, key_states, value_states, *args, **kwargs):
            p = self.plan
            ks, vs = key_states.transpose(1, 2), value_states.transpose(1, 2)  # [b, q, H, D]
            if p.table is None:  # prefill: write the valid columns, attend to its own K/V
                self.k[p.blk, p.off] = ks[p.rows, p.cols]
                self.v[p.blk, p.off] = vs[p.rows, p.cols]
                return key_states, value_states
            self.k[p.blk, p.off] = ks[:, 0]
            self.v[p.blk, p.off] = vs[:, 0]
            b, nb = p.table.shape
            flat = p.table.view(-1)
            _, B, H, D = self.k.shape
            keys = self.k.index_select(0, flat).view(b, nb * B, H, D)[:, : p.width]
            values = self.v.index_select(0, flat).view(b, nb * B, H, D)[:, : p.width]
            return keys.transpose(1, 2), values.transpose(1, 2)

        def get_seq_length(self) -> int:
            return self.length

        def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
            return self.length + query_length, 0

    class PagedCache(Cache):
        """A transformers cache over an instance's blocks for one forward."""

        def __init__(self, pool, plan: _Plan):
            super().__init__(layers=[_PagedLayer(pool[:, i], plan) for i in range(pool.shape[1])])

    return PagedCache


def prefill_cache(kv: KVManager, module, rids: list[int], lens: list[int], width: int):
    """The cache of a left-padded prefill of `width` columns: request `rids[i]`'s
    `lens[i]` tokens (its blocks already allocated) go to positions 0..lens[i]-1."""
    import torch

    dev = kv.store.device
    with kv.lock:
        tables = [torch.tensor(kv.tables[rid], device=dev) for rid in rids]
    parts = []
    for i, (table, n) in enumerate(zip(tables, lens, strict=True)):
        pos = torch.arange(n, device=dev)
        parts.append((table[pos // kv.block_tokens], pos % kv.block_tokens,
                      torch.full_like(pos, i), pos + (width - n)))  # fmt: skip
    blk, off, rows, cols = (torch.cat(x) for x in zip(*parts, strict=True))
    return _cache_class()(kv.store.view(module.config), _Plan(blk, off, rows, cols))


def decode_cache(kv: KVManager, module, rids: list[int], positions: list[int]):
    """The cache of a decode step feeding request `rids[i]` its token at `positions[i]`
    (its slot already allocated); returns (cache, attention mask)."""
    import torch

    B = kv.block_tokens
    with kv.lock:
        tables = [kv.tables[rid] for rid in rids]
        width = max(len(t) for t in tables)
        padded = [t + [t[0]] * (width - len(t)) for t in tables]
        blk = [t[p // B] for t, p in zip(tables, positions, strict=True)]
    dev = kv.store.device
    pos = torch.tensor(positions, device=dev)
    off = pos % B
    table = torch.tensor(padded, device=dev)
    cols = max(positions) + 1  # the last block's tail past every context is not read
    mask = (torch.arange(cols, device=dev) <= pos.view(-1, 1)).long()
    plan = _Plan(torch.tensor(blk, device=dev), off, table=table, width=cols)
    return _cache_class()(kv.store.view(module.config), plan), mask


def swap(be, seqs, dst, link) -> None:
    """Copy the KV of `seqs` to instance `dst` (None: host memory) over `link`, block by
    block: blocks freed at the source and taken at the destination; a KV finding no free
    blocks there is dropped (preempted: the decode loop recomputes it), as is one of a
    request already gone."""
    import torch

    to = None if dst is None else dst.iid
    live = []
    for s in seqs:
        here = s.kv_on
        has = s.kv is not None if here is None else be.kv[here].holds(s.rid)
        if not has or here == to:
            if s.preempted or not has:
                s.kv_on = to
            continue
        if s.finished or s.cancelled:
            be._release(s)
            s.kv_on = to
        elif to is not None and not be.kv[to].allocate_slots(s.rid, s.kv_tokens):
            be._release(s)
            s.preempted, s.kv_on = True, to
            be.post(be._preempted, s.rid)
        else:
            live.append(s)
    pairs: list[tuple[Any, Any]] = []
    done: list[tuple[Any, Any]] = []
    pin = be.spec.kind == "cuda"
    for s in live:
        if s.kv_on is None:  # host -> device: into the blocks taken above
            dkv = be.kv[to]
            elems = s.kv.shape[1]
            rows = dkv.tables[s.rid][: blocks_for(s.kv_tokens, dkv.block_tokens)]
            dst_rows = [dkv.store.data[b, :elems] for b in rows]
            pairs += list(zip(dst_rows, s.kv[: len(rows)], strict=True))
            done.append((s, None))
        else:  # device -> host
            src = be.kv[s.kv_on]
            elems = block_elems(be.hosts[s.model].config, src.block_tokens)
            rows = src.tables[s.rid][: blocks_for(s.kv_tokens, src.block_tokens)]
            host = torch.empty(len(rows), elems, dtype=src.store.data.dtype, pin_memory=pin)
            pairs += [(host[i], src.store.data[b, :elems]) for i, b in enumerate(rows)]
            done.append((s, host))
    link.copy(pairs)
    for s, host in done:
        if s.kv_on is not None:
            be.kv[s.kv_on].free(s.rid)
        s.kv, s.kv_on = host, to
