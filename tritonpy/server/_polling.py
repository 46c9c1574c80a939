"""A daemon thread that calls one function at a fixed interval until it is stopped: how the
console echo follows the log and how the healer watches the stubs.

Example::

    poller = Poller(check, interval=0.1, name="tritonpy-watch").start()
    ...
    poller.stop()      # check's last call has returned when this does (or timeout passed)
"""

from __future__ import annotations

import threading
from typing import Callable, Optional


class Poller:
    """Calls ``tick`` every ``interval`` seconds; ``tick`` returns ``False`` to end the
    polling itself. ``finish`` runs once on the thread after the last tick (not when ``tick``
    ended it). ``stopping`` is set by :meth:`stop`, for work that waits in other threads."""

    def __init__(
        self,
        tick: Callable[[], bool],
        *,
        interval: float,
        name: str,
        finish: Optional[Callable[[], None]] = None,
    ) -> None:
        self.interval = interval
        self.stopping = threading.Event()
        self._tick = tick
        self._finish = finish
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Poller:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the thread to end and wait for it up to ``timeout`` (idempotent; a no-op wait
        when called from the thread itself)."""
        self.stopping.set()
        join(self._thread, timeout)

    def _run(self) -> None:
        while not self.stopping.wait(self.interval):
            if not self._tick():
                return
        if self._finish is not None:
            self._finish()


def join(thread: threading.Thread, timeout: float) -> None:
    """Wait for ``thread`` unless it is not running or is the calling thread."""
    if thread.is_alive() and thread is not threading.current_thread():
        thread.join(timeout)
