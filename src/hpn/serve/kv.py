"""Paged KV accounting: a block pool per instance and a block table per request.

After vLLM v1 (`vllm/v1/core/block_pool.py`, `kv_cache_manager.py`, `sched/scheduler.py`,
v0.11): the device KV budget is cut into fixed blocks of `BLOCK_TOKENS` tokens; a request
holds a table of block ids, grown one block at a time as its context crosses a block
boundary (`allocate_slots`: all needed blocks or none), and freed (tail first, as vLLM's
`free` does) when it finishes, is aborted, is preempted or its KV leaves the instance.
Without prefix caching a freed block is simply free (no hash, no reuse queue).

The blocks are real memory: a manager's `store` (`hpn.serve.paged.KVStore`) is the
instance's KV tensor, one row per block id, sized for `BLOCK_TOKENS` tokens of the largest
KV per token of the served models; a block is zeroed when it is taken. A manager without
a store only accounts (the allocator tests).
"""

from __future__ import annotations

import threading
from collections import deque

BLOCK_TOKENS = 16  # vLLM's default block size


def blocks_for(tokens: int, block_tokens: int = BLOCK_TOKENS) -> int:
    """Blocks a context of `tokens` tokens needs."""
    return -(-tokens // block_tokens)


class BlockPool:
    """`num_blocks` block ids; a free queue (oldest freed first, as vLLM's)."""

    def __init__(self, num_blocks: int):
        if num_blocks < 1:
            raise ValueError(f"a KV pool needs at least one block, got {num_blocks}")
        self.num_blocks = num_blocks
        self._free: deque[int] = deque(range(num_blocks))

    @property
    def num_free(self) -> int:
        return len(self._free)

    def take(self, n: int) -> list[int]:
        if n > len(self._free):
            raise ValueError(f"{n} blocks asked, {len(self._free)} free")
        return [self._free.popleft() for _ in range(n)]

    def give(self, blocks: list[int]) -> None:
        self._free.extend(blocks)

    def usage(self) -> float:
        """Share of blocks in use, 0..1 (vLLM's `get_usage`)."""
        return 1.0 - len(self._free) / self.num_blocks


class KVManager:
    """Block tables of the requests whose KV is on one instance (thread-safe: the
    instance's compute and copy lanes all call it)."""

    def __init__(self, num_blocks: int, block_tokens: int = BLOCK_TOKENS, store=None):
        self.pool = BlockPool(num_blocks)
        self.block_tokens = block_tokens
        self.store = store  # hpn.serve.paged.KVStore: the blocks' memory (None: accounting)
        self.tables: dict[int, list[int]] = {}
        self.lock = threading.Condition()

    @property
    def num_blocks(self) -> int:
        return self.pool.num_blocks

    @property
    def capacity_tokens(self) -> int:
        """Tokens of one request that fit in the whole pool."""
        return self.pool.num_blocks * self.block_tokens

    def num_free(self) -> int:
        with self.lock:
            return self.pool.num_free

    def needs(self, rid: int, tokens: int) -> int:
        """Blocks still to allocate for `rid` to hold `tokens` tokens."""
        with self.lock:
            have = len(self.tables.get(rid, ()))
        return max(0, blocks_for(tokens, self.block_tokens) - have)

    def allocate_slots(self, rid: int, tokens: int) -> bool:
        """Grow `rid`'s table to hold `tokens` tokens: every block needed, or none (False)."""
        with self.lock:
            table = self.tables.setdefault(rid, [])
            need = blocks_for(tokens, self.block_tokens) - len(table)
            if need <= 0:
                return True
            if need > self.pool.num_free:
                if not table:
                    del self.tables[rid]
                return False
            new = self.pool.take(need)
            if self.store is not None:
                self.store.zero(new)
            table.extend(new)
            return True

    def free(self, rid: int) -> int:
        """Release `rid`'s blocks (tail first); the number freed."""
        with self.lock:
            table = self.tables.pop(rid, [])
            self.pool.give(table[::-1])
            if table:
                self.lock.notify_all()
            return len(table)

    def holds(self, rid: int) -> bool:
        with self.lock:
            return rid in self.tables

    def used_blocks(self) -> int:
        with self.lock:
            return self.pool.num_blocks - self.pool.num_free

    def usage(self) -> float:
        with self.lock:
            return self.pool.usage()

    def wait_freed(self, timeout: float) -> None:
        """Block until some blocks are freed (or `timeout` seconds)."""
        with self.lock:
            self.lock.wait(timeout)
