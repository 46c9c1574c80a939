"""The address and ports of an embedded tritonserver: the ones the caller asked for, else
preferred defaults (Triton's 8000, 8001, 8002 for ``tritonpy serve``) when free, else free ones;
and the URLs clients use."""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from .._tooling.errors import ServerError
from .._tooling.options import OptionNames
from ._failures import busy_port_message
from ._ports import choose_ports, port_is_free

_PORTS = (("HTTP", "http_port"), ("gRPC", "grpc_port"), ("metrics", "metrics_port"))


class Endpoints:
    """The address part of :class:`~tritonpy.server.TritonServer` (its base class).

    Example::

        endpoints = Endpoints("127.0.0.1", (None, 8001, None), (8000, 8001, 8002), CLI_NAMES)
        endpoints._choose_ports()
        endpoints.grpc_url   # '127.0.0.1:8001'
    """

    def __init__(
        self,
        host: str,
        requested: Tuple[Optional[int], Optional[int], Optional[int]],
        default_ports: Optional[Sequence[int]],
        names: OptionNames,
    ) -> None:
        self.host = host
        self.names = names
        self._requested_ports = requested
        self._default_ports = None if default_ports is None else list(default_ports)
        self._ports: Optional[List[int]] = None

    def _port(self, index: int) -> int:
        if self._ports is not None:
            return self._ports[index]
        requested = self._requested_ports[index]
        if requested is None:
            raise ServerError(
                "the server's ports are not known yet: they are picked by start(). Call "
                "start() (or enter the `with` block) first, or pass explicit ports."
            )
        return requested

    @property
    def _connect_host(self) -> str:
        if self.host in ("", "0.0.0.0"):
            return "127.0.0.1"
        if self.host == "::":
            return "[::1]"
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def http_port(self) -> int:
        return self._port(0)

    @property
    def grpc_port(self) -> int:
        return self._port(1)

    @property
    def metrics_port(self) -> int:
        return self._port(2)

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self._connect_host}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        """``127.0.0.1:<port>`` (the form ``tritonclient.grpc`` expects)."""
        return f"{self._connect_host}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        """``http://127.0.0.1:<port>/metrics``."""
        return f"http://{self._connect_host}:{self.metrics_port}/metrics"

    @property
    def _bind_host(self) -> str:
        return self.host if self.host not in ("", "::") else "127.0.0.1"

    def _choose_ports(self) -> None:
        self._ports = choose_ports(self._requested_ports, self._default_ports, self._bind_host)

    def keep_ports(self) -> None:
        """Ask for the ports of the last start again: a restarted server keeps its addresses."""
        if self._ports is not None:
            self._requested_ports = (self._ports[0], self._ports[1], self._ports[2])

    def _check_requested_ports(self) -> None:
        """A port the caller chose that another process holds fails before anything starts,
        naming the option."""
        for (label, option), port in zip(_PORTS, self._requested_ports):
            if port is not None and not port_is_free(port, self._bind_host):
                raise ServerError(busy_port_message(label, option, port, self.host, self.names))

    def _clash_is_ours(self, message: str) -> bool:
        """Whether the port in a clash message was picked by us (then another pick helps)."""
        picked = {
            port
            for port, requested in zip(self._ports or [], self._requested_ports)
            if requested is None
        }
        match = re.search(r":(\d+)'", message)
        return match is not None and int(match.group(1)) in picked
