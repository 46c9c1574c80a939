"""Which failures are the replica's (send the request to another replica) and which are the
request's (every replica would refuse it the same way: give the error to the caller).

Measured on tritonserver 24.10 (the nvidia-pytriton wheel), gRPC and HTTP alike:

- a replica killed (SIGKILL) or not started: gRPC ``UNAVAILABLE`` ("failed to connect to all
  addresses ... Connection refused", "Stream removed (recvmsg:Connection reset by peer)" for
  requests in flight); HTTP: the connection refused (an ``OSError`` under tritonpy's
  :class:`~tritonpy.server.ServerError`);
- a model unloaded, or not (yet) loaded on that replica: ``NOT_FOUND`` "Request for unknown
  model: 'NAME' has no available versions" (unloaded) or "... 'NAME' is not found" (never
  loaded), gRPC and HTTP (404);
- ``load_model`` of a new version (version policy ``latest 1``) under load: no request failed
  (the old version answers until the new one is ready: 9505 answers from version 1, then 2605
  from version 2, none refused, while ``initialize()`` slept 1 s);
- a stub process that died: ``INTERNAL`` "Stub process 'NAME_0_0' is not healthy."
- a gRPC stream opened to a replica as it died: tritonclient's stream thread gets the
  ``UNAVAILABLE`` and the request is refused before it is sent ("The stream is no longer in
  valid state ..."; an ``InferenceServerException`` of tritonclient, not a
  :class:`~tritonpy.TritonRequestError`): seen when a replica was SIGKILLed under a load of
  streams (``tests/integration/test_fleet_s3.py``).

A request the model refused (``INVALID_ARG``, a model's own ``INTERNAL`` error) is never
retried, nor a timeout (``DEADLINE_EXCEEDED``: the replica may still be running it).

Example::

    replica_fault(TritonRequestError("UNAVAILABLE", "failed to connect ..."))  # "unavailable"
    replica_fault(TritonRequestError("INVALID_ARG", "input 'X' ..."))          # None
"""

from __future__ import annotations

from typing import Optional

from .._runtime.errors import TritonRequestError
from .._tooling.errors import ServerError

#: the message of Triton's refusal of a model the replica does not serve (now)
UNKNOWN_MODEL = "Request for unknown model"
#: the message of a request whose model's stub process died on that replica
STUB_UNHEALTHY = "is not healthy"
#: tritonclient's refusal to send a request on a gRPC stream whose connection already failed
STREAM_BROKEN = "The stream is no longer in valid state"


def replica_fault(error: BaseException) -> Optional[str]:
    """Why ``error`` is the replica's failure (a short reason: ``"unavailable"``, ``"model
    not loaded"``, ``"stub not healthy"``, ``"unreachable"``), or None when it is the
    request's own and another replica would answer the same."""
    if isinstance(error, TritonRequestError):
        return _code_fault(error.code, error.message)
    if isinstance(error, ServerError):
        cause = error.__cause__
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return "unreachable"
    if STREAM_BROKEN in str(error):
        return "unavailable"  # the stream failed before the request was sent
    return None


def _code_fault(code: str, message: str) -> Optional[str]:
    if code == "UNAVAILABLE":
        return "unavailable"
    if UNKNOWN_MODEL in message and code in ("NOT_FOUND", "UNAVAILABLE", "UNKNOWN"):
        return "model not loaded"
    if "Stub process" in message and STUB_UNHEALTHY in message:
        return "stub not healthy"
    if code == "UNKNOWN" and ("Socket closed" in message or "Connection reset" in message):
        return "unavailable"  # a stream cut by a dying replica (its error has no code)
    return None
