"""Serve until stopped: watch the tritonserver process itself and, when it dies (killed, out of
memory, a crash), report why, or start it again when asked to (bounded, with backoff).

Example::

    server = TritonServer("model_repository").start()
    ended = serve_until_exit(server, restart=True, report=print)
    print(ended.reason)    # 'tritonserver (pid 4250) was killed by SIGKILL; ...'
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from .._runtime.errors import TritonPyError
from ._backoff import Backoff
from ._crashes import KnownCrash, known_crash
from ._process import TritonServer
from ._stubwatch import describe_returncode

_TAIL_LINES = 30
_CRASH_LINES = 100  # a crash's sign stands above its backtrace (about 25 lines)


@dataclass(frozen=True)
class ServerExit:
    """Why serving ended: the last exit code (``Popen`` style, negative for a signal), the
    reason in words with the log tail, and how many restarts were made."""

    returncode: Optional[int]
    reason: str
    restarts: int = 0


def restart_budget() -> Backoff:
    """The default for ``--restart``: wait 1, 2, 4 ... 30 s between restarts; give up at the
    5th death within 10 minutes."""
    return Backoff(free=0, window=600.0, first=1.0, cap=30.0, give_up_after=5)


def _headline(server: TritonServer, code: Optional[int], crash: Optional[KnownCrash]) -> str:
    how = describe_returncode(code)
    how = f"was {how}" if how.startswith("killed") else f"exited with {how}"
    cause = f": {crash.cause}" if crash is not None else ""
    return f"tritonserver (pid {server.pid}) {how}{cause}"


def _wait(server: TritonServer, stop: Optional[threading.Event]) -> Optional[int]:
    """The server's exit code once it ended, or ``None`` once ``stop`` was set."""
    if stop is None:
        return server.wait()
    while not stop.is_set():
        code = server.wait(0.2)
        if code is not None or not server.running:
            return server.returncode if code is None else code
    return None


def serve_until_exit(
    server: TritonServer,
    *,
    restart: bool = False,
    report: Callable[[str], None],
    budget: Optional[Backoff] = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    stop: Optional[threading.Event] = None,
) -> ServerExit:
    """Block while ``server`` (started) runs; return when it died and is not restarted.

    With ``restart``, a dead server is stopped (its stubs and shared memory cleaned up) and
    started again on the same ports after the ``budget``'s backoff (default
    :func:`restart_budget`); a start that fails counts as a death too. Each step is reported
    as a line; a death of a known cause (:mod:`._crashes`) says the cause. Returns once the
    budget gives up, with the last reason, or, when ``stop`` is given, once it is set (the
    server is stopped then; serving from a thread).
    """
    budget = budget or restart_budget()
    restarts = 0
    while True:
        code = _wait(server, stop)
        if stop is not None and stop.is_set():
            server.stop()
            return ServerExit(server.returncode, "stopped on request", restarts)
        tail = server.log_tail(_TAIL_LINES)
        crash = known_crash(server.log_tail(_CRASH_LINES))
        headline = _headline(server, code, crash)
        reason = f"{headline}; the end of its log:\n{tail}"
        server.stop()  # the stubs left behind, the shadow repository, the log echo
        if not restart:
            remedy = f"\n{crash.remedy}" if crash is not None else ""
            return ServerExit(code, reason + remedy, restarts)
        while True:
            delay = budget.record(clock())
            if delay is None:
                deaths = budget.recent(clock())
                return ServerExit(
                    code,
                    f"{reason}\ngave up restarting: {deaths} deaths within {budget.window:g} s",
                    restarts,
                )
            report(f"[server] {headline}; restarting in {delay:g} s")
            sleep(delay)
            if stop is not None and stop.is_set():
                return ServerExit(code, "stopped on request", restarts)
            server.keep_ports()
            try:
                server.start()
            except TritonPyError as exc:
                headline = f"the restart failed: {str(exc).splitlines()[0]}"
                reason = f"the restart failed: {exc}"
                code = server.returncode
                continue
            restarts += 1
            report(f"[server] restarted (pid {server.pid}, restart {restarts})")
            break
