"""The order in which tritonserver walks a request's inputs.

The server keeps a request's inputs in a ``std::unordered_map<std::string, Input>`` (core,
``InferenceRequest::original_inputs_``) and validates them by iterating it, so when several
inputs are wrong, the one it names is the first in that map's iteration order, not the first
sent nor the first in the configuration. That order is libstdc++'s: ``std::hash<std::string>``
(``_Hash_bytes``, a 64-bit MurmurHash2 variant with seed 0xc70f6907), prime bucket counts
growing as elements are inserted (max load factor 1), and a singly linked node list where a
node whose bucket is empty goes to the front. This module reproduces it (checked against
tritonserver 24.10 in tests/integration/test_conformance_plain.py).
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import bisect
from typing import Dict, Iterable, List, Optional

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907
# _Prime_rehash_policy: the small-size table, then its list of primes (the start of it)
_FAST_BUCKETS = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_PRIMES = (
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83,
    89, 97, 103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257,
    277, 293, 313, 337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887,
    953, 1031, 1109, 1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549,
)  # fmt: skip


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def string_hash(text: str) -> int:
    """``std::hash<std::string>`` of libstdc++ on a 64-bit platform."""
    data = text.encode("utf-8")
    aligned = len(data) & ~7
    hashed = (_SEED ^ (len(data) * _MUL)) & _MASK
    for start in range(0, aligned, 8):
        word = int.from_bytes(data[start : start + 8], "little")
        word = (_shift_mix((word * _MUL) & _MASK) * _MUL) & _MASK
        hashed = ((hashed ^ word) * _MUL) & _MASK
    if len(data) & 7:
        hashed = ((hashed ^ int.from_bytes(data[aligned:], "little")) * _MUL) & _MASK
    hashed = (_shift_mix(hashed) * _MUL) & _MASK
    return _shift_mix(hashed)


def _next_bucket_count(wanted: int) -> int:
    if wanted < len(_FAST_BUCKETS):
        return 1 if wanted == 0 else _FAST_BUCKETS[wanted]
    found = bisect.bisect_left(_PRIMES, wanted, lo=6)
    return _PRIMES[found] if found < len(_PRIMES) else wanted | 1


class _Table:
    """The node list and buckets of a libstdc++ ``_Hashtable`` with unique keys."""

    def __init__(self) -> None:
        self.buckets = 1
        self.next_resize = 0
        self.order: List[str] = []  # the node list, front first
        self.hashes: Dict[str, int] = {}

    def _bucket(self, key: str) -> int:
        return self.hashes[key] % self.buckets

    def _insert_node(self, key: str, heads: Dict[int, Optional[str]]) -> None:
        """Insert ``key`` as _M_insert_bucket_begin does. ``heads[b]`` is the node before
        bucket b's first node (None: the list's front)."""
        bucket = self._bucket(key)
        if bucket in heads:
            before = heads[bucket]
            at = 0 if before is None else self.order.index(before) + 1
            self.order.insert(at, key)
            return
        self.order.insert(0, key)
        if len(self.order) > 1:
            heads[self._bucket(self.order[1])] = key
        heads[bucket] = None

    def _heads(self) -> Dict[int, Optional[str]]:
        heads: Dict[int, Optional[str]] = {}
        previous: Optional[str] = None
        for key in self.order:
            heads.setdefault(self._bucket(key), previous)
            previous = key
        return heads

    def _rehash(self, buckets: int) -> None:
        nodes, self.order, self.buckets = self.order, [], buckets
        heads: Dict[int, Optional[str]] = {}
        for key in nodes:  # _M_rehash_aux: same rule as an insertion, in list order
            self._insert_node(key, heads)

    def insert(self, key: str) -> None:
        if key in self.hashes:
            return
        self.hashes[key] = string_hash(key)
        count = len(self.order)
        if count + 1 > self.next_resize:
            # _M_need_rehash: nothing allocated yet (next_resize 0) starts at 11 buckets
            wanted = max(count + 1, 0 if self.next_resize else 11)
            if wanted >= self.buckets:
                new = _next_bucket_count(max(wanted + 1, self.buckets * 2))
                self.next_resize = new
                self._rehash(new)
            else:
                self.next_resize = self.buckets
        self._insert_node(key, self._heads())


def server_input_order(names: Iterable[str]) -> List[str]:
    """``names`` (in the order a client sent them) in the order tritonserver iterates them."""
    table = _Table()
    for name in names:
        table.insert(name)
    return list(table.order)
