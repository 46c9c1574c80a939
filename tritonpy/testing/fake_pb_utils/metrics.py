"""pb_utils custom metrics: ``MetricFamily`` and its labelled metrics, with the server's error
texts."""

from __future__ import annotations

import enum
import re
from typing import Dict, FrozenSet, List, Optional, Tuple, Union

from .errors import TritonModelException

#: the model instance name put into metric error messages (the harness sets it)
_instance_name: str = "model_0"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


class MetricKind(enum.IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


_KIND_NAMES = {
    MetricKind.COUNTER: "TRITONSERVER_METRIC_KIND_COUNTER",
    MetricKind.GAUGE: "TRITONSERVER_METRIC_KIND_GAUGE",
    MetricKind.HISTOGRAM: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}

_families: Dict[str, MetricFamily] = {}


def _server_message(what: str, message: str) -> str:
    return f"{what}: Failed to process the request for model '{_instance_name}', message: {message}"


class LabelledMetric:
    """One labelled metric of a :class:`MetricFamily`."""

    def __init__(
        self,
        family: MetricFamily,
        labels: Dict[str, str],
        buckets: Optional[List[float]],
    ) -> None:
        self._family = family
        self.labels = dict(labels)
        self.buckets = list(buckets) if buckets is not None else None
        self._value = 0.0
        #: every value passed to observe() (histograms), for tests
        self.observations: List[float] = []

    def _unsupported(self, what: str, op: str) -> TritonModelException:
        kind = _KIND_NAMES[self._family.kind]
        return TritonModelException(_server_message(what, f"{kind} does not support {op}"))

    def increment(self, value: float) -> None:
        kind = self._family.kind
        if kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to increment metric value", "Increment")
        if kind == MetricKind.COUNTER and value < 0:
            raise TritonModelException(
                _server_message(
                    "Failed to increment metric value",
                    "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                    "non-negative values.",
                )
            )
        self._value += float(value)

    def set(self, value: float) -> None:
        if self._family.kind != MetricKind.GAUGE:
            raise self._unsupported("Failed to set metric value", "Set")
        self._value = float(value)

    def observe(self, value: float) -> None:
        if self._family.kind != MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to observe metric value", "Observe")
        self.observations.append(float(value))

    def value(self) -> float:
        if self._family.kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to get metric value", "Value")
        return self._value


class MetricFamily:
    """``pb_utils.MetricFamily(name, description, kind)``."""

    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, kind: Union[int, MetricKind]) -> None:
        kind_ = MetricKind(int(kind))
        if not _METRIC_NAME.match(name):
            raise TritonModelException(
                _server_message("Error when creating MetricFamily", "Invalid metric name")
            )
        existing = _families.get(name)
        if existing is not None and existing.kind != kind_:
            raise TritonModelException(
                _server_message(
                    "Error when creating MetricFamily",
                    "Family name already exists with different type",
                )
            )
        self.name = name
        self.description = description
        self.kind: MetricKind = kind_
        self._metrics: Dict[FrozenSet[Tuple[str, str]], LabelledMetric] = (
            existing._metrics if existing is not None else {}
        )
        _families[name] = self

    def Metric(
        self,
        labels: Optional[Dict[str, str]] = None,
        buckets: Optional[List[float]] = None,
    ) -> LabelledMetric:
        if self.kind == MetricKind.HISTOGRAM and buckets is None:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        if self.kind != MetricKind.HISTOGRAM and buckets is not None:
            raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        key = frozenset((labels or {}).items())
        metric = self._metrics.get(key)
        if metric is None:
            metric = LabelledMetric(self, dict(labels or {}), buckets)
            self._metrics[key] = metric
        return metric


def clear_metrics() -> None:
    """Not in the real module: forget every metric family."""
    _families.clear()
