"""What a :class:`~tritonpy.fleet.FleetClient` counted: requests answered, failed and retried,
in all and per replica (thread-safe: several threads share one client).

Example::

    stats = client.stats()
    print(stats.answered, stats.failed, stats.retried, stats.replicas["localhost:8001"].answered)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Dict, Sequence, Tuple


@dataclass(frozen=True)
class ReplicaStats:
    """One replica's counts: ``answered`` (requests it answered), ``faults`` (requests it
    failed for a reason of its own, each then retried elsewhere or, after the last retry,
    failed), ``refused`` (requests it refused for the request's own reason, given to the
    caller) and ``reasons`` (the faults by reason: ``{"unavailable": 3}``)."""

    answered: int = 0
    faults: int = 0
    refused: int = 0
    reasons: Tuple[Tuple[str, int], ...] = ()


@dataclass(frozen=True)
class FleetStats:
    """A client's counts: ``answered`` (requests that got an answer, after retries or not),
    ``failed`` (requests whose error reached the caller: refused by the model, or every
    attempt failed), ``retried`` (attempts sent again to another replica after a replica's
    fault), ``replicas`` (each replica's :class:`ReplicaStats`, by URL)."""

    answered: int
    failed: int
    retried: int
    replicas: Dict[str, ReplicaStats] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: ``answered 1200, failed 0, retried 7 (a:8001 412, b:8001 398, ...)``."""
        parts = ", ".join(f"{url} {s.answered}" for url, s in self.replicas.items())
        return (
            f"answered {self.answered}, failed {self.failed}, retried {self.retried} "
            f"(answered per replica: {parts})"
        )


class _Counter:
    """The mutable counts behind :meth:`FleetClient.stats`."""

    def __init__(self, urls: Sequence[str]) -> None:
        self._lock = threading.Lock()
        self.answered = 0
        self.failed = 0
        self.retried = 0
        self._replica: Dict[str, Dict[str, int]] = {u: {} for u in urls}

    def _bump(self, url: str, key: str) -> None:
        counts = self._replica[url]
        counts[key] = counts.get(key, 0) + 1

    def answer(self, url: str) -> None:
        with self._lock:
            self.answered += 1
            self._bump(url, "answered")

    def refuse(self, url: str) -> None:
        with self._lock:
            self.failed += 1
            self._bump(url, "refused")

    def fault(self, url: str, reason: str, *, retried: bool) -> None:
        with self._lock:
            self._bump(url, "faults")
            self._bump(url, "reason:" + reason)
            if retried:
                self.retried += 1
            else:
                self.failed += 1

    def snapshot(self) -> FleetStats:
        with self._lock:
            replicas = {url: _replica_stats(counts) for url, counts in self._replica.items()}
            return FleetStats(self.answered, self.failed, self.retried, replicas)


def _replica_stats(counts: Dict[str, int]) -> ReplicaStats:
    reasons = tuple(
        sorted((k[len("reason:") :], v) for k, v in counts.items() if k.startswith("reason:"))
    )
    return ReplicaStats(
        counts.get("answered", 0), counts.get("faults", 0), counts.get("refused", 0), reasons
    )
