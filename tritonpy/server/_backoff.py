"""How long to wait before restarting something that keeps dying: a few deaths in a window are
restarted at once, more are spaced out exponentially, never in a tight loop.

Example::

    policy = Backoff()                     # 3 free deaths a minute, then 1, 2, 4 ... 60 s
    [policy.record(t) for t in (0, 1, 2, 3, 4)]   # [0.0, 0.0, 0.0, 1.0, 2.0]
"""

from __future__ import annotations

from collections import deque
from typing import Deque, Optional


class Backoff:
    """Counts deaths in a sliding ``window`` (seconds) and answers how long to wait before the
    next restart: nothing for the first ``free`` deaths of the window, then ``first`` seconds,
    doubling with each further death up to ``cap``.

    ``give_up_after``: when set, :meth:`record` returns ``None`` once that many deaths fall in
    the window (the caller stops restarting and reports).
    """

    def __init__(
        self,
        *,
        free: int = 3,
        window: float = 60.0,
        first: float = 1.0,
        cap: float = 60.0,
        give_up_after: Optional[int] = None,
    ) -> None:
        if free < 0 or window <= 0 or first <= 0 or cap < first:
            raise ValueError(
                f"Backoff(free={free}, window={window}, first={first}, cap={cap}): expected "
                "free >= 0, window > 0 and 0 < first <= cap"
            )
        self.free = free
        self.window = float(window)
        self.first = float(first)
        self.cap = float(cap)
        self.give_up_after = give_up_after
        self._deaths: Deque[float] = deque()

    def recent(self, now: float) -> int:
        """How many deaths fall in the window ending at ``now``."""
        while self._deaths and self._deaths[0] <= now - self.window:
            self._deaths.popleft()
        return len(self._deaths)

    def record(self, now: float) -> Optional[float]:
        """Note a death at ``now`` (seconds, monotonic); return the delay before restarting,
        or ``None`` when ``give_up_after`` deaths fell in the window."""
        self._deaths.append(now)
        count = self.recent(now)
        if self.give_up_after is not None and count >= self.give_up_after:
            return None
        if count <= self.free:
            return 0.0
        return min(self.cap, self.first * 2.0 ** (count - self.free - 1))
