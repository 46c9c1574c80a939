"""``tritonpy perf``'s pieces that need no server: Triton statistics, the report, the
perf_analyzer CSV parser, the server CPU accounting and the closed-loop engine on a fake caller."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

from tritonpy._tooling.processes import cpu_used
from tritonpy.perf._cpu import (
    pid_listening_on,
    server_pid,
    server_seconds,
    tree_cpu_snapshot,
    window_sample,
)
from tritonpy.perf._engine import FAILURE_STREAK, LoadWindow, Progress, run_closed_loop
from tritonpy.perf._perf_analyzer import PerfAnalyzerError, build_command, parse_csv
from tritonpy.perf._report import PerfReport, point_from_window
from tritonpy.perf._runner import perf_analyzer_input_data
from tritonpy.perf._stats import ModelStats


def _stats_reply(count: int, executions: int, queue_ns: int, infer_ns: int, *, grpc: bool) -> Dict:
    def num(value: int) -> object:
        return str(value) if grpc else value  # gRPC's JSON writes int64 as strings

    return {
        "model_stats": [
            {
                "name": "m",
                "version": "1",
                "inference_count": num(count),
                "execution_count": num(executions),
                "inference_stats": {
                    "success": {"count": num(count), "ns": num(queue_ns + infer_ns)},
                    "fail": {"count": num(1)},
                    "queue": {"count": num(count), "ns": num(queue_ns)},
                    "compute_input": {"count": num(count), "ns": num(0)},
                    "compute_infer": {"count": num(count), "ns": num(infer_ns)},
                    "compute_output": {"count": num(count), "ns": num(0)},
                },
            },
            {"name": "other", "inference_count": num(999)},
        ]
    }


@pytest.mark.parametrize("grpc", [False, True])
def test_statistics_delta(grpc: bool) -> None:
    before = ModelStats.from_json(_stats_reply(10, 10, 1_000_000, 5_000_000, grpc=grpc), "m")
    after = ModelStats.from_json(_stats_reply(110, 35, 51_000_000, 205_000_000, grpc=grpc), "m")
    delta = after - before
    assert delta.inference_count == 100 and delta.execution_count == 25
    assert delta.avg_batch == pytest.approx(4.0)
    assert delta.queue_ms == pytest.approx(0.5)  # 50 ms over 100 requests
    assert delta.compute_ms == pytest.approx(2.0)
    assert delta.fail_count == 0
    data = delta.to_json()
    assert data["avg_batch"] == pytest.approx(4.0)
    json.dumps(data)


def test_statistics_without_the_model_are_zeros() -> None:
    delta = ModelStats.from_json({}, "m") - ModelStats()
    assert delta.avg_batch is None and delta.queue_ms is None


# A perf_analyzer -f file in its documented format (written here by hand: the binary is not
# available on this machine): rows unsorted, times in microseconds.
_HEAD = "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
_TAIL = "Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n"
RECORDED_CSV = (
    (_HEAD + "Server Compute Input,Server Compute Infer,Server Compute Output," + _TAIL)
    + """\
4,820.5,30,400,2100,50,2500,40,5,4800,5300,5600,6200
1,410.2,28,380,60,45,1900,35,4,2300,2500,2600,2900
"""
)

OLD_CSV = (
    (_HEAD + "Server Compute," + _TAIL)
    + """\
1,160.8,68,1291,38,4801,7,6212,6289,6328,7407
"""
)


def test_perf_analyzer_csv() -> None:
    points = parse_csv(RECORDED_CSV)
    assert [p.concurrency for p in points] == [1, 4]
    one = points[0]
    assert one.throughput == pytest.approx(410.2)
    assert (one.p50_ms, one.p90_ms, one.p99_ms) == pytest.approx((2.3, 2.5, 2.9))
    assert one.queue_ms == pytest.approx(0.06)
    assert one.compute_ms == pytest.approx(1.98)  # input + infer + output
    assert one.avg_ms == pytest.approx(0.412)  # send + network/server + recv
    old = parse_csv(OLD_CSV)[0]
    assert old.compute_ms == pytest.approx(4.801)
    with pytest.raises(PerfAnalyzerError, match=r"missing column.*'p99 latency'"):
        parse_csv("Concurrency,Inferences/Second,p50 latency,p90 latency\n1,2,3,4\n")
    with pytest.raises(PerfAnalyzerError, match="'Inferences/Second' holds 'fast'"):
        parse_csv(RECORDED_CSV.replace("410.2", "fast"))


def test_perf_analyzer_command_and_input_data(tmp_path: Path) -> None:
    command = build_command(
        "perf_analyzer", "m", "localhost:8001", "grpc", 4, duration=2.0,
        csv_path=tmp_path / "o.csv", input_data=tmp_path / "d.json", shapes={"X": [3, 2]},
    )  # fmt: skip
    text = " ".join(command)
    assert "-m m -u localhost:8001 -i grpc --concurrency-range 4:4" in text
    assert "--measurement-interval 2000" in text and f"-f {tmp_path / 'o.csv'}" in text
    assert "--shape X:3,2" in text
    payloads = [{
        "TEXT": np.array([[b"hi"]], dtype=np.object_),
        "IMAGE": np.array([[b"\x89PNG\xff"]], dtype=np.object_),
        "X": np.ones((1, 2), np.float32),
    }]  # fmt: skip
    data = perf_analyzer_input_data(payloads)["data"][0]
    assert data["TEXT"] == {"content": ["hi"], "shape": [1]}
    assert data["IMAGE"] == {"b64": "iVBOR/8="}
    assert data["X"] == {"content": [1.0, 1.0], "shape": [2]}


def test_report_table_and_json() -> None:
    window = LoadWindow(2, 2.0, 4, 1, [1.0, 2.0, 3.0, 4.0], "boom")
    point = point_from_window(window, cpu_seconds=0.004)
    assert point.throughput == 2.0 and point.cpu_ms == pytest.approx(1.0)
    assert point.p50_ms == pytest.approx(2.5) and point.avg_ms == pytest.approx(2.5)
    report = PerfReport("m", "localhost:8001", "grpc", "builtin", 2.0, [point], ["a note"])
    table = report.table()
    lines = table.splitlines()
    assert lines[0] == "m at localhost:8001 (grpc, engine builtin, 2 s per point)"
    assert lines[1].split()[:3] == ["conc", "infer/s", "p50"]
    assert lines[2].split()[:6] == ["2", "2.0", "2.50", "3.70", "3.97", "1"]
    assert lines[-1] == "note: a note"
    data = json.loads(json.dumps(report.to_json()))
    assert data["points"][0]["first_error"] == "boom"
    assert data["points"][0]["queue_ms"] is None
    assert report.best() is None  # its only point had an error


def test_empty_window_has_no_latencies() -> None:
    point = point_from_window(LoadWindow(1, 1.0, 0, 0, []))
    assert math.isnan(point.p99_ms)
    assert point.to_json()["p99_ms"] is None


def _busy_child() -> subprocess.Popen[bytes]:
    """A child that spends CPU until it is told to stop."""
    code = "import time\nt = time.time()\nwhile time.time() - t < 30: pass"
    return subprocess.Popen([sys.executable, "-c", code])


def test_tree_cpu_snapshot_holds_the_root_and_its_children() -> None:
    child = _busy_child()
    try:
        time.sleep(0.3)
        snapshot = tree_cpu_snapshot(os.getpid())
        assert os.getpid() in snapshot and child.pid in snapshot
        assert snapshot[child.pid] > 0.0
        assert tree_cpu_snapshot(child.pid).keys() == {child.pid}
    finally:
        child.kill()
        child.wait()
    assert tree_cpu_snapshot(child.pid) == {}  # gone


def test_window_sample_charges_the_server_tree_and_the_client() -> None:
    child = _busy_child()
    try:
        began = time.monotonic()
        before = window_sample(child.pid)
        time.sleep(0.3)
        after = window_sample(child.pid)
        elapsed = time.monotonic() - began
    finally:
        child.kill()
        child.wait()
    assert set(after) == {f"server:{child.pid}", "client"}
    differences = {key: after[key] - before.get(key, 0.0) for key in after}
    # one busy process: some CPU, at most one core's worth (timing-tolerant on a busy machine)
    assert 0.0 < server_seconds(differences) <= elapsed + 0.05
    # a server process that ended inside the window is left out, not subtracted
    assert server_seconds({"server:1": -5.0, "server:2": 0.25, "client": 9.0}) == 0.25


def test_pid_listening_on_finds_this_process() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert pid_listening_on(port) == os.getpid()
        assert server_pid(f"localhost:{port}", None) == os.getpid()
    assert server_pid("example.com:8001", None) is None
    assert server_pid("example.com:8001", 42) == 42


def test_cpu_used_survives_a_process_ending() -> None:
    # the stub 11 of a reloaded model ends; its successor 13 starts inside the window
    before = {10: 5.0, 11: 40.0}
    after = {10: 6.0, 13: 0.5}
    assert cpu_used(before, after) == pytest.approx(1.5)  # never negative


def test_closed_loop_counts_and_reports_errors() -> None:
    calls: List[int] = []
    events: List[Progress] = []

    def make(index: int):  # type: ignore[no-untyped-def]
        def call() -> None:
            calls.append(index)
            if index == 1:
                raise RuntimeError("refused")  # at once: its streak ends well inside the window
            time.sleep(0.001)  # a request takes time, as a real one does

        return call

    # half a second: a shared CI core can stall a thread for a good part of a shorter window
    window = run_closed_loop(
        make, concurrency=2, warmup=0.05, duration=0.5, on_progress=events.append,
        sample=lambda: {"n": float(len(calls))},
    )  # fmt: skip
    assert window.errors == FAILURE_STREAK  # worker 1 stopped after its streak, no later
    assert window.completed > 0  # worker 0 went on
    assert window.first_error == "RuntimeError: refused"
    assert len(window.latencies_ms) == window.completed
    assert window.samples["n"] > 0
    assert {e.phase for e in events} == {"warmup", "measure"}
    with pytest.raises(Exception, match="concurrency >= 1"):
        run_closed_loop(make, concurrency=0, warmup=0, duration=1)


def test_closed_loop_counts_requests_that_end_inside_the_window() -> None:
    # four clients, 100 ms per request, a window from 0.15 to 0.65 s: each client's requests
    # end at about 0.1, 0.2, ... 0.6 s, so five of each end inside the window (20 requests,
    # 40 per second: the loop's real rate). Counting only the requests that also start inside
    # would give four per client (32 per second): the edges' bias this rule avoids.
    def make(index: int):  # type: ignore[no-untyped-def]
        def call() -> None:
            time.sleep(0.1)

        return call

    window = run_closed_loop(make, concurrency=4, warmup=0.15, duration=0.5)
    # a stalled CI core can push a client's last request past the window's end, never add one
    assert 18 <= window.completed <= 20
    assert window.throughput == pytest.approx(window.completed / 0.5)
    assert len(window.latencies_ms) == window.completed
    assert min(window.latencies_ms) >= 100.0
