"""Server CPU accounting: the user + system seconds of the server process and all its
descendants (tritonserver and its ``triton_python_backend_stub`` children; for PyTriton, the
Python process, its tritonserver and stubs), read through psutil
(:mod:`tritonpy._tooling.processes`), and the pid of a local server found from its port.

Example::

    pid = server_pid("localhost:8001", None)     # the local tritonserver, or None
    window = run_closed_loop(make, concurrency=4, warmup=0.5, duration=2.0,
                             sample=lambda: window_sample(pid))
    server_seconds(window.samples)               # the server tree's CPU seconds in the window
"""

from __future__ import annotations

import os
from typing import Dict, Mapping, Optional

from .._tooling.processes import pid_listening_on, tree_cpu_snapshot

#: key prefix of the server's processes in :func:`window_sample`
_SERVER = "server:"
_CLIENT = "client"


def is_local_host(host: str) -> bool:
    """True for addresses of this machine a server's pid can be found for."""
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]", "")


def server_pid(address: str, given: Optional[int]) -> Optional[int]:
    """``given``, else the pid listening on the port of ``address`` (``host:port``) when the
    host is this machine, else ``None`` (a remote server's CPU cannot be measured)."""
    if given is not None:
        return given
    host, _, port = address.rpartition(":")
    if not is_local_host(host.strip("[]")) or not port.isdigit():
        return None
    return pid_listening_on(int(port))


def self_cpu_seconds() -> float:
    """CPU seconds of this process (every thread), for the load generator's own cost."""
    times = os.times()
    return times.user + times.system


def window_sample(root: int) -> Dict[str, float]:
    """A ``sample`` for :func:`~tritonpy.perf._engine.run_closed_loop`: the CPU seconds of each
    process of the server tree (``server:<pid>``) and of this process (``client``). The engine
    keeps the keys of the window's end, so a process that ended inside the window is left out
    rather than subtracted, as in :func:`cpu_used`."""
    sample = {f"{_SERVER}{pid}": seconds for pid, seconds in tree_cpu_snapshot(root).items()}
    sample[_CLIENT] = self_cpu_seconds()
    return sample


def server_seconds(differences: Mapping[str, float]) -> float:
    """The server tree's CPU seconds over a window sampled by :func:`window_sample`."""
    return sum(max(v, 0.0) for k, v in differences.items() if k.startswith(_SERVER))
