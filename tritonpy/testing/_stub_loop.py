"""The event loop a model's coroutines run on, as the stub runs it: one loop per model, started
on first use in a daemon thread and running forever (pb_stub.cc r24.10, GetAsyncEventLoop), so
that tasks a coroutine ``execute`` leaves behind (``asyncio.create_task``: responses sent after
``execute`` returned) go on running between and after ``execute`` calls.

Example::

    loop = StubLoop()
    assert loop.run(asyncio.sleep(0, "done")) == "done"
    loop.close()
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import asyncio
import threading
from typing import Any, Awaitable, Optional

#: how long close() waits for the loop's thread to end
_JOIN_TIMEOUT_S = 5.0


class StubLoop:
    """Runs awaitables on the model's own event loop, which runs in a daemon thread of its
    own until :meth:`close` (callable from a test with or without a running loop)."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="tritonpy-stub-loop", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """The awaitable's result (or its exception, raised here), run on the model's loop."""
        future = asyncio.run_coroutine_threadsafe(_await(awaitable), self._started())
        return future.result()

    def close(self) -> None:
        """Stop the loop (tasks still pending are left, as the stub's end leaves them)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(_JOIN_TIMEOUT_S)
        if not loop.is_running():
            _cancel_pending(loop)
            loop.close()


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel the tasks the model left (quietly: no 'Task was destroyed' warnings)."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
