"""Declared metrics bound to their ``pb_utils.MetricFamily`` and labelled series: what
``self.metrics[name]`` holds in a model (:class:`CounterMetric`, :class:`GaugeMetric`,
:class:`HistogramMetric`), and the creation of families and series, with errors naming the
Triton release a kind needs.

Runtime module: stdlib only (it runs inside Triton's stub).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List

from ._metric_declarations import Histogram, MetricDeclaration
from .errors import DeclarationError, TritonPyError


class MetricError(TritonPyError):
    """A declared metric was used in a way its kind does not allow (``set()`` on a Counter,
    a negative Counter increment, reading a histogram back on a server)."""


class _BoundMetric:
    """A declared metric bound to its pb_utils family and labelled series."""

    __slots__ = ("_family", "_metric", "declaration", "labels", "name")

    def __init__(
        self,
        name: str,
        declaration: MetricDeclaration,
        family: Any,
        metric: Any,
        labels: Dict[str, str],
    ) -> None:
        self.name = name
        self.declaration = declaration
        self.labels = labels
        # the family is kept alive with its metric: Triton invalidates a Metric whose
        # MetricFamily object was garbage-collected
        self._family = family
        self._metric = metric

    def _wrong(self, method: str) -> MetricError:
        kind = type(self.declaration).__name__
        owners = [k for k, names in _METHODS.items() if method in names and k != kind]
        fix = (
            f"declare it as tp.{' or tp.'.join(owners)}(...) to use {method}"
            if owners
            else "histograms cannot be read back on a server: scrape /metrics"
        )
        return MetricError(
            f"metric {self.name!r} is a {kind}: it has {self.declaration.methods}, not "
            f"{method}; {fix}"
        )

    def increment(self, value: float = 1.0) -> None:
        raise self._wrong("increment()")

    def decrement(self, value: float = 1.0) -> None:
        raise self._wrong("decrement()")

    def set(self, value: float) -> None:
        raise self._wrong("set()")

    def observe(self, value: float) -> None:
        raise self._wrong("observe()")

    @property
    def value(self) -> float:
        raise self._wrong("value")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.labels}>"


class CounterMetric(_BoundMetric):
    """A bound ``tp.Counter``."""

    __slots__ = ()

    def increment(self, value: float = 1.0) -> None:
        """Add ``value`` (>= 0, finite) to the counter."""
        if not value >= 0 or not math.isfinite(value):
            raise MetricError(
                f"metric {self.name!r} is a Counter: increment() takes a finite value >= 0, got "
                f"{value!r}; use a tp.Gauge for values that go down"
            )
        self._metric.increment(value)

    @property
    def value(self) -> float:
        """The counter's current value (the labelled series shared by every instance)."""
        return float(self._metric.value())


class GaugeMetric(_BoundMetric):
    """A bound ``tp.Gauge``."""

    __slots__ = ()

    def set(self, value: float) -> None:
        """Set the gauge to ``value``."""
        self._metric.set(value)

    def increment(self, value: float = 1.0) -> None:
        """Add ``value`` (negative values subtract, as Triton allows)."""
        self._metric.increment(value)

    def decrement(self, value: float = 1.0) -> None:
        """Subtract ``value``."""
        self._metric.increment(-value)

    @property
    def value(self) -> float:
        """The gauge's current value."""
        return float(self._metric.value())


class HistogramMetric(_BoundMetric):
    """A bound ``tp.Histogram``. Triton cannot read a histogram back; under ModelHarness the
    fake pb_utils keeps every observation, so tests can read ``observations``, ``count``,
    ``sum`` and ``bucket_counts()``."""

    __slots__ = ()

    def observe(self, value: float) -> None:
        """Count ``value`` into its bucket, the sum and the count."""
        self._metric.observe(value)

    @property
    def buckets(self) -> List[float]:
        """The declared upper bounds (without +Inf)."""
        return list(self.declaration.buckets)  # type: ignore[attr-defined]

    @property
    def observations(self) -> List[float]:
        """Every observed value, in order (ModelHarness only)."""
        kept = getattr(self._metric, "observations", None)
        if kept is None:
            raise MetricError(
                f"metric {self.name!r} is a Histogram: Triton's pb_utils cannot read it back, "
                f"only the fake pb_utils of ModelHarness keeps its observations; on a server "
                f"read tritonpy's histogram from the /metrics endpoint"
            )
        return list(kept)

    @property
    def count(self) -> int:
        """How many values were observed (the ``<name>_count`` series)."""
        return len(self.observations)

    @property
    def sum(self) -> float:
        """The sum of the observed values (the ``<name>_sum`` series)."""
        return float(math.fsum(self.observations))

    def bucket_counts(self) -> Dict[str, int]:
        """Cumulative counts per upper bound as ``/metrics`` shows them:
        ``{"0.5": 2, "1": 4, "+Inf": 5}`` (bounds written as Prometheus writes them)."""
        observed = self.observations
        counts = {
            _prometheus_number(bound): sum(1 for v in observed if v <= bound)
            for bound in self.buckets
        }
        counts["+Inf"] = len(observed)
        return counts


def _prometheus_number(value: float) -> str:
    """A bucket bound the way Triton's /metrics writes it (1.0 -> "1", 0.25 -> "0.25")."""
    # prometheus-cpp writes doubles with 16 significant digits, %g style
    return f"{value:.16g}"


#: the methods of each kind, for error messages
_METHODS = {
    "Counter": ("increment()", "value"),
    "Gauge": ("set()", "increment()", "decrement()", "value"),
    "Histogram": ("observe()",),
}


def metric_family(pb: Any, where: str, name: str, declaration: MetricDeclaration) -> Any:
    """pb_utils.MetricFamily ``name``; ``where`` names the declaration in error messages."""
    kinds = getattr(pb, "MetricFamily", None)
    if kinds is None:
        # custom metrics came to the Python backend with release 23.05 (server 2.34)
        raise DeclarationError(
            f"{where}: this Triton's pb_utils has no MetricFamily; custom metrics need Triton "
            f"release 23.05 or later: upgrade the server or remove the metrics"
        )
    kind = getattr(kinds, declaration.kind, None)
    if kind is None:
        # MetricFamily.HISTOGRAM came with release 24.08
        raise DeclarationError(
            f"{where}: this Triton's pb_utils has no MetricFamily."
            f"{declaration.kind}; histogram metrics need Triton release 24.08 or later: "
            f"upgrade the server or declare a tp.Counter/tp.Gauge"
        )
    try:
        return kinds(name, declaration.help, kind)
    except Exception as exc:
        raise DeclarationError(
            f"{where}: Triton refused to create the metric family {name!r} "
            f"({type(declaration).__name__}): {exc}. A family name is server-wide: another "
            f"model may have declared {name!r} with another kind; rename one of them"
        ) from None


def labelled_series(family: Any, declaration: MetricDeclaration, labels: Dict[str, str]) -> Any:
    if isinstance(declaration, Histogram):
        return family.Metric(labels=labels, buckets=list(declaration.buckets))
    return family.Metric(labels=labels)
