"""End the processes of one server's process group (the server and its
``triton_python_backend_stub`` children); they are found through psutil
(:mod:`tritonpy._tooling.processes`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Iterable, List, Optional, Set

from .._tooling.processes import ProcessEntry, group_members, mapped_files

_SHM_PREFIX = "/dev/shm/triton_python_backend_shm_region_"


def kill_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to every process of group ``pgid``; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def wait_group_gone(pgid: int, timeout: float) -> List[ProcessEntry]:
    """Wait until no live process is left in group ``pgid``; return the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        alive = group_members(pgid)
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.05)


def terminate_group(pgid: int, *, grace: float = 2.0) -> List[ProcessEntry]:
    """SIGTERM then SIGKILL whatever remains in group ``pgid``; return the survivors."""
    if not group_members(pgid):
        return []
    kill_group(pgid, signal.SIGTERM)
    alive = wait_group_gone(pgid, grace)
    if alive:
        kill_group(pgid, signal.SIGKILL)
        alive = wait_group_gone(pgid, 5.0)
    return alive


def shm_regions(pids: Iterable[int]) -> Set[str]:
    """The Python backend's shared-memory regions (``/dev/shm/...``) mapped by ``pids``."""
    return mapped_files(pids, _SHM_PREFIX)


def remove_shm_regions(paths: Iterable[str]) -> None:
    """Unlink regions left behind by a server that was killed before it could clean up."""
    for path in paths:
        if path.startswith(_SHM_PREFIX):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _wait_unless_stuck(proc: subprocess.Popen[bytes], grace: float) -> bool:
    """Wait up to ``grace`` for a stopping server (``TimeoutExpired`` after); return ``True``
    early, the server still running, when all it has left are dead stubs (zombies) for a
    second. A model whose stub died while requests were queued to it is never released by
    Triton 24.10 (a healed model leaves such a version behind, its zombie stub unreaped): the
    server would wait for it until its exit timeout, though every live model is unloaded."""
    deadline = time.monotonic() + grace
    stuck_since: Optional[float] = None
    while True:
        try:
            proc.wait(0.2)
            return False
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now >= deadline:
            raise subprocess.TimeoutExpired(proc.args, grace)
        others = [p for p in group_members(proc.pid, include_zombies=True) if p.pid != proc.pid]
        if others and all(p.zombie for p in others):
            stuck_since = now if stuck_since is None else stuck_since
            if now - stuck_since >= 1.0:
                return True
        else:
            stuck_since = None


def end_process_group(proc: subprocess.Popen[bytes], grace: float) -> List[ProcessEntry]:
    """End a server started in its own process group: SIGINT (it unloads its models), after
    ``grace`` seconds SIGTERM to the whole group, then SIGKILL; then the stubs left behind.
    Returns the processes that survived (none, normally).

    Example::

        assert end_process_group(proc, grace=10.0) == []
    """
    pgid = proc.pid
    # regions of a server killed while loading are never unlinked: note them to clean up
    regions = shm_regions(p.pid for p in group_members(pgid))
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        try:
            if _wait_unless_stuck(proc, max(grace, 0.0)):
                kill_group(pgid, signal.SIGKILL)  # SIGTERM would wait the same
                proc.wait()
        except subprocess.TimeoutExpired:
            kill_group(pgid, signal.SIGTERM)
            try:
                proc.wait(min(max(grace, 1.0), 3.0))
            except subprocess.TimeoutExpired:
                kill_group(pgid, signal.SIGKILL)
                proc.wait()
    # the stubs notice their parent is gone and exit on their own; end the stragglers
    survivors = wait_group_gone(pgid, 2.0)
    if survivors:
        survivors = terminate_group(pgid, grace=1.0)
    if not survivors:
        remove_shm_regions(regions)
    return survivors
