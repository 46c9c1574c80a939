"""The harness's own errors (re-exported by :mod:`tritonpy.testing.harness`)."""

from __future__ import annotations

from .._runtime.errors import TritonPyError


class HarnessError(TritonPyError):
    """The harness itself could not do what was asked (missing tritonclient, bad arguments)."""


class ModelLoadError(HarnessError):
    """The model would fail to load in Triton: bad config, missing model.py, invalid
    auto-completed configuration."""


class ModelBugError(HarnessError):
    """The model broke the Python-backend contract: wrong number of responses, a non-response
    object, no FINAL flag in decoupled mode..."""
