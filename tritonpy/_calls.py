"""Calling other models from ``infer`` (Triton's business-logic scripting, BLS).

Being built: ``Model.call`` / ``call_async`` / ``call_stream`` live in :class:`ModelCalls`,
which :class:`tritonpy.Model` inherits.
"""

from __future__ import annotations

__all__ = ["ModelCalls"]


class ModelCalls:
    """Mixin of :class:`tritonpy.Model`: calls to other models of the same server."""
