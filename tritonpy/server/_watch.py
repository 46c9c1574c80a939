"""Reload models while they are edited (``tritonpy serve --reload``).

A :class:`RepositoryWatcher` polls the model directories of a running
:class:`~tritonpy.server.TritonServer` (started with ``reloadable=True`` or ``heal``: the server
runs ``--model-control-mode=explicit``) and, once a changed directory stayed the same for a
moment, tells the server through its repository API: a new directory is loaded, an edited one
(config.pbtxt, model.py, any file in it) loaded again, a removed one unloaded; the ensembles
over a model that changed follow it. Each result is handed to ``on_event`` as a
:class:`WatchEvent`; the watcher prints nothing.

What release 24.10 does, as measured: a ``load`` of a loaded model always reloads it (its
files need not have changed); when the new version fails to load, the load is refused with the
model's exception and **the version already loaded keeps serving** (the repository index still
says READY); a ``load`` of a directory that is gone is refused (``failed to poll from model
repository``) while the old version keeps answering, so a removed model is unloaded instead.
A member's load reloads the READY ensembles over it by itself (and an ensemble's load reloads
its members again), so the watcher loads an ensemble over a changed member only when it is not
READY afterwards (an ensemble that waited for a member that did not exist yet).

A server on an ``s3://`` repository is watched through the bucket's listing (each object's
ETag and size), at most every :data:`REMOTE_INTERVAL_S` seconds: ``tritonpy publish`` into the
served bucket is loaded as an edit is (the server copies the model directory again).

Example::

    server = TritonServer("model_repository", reloadable=True).start()
    watcher = RepositoryWatcher(server, on_event=lambda e: print("\\n".join(e.lines())))
    watcher.start()      # reloaded m (v1) in 1.6 s
    ...
    watcher.stop()
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Literal, Optional, Tuple

from .._tooling.errors import ServerError
from ..client import repository_index
from ._changes import (
    Change,
    Settle,
    Snapshot,
    ensemble_steps,
    ensembles_over,
    is_ensemble,
    snapshot,
)
from ._loadfail import LoadFailure
from ._polling import Poller
from ._shadow import sync_shadow
from ._supervise import ReloadError, _repository_call

if TYPE_CHECKING:
    from ._process import TritonServer

EventKind = Literal["loaded", "reloaded", "unloaded", "failed"]

#: the shortest interval between two listings of a bucket (``serve s3://... --reload``):
#: each look is a ListObjectsV2 request, which object stores bill and throttle
REMOTE_INTERVAL_S = 5.0


def repository_snapshot(server: TritonServer) -> Snapshot:
    """Every model folder of what ``server`` serves with its files' version stamps (mtimes,
    or the bucket's ETags) and sizes: one listing of the bucket for ``s3://``."""
    if server.remote is None:
        return snapshot(server.model_repository)
    return dict(server.remote.snapshot())


@dataclass(frozen=True)
class WatchEvent:
    """One thing the watcher did to ``model``.

    - ``kind``: ``loaded`` (a new directory, or a model that was not READY), ``reloaded``,
      ``unloaded`` or ``failed``;
    - ``seconds``: how long the server took; ``versions``: the versions READY afterwards;
    - ``failure``: why a load failed, short (:class:`~tritonpy.server.LoadFailure`);
      ``versions`` then holds the versions that keep serving (none for a new model);
    - ``after``: for an ensemble reloaded because a member changed, that member;
      ``by_server``: the server reloaded it with the member (no load of its own);
    - ``action``: what failed, ``load`` or ``unload``.
    """

    kind: EventKind
    model: str
    seconds: float = 0.0
    versions: Tuple[str, ...] = ()
    failure: Optional[LoadFailure] = None
    after: str = ""
    action: str = "load"
    by_server: bool = False

    def lines(self) -> List[str]:
        """The event as console lines: ``reloaded m (v1) in 1.6 s``; a failure in the short
        form (exception, the user's frames, the fix) and what still serves."""
        took = f"in {self.seconds:.1f} s"
        served = "/".join(f"v{v}" for v in self.versions)
        label = f"{self.model} ({served})" if served else self.model
        if self.kind == "unloaded":
            return [f"unloaded {self.model}"]
        if self.by_server:
            return [f"{self.kind} {label} with {self.after}"]
        if self.kind != "failed":
            why = f", after {self.after}" if self.after else ""
            return [f"{self.kind} {label} {took}{why}"]
        if self.versions:
            keeps = "s" if len(self.versions) == 1 else ""
            headline = f"reload of {self.model} failed; {served} keep{keeps} serving"
        else:
            headline = f"{self.action} of {self.model} failed"
        if self.failure is None:
            return [headline]
        return self.failure.lines(headline=headline)


class RepositoryWatcher:
    """Polls ``server``'s model repository every ``interval`` seconds and loads, reloads or
    unloads the models whose directories changed once they stayed the same for ``settle``
    seconds, handing each result to ``on_event`` (called on the watcher's thread).

    ``look()`` does one poll on the caller's thread (what tests drive); ``start()`` polls on
    a daemon thread until ``stop()``. A load the server refuses keeps the previous version
    serving (release 24.10); the event says why, in the short form of a failed load.

    Raises :class:`ServerError` when ``server`` is not running in explicit model-control mode
    (not started, or started with ``heal=False`` and ``reloadable=False``).
    """

    def __init__(
        self,
        server: TritonServer,
        *,
        on_event: Callable[[WatchEvent], None],
        interval: float = 0.2,
        settle: float = 0.2,
        timeout: Optional[float] = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if "--model-control-mode=explicit" not in server.command:
            state = "is not started" if not server.command else "polls its repository itself"
            raise ServerError(
                f"RepositoryWatcher needs a server in explicit model-control mode, but "
                f"{server!r} {state}. Start it first, with reloadable=True (or heal=True, the "
                "default), and without another --model-control-mode in extra_args."
            )
        self.server = server
        self.on_event = on_event
        self.interval = interval
        self.timeout = server.startup_timeout if timeout is None else timeout
        self.clock = clock
        self.events: List[WatchEvent] = []
        if server.remote is not None:  # each look lists the bucket: a request, and a cost
            self.interval = max(interval, REMOTE_INTERVAL_S)
        self._settle = Settle(repository_snapshot(server), settle=settle)
        self._poller = Poller(self._tick, interval=self.interval, name="tritonpy-watch")

    def start(self) -> RepositoryWatcher:
        self._poller.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """End the polling; a load in progress is not waited for beyond ``timeout``."""
        self._poller.stop(timeout)

    def _tick(self) -> bool:
        if self.server.running:  # while a restart is under way, changes wait
            self.look()
        return True

    def look(self) -> List[WatchEvent]:
        """One poll: act on a change that has settled; return the events of this poll."""
        began = self.clock()
        now = repository_snapshot(self.server)
        at = self.clock()
        # a repository of many files (an unpacked environment) is looked at less often: the
        # look itself never takes more than about a fifth of a core
        self._poller.interval = max(self.interval, 4 * (at - began))
        change = self._settle.look(now, at)
        return self.apply(change) if change else []

    def apply(self, change: Change) -> List[WatchEvent]:
        """Unload the removed models, load the added and edited ones (ensembles last, and the
        ensembles over each model that loaded), report each step."""
        server = self.server
        repository = server.model_repository
        if server.remote is not None:  # the configurations the ensembles are followed by
            server.remote.refresh_mirror([*change.added, *change.edited])
        elif server.served_repository != repository:
            sync_shadow(server.served_repository, repository, server.provided_stubs)
        if change.added or change.removed:
            server._models_changed()
        events = [self._unload(name) for name in change.removed]
        changed = [*change.added, *change.edited]
        plain = [n for n in changed if not is_ensemble(repository / n)]
        done: List[str] = []
        for name in plain:
            event = self._load(name)
            events.append(event)
            if event.kind != "failed":
                done.append(name)
        edited_ensembles = [n for n in changed if n not in plain]
        for name in edited_ensembles:
            events.append(self._load(name))
        events += self._follow(repository, done, skip=edited_ensembles)
        return events

    def _follow(self, repository: Path, done: List[str], skip: List[str]) -> List[WatchEvent]:
        """The ensembles over the models in ``done``: reported when the server reloaded them
        with their member, loaded when they are not READY."""
        events: List[WatchEvent] = []
        for name in ensembles_over(repository, done):
            if name in skip:
                continue
            steps = ensemble_steps(repository / name / "config.pbtxt") or set()
            after = next((m for m in done if m in steps), "")
            versions = self._ready_versions().get(name, ())
            if versions:
                event = WatchEvent("reloaded", name, 0.0, versions, after=after, by_server=True)
                events.append(self._report(event))
            else:
                events.append(self._load(name, after=after))
            if events[-1].kind != "failed":
                done.append(name)
        return events

    def _report(self, event: WatchEvent) -> WatchEvent:
        self.events.append(event)
        self.on_event(event)
        return event

    def _ready_versions(self) -> Dict[str, Tuple[str, ...]]:
        try:
            statuses = repository_index(self.server.http_url, timeout=5.0)
        except (OSError, ValueError):
            return {}
        ready: Dict[str, Tuple[str, ...]] = {}
        for status in statuses:
            if status.state == "READY":
                ready[status.name] = (*ready.get(status.name, ()), status.version)
        return ready

    def _load(self, name: str, *, after: str = "") -> WatchEvent:
        """Load ``name``: ``loaded`` when it was not READY before (new, or failed), else
        ``reloaded``."""
        was_ready = name in self._ready_versions()
        started = self.clock()
        try:
            _repository_call(self.server.http_url, name, "load", self.timeout)
        except ReloadError as exc:
            failure = self.server.describe_failure(name, str(exc))
            kept = self._ready_versions().get(name, ())
            return self._report(WatchEvent("failed", name, versions=kept, failure=failure))
        seconds = self.clock() - started
        versions = self._ready_versions().get(name, ())
        kind: EventKind = "reloaded" if was_ready else "loaded"
        return self._report(WatchEvent(kind, name, seconds, versions, after=after))

    def _unload(self, name: str) -> WatchEvent:
        started = self.clock()
        try:
            _repository_call(self.server.http_url, name, "unload", self.timeout)
        except ReloadError as exc:
            failure = LoadFailure(name, str(exc).strip().splitlines()[0], text=str(exc))
            return self._report(WatchEvent("failed", name, failure=failure, action="unload"))
        return self._report(WatchEvent("unloaded", name, self.clock() - started))
