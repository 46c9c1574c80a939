"""Model metrics declared on the class (``metrics = {"name": tp.Counter("help")}``).

Being built: declarations, binding to ``pb_utils.MetricFamily`` and the opt-in built-in
metrics.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ["BuiltinMetrics", "bind_metrics"]


class BuiltinMetrics:
    """The opt-in per-model metrics tritonpy records itself (``builtin_metrics = True``)."""

    def batch_rows(self, rows: int) -> None:
        """Rows of one call of infer() (merged requests)."""

    def refused(self, input_name: Optional[str]) -> None:
        """One request refused with INVALID_ARG because of ``input_name`` (None: unknown)."""

    def infer_seconds(self, seconds: float) -> None:
        """Seconds one call of infer() took."""


def bind_metrics(model: Any) -> Tuple[Dict[str, Any], Optional[BuiltinMetrics]]:
    """The model's declared metrics bound to pb_utils, and its built-in metrics (None when
    off). Called by Model.initialize before setup()."""
    return {}, None
