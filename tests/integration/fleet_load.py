"""A bounded client load over a fleet of replicas, for ``test_fleet_s3.py``.

``threads`` threads share one :class:`~tritonpy.fleet.FleetClient`; each sends the requests of
``requests`` in turn (each thread from its own offset, so every kind is in flight at once), at
most ``per_thread`` of them, until :meth:`Load.stop` or ``cap_s`` seconds. Every request's
outcome is kept: when it began and ended, the error that reached the caller (or the wrong
answer), and what the answer said of the model's version.

Example::

    load = Load(fleet, requests, threads=4, per_thread=2000, cap_s=120).start()
    load.wait_every_kind()
    ...                                   # roll out, kill a replica
    report = load.stop()
    assert report.failed == [], report.failed[:3]
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from tritonpy.fleet import FleetClient

#: sends one request through the fleet, raises when the answer is wrong, and returns the
#: version of the model the answer names (None when the answer names none)
Send = Callable[[FleetClient], Optional[int]]


@dataclass(frozen=True)
class Request:
    """One kind of request of the load: a short ``kind`` (``"ensemble"``) and how to send it
    and check its answer."""

    kind: str
    send: Send


@dataclass(frozen=True)
class Outcome:
    """One request sent: its ``kind``, when it ``began`` and ``ended`` (time.monotonic()),
    the ``error`` that reached the caller (None: answered, and the answer was right) and the
    ``version`` the answer named."""

    kind: str
    began: float
    ended: float
    error: Optional[str] = None
    version: Optional[int] = None


@dataclass
class LoadReport:
    """What a load did: every :class:`Outcome`, in the order they ended."""

    outcomes: List[Outcome] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(o.error is None for o in self.outcomes)

    @property
    def failed(self) -> List[Outcome]:
        return [o for o in self.outcomes if o.error is not None]

    @property
    def seconds(self) -> float:
        if not self.outcomes:
            return 0.0
        return max(o.ended for o in self.outcomes) - min(o.began for o in self.outcomes)

    def by_kind(self) -> Dict[str, int]:
        """Answered requests per kind."""
        counts: Dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.error is None:
                counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
        return counts

    def line(self) -> str:
        """``answered 1200, failed 0 in 31.2 s (38.5 req/s)``."""
        rate = self.answered / self.seconds if self.seconds else 0.0
        return (
            f"answered {self.answered}, failed {len(self.failed)} in {self.seconds:.1f} s "
            f"({rate:.1f} req/s)"
        )


class Load:
    """The load's threads over ``fleet`` (see the module's docstring)."""

    def __init__(
        self,
        fleet: FleetClient,
        requests: Sequence[Request],
        *,
        threads: int,
        per_thread: int,
        cap_s: float,
    ) -> None:
        self.fleet = fleet
        self.requests = list(requests)
        self.per_thread = per_thread
        self.cap_s = cap_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._outcomes: List[Outcome] = []
        # when each thread's latest request began (0.0 before its first)
        self._latest_began = [0.0] * threads
        self._threads = [
            threading.Thread(target=self._run, args=(i,), name=f"fleet-load-{i}", daemon=True)
            for i in range(threads)
        ]
        self.began = 0.0

    def start(self) -> Load:
        self.began = time.monotonic()
        for thread in self._threads:
            thread.start()
        return self

    def _run(self, index: int) -> None:
        deadline = self.began + self.cap_s
        for n in range(self.per_thread):
            if self._stop.is_set() or time.monotonic() > deadline:
                return
            request = self.requests[(index + n) % len(self.requests)]
            began = time.monotonic()
            with self._lock:
                self._latest_began[index] = began
            error: Optional[str] = None
            version: Optional[int] = None
            try:
                version = request.send(self.fleet)
            except Exception as exc:  # every failure is an outcome the test reports
                error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self._outcomes.append(
                    Outcome(request.kind, began, time.monotonic(), error, version)
                )

    def running(self) -> bool:
        """Whether some thread still sends requests."""
        return any(thread.is_alive() for thread in self._threads)

    def answered_since(self, since: float) -> int:
        """Requests that began at or after ``since`` and were answered."""
        with self._lock:
            return sum(o.error is None and o.began >= since for o in self._outcomes)

    def wait_answered(self, count: int, *, since: float = 0.0, timeout: float = 60.0) -> None:
        """Wait until ``count`` requests that began at or after ``since`` were answered;
        AssertionError when the load ended or ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while self.answered_since(since) < count:
            assert self.running(), f"the load ended before {count} answers: {self.snapshot()}"
            assert time.monotonic() < deadline, f"no {count} answers in {timeout} s"
            time.sleep(0.05)

    def wait_in_flight_ended(self, since: float, *, timeout: float = 60.0) -> None:
        """Wait until every request in flight at ``since`` has ended: each running thread
        has begun a request at or after ``since``. What the fleet client counts after that
        belongs to requests sent after ``since`` only (a response read before a replica was
        killed can be counted after the kill otherwise)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                pending = [
                    i
                    for i, thread in enumerate(self._threads)
                    if thread.is_alive() and self._latest_began[i] < since
                ]
            if not pending:
                return
            assert time.monotonic() < deadline, f"threads {pending} still in flight"
            time.sleep(0.01)

    def wait_every_kind(self, *, since: float = 0.0, timeout: float = 60.0) -> None:
        """Wait until every kind of request that began at or after ``since`` was answered at
        least once; AssertionError when the load ended or ``timeout`` passed first."""
        kinds = {request.kind for request in self.requests}
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                seen = {o.kind for o in self._outcomes if o.error is None and o.began >= since}
            if seen >= kinds:
                return
            assert self.running(), f"the load ended before answering {sorted(kinds - seen)}"
            assert time.monotonic() < deadline, f"{sorted(kinds - seen)} not answered in time"
            time.sleep(0.05)

    def snapshot(self) -> LoadReport:
        with self._lock:
            return LoadReport(list(self._outcomes))

    def stop(self) -> LoadReport:
        """Let each thread finish its request in flight, then report."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        return self.snapshot()
