"""The processes of this machine, read through psutil: a process group's members, a process
tree's CPU time, the pid behind a listening port, the shared-memory files a process maps.

One module for the server (which ends its process group) and for ``tritonpy perf`` (which
charges the server's CPU), so both see processes the same way. psutil comes with the ``tools``
extra; without it these functions raise a
:class:`~tritonpy.MissingDependencyError` naming the install command.

Example::

    before = tree_cpu_snapshot(server_pid)
    ...                                                  # drive load
    used = cpu_used(before, tree_cpu_snapshot(server_pid))
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

from .._runtime._optional import require


@dataclass(frozen=True)
class ProcessEntry:
    """One process of a group: its pid, whether it is a zombie (ended, not yet reaped) and its
    command line (empty for a zombie: the kernel has freed it)."""

    pid: int
    zombie: bool
    argv: Tuple[str, ...]

    @property
    def cmdline(self) -> str:
        return " ".join(self.argv)


def _require_psutil(feature: str) -> None:
    """psutil, or one line naming ``feature`` and the install command."""
    require("psutil", feature=feature, extra="tools")


def _pgid(pid: int) -> Optional[int]:
    try:
        return os.getpgid(pid)
    except OSError:  # gone meanwhile
        return None


def group_members(pgid: int, *, include_zombies: bool = False) -> List[ProcessEntry]:
    """The processes whose process group is ``pgid`` (zombies only when asked for).

    Example::

        [p.cmdline for p in group_members(server.pid)]
    """
    _require_psutil("tritonpy serve (ending the server's processes)")
    import psutil

    found: List[ProcessEntry] = []
    for process in psutil.process_iter():
        if _pgid(process.pid) != pgid:
            continue
        try:
            with process.oneshot():
                zombie = process.status() == psutil.STATUS_ZOMBIE
                argv: Tuple[str, ...] = () if zombie else tuple(process.cmdline())
        except psutil.ZombieProcess:
            zombie, argv = True, ()
        except psutil.Error:
            continue  # gone meanwhile, or not ours to read
        if include_zombies or not zombie:
            found.append(ProcessEntry(process.pid, zombie, argv))
    return found


def tree_cpu_snapshot(root: int) -> Dict[int, float]:
    """User + system CPU seconds spent so far by ``root`` and each of its descendants, by pid
    (empty when ``root`` is gone)."""
    _require_psutil("tritonpy perf (server CPU accounting)")
    import psutil

    try:
        parent = psutil.Process(root)
        tree = [parent, *parent.children(recursive=True)]
    except psutil.Error:
        return {}
    found: Dict[int, float] = {}
    for process in tree:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue  # ended while we read
        found[process.pid] = times.user + times.system
    return found


def cpu_used(before: Mapping[int, float], after: Mapping[int, float]) -> float:
    """CPU seconds spent between two snapshots by the processes alive at the second one. A
    process that ended in between (the stub of a model being reloaded) is left out rather
    than subtracted: its time vanishes with it."""
    return sum(max(seconds - before.get(pid, 0.0), 0.0) for pid, seconds in after.items())


def pid_listening_on(port: int) -> Optional[int]:
    """The pid of the process that listens on local TCP ``port``, or ``None`` when it cannot be
    seen (another user's process)."""
    _require_psutil("tritonpy perf (finding the local server)")
    import psutil

    try:
        connections = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return None
    for connection in connections:
        address = connection.laddr
        if (
            connection.status == psutil.CONN_LISTEN
            and address
            and address.port == port
            and connection.pid is not None
        ):
            return connection.pid
    return None


def mapped_files(pids: Iterable[int], prefix: str) -> Set[str]:
    """The files starting with ``prefix`` that the processes ``pids`` map into memory."""
    _require_psutil("tritonpy serve (cleaning up shared memory)")
    import psutil

    found: Set[str] = set()
    for pid in pids:
        try:
            maps = psutil.Process(pid).memory_maps(grouped=True)
        except psutil.Error:
            continue
        found.update(m.path for m in maps if m.path.startswith(prefix))
    return found
