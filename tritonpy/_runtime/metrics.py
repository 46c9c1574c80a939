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

This module checks a class's ``metrics`` and binds them at ``initialize``; the declarations
are in :mod:`._metric_declarations`, the bound series in :mod:`._metric_series`, the built-in
metrics in :mod:`._builtin_metrics` (each imports only those before it: no cycle).

Runtime module: numpy-free, stdlib only (it runs inside Triton's stub).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Dict, Mapping, Optional, Tuple

from ._builtin_metrics import BuiltinMetrics
from ._metric_declarations import MetricDeclaration
from ._metric_series import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    labelled_series,
    metric_family,
)
from .errors import DeclarationError

#: the rule Triton's metrics registry applies to family names (prometheus-cpp): ASCII letters,
#: digits, '_' and ':', not starting with a digit, and not starting with '__' (reserved)
_FAMILY_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
#: prefixes of families the server (nv_) and tritonpy (tritonpy_) publish themselves: a user
#: family there would mix its values into theirs
RESERVED_PREFIXES = ("nv_", "tritonpy_")
_BOUND = {"COUNTER": CounterMetric, "GAUGE": GaugeMetric, "HISTOGRAM": HistogramMetric}


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
        if not isinstance(declaration, MetricDeclaration):
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


def bind_metrics(model: Any, pb: Any = None) -> Tuple[Dict[str, Any], Optional[BuiltinMetrics]]:
    """The model's declared metrics bound to pb_utils, and its built-in metrics (None when
    off). Called by Model.initialize before setup().

    Every metric carries the labels ``model`` (the model name) and ``version``; the built-in
    ones are also in the returned dict, under their family names, for reading in tests.
    """
    cls = type(model)
    check_metric_declarations(cls)
    if pb is None:  # (the stub's module; never an attribute of the model: its names are its own)
        pb = importlib.import_module("triton_python_backend_utils")
    labels = {
        "model": str(getattr(model, "model_name", cls.__name__)),
        "version": str(getattr(model, "model_version", 1)),
    }
    bound: Dict[str, Any] = {}
    for name, declaration in getattr(cls, "metrics", {}).items():
        family = metric_family(pb, f"{cls.__name__}.metrics[{name!r}]", name, declaration)
        metric = labelled_series(family, declaration, dict(labels))
        bound[name] = _BOUND[declaration.kind](name, declaration, family, metric, dict(labels))
    builtin: Optional[BuiltinMetrics] = None
    if getattr(cls, "builtin_metrics", False):
        builtin = BuiltinMetrics(model, pb, labels)
        bound.update(builtin.bound())
    return bound, builtin
