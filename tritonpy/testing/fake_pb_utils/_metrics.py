"""pb_utils custom metrics: ``MetricFamily`` and its labelled metrics, with the server's error
texts."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import enum
import re
import weakref
from typing import Dict, FrozenSet, List, Optional, Tuple, Union

from ._errors import ServerAbort, TritonModelException
from ._models import instance_name

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


def _server_message(what: str, message: str) -> str:
    return (
        f"{what}: Failed to process the request for model '{instance_name()}', message: {message}"
    )


class _Cell:
    """The value of one labelled metric, shared by every Metric handle on it."""

    def __init__(self, labels: Dict[str, str], buckets: Optional[List[float]]) -> None:
        self.labels = dict(labels)
        self.buckets = list(buckets) if buckets is not None else None
        self.value = 0.0
        self.observations: List[float] = []


class _FamilyState:
    """What live MetricFamily objects of one name share (the server's family): it goes away
    with the last of them, and a family created later starts from zero (measured, 24.10)."""

    def __init__(self, name: str, description: str, kind: MetricKind) -> None:
        self.name = name
        self.description = description
        self.kind = kind
        self._metrics: Dict[FrozenSet[Tuple[str, str]], _Cell] = {}
        self.live = 0


#: live metric families by name (the harness and tests read them)
_families: Dict[str, _FamilyState] = {}


class LabelledMetric:
    """One labelled metric of a :class:`MetricFamily` (what ``family.Metric()`` returns).

    As in the stub, it is cleared when the MetricFamily object that made it is deleted: keep
    the family alive as long as its metrics."""

    def __init__(self, family: MetricFamily, cell: _Cell) -> None:
        self._kind = family.kind
        self._cell = cell
        self._cleared = False

    @property
    def labels(self) -> Dict[str, str]:
        return self._cell.labels

    @property
    def buckets(self) -> Optional[List[float]]:
        return self._cell.buckets

    @property
    def observations(self) -> List[float]:
        """Every value passed to observe() (histograms), for tests."""
        return self._cell.observations

    def _check(self, what: str, op: str, allowed: bool) -> None:
        if self._cleared:  # checked first, as in the stub (Metric::CheckIfCleared)
            raise TritonModelException(
                f"{what}: Invalid metric operation as the corresponding 'MetricFamily' has "
                "been deleted. The 'MetricFamily' object should be deleted AFTER its "
                "corresponding 'Metric' objects have been deleted."
            )
        if not allowed:
            kind = _KIND_NAMES[self._kind]
            raise _abort(op.lower(), _server_message(what, f"{kind} does not support {op}"))

    def increment(self, value: float) -> None:
        what = "Failed to increment metric value"
        self._check(what, "Increment", self._kind != MetricKind.HISTOGRAM)
        if self._kind == MetricKind.COUNTER and value < 0:
            raise _abort(
                "increment",
                _server_message(
                    what,
                    "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                    "non-negative values.",
                ),
            )
        self._cell.value += float(value)

    def set(self, value: float) -> None:
        self._check("Failed to set metric value", "Set", self._kind == MetricKind.GAUGE)
        self._cell.value = float(value)

    def observe(self, value: float) -> None:
        allowed = self._kind == MetricKind.HISTOGRAM
        self._check("Failed to observe metric value", "Observe", allowed)
        self._cell.observations.append(float(value))

    def value(self) -> float:
        self._check("Failed to get metric value", "Value", self._kind != MetricKind.HISTOGRAM)
        return self._cell.value


def _abort(op: str, message: str) -> ServerAbort:
    """A metric operation the server refuses. Its refusal travels back to the stub through
    an error path of release 24.10 that, measured, now and then aborts the whole tritonserver
    (terminate: boost::interprocess::lock_exception) instead of raising the message below in
    the model: the fake makes it a model bug, never an exception a model could count on."""
    return ServerAbort(
        f"{op}() refused by the server, which raises TritonModelException({message!r}) "
        "only some of the time: tritonserver 24.10 may abort instead, ending the whole server "
        "process (terminate: boost::interprocess::lock_exception; measured). Check the value "
        "and the metric's kind before the call"
    )


def _release(state: _FamilyState, made: List[LabelledMetric]) -> None:
    """A MetricFamily object is gone: its metrics are cleared; the last one of its name takes
    the family with it."""
    for metric in made:
        metric._cleared = True
    state.live -= 1
    if state.live <= 0 and _families.get(state.name) is state:
        del _families[state.name]


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
        state = _families.get(name)
        if state is not None and state.kind != kind_:
            raise TritonModelException(
                _server_message(
                    "Error when creating MetricFamily",
                    "Family name already exists with different type",
                )
            )
        if state is None:
            state = _families[name] = _FamilyState(name, description, kind_)
        state.live += 1
        self.name = name
        self.description = description
        self.kind: MetricKind = kind_
        self._state = state
        self._metrics = state._metrics
        self._made: List[LabelledMetric] = []
        weakref.finalize(self, _release, state, self._made)

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
        cell = self._metrics.get(key)
        if cell is None:
            cell = self._metrics[key] = _Cell(dict(labels or {}), buckets)
        metric = LabelledMetric(self, cell)
        self._made.append(metric)
        return metric


def clear_metrics() -> None:
    """Not in the real module: forget every metric family."""
    _families.clear()
