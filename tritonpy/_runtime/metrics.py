"""Model metrics declared on the class, published through ``pb_utils.MetricFamily``.

Declare them once, use them in ``infer``; Triton shows them on its ``/metrics`` endpoint with
the labels ``model`` and ``version``::

    import tritonpy as tp

    class Classify(tp.Model):
        inputs = {"TEXT": tp.Text()}
        outputs = {"LABEL": tp.Text()}
        max_batch_size = 8
        metrics = {
            "classify_texts": tp.Counter("texts classified"),
            "classify_last_length": tp.Gauge("characters of the last text"),
            "classify_length": tp.Histogram("characters per text", buckets=[8, 64, 512]),
        }

        def infer(self, TEXT):
            self.metrics["classify_texts"].increment(len(TEXT))
            self.metrics["classify_last_length"].set(len(TEXT[-1]))
            for text in TEXT:
                self.metrics["classify_length"].observe(len(text))
            return {"LABEL": ["short" if len(t) < 8 else "long" for t in TEXT]}

The key of each entry is the Prometheus family name. Families are server-wide: models that
declare the same name share the family (the first model's help text is shown) and must declare
the same kind; every instance of one model version adds to the same labelled series.

With ``builtin_metrics = True`` tritonpy also records, per model and version:
``tritonpy_infer_rows`` (histogram: rows per ``infer()`` call, batched models only),
``tritonpy_infer_seconds`` (histogram: seconds per ``infer()`` call) and
``tritonpy_requests_refused`` (counter with an extra ``input`` label: requests answered
``INVALID_ARG`` while decoding that input).

Runtime module: numpy-free, stdlib only (it runs inside Triton's stub).
"""

from __future__ import annotations

import importlib
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .errors import DeclarationError, TritonPyError

#: the rule Triton's metrics registry applies to family names (prometheus-cpp): ASCII letters,
#: digits, '_' and ':', not starting with a digit, and not starting with '__' (reserved)
_FAMILY_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
#: prefixes of families the server (nv_) and tritonpy (tritonpy_) publish themselves: a user
#: family there would mix its values into theirs
RESERVED_PREFIXES = ("nv_", "tritonpy_")

BUILTIN_INFER_ROWS = "tritonpy_infer_rows"
BUILTIN_INFER_SECONDS = "tritonpy_infer_seconds"
BUILTIN_REQUESTS_REFUSED = "tritonpy_requests_refused"
#: bucket boundaries (seconds) of tritonpy_infer_seconds
INFER_SECONDS_BUCKETS: Tuple[float, ...]  # declared: mypy meets it inside an import cycle
INFER_SECONDS_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class MetricError(TritonPyError):
    """A declared metric was used in a way its kind does not allow (``set()`` on a Counter,
    a negative Counter increment, reading a histogram back on a server)."""


# -- declarations ---------------------------------------------------------------------------
class _Declaration:
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


class Counter(_Declaration):
    """A value that only goes up: ``self.metrics[name].increment(v)`` (v >= 0).

    Example: ``metrics = {"texts_seen": tp.Counter("texts received")}``
    """

    kind = "COUNTER"
    methods = "increment() and value"


class Gauge(_Declaration):
    """A value that goes up and down: ``.set(v)``, ``.increment(v)``, ``.decrement(v)``.

    Example: ``metrics = {"queue_depth": tp.Gauge("items waiting")}``
    """

    kind = "GAUGE"
    methods = "set(), increment(), decrement() and value"


class Histogram(_Declaration):
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


def check_metric_declarations(cls: type) -> None:
    """Check ``cls.metrics``: a dict {Prometheus family name: tp.Counter/Gauge/Histogram}
    with names Triton accepts. Raises DeclarationError naming the entry and the fix."""
    declared = getattr(cls, "metrics", {})
    owner = cls.__name__
    if not isinstance(declared, Mapping):
        raise DeclarationError(
            f"{owner}.metrics must be a dict {{name: tp.Counter/tp.Gauge/tp.Histogram}}, got "
            f"{type(declared).__name__}; e.g. metrics = {{'requests': tp.Counter('requests')}}"
        )
    for name, declaration in declared.items():
        _check_family_name(owner, name)
        if not isinstance(declaration, _Declaration):
            raise DeclarationError(
                f"{owner}.metrics[{name!r}] must be tp.Counter(help), tp.Gauge(help) or "
                f"tp.Histogram(help, buckets=[...]), got {declaration!r}"
            )


def _check_family_name(owner: str, name: Any) -> None:
    if not isinstance(name, str) or not _FAMILY_NAME.match(name) or name.startswith("__"):
        raise DeclarationError(
            f"{owner}.metrics: {name!r} is not a valid metric name: Triton accepts ASCII "
            f"letters, digits, '_' and ':', not starting with a digit or '__' (Prometheus "
            f"rule); e.g. 'my_model_requests'"
        )
    for prefix in RESERVED_PREFIXES:
        if name.startswith(prefix):
            raise DeclarationError(
                f"{owner}.metrics: {name!r} starts with {prefix!r}, reserved for the metrics "
                f"{'Triton' if prefix == 'nv_' else 'tritonpy'} publishes itself (the values "
                f"would mix); choose another prefix, e.g. your model's name"
            )


# -- bound metrics --------------------------------------------------------------------------
class _BoundMetric:
    """A declared metric bound to its pb_utils family and labelled series."""

    __slots__ = ("_family", "_metric", "declaration", "labels", "name")

    def __init__(
        self,
        name: str,
        declaration: _Declaration,
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
_BOUND = {"COUNTER": CounterMetric, "GAUGE": GaugeMetric, "HISTOGRAM": HistogramMetric}


def _pb_utils(model: Any) -> Any:
    pb = getattr(model, "_pb", None)
    return pb if pb is not None else importlib.import_module("triton_python_backend_utils")


def _family(pb: Any, where: str, name: str, declaration: _Declaration) -> Any:
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


def _labelled(family: Any, declaration: _Declaration, labels: Dict[str, str]) -> Any:
    if isinstance(declaration, Histogram):
        return family.Metric(labels=labels, buckets=list(declaration.buckets))
    return family.Metric(labels=labels)


def bind_metrics(model: Any) -> Tuple[Dict[str, Any], Optional[BuiltinMetrics]]:
    """The model's declared metrics bound to pb_utils, and its built-in metrics (None when
    off). Called by Model.initialize before setup().

    Every metric carries the labels ``model`` (the model name) and ``version``; the built-in
    ones are also in the returned dict, under their family names, for reading in tests.
    """
    cls = type(model)
    check_metric_declarations(cls)
    pb = _pb_utils(model)
    labels = {
        "model": str(getattr(model, "model_name", cls.__name__)),
        "version": str(getattr(model, "model_version", 1)),
    }
    bound: Dict[str, Any] = {}
    for name, declaration in getattr(cls, "metrics", {}).items():
        family = _family(pb, f"{cls.__name__}.metrics[{name!r}]", name, declaration)
        metric = _labelled(family, declaration, dict(labels))
        bound[name] = _BOUND[declaration.kind](name, declaration, family, metric, dict(labels))
    builtin: Optional[BuiltinMetrics] = None
    if getattr(cls, "builtin_metrics", False):
        builtin = BuiltinMetrics(model, pb, labels)
        bound.update(builtin.bound())
    return bound, builtin


# the built-in metrics are built from the kinds above (imported last: they import this module)
from ._builtin_metrics import BuiltinMetrics  # noqa: E402
