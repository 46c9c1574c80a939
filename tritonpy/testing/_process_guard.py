"""Models that end their own process, caught while their code runs under the harness.

In Triton a model runs in its own stub process: ``os._exit()``, ``os.abort()`` or a signal sent
to itself ends that process, and from then on every request to the model fails with
``Stub process '<instance>' is not healthy.`` while the server still reports the model READY.
Under the harness the model runs inside the test process, where the same call would end pytest
itself (a vanished or hung test run). While a model hook runs, :func:`guard_process_exit`
replaces those calls with one that raises :class:`ProcessEnded`, which the harness turns into a
:class:`ModelProcessDiedError` that says what happened in Triton.

``sys.exit()`` needs no guard: it raises ``SystemExit``, which Triton's stub reports as an
error response (``message: SystemExit: 3``) while the model stays alive, and so does the harness.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import os
import signal
import traceback
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional

from ._errors import HarnessError


class ModelProcessDiedError(HarnessError):
    """The model ended its own process (``os._exit``, ``os.abort``, a signal to itself): in
    Triton its stub process is gone and every later request to the model fails."""


class ProcessEnded(BaseException):
    """Raised in place of a call that would end the process (a BaseException, so that a
    model's ``except Exception`` cannot swallow it, as it could not swallow a real exit)."""

    def __init__(self, call: str, where: str) -> None:
        super().__init__(call)
        self.call = call
        self.where = where


def stub_not_healthy(instance_name: str) -> str:
    """The message Triton 24.10 answers every request with once a model's stub is gone."""
    return f"Stub process '{instance_name}' is not healthy."


def process_died(model: str, instance_name: str, ended: ProcessEnded) -> ModelProcessDiedError:
    """The error of every call to a model after it ended its own process: what it called,
    where, what Triton would answer from then on and what to do instead."""
    return ModelProcessDiedError(
        f"model '{model}' ended its own process: {ended.call} at {ended.where}. In "
        f"Triton its stub process is gone: that request and every later one fail with "
        f"{stub_not_healthy(instance_name)!r} while the server still reports the model READY "
        "(tritonpy serve reloads it). Raise an exception instead (tp.InputError for a bad "
        "request), so that only the request fails."
    )


def _caller() -> str:
    # the frame of the model's code that made the call (skip this module's frames)
    for frame in reversed(traceback.extract_stack()[:-2]):
        if frame.filename != __file__:
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return "?"


def _is_self(pid: int) -> bool:
    return pid in (0, os.getpid())


@contextmanager
def guard_process_exit() -> Iterator[None]:
    """While the block runs, ``os._exit``, ``os.abort``, ``os.kill``/``os.killpg`` of this
    process and ``signal.raise_signal`` raise :class:`ProcessEnded` instead of ending the
    process. Signals to other processes pass through."""
    originals: Dict[str, Any] = {
        "_exit": os._exit,
        "abort": os.abort,
        "kill": os.kill,
        "killpg": os.killpg,
    }
    raise_signal: Optional[Callable[[int], None]] = getattr(signal, "raise_signal", None)

    def fake_exit(status: int) -> None:
        raise ProcessEnded(f"os._exit({status})", _caller())

    def fake_abort() -> None:
        raise ProcessEnded("os.abort()", _caller())

    def fake_kill(pid: int, sig: int) -> None:
        if _is_self(pid) and sig != 0:
            raise ProcessEnded(f"os.kill(os.getpid(), {signal.Signals(sig).name})", _caller())
        originals["kill"](pid, sig)

    def fake_killpg(pgid: int, sig: int) -> None:
        if pgid in (0, os.getpgid(0)) and sig != 0:
            raise ProcessEnded(f"os.killpg({pgid}, {signal.Signals(sig).name})", _caller())
        originals["killpg"](pgid, sig)

    def fake_raise_signal(sig: int) -> None:
        raise ProcessEnded(f"signal.raise_signal({signal.Signals(sig).name})", _caller())

    os._exit = fake_exit  # type: ignore[assignment]
    os.abort = fake_abort  # type: ignore[assignment]
    os.kill = fake_kill
    os.killpg = fake_killpg
    if raise_signal is not None:
        signal.raise_signal = fake_raise_signal
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(os, name, original)
        if raise_signal is not None:
            signal.raise_signal = raise_signal
