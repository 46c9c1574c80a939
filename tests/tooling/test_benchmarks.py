"""Smoke tests of the benchmark harness (benchmarks/): tritonpy perf's load generator and CPU
accounting as the benchmark uses them, the workloads' raw, naive and tritonpy models
giving the same outputs under ModelHarness, and the report. Nothing here asserts on timings;
the one test that runs the benchmark end to end (``--quick``, add_sub only) is marked
``integration``."""

from __future__ import annotations

import dataclasses
import math
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from tritonpy import ToolError

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.run import Cell, evaluate_targets, render_table  # noqa: E402
from benchmarks.workloads import (  # noqa: E402
    LARGE_TENSOR_DIMS,
    STREAM_RESPONSES,
    build_repository,
    expected_equal,
)
from tritonpy.perf._engine import grpc_request, run_closed_loop  # noqa: E402
from tritonpy.testing import ModelHarness  # noqa: E402

# -- load generator ----------------------------------------------------------------------------


def test_closed_loop_counts_requests_per_worker_and_samples_the_window() -> None:
    calls: Dict[int, int] = {}
    lock = threading.Lock()
    samples = iter([{"cpu": 1.0}, {"cpu": 3.5}])

    def make(worker: int) -> Any:
        def call() -> None:
            with lock:
                calls[worker] = calls.get(worker, 0) + 1

        return call

    result = run_closed_loop(
        make, concurrency=3, warmup=0.02, duration=0.4, sample=lambda: next(samples)
    )
    assert result.concurrency == 3
    assert set(calls) == {0, 1, 2}
    assert 0 < result.completed <= sum(calls.values())
    assert len(result.latencies_ms) == result.completed
    assert result.errors == 0 and result.first_error == ""
    assert result.samples == {"cpu": 2.5}
    assert result.percentile_ms(50) <= result.percentile_ms(99)


def test_closed_loop_records_errors_and_stops_a_failing_worker() -> None:
    def make(worker: int) -> Any:
        def call() -> None:
            raise RuntimeError("model not ready")

        return call

    result = run_closed_loop(make, concurrency=2, warmup=0.0, duration=5.0)
    assert result.completed == 0
    assert result.errors == 200  # each worker gives up after a streak of 100 failures
    assert result.first_error == "RuntimeError: model not ready"


def test_closed_loop_refuses_bad_settings() -> None:
    with pytest.raises(ToolError, match="expected concurrency >= 1"):
        run_closed_loop(lambda i: lambda: None, concurrency=0, warmup=0.0, duration=1.0)


def test_grpc_request_carries_raw_contents_and_serialized_bytes() -> None:
    request = grpc_request(
        "m",
        {
            "X": np.arange(4, dtype=np.float32),
            "S": np.array([[b"ab"], [b"c"]], dtype=object),
        },
    )
    assert request.model_name == "m"
    assert [(t.name, t.datatype, list(t.shape)) for t in request.inputs] == [
        ("X", "FP32", [4]),
        ("S", "BYTES", [2, 1]),
    ]
    assert request.raw_input_contents[0] == np.arange(4, dtype=np.float32).tobytes()
    assert request.raw_input_contents[1] == b"\x02\x00\x00\x00ab\x01\x00\x00\x00c"


# -- CPU accounting ----------------------------------------------------------------------------


def test_measure_charges_the_server_tree_per_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    # the benchmark's figures from tritonpy perf's engine and CPU sample, on a stub caller
    import benchmarks.run as run

    def factory(url: str, model: str, payloads: Any) -> Any:
        return lambda worker: lambda: None

    samples = iter([{"server:10": 1.0, "server:11": 2.0, "client": 1.0},
                    {"server:10": 1.5, "server:12": 0.5, "client": 1.25}])  # fmt: skip
    monkeypatch.setattr(run, "grpc_caller_factory", factory)
    monkeypatch.setattr(run, "window_sample", lambda pid: next(samples))
    workload = type("W", (), {"payloads": [{}], "sequence_length": 0, "stream_responses": 0})()
    window = run.measure_window(run.open_clients("url", workload, "m", 1), 10, 0.0, 0.05)
    figures = run.figures_of([window])
    assert figures["completed"] > 0 and figures["errors"] == 0
    # stub 11 ended inside the window: left out; stub 12 started inside it: counted whole
    assert figures["server_cpu_ms"] == pytest.approx(1000.0 / figures["completed"])
    assert figures["client_cpu_ms"] == pytest.approx(250.0 / figures["completed"])
    assert figures["p50_ms"] <= figures["p99_ms"]


def test_a_round_interleaves_slices_and_adds_them_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # --slices 3: raw and tritonpy take turns (A B B A A B), each slice a third of --duration;
    # the round's figures are those of its slices together; each variant's clients are opened
    # once a round and kept for its later slices, which only settle
    import argparse

    import benchmarks.run as run
    from tritonpy.perf._engine import LoadWindow

    calls: List[Any] = []
    opened: List[Any] = []

    def open_clients(url: str, workload: Any, model: str, conc: int) -> List[Any]:
        opened.append((model, conc))
        return [model] * conc  # stands for the callers

    def window(clients: List[str], pid: int, warmup: float, duration: float) -> LoadWindow:
        model, conc = clients[0], len(clients)
        calls.append((model, warmup, duration))
        done = 100 if model == "m_raw" else 50 * len(calls)
        return LoadWindow(conc, duration, done, 0, [1.0] * done, "",
                          {"server:1": done * 0.001, "client": 0.0})  # fmt: skip

    monkeypatch.setattr(run, "open_clients", open_clients)
    monkeypatch.setattr(run, "measure_window", window)
    workload = type("W", (), {"models": {"raw": "m_raw", "tritonpy": "m_tp"}})()
    args = argparse.Namespace(slices=3, warmup=1.0, duration=3.0)
    endpoints = {"server": ("url", 1)}
    figures = run._measure_round(workload, ["raw", "tritonpy"], 4, endpoints, args, first=0)
    assert opened == [("m_raw", 4), ("m_tp", 4)]
    assert [c[0] for c in calls] == ["m_raw", "m_tp", "m_tp", "m_raw", "m_raw", "m_tp"]
    assert [c[1] for c in calls] == [1.0, 1.0, run.SLICE_SETTLE_S, run.SLICE_SETTLE_S,
                                     run.SLICE_SETTLE_S, run.SLICE_SETTLE_S]  # fmt: skip
    assert all(c[2] == pytest.approx(1.0) for c in calls)
    assert figures["raw"]["completed"] == 300
    assert figures["raw"]["throughput"] == pytest.approx(100.0)
    assert figures["tritonpy"]["completed"] == 50 * (2 + 3 + 6)
    assert figures["tritonpy"]["server_cpu_ms"] == pytest.approx(1.0)
    calls.clear()
    opened.clear()
    run._measure_round(workload, ["raw", "tritonpy"], 4, endpoints, args, first=1)
    assert opened == [("m_tp", 4), ("m_raw", 4)]  # a new round opens new clients
    assert [c[0] for c in calls] == ["m_tp", "m_raw", "m_raw", "m_tp", "m_tp", "m_raw"]
    # with three variants each round starts with the next one: every variant takes every
    # place of the order (first, middle, last) as often, and the middle one is not always
    # the same variant
    workload.models["control"] = "m_c"
    three = ["raw", "control", "tritonpy"]
    for first, expected in [(0, "m_raw m_c m_tp"), (1, "m_c m_tp m_raw"), (5, "m_tp m_raw m_c")]:
        calls.clear()
        run._measure_round(workload, three, 4, endpoints, args, first=first)
        order = expected.split()
        assert [c[0] for c in calls] == order + order[::-1] + order


def test_fresh_stubs_are_created_in_a_rotating_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # with --fresh-stubs the stub created first changes from round to round (and PyTriton,
    # served elsewhere, is never reloaded); the medians are taken over the rounds
    import argparse

    import benchmarks.run as run

    firsts: List[int] = []

    def a_round(workload: Any, variants: Any, *rest: Any, first: int) -> Dict[str, Any]:
        firsts.append(first)
        return {v: {"throughput": 1.0, "server_cpu_ms": 1.0, "p50_ms": 1.0, "p99_ms": 1.0,
                    "client_cpu_ms": 0.1, "completed": 1, "errors": 0, "first_error": ""}
                for v in variants}  # fmt: skip

    monkeypatch.setattr(run, "_measure_round", a_round)
    orders: List[List[str]] = []
    models = {"raw": "r", "control": "c", "tritonpy": "t", "pytriton": "p"}
    workload = type("W", (), {"name": "add_sub", "models": models})()
    args = argparse.Namespace(repeat=3)
    cells = run._measure_all(
        [workload], [1], {}, args, lambda line: None, lambda served: orders.append(served) or 0.0
    )
    assert orders == [["r", "c", "t"], ["c", "t", "r"], ["t", "r", "c"]]
    # the slices' order turns too (_measure_round), spread over the four variants
    assert firsts == [0, 1, 2]
    orders.clear()
    firsts.clear()
    run._measure_all(
        [workload], [1], {}, argparse.Namespace(repeat=6), lambda line: None,
        lambda served: orders.append(served) or 0.0,
    )  # fmt: skip
    assert [o[0] for o in orders] == ["r", "r", "c", "c", "t", "t"]
    assert firsts == [0, 0, 1, 2, 2, 3]
    assert {c.variant for c in cells} == {"raw", "control", "tritonpy", "pytriton"}


def test_control_copies_raw_and_reports_the_noise_floor(tmp_path: Path) -> None:
    from benchmarks.control import CONTROL, add_control_models, noise_floor

    workloads = build_repository(tmp_path, ["add_sub"])
    assert add_control_models(tmp_path, workloads) == ["add_sub"]
    assert workloads[0].models[CONTROL] == "add_sub_raw_control"
    copy = tmp_path / "add_sub_raw_control"
    assert (copy / "1" / "model.py").read_bytes() == (
        tmp_path / "add_sub_raw" / "1" / "model.py"
    ).read_bytes()
    assert 'name: "add_sub_raw_control"' in (copy / "config.pbtxt").read_text()

    def cell(variant: str, throughput: float, cpu: float) -> Cell:
        return Cell("add_sub", variant, "m", 4, throughput, 1.0, 2.0, cpu, 0.1, 10, 0)

    cells = [cell("raw", 1000.0, 0.5), cell(CONTROL, 950.0, 0.52), cell("tritonpy", 990.0, 0.5)]
    assert noise_floor(cells) == [
        "add_sub c=4: control (a copy of raw) 0.95x throughput, 1.04x server CPU/inf"
    ]
    # a control is not a target: the targets compare tritonpy with raw only
    assert all("control" not in t.description for t in evaluate_targets(cells))


def test_checked_models_take_raw_configs_where_a_workload_has_one(tmp_path: Path) -> None:
    from benchmarks.control import CHECKED, add_checked_models
    from tritonpy.config import config_to_dict, load_config

    workloads = build_repository(tmp_path, ["add_sub", "large_tensor", "stream"])
    # large_tensor has no hand-written checked model: it gets no checked variant
    assert add_checked_models(tmp_path, workloads) == ["add_sub", "stream"]
    for workload in workloads:
        if workload.name == "large_tensor":
            assert CHECKED not in workload.models
            continue
        name = workload.models[CHECKED]
        assert name == f"{workload.name}_checked"
        source = ROOT / "benchmarks" / "workloads" / "models" / f"{name}.py"
        assert (tmp_path / name / "1" / "model.py").read_text() == source.read_text()
        raw, checked = (
            config_to_dict(load_config(tmp_path / model / "config.pbtxt"))
            for model in (workload.models["raw"], name)
        )
        assert checked.pop("name") == name
        raw.pop("name")
        assert checked == raw  # served exactly as raw is (decoupled for the stream)


def test_the_ensemble_control_runs_copies_of_the_members(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the ensemble workload trains the digits MLP in torch")
    from benchmarks.control import CONTROL, add_control_models
    from tritonpy.config import parse_config

    workloads = build_repository(tmp_path, ["ensemble"])
    assert add_control_models(tmp_path, workloads) == ["ensemble"]
    copy = workloads[0].models[CONTROL]
    config = parse_config((tmp_path / copy / "config.pbtxt").read_text())
    steps = [step.model_name for step in config.ensemble_scheduling.step]
    assert steps == [
        f"ensemble_raw_{role}_control" for role in ("preprocess", "classifier", "postprocess")
    ]
    for step in steps:
        assert parse_config((tmp_path / step / "config.pbtxt").read_text()).name == step
    assert (tmp_path / "ensemble_raw_classifier_control" / "1" / "model.pt").is_file()
    assert (tmp_path / "ensemble_raw_postprocess_control" / "labels.txt").is_file()


# -- the workloads' models agree ---------------------------------------------------------------


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("cv2")
    repo = tmp_path_factory.mktemp("bench_repo")
    return repo, build_repository(
        repo, ["add_sub", "image_preprocess", "postprocess", "text", "large_tensor"]
    )


def _run(repo: Path, model: str, payloads: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    with ModelHarness(repo / model) as harness:
        one = [harness.infer(payload) for payload in payloads]
        if harness.config.get("max_batch_size", 0) > 0:
            merged = harness.infer_requests(payloads)  # one execute(), as the dynamic batcher
            for alone, together in zip(one, merged):
                assert not isinstance(together, Exception), together
                assert expected_equal(model, alone, together) == []
        return one


@pytest.mark.parametrize(
    "workload", ["add_sub", "image_preprocess", "postprocess", "text", "large_tensor"]
)
def test_variants_give_identical_outputs(repository: Any, workload: str) -> None:
    repo, workloads = repository
    (spec,) = [w for w in workloads if w.name == workload]
    payloads = spec.payloads[:3]
    reference = _run(repo, spec.models["raw"], payloads)
    assert set(spec.models) >= {"raw", "tritonpy"}
    for variant, model in spec.models.items():
        if variant == "raw":
            continue
        tolerance = spec.mean_abs_tolerance if variant == "tritonpy" else None
        for expected, got in zip(reference, _run(repo, model, payloads)):
            assert expected_equal(f"{workload}/{variant}", expected, got, tolerance) == []


@pytest.mark.parametrize(
    "workload, ablation",
    [("add_sub", "add_sub_dict.py"), ("add_sub", "add_sub_checked.py"),
     ("stream", "stream_generator.py"), ("stream", "stream_checked.py"),
     ("stream", "stream_generator_checked.py")],
)  # fmt: skip
def test_ablations_answer_as_raw_does(tmp_path: Path, workload: str, ablation: str) -> None:
    # the hand-written ablations cpu_split.py --extra serves beside raw do raw's work
    from benchmarks.cpu_split import add_variant

    (spec,) = build_repository(tmp_path, [workload])
    path = ROOT / "benchmarks" / "workloads" / "models" / ablation
    name = add_variant(tmp_path, spec, f"ablation=raw:{path}")
    for payload in spec.payloads[:3]:
        answers = []
        for model in (spec.models["raw"], name):
            with ModelHarness(tmp_path / model) as harness:
                if spec.stream_responses:
                    answers.append(harness.infer_stream(payload))
                else:
                    answers.append([harness.infer(payload)])
        assert len(answers[0]) == len(answers[1]) > 0
        for expected, got in zip(*answers):
            assert expected_equal(f"{workload}/{ablation}", expected, got, None) == []


def test_tritonpy_models_use_two_line_configs(repository: Any) -> None:
    repo, workloads = repository
    for spec in workloads:
        text = (repo / spec.models["tritonpy"] / "config.pbtxt").read_text()
        assert "input" not in text and "max_batch_size" not in text


def test_expected_equal_reports_differences() -> None:
    a = {"X": np.array([1.0, 2.0]), "S": np.array([b"a"], dtype=object)}
    assert expected_equal("w", a, a) == []
    b = {"X": np.array([1.0, 2.5]), "S": np.array([b"b"], dtype=object)}
    assert len(expected_equal("w", a, b)) == 2
    assert expected_equal("w", a, {"X": a["X"]}) == ["w: output S missing from one variant"]
    # a mean absolute tolerance (tritonpy's reduced-size image decoding) replaces allclose
    near = {"X": np.array([1.0, 2.1]), "S": a["S"]}
    assert expected_equal("w", a, near, mean_abs=0.06) == []
    (problem,) = expected_equal("w", a, near, mean_abs=0.04)
    assert "mean absolute difference 0.0500 > 0.0400" in problem


@pytest.mark.parametrize("variant", ["raw", "tritonpy"])
def test_large_tensors_are_copied_only_to_merge_requests(
    repository: Any, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 8 MiB per request: the model's work sees the request's own memory (as_numpy is a view of
    # the stub's shared memory, in the fake as on the server) and its result goes to
    # pb_utils.Tensor as is, or as one view per request of the merged result; the only copy is
    # np.concatenate of several requests' rows, which the hand-written model makes too
    from tritonpy.testing.fake_pb_utils import _tensor

    repo, workloads = repository
    (spec,) = [w for w in workloads if w.name == "large_tensor"]
    made: List[Any] = []
    original = _tensor.Tensor.__init__

    def record(self: Any, name: str, data: Any) -> None:
        original(self, name, data)
        if name == "SCALED":  # the outputs (the harness makes the request's DATA too)
            made.append(data)

    monkeypatch.setattr(_tensor.Tensor, "__init__", record)
    with ModelHarness(repo / spec.models[variant]) as harness:
        calls: List[Any] = []

        class Numpy:  # the model module's `np`, recording what np.multiply reads and writes
            def __getattr__(self, name: str) -> Any:
                return getattr(np, name)

            def multiply(self, data: Any, *args: Any, **kwargs: Any) -> Any:
                scaled = np.multiply(data, *args, **kwargs)
                calls.append((data, scaled))
                return scaled

        harness.module.np = Numpy()
        payload = spec.payloads[0]
        harness.infer(payload)
        (data, scaled), (output,) = calls[-1], made
        assert np.shares_memory(data, payload["DATA"])
        assert np.shares_memory(output, scaled) and output.nbytes == scaled.nbytes
        made.clear()
        harness.infer_requests(spec.payloads[:2])
        data, scaled = calls[-1]
        assert data.shape == (2, *LARGE_TENSOR_DIMS)  # merged: one copy, as raw does
        assert len(made) == 2 and all(np.shares_memory(out, scaled) for out in made)


def test_image_variant_really_uses_reduced_decoding(repository: Any) -> None:
    # the tritonpy image model is not bit-identical to raw (it decodes JPEGs at half size),
    # but within the stated tolerance: the tolerance is not vacuous
    repo, workloads = repository
    (spec,) = [w for w in workloads if w.name == "image_preprocess"]
    raw = _run(repo, spec.models["raw"], spec.payloads[:1])[0]["PIXELS"]
    tritonpy = _run(repo, spec.models["tritonpy"], spec.payloads[:1])[0]["PIXELS"]
    difference = float(np.abs(raw - tritonpy).mean())
    assert 0 < difference <= spec.mean_abs_tolerance


# -- the sequence workload ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def sequences(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("tritonclient.grpc", reason="tritonpy config writes the tritonpy config")
    repo = tmp_path_factory.mktemp("bench_sequence")
    (workload,) = build_repository(repo, ["sequence"])
    return repo, workload


def _running_sums(harness: Any, payloads: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Two sequences (ids 7 and 8) of three requests, interleaved one request a call, then
    two more (9 and 10) with one request of each in every call, as the oldest strategy
    batches them; the outputs in order."""
    answers = []
    for index in range(3):
        flags = 1 if index == 0 else 2 if index == 2 else 0
        for corrid, payload in ((7, payloads[index]), (8, payloads[index + 3])):
            answers.append(harness.infer(payload, correlation_id=corrid, flags=flags))
    for index in range(3):
        flags = 1 if index == 0 else 2 if index == 2 else 0
        merged = harness.infer_requests(
            [payloads[index], payloads[index + 3]], correlation_ids=[9, 10], flags=[flags] * 2
        )
        assert not any(isinstance(r, Exception) for r in merged), merged
        answers += merged
    return answers


def test_sequence_variants_keep_each_sequence_own_state(sequences: Any) -> None:
    repo, workload = sequences
    values = [p["VALUE"] for p in workload.payloads]
    # sequence 7 sums payloads 0, 1, 2 and sequence 8 payloads 3, 4, 5 (so do 9 and 10)
    sums_7 = np.cumsum(values[0:3], axis=0)
    sums_8 = np.cumsum(values[3:6], axis=0)
    expected_sums = [s for pair in zip(sums_7, sums_8) for s in pair]
    results = {}
    for variant in ("raw", "tritonpy"):
        with ModelHarness(repo / workload.models[variant]) as harness:
            results[variant] = _running_sums(harness, workload.payloads)
        for got, total, count in zip(results[variant], expected_sums * 2, [1, 1, 2, 2, 3, 3] * 2):
            np.testing.assert_allclose(got["SUM"], total, rtol=1e-6)
            np.testing.assert_allclose(got["MEAN"], total / count, rtol=1e-6)
    for raw, tritonpy in zip(results["raw"], results["tritonpy"]):
        assert expected_equal("sequence/tritonpy", raw, tritonpy) == []


def test_the_checked_sequence_model_answers_as_raw_does(sequences: Any, tmp_path: Path) -> None:
    import shutil

    from benchmarks.control import add_checked_models

    repo, workload = sequences
    shutil.copytree(repo / workload.models["raw"], tmp_path / workload.models["raw"])
    spec = dataclasses.replace(workload, models={"raw": workload.models["raw"]})
    assert add_checked_models(tmp_path, [spec]) == ["sequence"]
    answers = []
    for model in (spec.models["raw"], spec.models["checked"]):
        with ModelHarness(tmp_path / model) as harness:
            answers.append(_running_sums(harness, workload.payloads))
    assert len(answers[0]) == len(answers[1]) == 12
    for raw, checked in zip(*answers):
        assert expected_equal("sequence/checked", raw, checked) == []


def test_the_shaped_sequence_ablation_answers_as_raw_does(sequences: Any, tmp_path: Path) -> None:
    # sequence_shaped_checked.py (cpu_split.py --extra): tritonpy's shape written by hand
    import shutil

    from benchmarks.cpu_split import add_variant

    repo, workload = sequences
    shutil.copytree(repo / workload.models["raw"], tmp_path / workload.models["raw"])
    spec = dataclasses.replace(workload, models={"raw": workload.models["raw"]})
    path = ROOT / "benchmarks" / "workloads" / "models" / "sequence_shaped_checked.py"
    name = add_variant(tmp_path, spec, f"shaped=raw:{path}")
    answers = []
    for model in (spec.models["raw"], name):
        with ModelHarness(tmp_path / model) as harness:
            answers.append(_running_sums(harness, workload.payloads))
    assert len(answers[0]) == len(answers[1]) == 12
    for raw, shaped in zip(*answers):
        assert expected_equal("sequence/shaped", raw, shaped) == []


def test_sequence_configs_are_the_same_scheduler(sequences: Any) -> None:
    # the tritonpy model's configuration comes from its declarations through tritonpy config
    # (auto-complete cannot add sequence_batching); it serves the same way as raw's
    from tritonpy.config import config_to_dict, load_config

    repo, workload = sequences
    raw, tritonpy = (
        config_to_dict(load_config(repo / workload.models[v] / "config.pbtxt"))
        for v in ("raw", "tritonpy")
    )
    assert tritonpy["sequence_batching"] == raw["sequence_batching"]
    assert raw["sequence_batching"]["oldest"]["max_candidate_sequences"] == 16
    for key in ("max_batch_size", "input", "output", "instance_group"):
        assert tritonpy[key] == raw[key], key
    assert "dynamic_batching" not in raw and "dynamic_batching" not in tritonpy


def test_sequence_cost_times_both_models_per_request(sequences: Any) -> None:
    from benchmarks.sequence_cost import LIVE, render_sequence_costs, run_sequence_costs

    repo, workload = sequences
    rows = run_sequence_costs(repo, workload, seconds=0.02)
    cases = [(r.variant, r.part) for r in rows]
    assert cases == [("raw", "state alone"), ("tritonpy", "state alone"),
                     ("raw", "execute()"), ("tritonpy", "execute()")] * 2  # fmt: skip
    assert [r.per_call for r in rows] == [1] * 4 + [LIVE] * 4
    assert all(0 < r.us_per_request < 10_000 for r in rows)
    lines = render_sequence_costs(rows)
    assert lines[1].startswith("tritonpy: state alone, one request a call")
    assert "us against raw" in lines[1] and "against" not in lines[0]
    assert lines[7].startswith(f"tritonpy: execute(), {LIVE} sequences a call")


def test_held_sequences_go_on_across_slices_and_end_when_closed() -> None:
    # the load engine ends a caller's sequence when its window stops; the benchmark keeps a
    # sequence model's clients (and their sequences) from one slice of a round to the next
    from benchmarks.loadgen import HeldCaller, close_clients

    class FakeSequence:
        def __init__(self) -> None:
            self.sent = self.finished = 0

        def __call__(self) -> None:
            self.sent += 1

        def finish(self) -> None:
            self.finished += 1

    inner = FakeSequence()
    held = [HeldCaller(inner)]
    for _ in range(2):
        run_closed_loop(held.__getitem__, concurrency=1, warmup=0.0, duration=0.02)
    assert inner.sent > 0 and inner.finished == 0
    close_clients([*held, "a plain caller"])
    assert inner.finished == 1


def test_a_stream_serves_every_slice_of_its_round(monkeypatch: pytest.MonkeyPatch) -> None:
    # regression: a stream caller's finish() closes its gRPC stream for good, and the engine
    # calls it at each window's end; unheld, every slice after a round's first failed
    # ("Cannot invoke RPC: Channel closed!") and the stream figures measured only failures
    import argparse

    import benchmarks.run as run

    streams: List[Any] = []

    class FakeStream:
        def __init__(self) -> None:
            self.closed = False
            self.sent = 0

        def __call__(self) -> None:
            if self.closed:
                raise RuntimeError("Cannot invoke RPC: Channel closed!")
            self.sent += 1

        def finish(self) -> None:
            self.closed = True

    def factory(url: str, model: str, payloads: Any) -> Any:
        def make(index: int) -> FakeStream:
            streams.append(FakeStream())
            return streams[-1]

        return make

    monkeypatch.setattr(run, "stream_caller_factory", factory)
    monkeypatch.setattr(run, "window_sample", lambda pid: {"server:1": 0.0, "client": 0.0})
    workload = type("W", (), {"payloads": [{}], "sequence_length": 0, "stream_responses": 4,
                              "models": {"raw": "s_raw", "tritonpy": "s_tp"}})()  # fmt: skip
    args = argparse.Namespace(slices=4, warmup=0.0, duration=0.08)
    figures = run._measure_round(workload, ["raw", "tritonpy"], 2, {"server": ("u", 1)}, args)
    assert [f["errors"] for f in figures.values()] == [0, 0]
    assert all(f["completed"] > 0 for f in figures.values())
    assert len(streams) == 4 and all(s.sent > 0 for s in streams)
    assert all(s.closed for s in streams)  # closed once, when the round was over


def test_a_cell_with_failed_requests_fails_the_run_and_leaves_the_pool() -> None:
    from benchmarks.pooled import failed_rounds, pooled_ratios, render_pooled
    from benchmarks.report import evaluate_targets

    raw = _rounds_cell("raw", [100.0, 100.0, 100.0], [1.0, 1.0, 1.0])
    tp = _rounds_cell("tritonpy", [100.0, 500.0, 100.0], [1.0, 0.2, 1.0])
    tp.rounds[1]["errors"] = 700  # a round of fast failures: 5x "faster", 5x "cheaper"
    tp = dataclasses.replace(tp, errors=700, first_error="Cannot invoke RPC: Channel closed!")
    targets = evaluate_targets([raw, tp])
    assert not targets[0].passed
    assert targets[0].description == "text c=4 tritonpy: every request answered"
    assert "700 failed" in targets[0].detail and "Channel closed" in targets[0].detail
    (pooled,) = pooled_ratios([raw, tp])
    assert pooled.throughput.n == 2 and pooled.throughput.ratio == pytest.approx(1.0)
    assert failed_rounds([raw, tp]) == [
        "text tritonpy c=4: 1 of 3 rounds had failed requests (700): "
        "Cannot invoke RPC: Channel closed!"
    ]
    lines = render_pooled([raw, tp])
    assert any(line.startswith("LEFT OUT (requests failed): text") for line in lines)


def test_a_sequence_workload_opens_sequence_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks.loadgen as loadgen
    import benchmarks.run as run

    made: List[Any] = []

    def factory(url: str, protocol: str, model: str, payloads: Any, **kwargs: Any) -> Any:
        made.append((url, protocol, model, kwargs["length"], kwargs["ids"]))
        return lambda index: index

    monkeypatch.setattr(loadgen, "sequence_caller_factory", factory)
    workload = type("W", (), {"payloads": [{}], "sequence_length": 20})()
    clients = run.open_clients("url", workload, "m", 3)
    assert made == [("url", "grpc", "m", 20, loadgen.SEQUENCE_IDS)]
    assert all(isinstance(c, loadgen.HeldCaller) for c in clients)


def test_the_output_check_compares_every_request_of_a_sequence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import benchmarks.loadgen as loadgen

    sent: List[Any] = []

    def sequence_once(url: str, model: str, payloads: Any, **kwargs: Any) -> Any:
        sent.append((model, kwargs["length"], kwargs["sequence_id"]))
        last = 4.0 if model == "m_tp" else 3.0
        return [{"SUM": np.array([1.0])}, {"SUM": np.array([last])}]

    monkeypatch.setattr(loadgen, "grpc_sequence_once", sequence_once)
    models = {"raw": "m_raw", "tritonpy": "m_tp"}
    workload = type("W", (), {"name": "sequence", "models": models, "payloads": [{}],
                              "sequence_length": 2, "mean_abs_tolerance": None})()  # fmt: skip
    problems = loadgen.check_outputs([workload], lambda variant: "url")
    assert [s[:2] for s in sent] == [("m_raw", 2), ("m_tp", 2)]
    assert sent[0][2] != sent[1][2]  # each check a sequence of its own
    assert len(problems) == 1 and problems[0].startswith("sequence/tritonpy request 2: output SUM")


@pytest.mark.integration
def test_quick_sequence_run_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("tritonclient.grpc")
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--workloads=sequence",
         "--concurrency=4", "--control", "--checked", f"--json={out}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: a target missed (timing noise)
    import json

    document = json.loads(out.read_text())
    assert document["output_check_problems"] == []
    assert {c["variant"] for c in document["cells"]} == {"raw", "control", "checked", "tritonpy"}
    assert all(c["errors"] == 0 and c["completed"] > 0 for c in document["cells"])
    assert document["settings"]["checked"] is True
    assert {(p["variant"], p["against"]) for p in document["pooled"]} >= {
        ("tritonpy", "checked"), ("checked", "control"),
    }  # fmt: skip
    assert [c["variant"] for c in document["sequence_costs"]] == ["raw", "tritonpy"] * 4
    assert "Per-request cost of a sequence's state" in proc.stdout


# -- the stream workload --------------------------------------------------------------------------


def test_stream_variants_send_the_same_tokens(tmp_path: Path) -> None:
    (spec,) = build_repository(tmp_path, ["stream"])
    assert spec.stream_responses == STREAM_RESPONSES and set(spec.models) == {"raw", "tritonpy"}
    streams = {}
    for variant, model in spec.models.items():
        with ModelHarness(tmp_path / model) as harness:
            assert harness.decoupled
            streams[variant] = [
                [int(part["TOKEN"][0]) for part in harness.infer_stream(payload)]
                for payload in spec.payloads[:3]
            ]
    assert streams["raw"] == streams["tritonpy"]
    assert all(len(tokens) == STREAM_RESPONSES for tokens in streams["raw"])
    assert len({tuple(tokens) for tokens in streams["raw"]}) == 3  # the prompts matter
    # the tritonpy model's two-line config: auto-complete makes it decoupled
    assert "decoupled" not in (tmp_path / spec.models["tritonpy"] / "config.pbtxt").read_text()


def test_stream_figures_reach_the_table_and_the_pooled_view() -> None:
    from benchmarks.pooled import render_pooled
    from benchmarks.report import render_stream_table

    def stream_cell(variant: str, firsts: List[float], cpu: float) -> Cell:
        rounds = [
            {"throughput": 100.0, "server_cpu_ms": cpu, "first_p50_ms": first} for first in firsts
        ]
        return Cell("stream", variant, f"stream_{variant}", 4, 100.0, 5.0, 9.0, cpu, 0.1, 300,
                    0, rounds=rounds, responses_per_s=1600.0, first_p50_ms=firsts[1],
                    first_p99_ms=2.0)  # fmt: skip

    cells = [
        stream_cell("raw", [1.0, 1.0, 1.0], 1.0),
        stream_cell("tritonpy", [1.1, 1.1, 1.1], 1.0),
    ]
    table = render_stream_table(cells)
    assert "resp/s" in table and "1,600" in table and "1.10" in table  # first p50 over raw's
    assert render_stream_table([_cell("raw", 1.0, 1.0)]) == ""  # no stream: no table
    lines = render_pooled(cells)
    assert any(line.startswith("time to first response") for line in lines)
    (first,) = [line for line in lines if line.startswith("stream") and "1.100x" in line]
    assert "tritonpy / raw" in first


@pytest.mark.integration
def test_quick_stream_run_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("tritonclient.grpc")
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick",
         "--workloads=stream,large_tensor", "--concurrency=2", "--control", "--checked",
         "--no-inprocess", f"--json={out}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: a target missed (timing noise)
    import json

    document = json.loads(out.read_text())
    assert document["output_check_problems"] == []
    cells = document["cells"]
    assert {(c["workload"], c["variant"]) for c in cells} == {
        ("stream", "raw"), ("stream", "control"), ("stream", "checked"), ("stream", "tritonpy"),
        ("large_tensor", "raw"), ("large_tensor", "control"), ("large_tensor", "raw_malloc"),
        ("large_tensor", "tritonpy"),
    }  # fmt: skip
    assert all(c["errors"] == 0 and c["completed"] > 0 for c in cells)
    for cell in cells:
        if cell["workload"] == "stream":  # every request streamed all its responses
            assert cell["responses_per_s"] == pytest.approx(
                STREAM_RESPONSES * cell["throughput"], rel=0.05
            )
            assert 0 < cell["first_p50_ms"] <= cell["p50_ms"]
        else:
            assert math.isnan(cell["responses_per_s"])
    assert "Streaming (decoupled) models" in proc.stdout
    assert "time to first response, p50" in proc.stdout


# -- report --------------------------------------------------------------------------------------


def _cell(variant: str, throughput: float, cpu: float, workload: str = "postprocess") -> Cell:
    return Cell(
        workload, variant, f"{workload}_{variant}", 4, throughput, 1.0, 2.0, cpu, 0.1, 10, 0
    )


def test_targets_and_table_from_cells() -> None:
    cells = [
        _cell("raw", 1000.0, 0.50),
        _cell("tritonpy", 990.0, 0.51),
        _cell("naive", 700.0, 0.70),
        _cell("pytriton", 200.0, 2.0),
    ]
    targets = {t.description: t.passed for t in evaluate_targets(cells)}
    assert targets == {
        "postprocess c=4: tritonpy throughput >= 0.97x raw": True,
        "postprocess c=4: tritonpy server CPU/inf <= 1.03x raw": True,
        "postprocess c=4: tritonpy throughput >= 1.2x naive raw": True,
        "postprocess c=4: tritonpy throughput >= 3.0x PyTriton": True,
    }
    slow = [_cell("raw", 1000.0, 0.50), _cell("tritonpy", 900.0, 0.60)]
    assert [t.passed for t in evaluate_targets(slow)] == [False, False]
    images = [
        _cell("raw", 100.0, 5.0, "image_preprocess"),
        _cell("tritonpy", 125.0, 4.0, "image_preprocess"),
    ]
    assert {t.description: t.passed for t in evaluate_targets(images)} == {
        "image_preprocess c=4: tritonpy throughput >= 0.97x raw": True,
        "image_preprocess c=4: tritonpy server CPU/inf <= 1.03x raw": True,
        "image_preprocess c=4: tritonpy throughput >= 1.3x raw": False,
    }
    table = render_table(cells)
    assert "postprocess" in table and "0.99" in table and "srv CPU ms/inf" in table


@pytest.mark.integration
def test_quick_run_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("tritonclient.grpc")
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--quick",
            "--workloads=add_sub",
            "--concurrency=1",
            "--repeat=2",
            "--fresh-stubs",
            "--no-inprocess",
            f"--json={out}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: a target missed (timing noise)
    assert "add_sub" in proc.stdout and "targets passed" in proc.stdout
    import json

    document = json.loads(out.read_text())
    assert {c["variant"] for c in document["cells"]} == {"raw", "tritonpy"}
    assert all(c["errors"] == 0 and c["completed"] > 0 for c in document["cells"])
    assert document["output_check_problems"] == []
    # --fresh-stubs: both rounds on new stubs of both variants
    assert document["settings"]["fresh_stubs"] is True
    assert proc.stderr.count("add_sub           new stubs: 2 models") == 2, proc.stderr[-2000:]
    assert all(len(c["rounds"]) == 2 for c in document["cells"])
    # the whole run's view: printed, and in the JSON (two paired rounds of tritonpy / raw)
    assert "No tax over the whole run" in proc.stdout
    assert "add_sub           tritonpy / raw" in proc.stdout
    [pooled] = document["pooled"]
    assert (pooled["variant"], pooled["against"], pooled["throughput"]["n"]) == (
        "tritonpy",
        "raw",
        2,
    )
    assert document["no_tax_passes"]["tritonpy"][1] == 2  # throughput and CPU at c=1


def test_fresh_stubs_reload_the_members_of_an_ensemble(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.fresh import restart_stubs, stub_models

    def model(name: str, steps: List[str] = []) -> None:  # noqa: B006 - read only
        (tmp_path / name).mkdir()
        text = f'name: "{name}"\nbackend: "python"\n'
        if steps:
            text = f'name: "{name}"\nplatform: "ensemble"\nensemble_scheduling {{\n'
            for step in steps:
                text += f'  step {{ model_name: "{step}" model_version: -1 }}\n'
            text += "}\n"
        (tmp_path / name / "config.pbtxt").write_text(text)

    for name in ("pre", "net", "post"):
        model(name)
    model("inner", ["net", "post"])
    model("outer", ["pre", "inner", "post"])
    assert stub_models(tmp_path, "pre") == ["pre"]
    assert stub_models(tmp_path, "outer") == ["pre", "net", "post"]

    reloaded: List[str] = []

    def reload_model(url: str, name: str) -> List[str]:
        assert url == "http://h:1"
        reloaded.append(name)
        return []

    monkeypatch.setattr("tritonpy.server._supervise.reload_model", reload_model)
    assert restart_stubs("http://h:1", tmp_path, ["outer", "post", "pre"]) >= 0.0
    assert reloaded == ["pre", "net", "post"]  # each model once


# -- the in-stub probe ---------------------------------------------------------------------------


def test_stub_probe_model_holds_both_variants_and_its_settings(tmp_path: Path) -> None:
    from benchmarks.stub_probe import build_probe

    name = build_probe(
        tmp_path, "add_sub", tmp_path / "out.json", calls=500, profile=True, evict_kb=64
    )
    version = tmp_path / name / "1"
    assert sorted(p.name for p in version.iterdir()) == [
        "model.py",
        "variant_raw.py",
        "variant_tritonpy.py",
    ]
    compile((version / "model.py").read_text(), "model.py", "exec")  # the probe parses
    config = (tmp_path / name / "config.pbtxt").read_text()
    assert f'name: "{name}"' in config and "max_batch_size: 0" in config
    for key, value in (("probe_calls", "500"), ("probe_profile", "1"), ("probe_evict_kb", "64")):
        assert f'key: "{key}" value {{ string_value: "{value}" }}' in config


def test_stub_probe_of_an_ensemble_member_carries_its_files_and_parameters(
    tmp_path: Path,
) -> None:
    from benchmarks.stub_probe import build_probe
    from tritonpy.config import parse_config

    repo = tmp_path / "repo"
    name = build_probe(repo, "digits_postprocess", tmp_path / "out.json", 500, False, requests=4)
    version = repo / name / "1"
    assert {"model.py", "variant_raw.py", "variant_tritonpy.py"} <= {
        p.name for p in version.iterdir()
    }
    assert (repo / name / "labels.txt").read_text().split() == [str(d) for d in range(10)]
    config = parse_config((repo / name / "config.pbtxt").read_text())
    assert config.name == name and config.max_batch_size == 64
    parameters = {key: value.string_value for key, value in config.parameters.items()}
    assert parameters["top_k"] == "3" and parameters["probe_requests"] == "4"
    assert "import tritonpy" in (version / "variant_tritonpy.py").read_text()

    name = build_probe(repo, "digits_preprocess", tmp_path / "out.json", 500, False)
    config = parse_config((repo / name / "config.pbtxt").read_text())
    assert config.parameters["size"].string_value == "8x8"
    assert config.parameters["color"].string_value == "GRAY"


def test_steal_is_read_from_proc_stat(tmp_path: Path) -> None:
    from benchmarks.machine import cpu_times, steal_percent

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 50 0 25 400 5 0 2 18 0 0\n")
    before = cpu_times(stat)
    assert before == (35, 1000)
    stat.write_text("cpu  200 0 100 1500 10 0 5 185 0 0\n")
    assert steal_percent(before, cpu_times(stat)) == pytest.approx(100.0 * 150 / 1000)
    assert cpu_times(tmp_path / "missing") is None
    assert steal_percent(None, before) is None


def test_stub_counters_are_read_from_proc() -> None:
    import os

    from benchmarks.stub_load import COUNTERS, read_counters

    before = read_counters(os.getpid())
    sum(range(2_000_000))  # some user CPU
    after = read_counters(os.getpid())
    assert set(before) == set(COUNTERS)
    assert after["user_us"] >= before["user_us"] and after["minor_faults"] >= before["minor_faults"]
    assert after["voluntary_switches"] >= before["voluntary_switches"] >= 0


def test_stub_load_reports_every_stub_of_each_variant() -> None:
    pytest.importorskip("tritonclient.grpc")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "stub_load.py"),
            "--workload=add_sub",
            "--concurrency=2",
            "--requests=400",
            "--rounds=2",
            "--execute-cpu",
            "--control",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    # --control: the copy of the hand-written model is measured like the others
    for variant, model in (("raw", "raw"), ("tritonpy", "tritonpy"), ("control", "raw_control")):
        (head,) = [line for line in lines if line.startswith(f"{variant} ")]
        assert "infer/s" in head and "tritonserver" in head
        (stub,) = [line for line in lines if line.strip().startswith(f"add_sub_{model} ")]
        # CPU time comes in clock ticks (10 ms): 800 requests of ~40 us add up to several
        user = float(stub.split("user")[1].split()[0])
        system = float(stub.split("system")[1].split()[0])
        assert user + system > 0, stub
        # execute() of each stub, timed inside it: add_sub is unbatched, every call alone
        execute = float(stub.split("execute")[1].split()[0])
        alone = float(stub.split("alone")[1].split()[0].rstrip(","))
        assert 0 < execute == alone < user + system + 1000, stub


def test_stub_probe_times_calls_after_evicting_the_caches() -> None:
    pytest.importorskip("tritonclient.grpc")
    from benchmarks.stub_probe import run_probe

    report = run_probe("add_sub", calls=200, evict_kb=256)
    for variant in ("raw", "tritonpy"):
        assert 0 < report[variant]["min_us"] <= report[variant]["median_us"], report


def _rounds_cell(
    variant: str, throughputs: List[float], cpus: List[float], workload: str = "text", conc: int = 4
) -> Cell:
    rounds = [{"throughput": t, "server_cpu_ms": c} for t, c in zip(throughputs, cpus)]
    return Cell(
        workload,
        variant,
        f"{workload}_{variant}",
        conc,
        statistics.median(throughputs),
        1.0,
        2.0,
        statistics.median(cpus),
        0.1,
        10,
        0,
        rounds=rounds,
    )


def test_pooled_ratios_pair_rounds_and_give_a_t_interval() -> None:
    from benchmarks.pooled import geometric_interval, pooled_ratios, t_quantile_975

    assert t_quantile_975(2) == pytest.approx(4.303)
    assert t_quantile_975(31) == pytest.approx(2.0395, abs=0.0001)  # from the expansion
    assert t_quantile_975(60) == pytest.approx(2.0003, abs=0.0001)
    # 0.9 and 1/0.9 weigh alike: the geometric mean is 1
    both = geometric_interval([0.9, 1 / 0.9])
    assert both.ratio == pytest.approx(1.0) and both.n == 2
    half = 12.706 * statistics.stdev([math.log(0.9), -math.log(0.9)]) / math.sqrt(2)
    assert both.low == pytest.approx(math.exp(-half)) and both.high == pytest.approx(math.exp(half))
    one = geometric_interval([1.05])
    assert one.ratio == pytest.approx(1.05) and math.isnan(one.low) and str(one) == "1.050x"
    assert math.isnan(geometric_interval([]).ratio)

    cells = [
        _rounds_cell("raw", [100.0, 200.0, 100.0], [1.0, 1.0, 2.0]),
        # round i against raw's round i: 0.9, 0.9, 1.0 (a median over rounds would say 0.5/1.0)
        _rounds_cell("tritonpy", [90.0, 180.0, 100.0], [1.1, 1.1, 2.0]),
        _rounds_cell("raw", [50.0, 50.0], [1.0, 1.0], conc=16),
        _rounds_cell("tritonpy", [45.0, 45.0], [1.0, 1.0], conc=16),
        _rounds_cell("raw", [10.0], [1.0], workload="add_sub"),
        _rounds_cell("control", [11.0], [0.9], workload="add_sub"),
    ]
    pooled = {(p.workload, p.variant, p.against): p for p in pooled_ratios(cells)}
    # in the workloads' order, then tritonpy / raw, control / raw, tritonpy / control
    assert list(pooled) == [("add_sub", "control", "raw"), ("text", "tritonpy", "raw")]
    text = pooled[("text", "tritonpy", "raw")]
    assert text.throughput.n == 5  # three rounds at c=4, two at c=16
    expected = math.exp(statistics.fmean(math.log(r) for r in [0.9, 0.9, 1.0, 0.9, 0.9]))
    assert text.throughput.ratio == pytest.approx(expected)
    assert text.throughput.low < text.throughput.ratio < text.throughput.high < 1.0
    assert text.server_cpu.ratio == pytest.approx(math.exp(2 * math.log(1.1) / 5))
    assert pooled[("add_sub", "control", "raw")].throughput.ratio == pytest.approx(1.1)

    # several runs: rounds pair inside their run only, and tritonpy also meets the control
    other_run = [
        _rounds_cell("raw", [10.0, 10.0], [1.0, 1.0], workload="add_sub"),
        _rounds_cell("control", [12.1], [1.0], workload="add_sub"),  # one round: pairs once
        _rounds_cell("tritonpy", [11.0, 11.0], [1.0, 1.0], workload="add_sub"),
    ]
    both = {(p.workload, p.variant, p.against): p for p in pooled_ratios(cells, other_run)}
    assert list(both) == [
        ("add_sub", "tritonpy", "raw"),
        ("add_sub", "control", "raw"),
        ("add_sub", "tritonpy", "control"),
        ("text", "tritonpy", "raw"),
    ]
    control = both[("add_sub", "control", "raw")].throughput
    assert control.n == 2 and control.ratio == pytest.approx(math.sqrt(1.1 * 1.21))
    against_control = both[("add_sub", "tritonpy", "control")].throughput
    assert against_control.n == 1 and against_control.ratio == pytest.approx(11.0 / 12.1)

    # --checked: the engine's cost beyond the checks, and the checks' own cost
    checked = _rounds_cell("checked", [11.5, 11.0], [1.0, 1.1], workload="add_sub")
    checked_run = [*other_run, checked]
    split = {(p.variant, p.against): p for p in pooled_ratios(checked_run)}
    assert list(split) == [
        ("tritonpy", "raw"), ("control", "raw"), ("tritonpy", "control"),
        ("tritonpy", "checked"), ("checked", "control"),
    ]  # fmt: skip
    engine = split[("tritonpy", "checked")]
    assert engine.throughput.n == 2
    assert engine.throughput.ratio == pytest.approx(math.sqrt(11.0 / 11.5))
    assert engine.server_cpu.ratio == pytest.approx(math.sqrt(1.0 / 1.1))
    checks = split[("checked", "control")]
    assert checks.throughput.n == 1 and checks.throughput.ratio == pytest.approx(11.5 / 12.1)


def test_the_control_is_judged_by_the_no_tax_lines_of_tritonpy() -> None:
    from benchmarks.pooled import no_tax_passes, render_pooled

    cells = [
        _rounds_cell("raw", [100.0, 100.0, 100.0], [1.0, 1.0, 1.0]),
        _rounds_cell("control", [95.0, 96.0, 94.0], [1.0, 1.0, 1.0]),  # 0.95x: one line missed
        _rounds_cell("tritonpy", [99.0, 100.0, 98.0], [1.0, 1.0, 1.05]),
        _rounds_cell("naive", [50.0, 50.0, 50.0], [2.0, 2.0, 2.0]),  # not a no-tax line
    ]
    assert no_tax_passes(cells) == (2, 2)
    assert no_tax_passes(cells, "control") == (1, 2)
    lines = render_pooled(cells)
    assert lines[-1] == (
        "no-tax targets passed: tritonpy 2/2, the control judged by the same lines 1/2"
    )
    assert any(line.startswith("text              control / raw ") for line in lines)
    assert any(line.startswith("text              tritonpy / control ") for line in lines)
    # without a control there is no control count; without rounds nothing to pool
    assert render_pooled(cells[::2])[-1] == "no-tax targets passed: tritonpy 2/2"
    assert render_pooled([_cell("raw", 1.0, 1.0), _cell("tritonpy", 1.0, 1.0)]) == []


def test_pooled_cli_reads_the_json_of_several_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses
    import json

    from benchmarks.pooled import load_run, main

    files = []
    for index, speed in enumerate([0.9, 1.0]):
        cells = [
            _rounds_cell("raw", [100.0, 100.0], [1.0, 1.0]),
            _rounds_cell("tritonpy", [100.0 * speed, 100.0], [1.0, 1.0]),
        ]
        path = tmp_path / f"run{index}.json"
        path.write_text(json.dumps({"cells": [dataclasses.asdict(c) for c in cells]}))
        files.append(path)
    assert load_run(files[0])[1].rounds[0]["throughput"] == pytest.approx(90.0)
    assert main([str(f) for f in files]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:5] == ["text", "tritonpy", "/", "raw", "4"]
    assert out[1].split()[5] == f"{0.9**0.25:.3f}x"
    assert out[2:] == [
        "no-tax targets passed in run 1: tritonpy 1/2",
        "no-tax targets passed in run 2: tritonpy 2/2",
    ]


# -- cold start (benchmarks/cold_start.py) ------------------------------------------------------


def test_cold_start_median_interval_is_distribution_free() -> None:
    from benchmarks.cold_report import median_interval

    # 6 rounds: the whole range, 1 - 2/64 = 96.9 %; 10 rounds: the 2nd to the 9th, 97.9 %
    assert median_interval([3.0, 1.0, 2.0, 6.0, 5.0, 4.0]) == (3.5, 1.0, 6.0, 1 - 2 / 64)
    median, low, high, confidence = median_interval([float(v) for v in range(10, 0, -1)])
    assert (median, low, high) == (5.5, 2.0, 9.0)
    assert confidence == pytest.approx(1 - 2 * 11 / 1024)
    # below 6 rounds no interval reaches 95 %: the range, with its confidence
    assert median_interval([2.0, 1.0, 3.0]) == (2.0, 1.0, 3.0, 0.75)
    assert median_interval([math.nan, 4.0])[:3] == (4.0, 4.0, 4.0)
    assert all(math.isnan(v) for v in median_interval([]))


def test_cold_start_ratios_pair_rounds_and_judge_against_the_control() -> None:
    from benchmarks.cold_report import render_summaries, summarize

    rounds = {
        "raw": {"load_s": [1.0, 2.0, 1.0, 2.0]},
        "control": {"load_s": [1.1, 1.8, 0.9, 2.2]},  # within 10 % of raw, round by round
        "tritonpy": {"load_s": [1.05, 2.0, 1.0, 2.0]},  # inside the control's interval
        "env_archive": {"load_s": [2.0, 4.2, 1.9, 4.0]},  # twice raw in every round
        "unpaired": {"load_s": [2.0]},
    }
    by = {s.variant: s for s in summarize(rounds, ["load_s"])}
    # a round's ratio pairs with raw's same round: the slow rounds of raw do not blur it
    assert by["env_archive"].ratio.ratio == pytest.approx(2.0, rel=0.03)
    assert by["env_archive"].ratio.low > 1.5
    assert by["env_archive"].verdict == "+100 % against raw, outside the control's interval"
    assert by["tritonpy"].verdict == "noise (inside the control's interval)"
    assert by["control"].verdict.startswith("the control")
    assert by["raw"].verdict == "the reference"
    assert by["unpaired"].verdict == "too few rounds to tell noise from a difference"
    lines = render_summaries(list(by.values()), {"load_s": "s"})
    assert lines[0].startswith("load_s (s): median (interval), ratio to raw (95 % interval)")
    assert f"control / raw {by['control'].ratio}" in lines[0]
    (row,) = [line for line in lines if line.split()[0] == "env_archive"]
    # the median, the range (4 rounds: 87.5 %), the paired ratio and the verdict
    assert row.split()[1:4] == ["3.00", "(1.90-4.20", "88"]
    assert str(by["env_archive"].ratio) in row and row.endswith("outside the control's interval")


def test_cold_start_verdict_when_the_control_is_tight() -> None:
    from benchmarks.cold_report import verdict
    from benchmarks.pooled import Interval

    tight = Interval(1.0, 0.99, 1.01, 6)
    assert verdict(Interval(1.02, 0.97, 1.07, 6), tight).startswith("not told from raw")
    assert verdict(Interval(1.05, 1.03, 1.07, 6), tight).startswith("+5 % against raw")
    assert verdict(Interval(0.9, 0.88, 0.92, 6), tight).startswith("-10 % against raw")
    # a control that differs from raw itself: the difference is said with that caveat
    biased = Interval(0.87, 0.77, 0.98, 6)
    assert verdict(Interval(0.7, 0.5, 0.97, 6), biased) == (
        "-30 % against raw, outside the control's interval (but the control differs from raw too)"
    )


def test_cold_start_reads_a_stub_and_the_machine_from_proc(tmp_path: Path) -> None:
    import os

    from benchmarks.cold_report import machine_jiffies, other_cores, parse_smaps_rollup, rotated

    text = "55d0-7ffd ---p 00000000 00:00 0   [rollup]\nRss:   40960 kB\nPss:   23552 kB\n"
    assert parse_smaps_rollup(text) == {"rss_mb": 40.0, "pss_mb": 23.0}
    mine = parse_smaps_rollup(Path(f"/proc/{os.getpid()}/smaps_rollup").read_text())
    assert 0 < mine["pss_mb"] <= mine["rss_mb"]
    # busy: user + nice + system + irq + softirq; idle, iowait and steal are not
    assert machine_jiffies("cpu  100 5 50 1000 20 3 2 40 0 0\ncpu0 1 2 3\n") == (160, 1220)
    # 2 s of the machine's busy time in 4 s, of which 1 s was this run's own: 0.25 cores
    assert other_cores(200, 1.0, 4.0, hz=100) == pytest.approx(0.25)
    assert other_cores(100, 3.0, 4.0, hz=100) == 0.0
    # over as many rounds as variants every variant comes first once
    firsts = [rotated("abc", index, 3)[0] for index in range(3)]
    assert firsts == ["a", "b", "c"] and rotated("abc", 1, 3) == ["b", "c", "a"]


def test_cold_start_serve_phase_pairs_each_archive_with_its_extracting_run() -> None:
    from benchmarks.cold_start import before_after, serve_variants

    repos = {v: Path(v) for v in ("raw", "env_folder", "env_archive", "env_archive_x4")}
    served = serve_variants(repos)
    assert list(served) == ["raw", "env_folder", "env_archive", "env_archive_extracting",
                            "env_archive_x4", "env_archive_x4_extracting"]  # fmt: skip
    assert served["env_archive_extracting"] == Path("env_archive")
    figures = {
        "raw": {"serving_s": [2.0, 2.0]},
        "env_archive": {"serving_s": [3.0, 3.5]},
        "env_archive_extracting": {"serving_s": [6.0, 7.0]},
    }
    (line,) = before_after(figures, "serving_s")
    assert line.startswith("env_archive: unpacked copy / extracting 0.500x")
    assert line.endswith("(3.25 s less, medians)")


@pytest.mark.integration
def test_quick_cold_start_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("tritonclient.grpc")
    import json

    out = tmp_path / "cold.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cold_start.py"), "--quick", f"--json={out}"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(out.read_text())
    loads = document["rounds"]["loads"]
    assert set(loads) == {"raw", "control", "tritonpy", "env_folder", "env_archive",
                          "env_archive_new"}  # fmt: skip
    for variant, figures in loads.items():
        assert len(figures["load_s"]) == 2 and min(figures["load_s"]) > 0, variant
        assert min(figures["first_ms"]) > 0 and min(figures["pss_mb"]) > 0, variant
        assert min(figures["rss_mb"]) >= max(figures["pss_mb"]) * 0.5, variant
    roots = {variant: loads[variant]["env_root"] for variant in loads}
    assert roots["raw"] == ["", ""]
    # a folder is used in place; an archive is extracted into /tmp/python_env_* once per
    # server process (the same copy at every reload), and again for every new path
    assert all(r.endswith("env_folder") for r in roots["env_folder"])
    assert len(set(roots["env_archive"])) == 1 and "python_env_" in roots["env_archive"][0]
    assert len(set(roots["env_archive_new"])) == 2
    assert all("python_env_" in r for r in roots["env_archive_new"])
    starts = {"raw", "control", "env_folder", "env_archive"}
    for phase, key, variants in (
        ("starts", "ready_s", starts),
        ("serve", "serving_s", starts | {"env_archive_extracting"}),  # --no-unpacked-envs
    ):
        figures = document["rounds"][phase]
        assert set(figures) == variants
        assert all(len(f[key]) == 2 and min(f[key]) > 0 for f in figures.values()), phase
    verdicts = {(s["variant"], s["measure"]): s["verdict"]
                for s in document["summaries"]["loads"]}  # fmt: skip
    assert verdicts[("raw", "load_s")] == "the reference"
    assert "Model loads in one tritonserver" in proc.stdout
    assert "tritonpy serve starts" in proc.stdout and "control / raw" in proc.stdout
    assert "other processes kept" in proc.stdout
    assert "env_archive: unpacked copy / extracting " in proc.stdout
