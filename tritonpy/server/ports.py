"""Free TCP ports for the server's HTTP, gRPC and metrics endpoints."""

from __future__ import annotations

import contextlib
import socket
from typing import List

__all__ = ["pick_free_ports"]


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
