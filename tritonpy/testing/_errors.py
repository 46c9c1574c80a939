"""The harness's own errors (re-exported by :mod:`tritonpy.testing._harness`).

A model that would fail to load raises :class:`tritonpy.server.ModelLoadError`, the one class
for load failures (re-exported here), also under the harness."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

from .._runtime.errors import TritonPyError


class HarnessError(TritonPyError):
    """The harness itself could not do what was asked (missing tritonclient, bad arguments)."""


class ModelBugError(HarnessError):
    """The model broke the Python-backend contract: wrong number of responses, a non-response
    object, no FINAL flag in decoupled mode..."""
