"""Declared metrics (tp.Counter, tp.Gauge, tp.Histogram) and the built-in ones, under
ModelHarness. The server side is tests/integration/test_conformance_metrics.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Dict, Iterator

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._builtin_metrics import BuiltinMetrics, rows_buckets
from tritonpy._runtime._engine.engine import engine_of
from tritonpy._runtime._metric_declarations import Counter, Gauge, Histogram
from tritonpy._runtime._metric_series import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricError,
)
from tritonpy._runtime.errors import DeclarationError, TritonPyError
from tritonpy._runtime.metrics import bind_metrics, check_metric_declarations
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as fake


@pytest.fixture(autouse=True)
def fresh_metrics() -> Iterator[None]:
    """The fake's families are process-wide, as a server's are: start each test empty."""
    fake.clear_metrics()
    yield
    fake.clear_metrics()


class Scored(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1]), "TEXT": tp.Text()}
    outputs = {"Y": tp.Tensor("FP32", [1])}
    max_batch_size = 8
    metrics = {
        "scored_rows": Counter("rows scored"),
        "scored_last": Gauge("last X"),
        "scored_x": Histogram("X values", buckets=[0.5, 1, 2.5]),
    }

    def infer(self, X: Any, TEXT: Any) -> Dict[str, Any]:
        self.metrics["scored_rows"].increment(len(X))
        self.metrics["scored_last"].set(float(X[-1, 0]))
        for value in X[:, 0]:
            self.metrics["scored_x"].observe(float(value))
        return {"Y": X}


def request(*values: float, text: bytes = b"ok") -> Dict[str, np.ndarray]:
    return {
        "X": np.array([[v] for v in values], np.float32),
        "TEXT": np.array([[text]] * len(values), dtype=object),
    }


# -- declarations ---------------------------------------------------------------------------
def test_declarations_keep_their_help_and_buckets() -> None:
    assert Counter("requests").help == "requests"
    assert Histogram("h", buckets=[1, np.float32(2.5), 10]).buckets == [1.0, 2.5, 10.0]
    assert repr(Histogram("h", buckets=[1])) == "tp.Histogram('h', buckets=[1.0])"


@pytest.mark.parametrize(
    ("buckets", "says"),
    [
        (None, "buckets are required"),
        ([], "at least one upper bound"),
        ([1.0, 0.5], "strictly increasing"),
        ([1.0, 1.0], "strictly increasing"),
        ([1.0, float("inf")], "must be finite"),
        ([float("nan")], "must be finite"),
        (["1"], "must be numbers"),
        ([True], "must be numbers"),
        ("0.5", "buckets are required"),
    ],
)
def test_histogram_buckets_are_checked(buckets: Any, says: str) -> None:
    with pytest.raises(DeclarationError, match=says) as raised:
        Histogram("h", buckets=buckets)
    assert "tp.Histogram" in str(raised.value)


def test_help_must_be_text() -> None:
    with pytest.raises(DeclarationError, match=r"help must be a string.*tp.Gauge\('"):
        Gauge(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["bad name", "1abc", "__reserved", "", "x\u00e9", "a-b", 7])
def test_family_names_follow_the_servers_rule(name: Any) -> None:
    class Bad:
        metrics = {name: Counter("c")}

    with pytest.raises(DeclarationError, match="is not a valid metric name") as raised:
        check_metric_declarations(Bad)
    assert repr(name) in str(raised.value) and "Bad.metrics" in str(raised.value)


@pytest.mark.parametrize("name", ["a:b_c9", "_x", "Model_Requests"])
def test_names_the_server_accepts_are_accepted(name: str) -> None:
    class Good:
        metrics = {name: Counter("c")}

    check_metric_declarations(Good)


@pytest.mark.parametrize(
    ("name", "owner"), [("nv_inference_count", "Triton"), ("tritonpy_x", "tritonpy")]
)
def test_reserved_prefixes_are_refused(name: str, owner: str) -> None:
    class Clash:
        metrics = {name: Counter("c")}

    with pytest.raises(DeclarationError, match=f"reserved for the metrics {owner}"):
        check_metric_declarations(Clash)


def test_metrics_must_be_a_dict_of_declarations() -> None:
    class NotDict:
        metrics = [Counter("c")]

    class NotDeclaration:
        metrics = {"x": 3}

    with pytest.raises(DeclarationError, match=r"NotDict.metrics must be a dict"):
        check_metric_declarations(NotDict)
    with pytest.raises(DeclarationError, match=r"NotDeclaration.metrics\['x'\] must be tp.Counter"):
        check_metric_declarations(NotDeclaration)


def test_a_bad_declaration_fails_the_model_load() -> None:
    # at class definition once Model checks metrics there, at the latest when it loads
    with pytest.raises(DeclarationError, match="'bad name' is not a valid metric name"):

        class BadName(Scored):
            metrics = {"bad name": Counter("c")}

        ModelHarness(BadName)


# -- bound metrics --------------------------------------------------------------------------
def test_metrics_count_what_infer_records() -> None:
    with ModelHarness(Scored) as harness:
        harness.infer(request(0.25, 0.75, 3.0))
        harness.infer(request(1.0))
        metrics = harness.model.metrics
        assert isinstance(metrics["scored_rows"], CounterMetric)
        assert metrics["scored_rows"].value == 4.0
        assert isinstance(metrics["scored_last"], GaugeMetric)
        assert metrics["scored_last"].value == 1.0
        histogram = metrics["scored_x"]
        assert isinstance(histogram, HistogramMetric)
        assert histogram.observations == [0.25, 0.75, 3.0, 1.0]
        assert (histogram.count, histogram.sum) == (4, 5.0)
        assert histogram.bucket_counts() == {"0.5": 1, "1": 3, "2.5": 3, "+Inf": 4}
        assert histogram.buckets == [0.5, 1.0, 2.5]


def test_metrics_are_labelled_with_model_name_and_version() -> None:
    with ModelHarness(Scored, name="scorer", version=3) as harness:
        assert harness.model.metrics["scored_rows"].labels == {"model": "scorer", "version": "3"}
        family = fake._families["scored_rows"]
        assert [m.labels for m in family._metrics.values()] == [{"model": "scorer", "version": "3"}]


def test_counter_refuses_negative_and_non_finite_increments() -> None:
    with ModelHarness(Scored) as harness:
        counter = harness.model.metrics["scored_rows"]
        counter.increment()
        for bad in (-1.0, float("nan"), float("inf")):
            with pytest.raises(
                MetricError, match=r"'scored_rows' is a Counter: increment\(\) takes"
            ):
                counter.increment(bad)
        assert counter.value == 1.0


def test_gauge_goes_up_and_down() -> None:
    with ModelHarness(Scored) as harness:
        gauge = harness.model.metrics["scored_last"]
        gauge.set(3)
        gauge.increment(-5)
        gauge.increment(0.5)
        gauge.decrement()
        assert gauge.value == -2.5


@pytest.mark.parametrize(
    ("name", "call", "says"),
    [
        (
            "scored_rows",
            lambda m: m.set(1),
            r"is a Counter: it has increment\(\) and value, not set\(\); declare it as tp.Gauge",
        ),
        ("scored_rows", lambda m: m.observe(1), r"not observe\(\); declare it as tp.Histogram"),
        ("scored_rows", lambda m: m.decrement(), r"not decrement\(\); declare it as tp.Gauge"),
        (
            "scored_last",
            lambda m: m.observe(1),
            r"is a Gauge: it has set\(\), increment\(\), decrement\(\) and value, not observe",
        ),
        (
            "scored_x",
            lambda m: m.increment(),
            r"is a Histogram: it has observe\(\).*not increment\(\); declare it as tp.Counter or",
        ),
        ("scored_x", lambda m: m.value, r"is a Histogram.*not value"),
    ],
)
def test_the_wrong_method_names_the_metric_its_kind_and_methods(
    name: str, call: Any, says: str
) -> None:
    with ModelHarness(Scored) as harness:
        with pytest.raises(MetricError, match=says) as raised:
            call(harness.model.metrics[name])
        assert f"metric {name!r}" in str(raised.value)
        assert isinstance(raised.value, TritonPyError)


def test_misuse_inside_infer_is_an_internal_error_for_that_request() -> None:
    class Misused(Scored):
        def infer(self, X: Any, TEXT: Any) -> Dict[str, Any]:
            self.metrics["scored_rows"].set(1.0)
            return {"Y": X}

    with ModelHarness(Misused) as harness:
        with pytest.raises(tp.TritonRequestError) as raised:
            harness.infer(request(1.0))
    assert raised.value.code == "INTERNAL"
    assert "metric 'scored_rows' is a Counter" in raised.value.message


def test_histogram_observations_need_the_fake() -> None:
    """Triton's pb_utils Metric has no way to read a histogram back."""
    server_metric = SimpleNamespace(observe=lambda value: None)
    histogram = HistogramMetric("h", Histogram("h", buckets=[1]), object(), server_metric, {})
    histogram.observe(0.5)
    with pytest.raises(MetricError, match="only the fake pb_utils of ModelHarness keeps"):
        _ = histogram.count


def test_instances_of_one_model_share_their_series() -> None:
    with (
        ModelHarness(Scored, name="shared") as first,
        ModelHarness(Scored, name="shared") as second,
    ):
        first.infer(request(1.0))
        second.infer(request(1.0, 2.0))
        assert first.model.metrics["scored_rows"].value == 3.0
        assert second.model.metrics["scored_x"].count == 3


def test_models_share_a_family_of_the_same_kind_with_one_series_each() -> None:
    class Other(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [1])}
        outputs = {"Y": tp.Tensor("FP32", [1])}
        metrics = {"scored_rows": Counter("another help text")}

        def infer(self, X: Any) -> Dict[str, Any]:
            self.metrics["scored_rows"].increment(10)
            return {"Y": X}

    with ModelHarness(Scored) as scored, ModelHarness(Other) as other:
        scored.infer(request(1.0))
        other.infer({"X": np.array([1.0], np.float32)})
        assert scored.model.metrics["scored_rows"].value == 1.0
        assert other.model.metrics["scored_rows"].value == 10.0
        assert len(fake._families["scored_rows"]._metrics) == 2


def test_a_family_declared_with_another_kind_fails_the_load() -> None:
    class Clash(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [1])}
        outputs = {"Y": tp.Tensor("FP32", [1])}
        metrics = {"scored_rows": Gauge("not a counter")}

        def infer(self, X: Any) -> Dict[str, Any]:
            return {"Y": X}

    with ModelHarness(Scored):
        with pytest.raises(DeclarationError) as raised:
            ModelHarness(Clash)
    message = str(raised.value)
    assert message.startswith("Clash.metrics['scored_rows']: Triton refused")
    assert "Family name already exists with different type" in message
    assert "rename one of them" in message


def test_histograms_need_a_server_that_has_them() -> None:
    class Old:
        metrics = {"h": Histogram("h", buckets=[1])}
        model_name, model_version = "old", 1

    old = SimpleNamespace(MetricFamily=SimpleNamespace(COUNTER=0, GAUGE=1))
    with pytest.raises(DeclarationError, match=r"histogram metrics need Triton release 24\.08"):
        bind_metrics(Old(), old)


def test_custom_metrics_need_a_server_that_has_them() -> None:
    class Older:
        metrics = {"c": Counter("c")}

    with pytest.raises(DeclarationError, match=r"custom metrics need Triton release 23\.05"):
        bind_metrics(Older(), SimpleNamespace())


# -- built-in metrics -----------------------------------------------------------------------
def test_builtin_metrics_are_off_by_default() -> None:
    with ModelHarness(Scored) as harness:
        assert engine_of(harness.model).builtin is None
        assert sorted(harness.model.metrics) == ["scored_last", "scored_rows", "scored_x"]
        assert not any(name.startswith("tritonpy_") for name in fake._families)


def test_builtin_metrics_record_rows_seconds_and_refusals() -> None:
    class Observed(Scored):
        builtin_metrics = True

    with ModelHarness(Observed) as harness:
        harness.infer_requests([request(1.0, 2.0), request(3.0), request(4.0, text=b"\xff")])
        harness.infer(request(5.0))
        metrics = harness.model.metrics
        assert isinstance(engine_of(harness.model).builtin, BuiltinMetrics)
        rows = metrics["tritonpy_infer_rows"]
        assert rows.buckets == [1.0, 2.0, 4.0, 8.0]
        assert rows.observations == [3.0, 1.0]  # two requests merged, then one alone
        assert metrics["tritonpy_infer_seconds"].count == 2
        assert metrics["tritonpy_infer_seconds"].sum >= 0
        refused = metrics["tritonpy_requests_refused"]
        assert refused.values() == {"X": 0.0, "TEXT": 1.0}
        assert refused.value == 1.0
        assert refused.by_input["TEXT"].labels == {
            "model": "Observed",
            "version": "1",
            "input": "TEXT",
        }


def test_refusals_without_an_input_name_have_an_empty_input_label() -> None:
    class Observed(Scored):
        builtin_metrics = True

    with ModelHarness(Observed) as harness:
        engine_of(harness.model).builtin.refused(None)
        assert harness.model.metrics["tritonpy_requests_refused"].values()[""] == 1.0


def test_unbatched_models_have_no_rows_histogram() -> None:
    class Single(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [1])}
        outputs = {"Y": tp.Tensor("FP32", [1])}
        builtin_metrics = True

        def infer(self, X: Any) -> Dict[str, Any]:
            return {"Y": X}

    with ModelHarness(Single) as harness:
        harness.infer({"X": np.array([1.0], np.float32)})
        assert "tritonpy_infer_rows" not in harness.model.metrics
        assert harness.model.metrics["tritonpy_infer_seconds"].count == 1


@pytest.mark.parametrize(
    ("max_batch_size", "bounds"),
    [(1, [1.0]), (2, [1.0, 2.0]), (6, [1.0, 2.0, 4.0, 6.0]), (8, [1.0, 2.0, 4.0, 8.0])],
)
def test_rows_buckets_are_powers_of_two_up_to_max_batch_size(
    max_batch_size: int, bounds: list
) -> None:
    assert rows_buckets(max_batch_size) == bounds


def test_a_bad_metric_name_fails_when_the_class_is_defined() -> None:
    with pytest.raises(DeclarationError, match="is not a valid metric name"):

        class Bad(tp.Model):
            inputs = {"X": tp.Tensor("FP32", [1])}
            outputs = {"Y": tp.Tensor("FP32", [1])}
            metrics = {"bad name": tp.Counter("c")}


def test_an_input_error_raised_by_infer_counts_as_refused() -> None:
    class Picky(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [1])}
        outputs = {"Y": tp.Tensor("FP32", [1])}
        builtin_metrics = True

        def infer(self, X: Any) -> Dict[str, Any]:
            if X[0] < 0:
                raise tp.InputError("input 'X': expected >= 0", input_name="X")
            return {"Y": X}

    with ModelHarness(Picky) as harness:
        harness.infer({"X": np.array([1.0], np.float32)})
        with pytest.raises(tp.TritonRequestError):
            harness.infer({"X": np.array([-1.0], np.float32)})
        assert harness.model.metrics["tritonpy_requests_refused"].values() == {"X": 1.0}
