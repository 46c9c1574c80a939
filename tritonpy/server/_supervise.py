"""Self-healing: reload a model whose ``triton_python_backend_stub`` died.

Since release 24.06 Triton's Python backend no longer restarts a dead stub: the model stays
READY (``is_model_ready``, ``/v2/health/ready``) while every request fails with
``Stub process 'dbl_0' is not healthy.``, each one after a second's health-check wait. The
:class:`StubHealer` watches the server's stubs through ``/proc`` and, when one dies (a
SIGKILL from the OOM killer, a segfault in a native library), reloads its model through the
repository API (the server runs with ``--model-control-mode=explicit``): first an *unload*, so
new requests fail at once (``404 Request for unknown model: 'dbl' has no available versions``)
instead of queueing behind the dead instance, then a *load*. Models that kept running
(ensembles over the reloaded one) are loaded again if the reload left them unavailable.
A model that dies again and again is reloaded with exponential backoff (:class:`Backoff`).

Example::

    healer = StubHealer(server.pid, server.http_url, report=print).start()
    ...              # [dbl] stub dbl_0 died (SIGKILL); reloading
                     # [dbl] reloaded in 1.4 s
    healer.stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Literal, Optional, Sequence, Set, Union

from ..client import repository_index
from ._backoff import Backoff
from ._polling import Poller, join
from ._stubwatch import ChildWatch, StubProcess, describe_exit, stub_of

Report = Callable[[str], None]


@dataclass(frozen=True)
class HealEvent:
    """One thing the healer did: ``kind`` is ``died``, ``reloaded`` or ``reload-failed``.

    ``cause`` is the stub's end (``SIGKILL``), ``seconds`` the reload's duration, ``delay``
    the backoff before the reload, ``at`` the monotonic time it happened.
    """

    kind: Literal["died", "reloaded", "reload-failed"]
    model: str
    instance: str = ""
    cause: str = ""
    seconds: float = 0.0
    delay: float = 0.0
    at: float = 0.0


class ReloadError(Exception):
    """The repository API refused to unload or load a model (message: Triton's reason)."""


def death_line(model: str, instance: str, cause: str, delay: float, deaths: int) -> str:
    """``[dbl] stub dbl_0 died (SIGKILL); reloading`` (with the backoff when there is one)."""
    if delay <= 0:
        return f"[{model}] stub {instance} died ({cause}); reloading"
    return (
        f"[{model}] stub {instance} died ({cause}), {deaths} deaths in the last minute; "
        f"reloading in {delay:g} s"
    )


def reloaded_line(model: str, seconds: float) -> str:
    """``[dbl] reloaded in 1.2 s``."""
    return f"[{model}] reloaded in {seconds:.1f} s"


def reload_failed_line(model: str, reason: str, delay: float) -> str:
    """``[dbl] reload failed: <Triton's reason>; retrying in 2 s``."""
    first = reason.strip().splitlines()[0] if reason.strip() else "no reason given"
    return f"[{model}] reload failed: {first}; retrying in {delay:g} s"


def _repository_call(http_url: str, model: str, action: str, timeout: float) -> None:
    quoted = urllib.parse.quote(model, safe="")
    request = urllib.request.Request(
        f"{http_url}/v2/repository/models/{quoted}/{action}",
        data=b"{}",
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")
        with contextlib.suppress(ValueError, AttributeError):
            body = str(json.loads(body).get("error", body))
        raise ReloadError(body or f"HTTP {exc.code}") from None
    except OSError as exc:
        raise ReloadError(f"the server did not answer the {action} of {model!r}: {exc}") from None


def reload_model(http_url: str, model: str, *, timeout: float = 120.0) -> List[str]:
    """Unload then load ``model`` (``POST /v2/repository/models/<model>/unload`` and
    ``/load``); then load again the models that were READY before and are not any more (an
    ensemble over ``model``). Returns the names of those other models.

    Raises :class:`ReloadError` with Triton's reason when a step is refused.

    Example::

        reload_model("http://127.0.0.1:8000", "dbl")   # []
    """
    before: Set[str] = set()
    with contextlib.suppress(OSError, ValueError):
        before = {m.name for m in repository_index(http_url, timeout=5.0) if m.state == "READY"}
    _repository_call(http_url, model, "unload", timeout)
    _repository_call(http_url, model, "load", timeout)
    try:
        after = {m.name for m in repository_index(http_url, timeout=5.0) if m.state == "READY"}
    except (OSError, ValueError):
        return []
    others = sorted(before - after - {model})
    for name in others:
        _repository_call(http_url, name, "load", timeout)
    return others


class StubHealer:
    """A thread that notices a dead stub of the server ``server_pid`` within ``interval``
    seconds (two looks, so a stub Triton itself is ending is not mistaken for a death) and
    reloads its model, reporting each step as a console line to ``report``.

    ``reload`` (default :func:`reload_model` on ``http_url``) is replaceable for tests;
    ``policy`` makes the backoff of each model (default :class:`Backoff`: 3 quick reloads a
    minute, then 1, 2, 4 ... 60 s). ``events`` records what happened. ``models`` gives the
    server's model names (needed for a repository in object storage, see
    :func:`~tritonpy.server._stubwatch.stub_of`).
    """

    def __init__(
        self,
        server_pid: int,
        http_url: str,
        *,
        report: Report,
        interval: float = 0.1,
        reload_timeout: float = 120.0,
        reload: Optional[Callable[[str], object]] = None,
        policy: Callable[[], Backoff] = Backoff,
        proc_root: Union[str, Path] = "/proc",
        clock: Callable[[], float] = time.monotonic,
        models: Optional[Callable[[], Sequence[str]]] = None,
    ) -> None:
        self.server_pid = server_pid
        # the server's model names, for stubs run out of a copy from object storage
        self._models = models or (lambda: ())
        self.http_url = http_url
        self.report = report
        self.proc_root = proc_root
        # a look lists /proc and reads the new pids and the server's children only: reading
        # every process 10 times a second cost a busy host a good part of a core
        self._children = ChildWatch(server_pid, proc_root)
        self.clock = clock
        self._reload = reload or (lambda m: reload_model(http_url, m, timeout=reload_timeout))
        self._policy = policy
        self.events: List[HealEvent] = []
        self._known: Dict[int, StubProcess] = {}
        self._suspects: Set[int] = set()
        self._retired: Set[int] = set()
        self._backoff: Dict[str, Backoff] = {}
        self._workers: Dict[str, threading.Thread] = {}  # the reloading worker of a model
        self._again: Set[str] = set()
        self._lock = threading.Lock()
        self._poller = Poller(self._tick, interval=interval, name="tritonpy-heal")
        self._stopping = self._poller.stopping

    def start(self) -> StubHealer:
        self.scan()  # learn the stubs of the loaded models before any can die unseen
        self._poller.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """End the watch; a reload in progress is not waited for beyond ``timeout``."""
        self._poller.stop(timeout)
        for worker in list(self._workers.values()):
            join(worker, timeout)

    @property
    def stubs(self) -> List[StubProcess]:
        """The live stubs known now."""
        with self._lock:
            return sorted(self._known.values(), key=lambda s: s.pid)

    def _tick(self) -> bool:
        if not os.path.exists(os.path.join(str(self.proc_root), str(self.server_pid))):
            return False  # the server is gone: its owner reports that
        self.scan()
        return True

    def scan(self) -> List[StubProcess]:
        """One look at the server's children; returns the stubs found dead (and handled)."""
        children = {c.pid: c for c in self._children.children()}
        died: List[StubProcess] = []
        with self._lock:
            for live in children.values():
                if not live.dead and live.pid not in self._known:
                    stub = stub_of(live.pid, live.argv, self._models())
                    if stub is not None:
                        self._known[live.pid] = stub
            for pid, known in list(self._known.items()):
                child = children.get(pid)
                if child is not None and not child.dead:
                    continue
                # Triton reaps the stubs it ends itself at once: only a zombie that stays is
                # a death; one that is gone was ended (and reaped) by Triton
                if child is None or pid in self._retired:
                    del self._known[pid]
                    self._suspects.discard(pid)
                    self._retired.discard(pid)
                    continue
                if pid not in self._suspects:
                    self._suspects.add(pid)
                    continue
                del self._known[pid]
                self._suspects.discard(pid)
                died.append(known)
                self._died(known, describe_exit(child.exit_status))
        return died

    def _died(self, stub: StubProcess, cause: str) -> None:
        """Record a death and start (or re-arm) the model's reload; holds ``_lock``."""
        now = self.clock()
        backoff = self._backoff.setdefault(stub.model, self._policy())
        delay = backoff.record(now) or 0.0
        self.events.append(HealEvent("died", stub.model, stub.instance, cause, 0.0, delay, now))
        self.report(death_line(stub.model, stub.instance, cause, delay, backoff.recent(now)))
        # a model's worker leaves _workers under the lock when it decides to end (not when
        # its thread ends: a death in between would be left unhealed)
        if stub.model in self._workers:
            self._again.add(stub.model)
            return
        worker = threading.Thread(
            target=self._heal, args=(stub.model, delay), name=f"tritonpy-heal-{stub.model}"
        )
        worker.daemon = True
        self._workers[stub.model] = worker
        worker.start()

    def _heal(self, model: str, delay: float) -> None:
        try:
            self._reload_until_healed(model, delay)
        finally:
            with self._lock:
                if self._workers.get(model) is threading.current_thread():
                    del self._workers[model]

    def _reload_until_healed(self, model: str, delay: float) -> None:
        while not self._stopping.wait(delay):
            with self._lock:
                # the model's other stubs end with the unload: not deaths
                self._retired.update(p for p, s in self._known.items() if s.model == model)
                self._again.discard(model)
            started = self.clock()
            try:
                self._reload(model)
            except Exception as exc:  # any failure is reported and retried
                with self._lock:
                    delay = self._backoff[model].record(self.clock()) or 0.0
                    delay = max(delay, 1.0)  # a refused load is never retried in a tight loop
                self.events.append(
                    HealEvent("reload-failed", model, cause=str(exc), delay=delay, at=started)
                )
                self.report(reload_failed_line(model, str(exc), delay))
                continue
            seconds = self.clock() - started
            self.events.append(HealEvent("reloaded", model, seconds=seconds, at=self.clock()))
            self.report(reloaded_line(model, seconds))
            with self._lock:
                if model not in self._again:
                    del self._workers[model]  # from now on a death starts a new worker
                    return
            delay = 0.0
