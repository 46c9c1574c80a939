"""Running a model's coroutines (``async def execute``/``initialize``) to completion, from a
test that has no event loop as well as from inside a running one (an async test)."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import asyncio
import threading
from typing import Any, Awaitable, Dict, Optional


class LoopRunner:
    """Runs awaitables on one event loop of its own, reused across calls (as the stub runs
    every ``execute`` of a model on its loop); :meth:`close` closes it."""

    def __init__(self) -> None:
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def run(self, awaitable: Awaitable[Any]) -> Any:
        """The awaitable's result (or its exception raised here)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(awaitable)
        return _run_in_thread(awaitable)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()


def _run_in_thread(awaitable: Awaitable[Any]) -> Any:
    """Called from inside a running event loop (e.g. an async test), which cannot be
    re-entered: run the awaitable on a fresh loop in a worker thread."""
    box: Dict[str, Any] = {}

    def worker() -> None:
        try:
            box["result"] = asyncio.run(_await(awaitable))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="tritonpy-harness-async")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("result")


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
