"""``tritonpy perf`` and ``tritonpy tune`` on decoupled (streaming) and sequence models,
against the real tritonserver: short windows, and checks of what the driver really did (every
stream read to its final flag, one correlation id per sequence with START and END, running
sums right at every step, the oldest strategy merging requests of several sequences)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

from tritonpy.cli import main
from tritonpy.client import InferClient
from tritonpy.perf import PerfOptions, run_perf
from tritonpy.perf._engine import run_closed_loop
from tritonpy.perf._inputs import InputSpec, generate_payloads
from tritonpy.perf._sequences import SequenceIds, SequenceStep, sequence_caller_factory
from tritonpy.perf._tune import tune
from tritonpy.server import TritonServer

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent
PERF_MODELS = HERE / "perf_models"
KIND_MODELS = HERE / "kind_models"
STREAMING_MODELS = HERE / "streaming_models"
#: the flaky copy of perf_square fails every 4th request mid-stream
FAIL_EVERY = 4


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("perf_kinds")
    repository_builder(repo, "perf_square", "seq_string_corrid", "seq_stream_sum",
                       "ens_square", "ens_seq_sum", source=PERF_MODELS)  # fmt: skip
    repository_builder(repo, "seq_sum_direct", "seq_sum_oldest", source=KIND_MODELS)
    repository_builder(repo, "cf_stream", source=STREAMING_MODELS)
    flaky = repo / "perf_square_flaky"
    shutil.copytree(repo / "perf_square", flaky)
    config = (flaky / "config.pbtxt").read_text().replace('"perf_square"', '"perf_square_flaky"')
    config += f'parameters {{ key: "FAIL_EVERY" value {{ string_value: "{FAIL_EVERY}" }} }}\n'
    (flaky / "config.pbtxt").write_text(config)
    return triton_server_factory(repo)


@pytest.fixture()
def three(tmp_path: Path) -> Path:
    """An IN input of 3: three responses per stream."""
    path = tmp_path / "in.json"
    path.write_text("[3]")
    return path


def _perf_json(argv: List[str], tmp_path: Path) -> Tuple[int, Dict[str, Any]]:
    out = tmp_path / "perf.json"
    status = main([*argv, "--engine", "builtin", "--warmup", "0.3", "--json", str(out)])
    return status, json.loads(out.read_text()) if out.is_file() else {}


def test_perf_streams_a_decoupled_model(
    server: TritonServer, three: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perf", "perf_square", "--url", server.grpc_url, "--input", f"IN={three}",
            "--concurrency", "1,2", "--duration", "1"]  # fmt: skip
    status, data = _perf_json(argv, tmp_path)
    assert status == 0
    table = capsys.readouterr().out
    assert "streaming: decoupled model" in table.splitlines()[0]
    assert "resp/s" in table and "first p50" in table
    assert data["mode"] == "streaming" and data["streamed"] is True
    for point in data["points"]:
        assert point["completed"] > 0 and point["errors"] == 0
        # every stream was read to its final flag: exactly IN responses per request
        assert point["responses_per_request"] == 3.0
        assert point["responses_per_s"] == pytest.approx(3 * point["throughput"], rel=1e-3)
        # the first of three responses comes before the final flag
        assert point["first_response_p50_ms"] < point["p50_ms"]
        assert point["first_response_p99_ms"] <= point["p99_ms"]
        assert point["server_stats"]["inference_count"] >= point["completed"]


def test_perf_streams_a_tritonpy_streaming_model(server: TritonServer) -> None:
    """cf_stream yields one response per word: the generated text has eight."""
    options = PerfOptions(concurrency=(2,), duration=1.0, warmup=0.3, engine="builtin")
    report = run_perf("cf_stream", server.grpc_url, options)
    point = report.points[0]
    assert report.mode == "streaming"
    assert point.errors == 0 and point.completed > 0
    assert point.responses_per_request == 8.0
    assert point.first_p50_ms is not None and point.first_p50_ms < point.p50_ms


def test_errors_inside_a_stream_count_as_errors(server: TritonServer, tmp_path: Path) -> None:
    two = tmp_path / "in.json"
    two.write_text("[2]")
    options = PerfOptions(concurrency=(1,), duration=1.0, warmup=0.2, engine="builtin",
                          specs={"IN": InputSpec("file", path=two)})  # fmt: skip
    point = run_perf("perf_square_flaky", server.grpc_url, options).points[0]
    assert point.completed > 0 and point.errors > 0
    share = point.errors / (point.errors + point.completed)
    assert 0.15 < share < 0.35  # every 4th request fails
    assert "fails" in point.first_error
    # a failed stream's partial response is not counted: completed streams have 2 each
    assert point.responses_per_request == 2.0


def test_perf_refuses_a_decoupled_model_over_http(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perf", "perf_square", "--url", server.http_url, "--duration", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "'perf_square' is a decoupled model" in err and "gRPC only" in err
    assert "--url HOST:8001" in err


def _decode(reply: Any) -> Dict[str, Any]:
    return {
        output.name: np.frombuffer(raw, np.int32)
        for output, raw in zip(reply.outputs, reply.raw_output_contents)
    }


def _drive(
    server: TritonServer, model: str, *, length: int, concurrency: int, string: bool = False,
    streaming: bool = False,
) -> Dict[Any, List[Tuple[SequenceStep, int, Dict[str, Any]]]]:  # fmt: skip
    """Run the sequence driver for a second; every answered request by sequence id, with the
    VALUE sent and the outputs received."""
    address = server.grpc_url.split("//")[-1]
    payloads = generate_payloads(InferClient(server.grpc_url, "grpc").model_config(model))
    seen: Dict[Any, List[Tuple[SequenceStep, int, Dict[str, Any]]]] = defaultdict(list)

    def observe(step: SequenceStep, reply: Any) -> None:
        sent = int(payloads[step.position]["VALUE"].reshape(-1)[0])
        seen[step.sequence_id].append((step, sent, _decode(reply)))

    make = sequence_caller_factory(
        address, "grpc", model, payloads, length=length, streaming=streaming,
        ids=SequenceIds(1, string=string), observe=observe,
    )  # fmt: skip
    window = run_closed_loop(make, concurrency=concurrency, warmup=0.2, duration=1.0)
    assert window.errors == 0, window.first_error
    assert window.sequences > concurrency  # each worker went through several sequences
    return seen


Seen = Dict[Any, List[Tuple[SequenceStep, int, Dict[str, Any]]]]


def _check_sums(seen: Seen, length: int) -> List[List[Tuple[SequenceStep, int, Dict[str, Any]]]]:
    ended = [steps for steps in seen.values() if steps[-1][0].end]
    assert len(ended) >= 4
    for steps in ended:
        # one id per sequence: its requests in order, START on the first, END on the last
        assert [step.index for step, _, _ in steps] == list(range(length))
        sums = [int(outputs["SUM"][0]) for _, _, outputs in steps]
        assert sums == list(np.cumsum([sent for _, sent, _ in steps]))
    return ended


def test_sequences_keep_their_id_and_flags_direct(server: TritonServer) -> None:
    seen = _drive(server, "seq_sum_direct", length=5, concurrency=3)
    _check_sums(seen, 5)
    assert all(isinstance(key, int) for key in seen)


def test_oldest_strategy_merges_sequences_with_string_ids(server: TritonServer) -> None:
    seen = _drive(server, "seq_sum_oldest", length=6, concurrency=4, string=True)
    ended = _check_sums(seen, 6)
    assert all(isinstance(key, str) for key in seen)
    # one execute() received requests of several sequences (a sequence has one in flight)
    batches = [int(out["BATCH"][0]) for steps in ended for _, _, out in steps]
    assert max(batches) > 1


def test_a_decoupled_sequence_model_streams_each_request(server: TritonServer) -> None:
    seen = _drive(server, "seq_stream_sum", length=4, concurrency=2, streaming=True)
    # the driver sees a stream's last response: twice the running sum
    halved = {
        key: [(step, sent, {"SUM": outputs["SUM"] // 2}) for step, sent, outputs in steps]
        for key, steps in seen.items()
    }
    _check_sums(halved, 4)


def test_perf_cli_on_sequence_models(server: TritonServer, tmp_path: Path) -> None:
    argv = ["perf", "seq_sum_oldest", "--url", server.grpc_url, "--sequence-length", "5",
            "--concurrency", "4", "--duration", "1"]  # fmt: skip
    status, data = _perf_json(argv, tmp_path)
    assert status == 0
    assert data["mode"] == "sequence" and data["sequence_length"] == 5
    point = data["points"][0]
    assert point["errors"] == 0 and point["completed"] > 0
    # sequences of 5: a fifth of the requests end one (within one sequence per worker)
    assert abs(point["sequences_per_s"] * 5 - point["throughput"]) <= 5 * 4 / 1.0
    assert point["avg_batch"] > 1.5  # four live sequences, merged by the oldest strategy
    status, data = _perf_json(["perf", "seq_stream_sum", "--url", server.grpc_url,
                               "--sequence-length", "4", "--concurrency", "2", "--duration",
                               "1"], tmp_path)  # fmt: skip
    assert status == 0 and data["mode"] == "sequence" and data["streamed"] is True
    point = data["points"][0]
    assert point["errors"] == 0 and point["responses_per_request"] == 2.0


def test_ensembles_over_decoupled_and_sequence_models(server: TritonServer, three: Path) -> None:
    """The server marks an ensemble with a decoupled step decoupled; an ensemble over a
    sequence model wants correlation ids: perf finds its step and sends sequences."""
    specs = {"IN": InputSpec("file", path=three)}
    options = PerfOptions(concurrency=(2,), duration=1.0, warmup=0.2, engine="builtin",
                          specs=specs, sequence_length=5)  # fmt: skip
    stream = run_perf("ens_square", server.grpc_url, options)
    assert stream.mode == "streaming" and stream.points[0].errors == 0
    assert stream.points[0].responses_per_request == 3.0
    options = replace(options, specs={})
    sequences = run_perf("ens_seq_sum", server.http_url, options)  # HTTP: not decoupled
    assert sequences.mode == "sequence" and sequences.protocol == "http"
    point = sequences.points[0]
    assert point.errors == 0 and point.completed > 0 and point.sequences_per_s
    assert abs(point.sequences_per_s * 5 - point.throughput) <= 5 * 2


def test_sequence_refusal_names_the_reason(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["perf", "seq_string_corrid", "--url", server.grpc_url, "--duration", "1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "'seq_string_corrid', a sequence model (oldest strategy), refused" in err
    assert "unexpected number of string elements" in err  # the server's own words
    assert "TYPE_STRING CORRID control" in err and "--sequence-ids string" in err
    assert "--shape" not in err  # not sent to the inputs' options


FAKE_PERF_ANALYZER = """\
#!{python}
# Stands in for perf_analyzer: records its arguments, writes a CSV in its -f format.
import json, sys
args = sys.argv[1:]
open({record!r}, "a").write(json.dumps(args) + "\\n")
conc = args[args.index("--concurrency-range") + 1].split(":")[0]
open(args[args.index("-f") + 1], "w").write(
    "Concurrency,Inferences/Second,Response Throughput,Server Queue,Server Compute Infer,"
    "p50 latency,p90 latency,p95 latency,p99 latency\\n"
    + conc + ",100,300,30,400,700,800,900,1000\\n")
"""


def test_kind_options_reach_perf_analyzer(
    server: TritonServer, three: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "calls.jsonl"
    binary = tmp_path / "bin" / "perf_analyzer"
    binary.parent.mkdir()
    binary.write_text(FAKE_PERF_ANALYZER.format(python=sys.executable, record=str(record)))
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{binary.parent}{os.pathsep}{os.environ['PATH']}")
    stream = run_perf("perf_square", server.grpc_url, PerfOptions(
        concurrency=(2,), duration=1.0, specs={"IN": InputSpec("file", path=three)}))  # fmt: skip
    assert stream.engine == "perf_analyzer" and stream.points[0].responses_per_s == 300.0
    options = PerfOptions(concurrency=(3,), duration=1.0, sequence_length=7,
                          sequence_id_range=(10, 500))  # fmt: skip
    sequences = run_perf("seq_sum_direct", server.grpc_url, options)
    assert sequences.mode == "sequence" and sequences.points[0].throughput == 100.0
    first, second = [json.loads(line) for line in record.read_text().splitlines()]
    assert "--streaming" in first and "--sequence-length" not in first
    assert "--streaming" not in second
    assert second[second.index("--sequence-length") + 1] == "7"
    assert second[second.index("--sequence-id-range") + 1] == "10:500"
    assert second[second.index("--sequence-length-variation") + 1] == "0"
    assert "--serial-sequences" in second


def test_tune_on_a_sequence_model(tmp_path: Path) -> None:
    model = tmp_path / "repo" / "seq_sum_oldest"
    shutil.copytree(KIND_MODELS / "seq_sum_oldest", model)
    result = tune(model, max_minutes=0.35, concurrency=(4,), duration=0.5, warmup=0.2,
                  sequence_length=5, cores=2)  # fmt: skip
    assert any("dynamic batching does not apply" in note for note in result.notes)
    assert len(result.trials) >= 2
    assert [t.error for t in result.trials] == [""] * len(result.trials)
    for trial in result.trials[1:]:  # the sweep: no dynamic batching on a sequence model
        assert trial.candidate.sequence and not trial.candidate.dynamic
        assert trial.report is not None and trial.report.mode == "sequence"
    assert all(t.score > 0 for t in result.trials)
    assert "(sequence batcher)" in result.table()


def test_tune_on_a_decoupled_model(tmp_path: Path, three: Path) -> None:
    model = tmp_path / "repo" / "perf_square"
    shutil.copytree(PERF_MODELS / "perf_square", model)
    result = tune(model, max_minutes=0.3, concurrency=(2,), duration=0.5, warmup=0.2,
                  specs={"IN": InputSpec("file", path=three)}, cores=2)  # fmt: skip
    assert any("decoupled: measured over gRPC streams" in note for note in result.notes)
    assert len(result.trials) >= 2
    assert [t.error for t in result.trials] == [""] * len(result.trials)
    for trial in result.trials:
        assert trial.report is not None and trial.report.mode == "streaming"
        assert trial.report.points[0].responses_per_request == 3.0 and trial.score > 0
