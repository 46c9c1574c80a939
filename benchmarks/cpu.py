"""Server CPU accounting from ``/proc``: user + system time of a process and all of its
descendants (tritonserver and its ``triton_python_backend_stub`` children; for PyTriton, the
Python process, its tritonserver and stubs), sampled before and after a measurement window.

Example::

    before = tree_cpu_seconds(server.pid)
    ...  # drive load
    used = tree_cpu_seconds(server.pid) - before      # CPU seconds the whole tree spent
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional

__all__ = ["ProcStat", "parse_stat", "process_tree", "read_stat", "tree_cpu_seconds"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` the accounting needs."""

    pid: int
    comm: str
    state: str
    ppid: int
    utime_ticks: int
    stime_ticks: int

    @property
    def cpu_seconds(self) -> float:
        return (self.utime_ticks + self.stime_ticks) / CLOCK_TICKS


def parse_stat(text: str) -> ProcStat:
    """Parse one ``/proc/<pid>/stat`` line. ``comm`` may hold spaces and parentheses, so the
    fields after it are found from the last ``)``; utime and stime are fields 14 and 15.

    Example::

        parse_stat("42 (tritonserver) S 1 42 42 0 -1 4194560 9 0 0 0 150 30 0 0 ...").cpu_seconds
    """
    open_paren, close_paren = text.index("("), text.rindex(")")
    pid = int(text[:open_paren].strip())
    comm = text[open_paren + 1 : close_paren]
    rest = text[close_paren + 2 :].split()
    # rest[0] is field 3 (state); field n is rest[n - 3]
    return ProcStat(
        pid=pid,
        comm=comm,
        state=rest[0],
        ppid=int(rest[1]),
        utime_ticks=int(rest[11]),
        stime_ticks=int(rest[12]),
    )


def read_stat(pid: int, proc: str = "/proc") -> Optional[ProcStat]:
    """``/proc/<pid>/stat`` parsed, or None when the process is gone."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            return parse_stat(fh.read().decode("utf-8", "replace"))
    except (OSError, ValueError, IndexError):
        return None


def _all_stats(proc: str) -> Dict[int, ProcStat]:
    stats: Dict[int, ProcStat] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return stats
    for entry in entries:
        if entry.isdigit():
            stat = read_stat(int(entry), proc)
            if stat is not None:
                stats[stat.pid] = stat
    return stats


def process_tree(root: int, proc: str = "/proc") -> List[ProcStat]:
    """``root`` and every live descendant, root first."""
    stats = _all_stats(proc)
    if root not in stats:
        return []
    children: Dict[int, List[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(stats[pid])
        stack.extend(children.get(pid, ()))
    return found


def tree_cpu_seconds(root: int, proc: str = "/proc") -> float:
    """User + system CPU seconds spent so far by ``root`` and its live descendants."""
    return sum(stat.cpu_seconds for stat in process_tree(root, proc))


def self_cpu_seconds() -> float:
    """CPU seconds of this process (every thread), for the load generator's own cost."""
    times = os.times()
    return times.user + times.system
