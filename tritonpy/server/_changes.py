"""What changed in a model repository, by polling: each model directory's files with their
modification times and sizes, compared look after look, and a change acted on only once the
directory stayed the same for a moment (an editor's save, a copy in progress).

Example::

    settle = Settle(snapshot(repo), settle=0.2)
    while True:
        change = settle.look(snapshot(repo), time.monotonic())
        if change:
            print(change.added, change.edited, change.removed)
        time.sleep(0.2)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

from ._shadow import repository_models

#: a model directory's files: (relative path, version stamp, size), sorted; the stamp is the
#: modification time in ns for a local directory, the object's ETag in a bucket
Fingerprint = Tuple[Tuple[str, Union[int, str], int], ...]
Snapshot = Dict[str, Fingerprint]

_SKIPPED_DIRS = {"__pycache__"}


def fingerprint(model_dir: Path) -> Optional[Fingerprint]:
    """Every file under ``model_dir`` (symbolic links followed, hidden entries and
    ``__pycache__`` left out) with its mtime and size; ``None`` when the directory is gone.

    Example::

        fingerprint(Path("repo/m"))   # (('1/model.py', 1733223342000000000, 412), ...)
    """
    entries: List[Tuple[str, Union[int, str], int]] = []
    if not model_dir.is_dir():
        return None
    for root, dirs, files in os.walk(model_dir, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d[0] != "." and d not in _SKIPPED_DIRS)
        for name in files:
            if name[0] == ".":
                continue
            path = os.path.join(root, name)
            try:
                stat = os.stat(path)
            except OSError:  # removed meanwhile, or a dangling link
                continue
            entries.append((os.path.relpath(path, model_dir), stat.st_mtime_ns, stat.st_size))
    return tuple(sorted(entries))


def snapshot(repository: Path) -> Snapshot:
    """The fingerprint of every model directory of ``repository``."""
    shot: Snapshot = {}
    for name in repository_models(repository):
        found = fingerprint(repository / name)
        if found is not None:
            shot[name] = found
    return shot


@dataclass(frozen=True)
class Change:
    """Model directories ``added``, ``edited`` (any file in them) and ``removed``, sorted."""

    added: Tuple[str, ...] = ()
    edited: Tuple[str, ...] = ()
    removed: Tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.added or self.edited or self.removed)


def compare(before: Snapshot, after: Snapshot) -> Change:
    """The change from one snapshot to the next.

    >>> compare({"a": (), "b": ()}, {"b": (("x", 1, 1),), "c": ()})
    Change(added=('c',), edited=('b',), removed=('a',))
    """
    return Change(
        added=tuple(sorted(set(after) - set(before))),
        edited=tuple(sorted(n for n in set(before) & set(after) if before[n] != after[n])),
        removed=tuple(sorted(set(before) - set(after))),
    )


class Settle:
    """Debounce: a change is handed out by :meth:`look` once the repository looked the same
    for ``settle`` seconds; until then the look returns an empty :class:`Change`."""

    def __init__(self, known: Snapshot, *, settle: float = 0.2) -> None:
        self.known = known
        self.settle = settle
        self._pending: Optional[Snapshot] = None
        self._since = 0.0

    def look(self, now: Snapshot, at: float) -> Change:
        """Compare ``now`` (taken at time ``at``) with what was last handed out."""
        if now == self.known:
            self._pending = None
            return Change()
        if now != self._pending:
            self._pending, self._since = now, at
            return Change()
        if at - self._since < self.settle:
            return Change()
        change = compare(self.known, now)
        self.known, self._pending = now, None
        return change


def ensemble_steps(config_path: Path) -> Optional[Set[str]]:
    """The models an ensemble's steps name; ``None`` when the config is no ensemble (or cannot
    be read)."""
    from .._tooling.pbtxt import ConfigError, load_config

    try:
        config = load_config(config_path)
    except (ConfigError, OSError):
        return None
    if config.platform != "ensemble":
        return None
    return {step.model_name for step in config.ensemble_scheduling.step}


def ensembles_over(repository: Path, members: Iterable[str]) -> List[str]:
    """The ensembles of ``repository`` that use any of ``members``, directly or through
    another ensemble, in an order that loads an inner ensemble before an outer one."""
    steps: Dict[str, Set[str]] = {}
    for name in repository_models(repository):
        found = ensemble_steps(repository / name / "config.pbtxt")
        if found is not None:
            steps[name] = found
    reached: List[str] = []
    changed = set(members)
    grew = True
    while grew:
        grew = False
        for name in sorted(steps):
            if name not in reached and steps[name] & changed:
                reached.append(name)
                changed.add(name)
                grew = True
    return reached


def is_ensemble(model_dir: Path) -> bool:
    """Whether the model's config.pbtxt says ``platform: "ensemble"``."""
    return ensemble_steps(model_dir / "config.pbtxt") is not None
