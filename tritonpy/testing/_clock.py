"""The harness's clock: time that moves only when the test moves it.

Triton's sequence batcher ends a sequence left idle longer than
``max_sequence_idle_microseconds`` (1 s unless the config says otherwise). Under
:class:`~tritonpy.testing.ModelHarness` that idle time is read from ``harness.clock``, a
:class:`ManualClock` that stands still until the test advances it, so a test of the timeout
neither sleeps nor flakes on a slow machine; a tritonpy model's own eviction of idle state
reads the same clock.

Example::

    with ModelHarness("models/running_sum") as harness:   # idle timeout 1 s
        harness.infer({"VALUE": [[1]]}, correlation_id=7, flags=1)
        harness.clock.advance(2.0)                         # sequence 7 is now idle 2 s
        harness.infer({"VALUE": [[2]]}, correlation_id=7)  # INVALID_ARG: no START
"""

from __future__ import annotations

from ._errors import HarnessError


class ManualClock:
    """Seconds, as ``time.monotonic()`` gives them, that pass only on :meth:`advance`.

    Example::

        clock = ManualClock()
        clock.advance(1.5)
        assert clock() == 1.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def __call__(self) -> float:
        return self._now

    @property
    def now(self) -> float:
        """The current time, in seconds."""
        return self._now

    def advance(self, seconds: float) -> float:
        """Let ``seconds`` pass (>= 0); returns the new time."""
        if seconds < 0:
            raise HarnessError(
                f"clock.advance({seconds}): time cannot go back; give a number of seconds >= 0"
            )
        self._now += float(seconds)
        return self._now

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now})"


def bind_clock(model: object, clock: ManualClock) -> None:
    """Make a tritonpy model's own eviction of idle sequences read ``clock``: its engine's
    ``sequences`` store (a tp.Model with ``sequence``) reads ``store.clock``; any other model
    is left as it is."""
    engine = getattr(model, "_Model__engine", None)  # tp.Model's engine (engine_of)
    store = getattr(engine, "sequences", None)
    if store is not None:
        store.clock = clock
