"""``tritonpy probe``: a deep health check for a running Triton, for liveness probes.

A model whose Python stub process died stays READY in Triton (``/v2/health/ready``, model
readiness) while every request fails with ``Stub process 'NAME_0' is not healthy``. The probe
sends each model one real inference built from its configuration and reports the models that
did not answer: the command exits 1 then, so an orchestrator restarts the server. Every kind of
model: a decoupled one gets a stream (healthy at its first response or final flag), a sequence
one a one-request sequence (START and END, a fresh correlation id); an ensemble is probed as a
whole and a BLS caller through its callees, a failure naming the member or callee whose stub
died.

Example::

    from tritonpy.probe import probe

    report = probe("localhost:8000", timeout=5)
    print(report.render_text(), end="")     # ok    add_sub  2.1 ms  answered ...
    raise SystemExit(report.exit_code)
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from ._report import ProbeReport, ProbeResult
from ._requests import ProbeRequestError
from ._runner import ProbeOptions, ProbeUsageError, probe

__all__ = [
    "ProbeOptions",
    "ProbeReport",
    "ProbeRequestError",
    "ProbeResult",
    "ProbeUsageError",
    "probe",
]

_publish(__name__, globals())
