"""Known ways tritonserver itself dies, recognised from the end of its log, so that a death is
reported with its cause and its remedy instead of a bare signal.

Example::

    crash = known_crash(server.log_tail(60))
    if crash is not None:
        print(crash.cause)   # 'the Python backend aborted on a shared-memory lock ...'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class KnownCrash:
    """A crash recognised by a line of the server's log: what happened, in a clause that
    follows the death's headline, and what to do about it."""

    sign: str
    cause: str
    remedy: str


# Measured on release 24.10 (benchmarks/stub_kill_chaos.py): a stub killed while it holds one
# of the interprocess mutexes it shares with the server leaves that mutex owned by a dead
# process; the server's next lock of it throws, nothing catches it, the server aborts.
LOCK_EXCEPTION = KnownCrash(
    sign="boost::interprocess::lock_exception",
    cause=(
        "the Python backend aborted on a shared-memory lock held by a stub process that had "
        "died (a known Triton crash, triton-inference-server/server#8882)"
    ),
    remedy=(
        "nothing in the model causes it: start the server again (`tritonpy serve --restart` "
        "does so by itself; under Kubernetes the pod's restart policy does)"
    ),
)

KNOWN_CRASHES: Tuple[KnownCrash, ...] = (LOCK_EXCEPTION,)


def known_crash(log_tail: str) -> Optional[KnownCrash]:
    """The known crash whose sign is in ``log_tail`` (the end of a dead server's log)."""
    for crash in KNOWN_CRASHES:
        if crash.sign in log_tail:
            return crash
    return None
