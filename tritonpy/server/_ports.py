"""Free TCP ports for the server's HTTP, gRPC and metrics endpoints."""

from __future__ import annotations

import contextlib
import socket
from typing import List, Optional, Sequence


def pick_free_ports(count: int, host: str = "127.0.0.1") -> List[int]:
    """Return ``count`` distinct ports that were free on ``host`` a moment ago.

    Each port is found by binding to port 0 and releasing it, all sockets open at once so the
    ports differ. Another process may still take one before the server binds it; callers retry
    on a clash.

    Example::

        http_port, grpc_port, metrics_port = pick_free_ports(3)
    """
    with contextlib.ExitStack() as stack:
        ports: List[int] = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind ``port`` on ``host`` now (``SO_REUSEADDR`` as servers set
    it, so a port left in ``TIME_WAIT`` by a stopped server counts as free).

    Example::

        port_is_free(8000)   # False while a tritonserver listens there
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def choose_ports(
    requested: Sequence[Optional[int]],
    preferred: Optional[Sequence[int]] = None,
    host: str = "127.0.0.1",
) -> List[int]:
    """One port per entry of ``requested``: the requested port when given, else the
    ``preferred`` one when it is free, else a free one.

    Example::

        choose_ports([None, 9001, None], preferred=[8000, 8001, 8002])   # [8000, 9001, 8002]
    """
    chosen: List[Optional[int]] = list(requested)
    for index, port in enumerate(chosen):
        if port is None and preferred is not None and index < len(preferred):
            candidate = preferred[index]
            if candidate not in chosen and port_is_free(candidate, host):
                chosen[index] = candidate
    free = iter(p for p in pick_free_ports(len(chosen) + 3, host) if p not in chosen)
    return [port if port is not None else next(free) for port in chosen]
