"""What a probe found: one :class:`ProbeResult` per model, the judging rule, and the text and
JSON forms the ``tritonpy probe`` command prints.

The rule (:func:`judge`): a model *answered* when its response is a success or a refusal of
the input (``INVALID_ARG``: the model ran and said no, e.g. a ``tp.Image`` input given bytes
that are no image); it did *not* answer on any other error (``INTERNAL`` such as ``Stub
process 'NAME_0' is not healthy``, ``UNAVAILABLE``), a timeout or no connection.

Example::

    report = probe("localhost:8000")
    print(report.render_text(), end="")
    sys.exit(report.exit_code)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .._runtime.errors import TritonRequestError

#: error codes that still prove the model ran: it refused the probe's input
ANSWERED_CODES = frozenset({"INVALID_ARG"})


def judge(error: Optional[BaseException]) -> Tuple[bool, str, str]:
    """``(answered, status, message)`` for the outcome of one probe request: ``error`` is None
    on success, else what the request raised.

    >>> judge(None)
    (True, 'OK', '')
    >>> judge(TritonRequestError("INTERNAL", "Stub process 'm_0_0' is not healthy."))[:2]
    (False, 'INTERNAL')
    """
    if error is None:
        return True, "OK", ""
    if isinstance(error, TritonRequestError):
        return error.code in ANSWERED_CODES, error.code, error.message
    cause = error.__cause__
    if isinstance(error, TimeoutError) or isinstance(cause, TimeoutError):
        return False, "TIMEOUT", str(error)
    return False, "UNREACHABLE" if isinstance(cause, OSError) else "ERROR", str(error)


@dataclass(frozen=True)
class ProbeResult:
    """One probed model: ``ready`` as the repository index says, ``answered`` as
    :func:`judge` says, the request's ``latency`` in seconds (None when none was sent), its
    ``status`` (``OK``, a Triton error code, ``TIMEOUT``, ``UNREACHABLE``, ``NOT_READY``,
    ``NOT_FOUND``, ``REQUEST``) and the server's ``message``."""

    name: str
    ready: bool
    answered: bool
    latency: Optional[float]
    status: str
    message: str = ""

    def render(self) -> str:
        """One line: ``ok`` or ``FAIL``, the name, the latency, the status and message."""
        latency = "-" if self.latency is None else f"{self.latency * 1000:.1f} ms"
        if self.answered:
            how = "answered" if self.status == "OK" else "answered: refused the probe input"
            detail = f" ({self.status}: {self.message})" if self.message else ""
            return f"ok    {self.name}  {latency}  {how}{detail}"
        ready = "listed READY" if self.ready else "not READY"
        return (
            f"FAIL  {self.name}  {latency}  did not answer ({ready}): "
            f"[{self.status}] {self.message}"
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "ready": self.ready,
            "answered": self.answered,
            "latency_ms": None if self.latency is None else round(self.latency * 1000, 3),
            "status": self.status,
            "message": self.message,
        }


@dataclass
class ProbeReport:
    """The results of one probe of the server at ``url`` (``protocol`` ``http``/``grpc``);
    ``error`` says why no model could be probed (the server did not answer)."""

    url: str
    protocol: str
    results: List[ProbeResult] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        """Every probed model answered (and the server did)."""
        return not self.error and all(r.answered for r in self.results)

    @property
    def failed(self) -> List[ProbeResult]:
        return [r for r in self.results if not r.answered]

    @property
    def exit_code(self) -> int:
        """0 when :attr:`ok`, else 1."""
        return 0 if self.ok else 1

    def render_text(self) -> str:
        """One line per model, then a summary line."""
        if self.error:
            return f"FAIL  server {self.url} ({self.protocol}): {self.error}\n"
        lines = [r.render() for r in self.results]
        if not self.results:
            lines.append(f"no READY model to probe at {self.url}")
        else:
            answered = len(self.results) - len(self.failed)
            lines.append(f"{answered} of {len(self.results)} model(s) answered at {self.url}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        return json.dumps(
            {
                "url": self.url,
                "protocol": self.protocol,
                "ok": self.ok,
                "error": self.error,
                "models": [r.to_json() for r in self.results],
            },
            indent=2,
        )
