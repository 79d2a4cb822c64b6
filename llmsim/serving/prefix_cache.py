"""The KV blocks of cached shared prefixes, evicted least recently used first when the blocks run short.

Each engine keeps a computed prompt prefix's whole blocks after its request leaves and hands them to later
requests that start with it; blocks no running request holds stay cached until an allocation needs them, and
then the least recently used go first: vLLM's free block queue (vllm/v1/core/kv_cache_utils.py,
FreeKVCacheBlockQueue: a freed block is appended back "with the eviction order: the least recent used block is
at the front (LRU)", and allocations take from the front), SGLang's radix cache (ServerArgs radix_eviction_policy
"lru", its default); TensorRT-LLM's block reuse keeps filled blocks in its search tree for later requests and
evicts them by priority (docs, "KV Cache System": "prioritized eviction"; approximation: all at one priority,
taken here as least recently used first).
approximation: a prefix is cached or evicted whole (its hit_blocks blocks together), and a request's lookup counts
as its use (vLLM touches the blocks it hits when it allocates them).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class PrefixCache:
    """The cached prefixes (shared-prefix groups) of one engine instance, least recently used first, and the
    blocks they hold (pinned)."""

    def __init__(self, groups: list[int], hit_blocks: int) -> None:
        self.groups = groups  # each request's prefix group (-1: none)
        self.hit_blocks = hit_blocks  # whole blocks of one cached prefix
        self.lru: OrderedDict[int, None] = OrderedDict()  # cached groups, least recently used first
        self.pinned = 0  # blocks held by cached prefixes

    def hit(self, request: int) -> int:
        """The cached blocks request `request` starts with (0: its prefix is not cached); a hit counts as a use."""
        group = self.groups[request]
        if group in self.lru:
            self.lru.move_to_end(group)
            return self.hit_blocks
        return 0

    def store(self, request: int) -> bool:
        """Cache the prefix request `request` has just computed; False if it has none or it is cached already."""
        group = self.groups[request]
        if group < 0 or group in self.lru:
            return False
        self.lru[group] = None
        self.pinned += self.hit_blocks
        return True

    def in_use(self, ids: Any, shared: Any, m: int, also: int = -1) -> set[int]:
        """The groups the first m running requests (ids, the cached blocks each holds: shared) hold, and the
        group of request `also` (one being admitted on a hit; -1: none)."""
        used = {self.groups[int(ids[i])] for i in range(m) if shared[i] > 0}
        if also >= 0:
            used.add(self.groups[also])
        return used

    def evict(self, blocks: int, in_use: set[int]) -> int:
        """Evict cached prefixes no running request holds, least recently used first, until at least `blocks`
        blocks are freed or none is left; the blocks freed."""
        freed = 0
        for group in [g for g in self.lru if g not in in_use]:
            if freed >= blocks:
                break
            del self.lru[group]
            freed += self.hit_blocks
        self.pinned -= freed
        return freed

    def evictable(self, in_use: set[int]) -> int:
        """The blocks evict() could free."""
        return self.hit_blocks * sum(1 for g in self.lru if g not in in_use)
