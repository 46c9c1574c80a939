"""What a probe found: one :class:`ProbeResult` per model, the judging rule, and the text and
JSON forms the ``tritonpy probe`` command prints.

The rule (:func:`judge`): a model *answered* when its response is a success or a refusal of
the input by the model itself (``INVALID_ARG``: the model ran and said no, e.g. a ``tp.Image``
input given bytes that are no image); it did *not* answer on any other error (``INTERNAL``
such as ``Stub process 'NAME_0' is not healthy``, ``UNAVAILABLE``), a timeout or no
connection. A refusal by the server before any model ran (its own checks of the request, the
sequence batcher's: see :mod:`tritonpy.probe._diagnosis`) proves nothing about the model: it
does not count as an answer either. Inside a stream Triton 24.10 sends an error's message
without its code (``tritonpy.client.UNKNOWN_CODE``): such an error counts as
the model's answer unless it names a dead stub, is the server's refusal or the Python
backend's report of an exception in ``execute()``.

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
from ..client import UNKNOWN_CODE
from ._diagnosis import dead_stub, server_refused

#: error codes that still prove the model ran: it refused the probe's input
ANSWERED_CODES = frozenset({"INVALID_ARG"})
#: ``probe --repository``: a model of the repository the server has not loaded
NOT_LOADED = "NOT_LOADED"
#: ``probe --repository``: a model served in another version than the repository's newest
OLD_VERSION = "OLD_VERSION"
#: the Python backend's message for an exception raised by ``execute()``
_BACKEND_FAILURE = "Failed to process the request(s) for model"


def _answered(error: TritonRequestError) -> bool:
    if server_refused(error.message):
        return False
    if error.code == UNKNOWN_CODE:  # a stream's error: its message is all there is
        failed = dead_stub(error.message, ()) is not None or _BACKEND_FAILURE in error.message
        return not failed
    return error.code in ANSWERED_CODES


def judge(error: Optional[BaseException]) -> Tuple[bool, str, str]:
    """``(answered, status, message)`` for the outcome of one probe request: ``error`` is None
    on success, else what the request raised.

    >>> judge(None)
    (True, 'OK', '')
    >>> judge(TritonRequestError("INTERNAL", "Stub process 'm_0_0' is not healthy."))[:2]
    (False, 'INTERNAL')
    >>> judge(TritonRequestError("INVALID_ARG", "inference request to model 'q' must specify "
    ...       "a non-zero or non-empty correlation ID"))[:2]
    (False, 'INVALID_ARG')
    """
    if error is None:
        return True, "OK", ""
    if isinstance(error, TritonRequestError):
        return _answered(error), error.code, error.message
    cause = error.__cause__
    if isinstance(error, TimeoutError) or isinstance(cause, TimeoutError):
        return False, "TIMEOUT", str(error)
    return False, "UNREACHABLE" if isinstance(cause, OSError) else "ERROR", str(error)


def _one_line(message: str) -> str:
    # a Python model's error carries its traceback ("\n\nAt:\n  model.py(19): execute")
    return " ".join(message.split())


@dataclass(frozen=True)
class ProbeResult:
    """One probed model: ``ready`` as the repository index says, ``answered`` as
    :func:`judge` says, the request's ``latency`` in seconds (None when none was sent), its
    ``status`` (``OK``, a Triton error code, ``UNKNOWN`` for a stream's error, ``TIMEOUT``,
    ``UNREACHABLE``, ``NOT_READY``, ``NOT_FOUND``, ``REQUEST``; with a repository
    ``NOT_LOADED`` and ``OLD_VERSION``) and the server's ``message``;
    ``request`` how the probe was sent (``infer``, ``stream``, ``sequence ID``...),
    ``refused_by_server`` when the server refused it before any model ran, ``dead_stub`` the
    model whose stub process the error says is dead and ``dead_stub_role`` what it is to the
    probed model (``""`` itself, ``"member"`` of the ensemble, ``"callee"`` of a BLS call);
    ``version`` the model version probed when the model serves several (each has its own
    stub process, so each gets a request), else ``""``."""

    name: str
    ready: bool
    answered: bool
    latency: Optional[float]
    status: str
    message: str = ""
    request: str = ""
    refused_by_server: bool = False
    dead_stub: str = ""
    dead_stub_role: str = ""
    version: str = ""

    @property
    def label(self) -> str:
        """The name, with the version when the model serves several."""
        return f"{self.name} (version {self.version})" if self.version else self.name

    def render(self) -> str:
        """One line: ``ok`` or ``FAIL``, the name, the latency, the status and message."""
        latency = "-" if self.latency is None else f"{self.latency * 1000:.1f} ms"
        if self.answered:
            how = "answered" if self.status == "OK" else "answered: refused the probe input"
            sent = f" ({self.request})" if self.request not in ("", "infer") else ""
            detail = f" ({self.status}: {_one_line(self.message)})" if self.message else ""
            return f"ok    {self.label}  {latency}  {how}{sent}{detail}"
        if self.status in (NOT_LOADED, OLD_VERSION):  # no request sent: the message says all
            return f"FAIL  {self.label}  {latency}  {self.message}"
        ready = "listed READY" if self.ready else "not READY"
        error = f"[{self.status}] {_one_line(self.message)}"
        if self.refused_by_server:
            return (
                f"FAIL  {self.label}  {latency}  not probed ({ready}): the server refused the "
                f"probe's request before the model ran: {error} (give the model a "
                "model_warmup sample the server accepts: the probe sends it)"
            )
        whose = ""
        if self.dead_stub_role:
            role = "ensemble member" if self.dead_stub_role == "member" else "BLS callee"
            whose = f"the stub process of its {role} {self.dead_stub!r} is dead: "
        return f"FAIL  {self.label}  {latency}  did not answer ({ready}): {whose}{error}"

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "ready": self.ready,
            "answered": self.answered,
            "latency_ms": None if self.latency is None else round(self.latency * 1000, 3),
            "status": self.status,
            "message": self.message,
            "request": self.request,
            "refused_by_server": self.refused_by_server,
            "dead_stub": self.dead_stub or None,
            "dead_stub_role": self.dead_stub_role or None,
            "version": self.version or None,
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
