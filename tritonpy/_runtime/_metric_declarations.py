"""The metric declarations a Model class lists in ``metrics``: ``tp.Counter``, ``tp.Gauge`` and
``tp.Histogram`` (a kind, a help text and, for histograms, bucket bounds), checked when they
are written. What they become at ``initialize``: :mod:`._metric_series`.

Example::

    metrics = {
        "classify_texts": tp.Counter("texts classified"),
        "classify_length": tp.Histogram("characters per text", buckets=[8, 64, 512]),
    }

Runtime module: stdlib only (it runs inside Triton's stub).
"""

from __future__ import annotations

import math
from typing import List, Optional, Sequence

from .errors import DeclarationError


class MetricDeclaration:
    """A metric declaration: its kind (pb_utils.MetricFamily.<KIND>) and help text."""

    kind = ""
    methods = ""

    def __init__(self, help: str) -> None:
        if not isinstance(help, str):
            raise DeclarationError(
                f"tp.{type(self).__name__}(help): help must be a string describing the metric, "
                f"got {type(help).__name__}; e.g. tp.{type(self).__name__}('requests served')"
            )
        self.help = help

    def __repr__(self) -> str:
        return f"tp.{type(self).__name__}({self.help!r})"


class Counter(MetricDeclaration):
    """A value that only goes up: ``self.metrics[name].increment(v)`` (v >= 0).

    Example: ``metrics = {"texts_seen": tp.Counter("texts received")}``
    """

    kind = "COUNTER"
    methods = "increment() and value"


class Gauge(MetricDeclaration):
    """A value that goes up and down: ``.set(v)``, ``.increment(v)``, ``.decrement(v)``.

    Example: ``metrics = {"queue_depth": tp.Gauge("items waiting")}``
    """

    kind = "GAUGE"
    methods = "set(), increment(), decrement() and value"


class Histogram(MetricDeclaration):
    """Observations counted into buckets (cumulative, as Prometheus does), with their sum and
    count: ``.observe(v)``. ``buckets`` are the upper bounds, strictly increasing and finite
    (Triton adds ``+Inf`` itself).

    Example: ``metrics = {"text_chars": tp.Histogram("chars per text", buckets=[8, 64, 512])}``
    """

    kind = "HISTOGRAM"
    methods = "observe() (and, under ModelHarness, observations, count, sum, bucket_counts())"

    def __init__(self, help: str, buckets: Optional[Sequence[float]] = None) -> None:
        super().__init__(help)
        self.buckets: List[float] = _check_buckets(buckets)

    def __repr__(self) -> str:
        return f"tp.Histogram({self.help!r}, buckets={self.buckets!r})"


def _check_buckets(buckets: Optional[Sequence[float]]) -> List[float]:
    example = "e.g. tp.Histogram('seconds per call', buckets=[0.01, 0.1, 1.0])"
    if buckets is None or isinstance(buckets, (str, bytes)):
        raise DeclarationError(
            f"tp.Histogram: buckets are required: a list of upper bounds, got {buckets!r}; "
            f"{example}"
        )
    values: List[float] = []
    for bound in buckets:
        try:
            if isinstance(bound, (bool, str, bytes)):
                raise TypeError
            # float() also takes numpy scalars, which are not int/float subclasses
            values.append(float(bound))
        except (TypeError, ValueError):
            raise DeclarationError(
                f"tp.Histogram: bucket bounds must be numbers, got {bound!r} in "
                f"{list(buckets)!r}; {example}"
            ) from None
    if not values:
        raise DeclarationError(
            f"tp.Histogram: buckets must hold at least one upper bound, got []; {example}"
        )
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise DeclarationError(
            f"tp.Histogram: bucket bounds must be finite, got {bad[0]!r} in {values!r}; Triton "
            f"adds the +Inf bucket itself, leave it out"
        )
    for low, high in zip(values, values[1:]):
        if not low < high:
            raise DeclarationError(
                f"tp.Histogram: buckets must be strictly increasing (Triton refuses others), got "
                f"{low!r} then {high!r} in {values!r}; sort them and drop duplicates"
            )
    return values
