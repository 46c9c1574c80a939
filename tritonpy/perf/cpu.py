"""Server CPU accounting from ``/proc`` (Linux): the user + system seconds of the server
process and all its descendants (tritonserver and its ``triton_python_backend_stub``
children), and the pid of the process listening on a local TCP port.

Example::

    pid = pid_listening_on(8001)                # the local tritonserver, or None
    before = tree_cpu_snapshot(pid)
    ...                                         # drive load
    used = cpu_used(before, tree_cpu_snapshot(pid))
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Mapping, Optional, Set, Tuple

__all__ = [
    "cpu_used",
    "is_local_host",
    "listening_inodes",
    "parse_stat",
    "pid_listening_on",
    "tree_cpu_seconds",
    "tree_cpu_snapshot",
]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp


def is_local_host(host: str) -> bool:
    """True for addresses of this machine a server's pid can be found for."""
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]", "")


def parse_stat(text: str) -> Tuple[int, int, float]:
    """``(pid, ppid, cpu seconds)`` from one ``/proc/<pid>/stat`` line. The command name may
    hold spaces and parentheses, so the fields after it are counted from the last ``)``;
    utime and stime are fields 14 and 15.

    Example::

        parse_stat("42 (triton server) S 1 42 42 0 -1 0 9 0 0 0 150 30 0 0")   # (42, 1, 1.8)
    """
    pid = int(text[: text.index("(")].strip())
    rest = text[text.rindex(")") + 2 :].split()
    return pid, int(rest[1]), (int(rest[11]) + int(rest[12])) / CLOCK_TICKS


def _all_stats(proc: str) -> Dict[int, Tuple[int, float]]:
    found: Dict[int, Tuple[int, float]] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"{proc}/{entry}/stat", "rb") as fh:
                pid, ppid, seconds = parse_stat(fh.read().decode("utf-8", "replace"))
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we read
        found[pid] = (ppid, seconds)
    return found


def tree_cpu_snapshot(root: int, proc: str = "/proc") -> Dict[int, float]:
    """CPU seconds spent so far by ``root`` and each live descendant, by pid (empty when
    ``root`` is gone)."""
    stats = _all_stats(proc)
    if root not in stats:
        return {}
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found: Dict[int, float] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        found[pid] = stats[pid][1]
        stack.extend(children.get(pid, ()))
    return found


def cpu_used(before: Mapping[int, float], after: Mapping[int, float]) -> float:
    """CPU seconds spent between two snapshots by the processes alive at the second one. A
    process that ended in between (the stub of a model being reloaded) is left out rather
    than subtracted: its time vanishes from ``/proc`` with it."""
    return sum(max(seconds - before.get(pid, 0.0), 0.0) for pid, seconds in after.items())


def tree_cpu_seconds(root: int, proc: str = "/proc") -> float:
    """CPU seconds spent so far by ``root`` and its live descendants (0.0 when it is gone)."""
    return sum(tree_cpu_snapshot(root, proc).values())


def listening_inodes(tables: Iterable[str], port: int) -> Set[str]:
    """Socket inodes listening on ``port`` in the text of ``/proc/net/tcp``-style tables."""
    inodes: Set[str] = set()
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            _, _, hex_port = fields[1].rpartition(":")
            try:
                if int(hex_port, 16) == port:
                    inodes.add(fields[9])
            except ValueError:
                continue
    return inodes


def pid_listening_on(port: int, proc: str = "/proc") -> Optional[int]:
    """The pid of the process that listens on local TCP ``port``, or None when it cannot be
    seen (another user's process, no ``/proc``)."""
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{proc}/net/{name}", encoding="ascii", errors="replace") as fh:
                tables.append(fh.read())
        except OSError:
            continue
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(tables, port)}
    if not wanted:
        return None
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return None
    for entry in entries:
        fd_dir = f"{proc}/{entry}/fd"
        try:
            links = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in links:
            try:
                if os.readlink(f"{fd_dir}/{fd}") in wanted:
                    return int(entry)
            except OSError:
                continue
    return None
