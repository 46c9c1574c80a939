"""Where a client's requests go and how the server's refusals come back: the wire protocol
(tritonclient's gRPC or HTTP), the endpoint a URL names, and a tritonclient exception as a
:class:`~tritonpy.TritonRequestError` with Triton's own error code.

Example::

    parse_endpoint("http://127.0.0.1:8000")   # Endpoint("http", "127.0.0.1:8000")
    parse_endpoint("localhost:8001")          # Endpoint("grpc", "localhost:8001")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Literal, Optional, Tuple

from .._runtime.errors import TritonRequestError
from .._tooling.errors import ServerError

_GRPC_CODES = {
    "INVALID_ARGUMENT": "INVALID_ARG",
    "UNIMPLEMENTED": "UNSUPPORTED",
}
_HTTP_CODES = {
    "400": "INVALID_ARG",
    "404": "NOT_FOUND",
    "409": "ALREADY_EXISTS",
    "499": "CANCELLED",
    "500": "INTERNAL",
    "501": "UNSUPPORTED",
    "503": "UNAVAILABLE",
}


#: how requests travel: tritonclient's gRPC or HTTP client
WireProtocol = Literal["grpc", "http"]


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests: ``protocol`` ``"grpc"`` or ``"http"``, ``address``
    ``host:port``, ``ssl`` for ``https://``/``grpcs://``."""

    protocol: WireProtocol
    address: str
    ssl: bool = False


def parse_endpoint(url: str, protocol: Optional[WireProtocol] = None) -> Endpoint:
    """Read ``localhost:8001``, ``http://host:8000``, ``grpc://host:8001``.

    Without a scheme the protocol is ``protocol`` (default gRPC); a scheme decides it, and an
    explicit ``protocol`` that disagrees is an error.

    Example::

        parse_endpoint("http://127.0.0.1:8000")   # Endpoint("http", "127.0.0.1:8000")
    """
    schemes: Dict[str, Tuple[WireProtocol, bool]] = {
        "http": ("http", False),
        "https": ("http", True),
        "grpc": ("grpc", False),
        "grpcs": ("grpc", True),
    }
    scheme, sep, rest = url.partition("://")
    if sep:
        if scheme.lower() not in schemes:
            raise ServerError(
                f"server URL {url!r}: unknown scheme {scheme!r}; expected http://, https://, "
                "grpc:// or host:port."
            )
        implied, ssl = schemes[scheme.lower()]
        if protocol is not None and protocol != implied:
            raise ServerError(
                f"server URL {url!r} says {implied} but --protocol is {protocol}; drop one."
            )
        address = rest.rstrip("/")
    else:
        implied, ssl, address = protocol or "grpc", False, url.rstrip("/")
    if implied not in ("grpc", "http"):  # a string from the command line
        raise ServerError(f"protocol {implied!r}: expected 'grpc' or 'http'.")
    if not address:
        raise ServerError(f"server URL {url!r} has no host:port.")
    return Endpoint(implied, address, ssl)


def request_error(exc: Exception) -> TritonRequestError:
    """A tritonclient exception (gRPC or HTTP) as a :class:`~tritonpy.TritonRequestError`
    carrying Triton's code (``INVALID_ARG``, ``UNSUPPORTED``, ...) and message."""
    status_fn = getattr(exc, "status", None)
    message_fn = getattr(exc, "message", None)
    status = str(status_fn() if callable(status_fn) else "") or "UNKNOWN"
    message = str(message_fn() if callable(message_fn) else exc)
    if status.startswith("StatusCode."):
        code = status[len("StatusCode.") :]
        code = _GRPC_CODES.get(code, code)
    else:
        code = _HTTP_CODES.get(status, f"HTTP {status}" if status.isdigit() else status)
    return TritonRequestError(code, message)
