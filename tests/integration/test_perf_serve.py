"""``tritonpy perf`` and ``tritonpy tune`` against the real tritonserver: short windows
(about a second per point), no timing asserts; what is checked is that the measurements come
from the server (counts, statistics, CPU of the local server process, the configuration
override taking effect)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tritonpy._tooling.pbtxt import load_config
from tritonpy.cli import main
from tritonpy.client import InferClient
from tritonpy.perf import PerfOptions, run_perf
from tritonpy.perf._tune import TuneResult, candidate_of, tune, write_best
from tritonpy.server import TritonServer

MODELS = Path(__file__).parent / "models"
SHORT = PerfOptions(concurrency=(1, 2), duration=1.0, warmup=0.2, engine="builtin")


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_measures_a_plain_model(triton_server: TritonServer, protocol: str) -> None:
    url = triton_server.http_url if protocol == "http" else triton_server.grpc_url
    report = run_perf("add_sub", url, SHORT)
    assert report.protocol == protocol and report.engine == "builtin"
    assert [p.concurrency for p in report.points] == [1, 2]
    for point in report.points:
        assert point.completed > 0 and point.errors == 0
        assert point.p50_ms <= point.p99_ms
        # Triton's own counters saw at least the requests the window counted
        assert point.server_stats is not None
        assert point.server_stats["inference_count"] >= point.completed
        assert point.avg_batch == 1.0  # add_sub does not batch
        assert point.queue_ms is not None and point.compute_ms is not None
        # the server is local: its pid was found from the port, its CPU measured
        assert point.cpu_ms is not None and point.cpu_ms > 0
    assert report.notes == []


def test_perf_cli_on_a_batching_bytes_model(
    triton_server: TritonServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "perf.json"
    argv = ["perf", "echo_text", "--url", triton_server.grpc_url, "--concurrency", "4",
            "--duration", "1", "--input", "TEXT=text", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("echo_text at ")
    data = json.loads(out.read_text())
    point = data["points"][0]
    assert point["concurrency"] == 4 and point["completed"] > 0 and point["errors"] == 0
    assert point["avg_batch"] >= 1.0


def test_perf_reports_a_refused_request_once(
    triton_server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perf", "add_sub", "--url", triton_server.http_url, "--shape", "INPUT0=5",
            "--concurrency", "1", "--duration", "1"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "model 'add_sub' refused the generated request" in err
    assert "--shape NAME=d,d" in err


FAKE_PERF_ANALYZER = """\
#!{python}
# Stands in for perf_analyzer (not installable here): records its arguments and writes a CSV
# in perf_analyzer's documented -f format.
import json, sys
args = sys.argv[1:]
data = json.load(open(args[args.index("--input-data") + 1]))
open({record!r}, "a").write(json.dumps([args, data]) + "\\n")
conc = args[args.index("--concurrency-range") + 1].split(":")[0]
open(args[args.index("-f") + 1], "w").write(
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
    "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
    "p50 latency,p90 latency,p95 latency,p99 latency\\n"
    + conc + ",123.5,10,200,30,5,400,5,2,700,800,900,1000\\n")
"""


def test_perf_analyzer_engine_when_on_path(
    triton_server: TritonServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "calls.jsonl"
    binary = tmp_path / "bin" / "perf_analyzer"
    binary.parent.mkdir()
    binary.write_text(FAKE_PERF_ANALYZER.format(python=sys.executable, record=str(record)))
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    report = run_perf(
        "echo_text", triton_server.grpc_url, PerfOptions(concurrency=(1, 4), duration=1.0)
    )
    assert report.engine == "perf_analyzer"
    assert [(p.concurrency, p.throughput, p.p99_ms) for p in report.points] == [
        (1, 123.5, 1.0),
        (4, 123.5, 1.0),
    ]
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(calls) == 2
    first, data = calls[0]
    assert first[first.index("-m") + 1] == "echo_text" and first[first.index("-i") + 1] == "grpc"
    # the generated requests reach perf_analyzer in its --input-data form (text for BYTES)
    assert isinstance(data["data"][0]["TEXT"]["content"][0], str)
    assert data["data"][0]["TEXT"]["shape"] == [1]


def test_tune_reloads_each_configuration_and_writes_the_best(tmp_path: Path) -> None:
    model = tmp_path / "repo" / "echo_text"
    shutil.copytree(MODELS / "echo_text", model)
    result = tune(
        model, latency_budget_ms=1000.0, max_minutes=0.4, concurrency=(2,), duration=0.6,
        warmup=0.2, engine="builtin",
    )  # fmt: skip
    assert result.default is not None and result.default.candidate.label == "default"
    assert len(result.trials) >= 3
    # every configuration loaded (the override took: instance counts are checked on load)
    assert [t.error for t in result.trials] == [""] * len(result.trials)
    assert {t.candidate.instances for t in result.trials} >= {1, 2}
    best = result.best
    assert best is not None and best.score > 0
    before = (model / "config.pbtxt").read_text()
    if best is result.default:  # nothing to change: the file stays as the user wrote it
        assert write_best(result, model) is None
        assert (model / "config.pbtxt").read_text() == before
    # a configuration tune writes (here: the first non-default one) serves as written
    other = next(t for t in result.trials if t is not result.default)
    chosen = TuneResult("echo_text", None, [result.trials[0], replace(other, score=1e9)])
    assert write_best(chosen, model) == model / "config.pbtxt"
    written = load_config(model / "config.pbtxt")
    assert written.input[0].name == "TEXT"  # the user's fields are kept
    with TritonServer(model.parent) as server:
        served = InferClient(server.grpc_url, "grpc").model_config("echo_text")
    assert candidate_of(served).instances == other.candidate.instances
    assert int(served["max_batch_size"]) == other.candidate.max_batch_size
