"""Conformance of declared and built-in metrics: the same requests through ModelHarness and
through a real tritonserver (HTTP and gRPC) change the metrics by the same amounts, as the
harness reads them and as the server's /metrics endpoint shows them.

Metrics accumulate in the server (and in the fake's registry), so each side is compared as the
difference between a snapshot before and after the requests. Requests are sent one at a time,
so every execute() sees one request on both sides and the rows histogram cannot differ.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple, Union

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy._runtime._builtin_metrics import RefusedCounter
from tritonpy._runtime._metric_series import CounterMetric, GaugeMetric, HistogramMetric
from tritonpy._runtime.errors import DeclarationError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "conformance_models"
NAMES = ("cf_metrics", "cf_metrics_twin")
FAMILIES = (
    "cf_rows",
    "cf_last_x",
    "cf_x",
    "tritonpy_infer_rows",
    "tritonpy_infer_seconds",
    "tritonpy_requests_refused",
)
#: (family, sample suffix, sorted labels) -> value
Snapshot = Dict[Tuple[str, str, Tuple[Tuple[str, str], ...]], float]
Result = Union[Dict[str, Any], TritonRequestError]


def column(*values: bytes) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = list(values)
    return array


def x(*values: float) -> np.ndarray:
    return np.array([[v] for v in values], np.float32)


REQUESTS: List[Tuple[str, Dict[str, np.ndarray]]] = [
    ("cf_metrics", {"X": x(0.25, 0.75, 3.0), "TEXT": column(b"a", b"b", b"c")}),
    ("cf_metrics", {"X": x(1.0), "TEXT": column(b"d")}),
    ("cf_metrics", {"X": x(2.0, 0.5), "TEXT": column(b"e", b"\xff")}),  # refused: TEXT
    ("cf_metrics", {"X": x(1.5), "TEXT": column(b"misuse")}),  # Counter.set -> INTERNAL
    ("cf_metrics", {"X": x(1.5), "TEXT": column(b"negative")}),  # increment(-1) -> INTERNAL
    ("cf_metrics", {"X": x(4.0, 1.0, 2.0, 0.0, 9.0), "TEXT": column(*[b"f"] * 5)}),
    ("cf_metrics_twin", {"X": x(1.0, 2.0)}),
]

_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text: str) -> Tuple[Snapshot, Dict[str, str]]:
    """Samples of FAMILIES from Prometheus text, and the TYPE of each family."""
    samples: Snapshot = {}
    types: Dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            types[family] = kind
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name = match.group("name")
        family, suffix = name, ""
        for ending in ("_bucket", "_sum", "_count"):
            if name.endswith(ending) and name[: -len(ending)] in FAMILIES:
                family, suffix = name[: -len(ending)], ending
        if family not in FAMILIES:
            continue
        labels = tuple(sorted(_LABEL.findall(match.group("labels") or "")))
        samples[(family, suffix, labels)] = float(match.group("value"))
    return samples, types


def harness_snapshot(harnesses: List[ModelHarness]) -> Snapshot:
    """The harness metrics in the shape of the server's samples."""
    samples: Snapshot = {}

    def add(family: str, suffix: str, labels: Dict[str, str], value: float) -> None:
        samples[(family, suffix, tuple(sorted(labels.items())))] = value

    for harness in harnesses:
        for name, metric in harness.model.metrics.items():
            if isinstance(metric, (CounterMetric, GaugeMetric)):
                add(name, "", metric.labels, metric.value)
            elif isinstance(metric, RefusedCounter):
                for series in metric.by_input.values():
                    add(name, "", series.labels, series.value)
            elif isinstance(metric, HistogramMetric):
                add(name, "_count", metric.labels, metric.count)
                add(name, "_sum", metric.labels, metric.sum)
                for bound, count in metric.bucket_counts().items():
                    add(name, "_bucket", {**metric.labels, "le": bound}, count)
    return samples


def delta(before: Snapshot, after: Snapshot) -> Snapshot:
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


def timing_free(samples: Snapshot) -> Snapshot:
    """Without the seconds histogram's sum and buckets (they depend on how fast infer ran)."""
    return {
        key: value
        for key, value in samples.items()
        if not (key[0] == "tritonpy_infer_seconds" and key[1] != "_count")
    }


def outcome(
    call: Callable[[str, Dict[str, np.ndarray]], Dict[str, np.ndarray]],
    model: str,
    inputs: Dict[str, np.ndarray],
) -> Result:
    try:
        return {name: value.tolist() for name, value in call(model, inputs).items()}
    except TritonRequestError as exc:
        return exc


def same(expected: List[Result], actual: List[Result]) -> None:
    for index, (want, got) in enumerate(zip(expected, actual)):
        if isinstance(want, TritonRequestError):
            assert isinstance(got, TritonRequestError), f"request {index}: server answered {got}"
            assert (got.code, got.message) == (want.code, want.message), f"request {index}"
        else:
            assert got == want, f"request {index}"


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = repository_builder(tmp_path_factory.mktemp("metrics"), *NAMES, source=MODELS)
    return triton_server_factory(repo, startup_timeout=180)


def scrape(server: TritonServer) -> Tuple[Snapshot, Dict[str, str]]:
    with urllib.request.urlopen(server.metrics_url, timeout=30) as answer:
        return parse_metrics(answer.read().decode())


def run_harness() -> Tuple[List[Result], Snapshot, Snapshot]:
    """Results, metric changes and metrics after the requests, through ModelHarness."""
    harnesses = {name: ModelHarness(MODELS / name) for name in NAMES}
    try:
        before = harness_snapshot(list(harnesses.values()))

        def call(model: str, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
            return harnesses[model].infer(inputs)

        results = [outcome(call, model, inputs) for model, inputs in REQUESTS]
        after = harness_snapshot(list(harnesses.values()))
        return results, delta(before, after), after
    finally:
        for harness in harnesses.values():
            harness.close()


def run_server(server: TritonServer, protocol: str) -> Tuple[List[Result], Snapshot, Snapshot]:
    """Results, metric changes and metrics after the requests, as /metrics shows them."""
    client = InferClient(server.http_url if protocol == "http" else server.grpc_url, protocol)
    try:
        before, _ = scrape(server)

        def call(model: str, inputs: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
            return {o.name: o.array for o in client.infer(model, inputs)}

        results = [outcome(call, model, inputs) for model, inputs in REQUESTS]
        after, _ = scrape(server)
        return results, delta(before, after), after
    finally:
        client.close()


def expected_changes(changes: Snapshot) -> None:
    """What the requests must do to the metrics (checked on the harness side)."""

    def get(family: str, suffix: str = "", **labels: str) -> float:
        labels = {"model": "cf_metrics", "version": "1", **labels}
        return changes[(family, suffix, tuple(sorted(labels.items())))]

    # rows of the requests that reached infer() without a metric error: 3 + 1 + 5
    assert get("cf_rows") == 9.0
    assert get("cf_rows", model="cf_metrics_twin") == 20.0
    assert get("cf_x", "_count") == 9.0
    assert get("cf_x", "_bucket", le="0.5") == 2.0  # 0.25, 0.0
    assert get("cf_x", "_bucket", le="1") == 5.0  # + 0.75, 1.0, 1.0
    assert get("cf_x", "_bucket", le="2.5") == 6.0  # + 2.0
    assert get("cf_x", "_bucket", le="+Inf") == 9.0
    assert get("cf_x", "_sum") == pytest.approx(21.0)
    assert get("tritonpy_requests_refused", input="TEXT") == 1.0
    assert get("tritonpy_requests_refused", input="X") == 0.0
    # infer() ran for 5 requests; 2 of them raised before their duration was recorded
    assert get("tritonpy_infer_rows", "_count") == 5.0
    assert get("tritonpy_infer_rows", "_bucket", le="1") == 3.0
    assert get("tritonpy_infer_rows", "_bucket", le="4") == 4.0
    assert get("tritonpy_infer_seconds", "_count") == 3.0


GAUGE = ("cf_last_x", "", (("model", "cf_metrics"), ("version", "1")))


def test_harness_metrics_change_as_declared() -> None:
    results, changes, after = run_harness()
    assert isinstance(results[2], TritonRequestError) and results[2].code == "INVALID_ARG"
    assert isinstance(results[3], TritonRequestError)
    assert results[3].code == "INTERNAL"
    assert "metric 'cf_rows' is a Counter" in results[3].message
    expected_changes(changes)
    # the last request that reached the gauge had X[-1] = 9.0; the model subtracts 0.5
    assert after[GAUGE] == 8.5


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_server_metrics_agree_with_the_harness(server: TritonServer, protocol: str) -> None:
    want_results, want, want_after = run_harness()
    got_results, got, got_after = run_server(server, protocol)
    same(want_results, got_results)
    # a gauge is set, not accumulated: its value after the requests is what must agree
    assert got_after[GAUGE] == want_after[GAUGE]
    del want[GAUGE], got[GAUGE]
    assert timing_free(got) == timing_free(want)
    seconds = ("tritonpy_infer_seconds", "_sum", (("model", "cf_metrics"), ("version", "1")))
    assert got[seconds] > 0


def test_server_lists_each_family_with_its_kind(server: TritonServer) -> None:
    run_server(server, "http")
    _, types = scrape(server)
    assert {family: types.get(family) for family in FAMILIES} == {
        "cf_rows": "counter",
        "cf_last_x": "gauge",
        "cf_x": "histogram",
        "tritonpy_infer_rows": "histogram",
        "tritonpy_infer_seconds": "histogram",
        "tritonpy_requests_refused": "counter",
    }


CLASH = """
import tritonpy as tp
from tritonpy._runtime._metric_declarations import Gauge


class Clash(tp.Model):
    inputs = {"X": tp.Tensor("FP32", [1])}
    outputs = {"Y": tp.Tensor("FP32", [1])}
    metrics = {"cf_rows": Gauge("cf_rows again, as a gauge")}

    def infer(self, X):
        return {"Y": X}


TritonPythonModel = Clash
"""


def write_clash(repository: Path) -> Path:
    model = repository / "cf_metrics_clash"
    (model / "1").mkdir(parents=True, exist_ok=True)
    # an explicit instance group: without one, 24.10 names the instance cf_metrics_clash_0
    # where the fake says cf_metrics_clash_0_0 (reported to the fake's owner)
    (model / "config.pbtxt").write_text(
        'name: "cf_metrics_clash"\nbackend: "python"\ninstance_group [{ kind: KIND_CPU }]\n'
    )
    (model / "1" / "model.py").write_text(CLASH)
    return model


def load_error(server: TritonServer, model: str) -> str:
    request = urllib.request.Request(
        f"{server.http_url}/v2/repository/models/{model}/load", data=b"{}", method="POST"
    )
    try:
        urllib.request.urlopen(request, timeout=120).close()
    except urllib.error.HTTPError as exc:
        return str(json.loads(exc.read().decode())["error"])
    raise AssertionError(f"the server loaded {model}")


def test_a_family_of_another_kind_fails_the_load_on_both(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path: Path,
) -> None:
    with ModelHarness(MODELS / "cf_metrics"):
        with pytest.raises(DeclarationError) as raised:
            ModelHarness(write_clash(tmp_path))
    expected = str(raised.value)
    assert "Family name already exists with different type" in expected
    # a server of its own: 24.10 sometimes aborts as a whole on this load (measured 5 of 15
    # loads on a busy 2-core machine: "terminate called after throwing an instance of
    # 'boost::interprocess::lock_exception'" in TRITONBACKEND_ModelInstanceInitialize, then
    # SIGABRT), and the rest of the module's tests keep their server
    repo = repository_builder(tmp_path / "served", "cf_metrics", source=MODELS)
    server = triton_server_factory(repo, startup_timeout=180)
    clash = write_clash(server.served_repository).name
    try:
        message = load_error(server, clash)
    except (ConnectionError, urllib.error.URLError):  # the connection closed: the abort
        deadline = time.monotonic() + 10.0
        while server.running and time.monotonic() < deadline:
            time.sleep(0.1)  # the process is going down as its connection closes
        server_log = server.log_path.read_text() if server.log_path else ""
        assert not server.running, "the connection closed but the server runs"
        assert "boost::interprocess::lock_exception" in server_log, server_log[-2000:]
        return
    assert expected in message, message
