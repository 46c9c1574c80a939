"""tritonpy's own per-model metrics, opt-in with ``builtin_metrics = True`` on a Model class.

``tritonpy_infer_rows`` (histogram: rows per infer() call, batched models),
``tritonpy_infer_seconds`` (histogram: seconds per infer() call) and
``tritonpy_requests_refused`` (counter, extra label ``input``), each labelled ``model`` and
``version``. Model calls the hooks of :class:`BuiltinMetrics` only when they are on.

Runtime module: stdlib only. :func:`tritonpy._runtime.metrics.bind_metrics` builds them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ._metric_declarations import Counter, Histogram
from ._metric_series import CounterMetric, HistogramMetric, labelled_series, metric_family

BUILTIN_INFER_ROWS = "tritonpy_infer_rows"
BUILTIN_INFER_SECONDS = "tritonpy_infer_seconds"
BUILTIN_REQUESTS_REFUSED = "tritonpy_requests_refused"
#: bucket boundaries (seconds) of tritonpy_infer_seconds
INFER_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def rows_buckets(max_batch_size: int) -> List[float]:
    """Bucket bounds of tritonpy_infer_rows: powers of two below max_batch_size, then it."""
    bounds: List[float] = []
    power = 1
    while power < max_batch_size:
        bounds.append(float(power))
        power *= 2
    bounds.append(float(max(max_batch_size, 1)))
    return bounds


class RefusedCounter:
    """``tritonpy_requests_refused`` of one model version: one counter series per input
    (``input`` label; ``""`` for refusals not tied to one input), created on first use."""

    def __init__(self, family: Any, declaration: Counter, labels: Dict[str, str]) -> None:
        self._family = family
        self._declaration = declaration
        self._labels = labels
        self.by_input: Dict[str, CounterMetric] = {}

    def series(self, input_name: Optional[str]) -> CounterMetric:
        """The counter for ``input_name``, created on first use."""
        key = input_name or ""
        metric = self.by_input.get(key)
        if metric is None:
            labels = {**self._labels, "input": key}
            metric = CounterMetric(
                BUILTIN_REQUESTS_REFUSED,
                self._declaration,
                self._family,
                self._family.Metric(labels=labels),
                labels,
            )
            self.by_input[key] = metric
        return metric

    @property
    def value(self) -> float:
        """Requests refused over all inputs (by this model version)."""
        return sum(metric.value for metric in self.by_input.values())

    def values(self) -> Dict[str, float]:
        """``{input name: requests refused}``."""
        return {name: metric.value for name, metric in self.by_input.items()}


class BuiltinMetrics:
    """The opt-in per-model metrics tritonpy records itself (``builtin_metrics = True``)."""

    ROWS = Histogram("rows per infer() call (merged requests), per tritonpy model", [1.0])
    SECONDS = Histogram("seconds per infer() call, per tritonpy model", INFER_SECONDS_BUCKETS)
    REFUSED = Counter("requests refused with INVALID_ARG, per tritonpy model and input")

    def __init__(self, model: Any, pb: Any, labels: Dict[str, str]) -> None:
        owner = f"{type(model).__name__}.builtin_metrics"
        max_batch_size = int(getattr(model, "model_config", {}).get("max_batch_size", 0) or 0)
        self.rows: Optional[HistogramMetric] = None
        if max_batch_size > 0:
            rows = Histogram(self.ROWS.help, rows_buckets(max_batch_size))
            family = metric_family(pb, owner, BUILTIN_INFER_ROWS, rows)
            self.rows = HistogramMetric(
                BUILTIN_INFER_ROWS,
                rows,
                family,
                labelled_series(family, rows, dict(labels)),
                labels,
            )
        family = metric_family(pb, owner, BUILTIN_INFER_SECONDS, self.SECONDS)
        self.seconds = HistogramMetric(
            BUILTIN_INFER_SECONDS,
            self.SECONDS,
            family,
            labelled_series(family, self.SECONDS, dict(labels)),
            labels,
        )
        self.refusals = RefusedCounter(
            metric_family(pb, owner, BUILTIN_REQUESTS_REFUSED, self.REFUSED), self.REFUSED, labels
        )
        # one series per declared input from the start, so that rate() sees them at 0
        for name in getattr(model, "inputs", {}):
            self.refusals.series(name)

    def bound(self) -> Dict[str, Any]:
        """The built-in metrics by family name (what bind_metrics adds to model.metrics)."""
        found: Dict[str, Any] = {
            BUILTIN_INFER_SECONDS: self.seconds,
            BUILTIN_REQUESTS_REFUSED: self.refusals,
        }
        if self.rows is not None:
            found[BUILTIN_INFER_ROWS] = self.rows
        return found

    def batch_rows(self, rows: int) -> None:
        """Rows of one call of infer() (merged requests)."""
        if self.rows is not None:
            self.rows.observe(rows)

    def refused(self, input_name: Optional[str]) -> None:
        """One request refused with INVALID_ARG because of ``input_name`` (None: unknown)."""
        self.refusals.series(input_name).increment(1.0)

    def infer_seconds(self, seconds: float) -> None:
        """Seconds one call of infer() took."""
        self.seconds.observe(seconds)
