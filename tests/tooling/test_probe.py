"""tritonpy probe without a server: the request built from a model configuration (every dtype,
dynamic and batch dimensions, BYTES, optional inputs, warmup samples), the judging rule, the
report, and the command's output and exit codes over a stand-in client. The real server, a
killed stub and its reload: tests/integration/test_probe_serve.py."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional

import numpy as np
import pytest
from numpy.typing import NDArray

from tritonpy._runtime.dtypes import DTYPES
from tritonpy._runtime.errors import TritonRequestError
from tritonpy._tooling.errors import ServerError
from tritonpy.cli import main
from tritonpy.client import UNKNOWN_CODE, fresh_sequence_id, model_kind
from tritonpy.probe import ProbeRequestError, ProbeUsageError, probe
from tritonpy.probe import _runner as runner
from tritonpy.probe._diagnosis import dead_stub, server_refused
from tritonpy.probe._report import ProbeResult, judge
from tritonpy.probe._requests import probe_inputs, warmup_sample


def config(max_batch_size: int = 0, **inputs: Any) -> Dict[str, Any]:
    """A configuration in the server's JSON form: ``NAME=(TYPE, dims[, optional])``."""
    entries = []
    for name, spec in inputs.items():
        entry = {"name": name, "data_type": spec[0], "dims": list(spec[1])}
        if len(spec) > 2:
            entry["optional"] = spec[2]
        entries.append(entry)
    return {"name": "m", "max_batch_size": max_batch_size, "input": entries}


# ------------------------------------------------------------------------ request building
@pytest.mark.parametrize("wire", sorted(DTYPES))
def test_every_dtype_gets_data_of_its_type(wire: str) -> None:
    (tensor,) = probe_inputs(config(X=(DTYPES[wire].config_name, [2, 3]))).values()
    assert tensor.shape == (2, 3)
    if wire == "BYTES":
        assert tensor.dtype == np.object_ and tensor.tolist() == [[b"0"] * 3] * 2
    elif wire == "BF16":  # tritonclient sends float32 arrays as BF16
        assert tensor.dtype == np.float32 and not tensor.any()
    else:
        assert tensor.dtype == DTYPES[wire].numpy and not tensor.any()


def test_dynamic_dims_are_one_and_batching_models_get_a_batch_of_one() -> None:
    inputs = probe_inputs(config(8, A=("TYPE_FP32", [-1, 3]), B=("TYPE_INT64", [1])))
    assert {n: t.shape for n, t in inputs.items()} == {"A": (1, 1, 3), "B": (1, 1)}
    inputs = probe_inputs(config(0, A=("TYPE_FP32", [-1, -1])))
    assert inputs["A"].shape == (1, 1)
    # gRPC's JSON form writes int64 dims as strings
    assert probe_inputs(config(4, A=("TYPE_FP32", ["-1", "2"])))["A"].shape == (1, 1, 2)


def test_optional_inputs_are_left_out_and_a_scalar_input_has_shape_batch_only() -> None:
    inputs = probe_inputs(
        config(4, TEXT=("TYPE_STRING", [1]), TOP_K=("TYPE_INT32", [1], True), S=("TYPE_FP32", []))
    )
    assert sorted(inputs) == ["S", "TEXT"]
    assert inputs["TEXT"].tolist() == [[b"0"]]
    assert inputs["S"].shape == (1,)


def test_unknown_dtype_is_a_request_error_naming_model_and_input() -> None:
    with pytest.raises(ProbeRequestError, match="model 'm' input 'X': unknown Triton data type"):
        probe_inputs(config(X=("TYPE_COMPLEX", [1])))


def warmup(**inputs: Dict[str, Any]) -> Dict[str, Any]:
    return {"name": "sample", "batch_size": 2, "inputs": inputs, "count": 1}


def test_warmup_zero_and_random_data_replace_generated_data() -> None:
    cfg = config(8, X=("TYPE_FP32", [-1]), T=("TYPE_STRING", [1]))
    cfg["model_warmup"] = [
        warmup(
            X={"data_type": "TYPE_FP32", "dims": ["3"], "random_data": True},
            T={"data_type": "TYPE_STRING", "dims": [1], "zero_data": True},
        ),
        warmup(X={"data_type": "TYPE_FP32", "dims": [9], "zero_data": True}),
    ]
    inputs = probe_inputs(cfg)
    assert inputs["X"].shape == (2, 3) and inputs["X"].dtype == np.float32  # the first sample
    assert inputs["X"].any()  # random, not zeros
    np.testing.assert_array_equal(inputs["X"], probe_inputs(cfg)["X"])  # reproducible
    assert inputs["T"].tolist() == [[b""], [b""]]  # zero_data strings are empty
    unbatched = {**cfg, "max_batch_size": 0}
    assert probe_inputs(unbatched)["X"].shape == (3,)  # batch_size applies to batching models
    for config_type, dtype in (("TYPE_BOOL", np.bool_), ("TYPE_INT8", np.int8)):
        sample = warmup(I={"data_type": config_type, "dims": [4], "random_data": True})
        tensors = warmup_sample({**cfg, "model_warmup": [sample]})
        assert tensors is not None and tensors["I"].dtype == dtype and tensors["I"].shape == (2, 4)


def test_no_warmup_is_none() -> None:
    assert warmup_sample(config(X=("TYPE_FP32", [1]))) is None
    assert warmup_sample({**config(X=("TYPE_FP32", [1])), "model_warmup": []}) is None


def test_warmup_input_data_file_is_read_from_the_repository(tmp_path: Path) -> None:
    folder = tmp_path / "m" / "warmup"
    folder.mkdir(parents=True)
    (folder / "x.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes() + b"extra")
    strings = [b"hello", b"{}"]
    (folder / "t.bin").write_bytes(b"".join(struct.pack("<I", len(s)) + s for s in strings))
    cfg = config(8, X=("TYPE_FP32", [3]), T=("TYPE_STRING", [1]))
    cfg["model_warmup"] = [
        warmup(
            X={"data_type": "TYPE_FP32", "dims": [3], "input_data_file": "x.bin"},
            T={"data_type": "TYPE_STRING", "dims": [1], "input_data_file": "t.bin"},
        )
    ]
    inputs = probe_inputs(cfg, tmp_path)
    np.testing.assert_array_equal(inputs["X"], np.arange(6, dtype=np.float32).reshape(2, 3))
    assert inputs["T"].tolist() == [[b"hello"], [b"{}"]]
    # without the repository the probe cannot see the file: generated data of the same shape
    unseen = probe_inputs(cfg)
    assert unseen["X"].shape == (2, 3) and not unseen["X"].any()
    assert unseen["T"].tolist() == [[b"0"], [b"0"]]


def test_bad_warmup_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "m" / "warmup").mkdir(parents=True)
    (tmp_path / "m" / "warmup" / "short.bin").write_bytes(b"\x00" * 5)
    (tmp_path / "m" / "warmup" / "plain.txt").write_bytes(b"hello")
    cfg = config(8, X=("TYPE_FP32", [3]))
    where = "model 'm' warmup sample 'sample' input 'X'"
    cases = {
        "short.bin": f"{where}: warmup file '{tmp_path}/m/warmup/short.bin' has 5 bytes, "
        "expected at least 24 (6 x float32, shape [2, 3]).",
        "gone.bin": f"{where}: cannot read warmup file '{tmp_path}/m/warmup/gone.bin': No such "
        "file or directory. Pass the model repository that holds it (--repository).",
    }
    for name, message in cases.items():
        cfg["model_warmup"] = [
            warmup(X={"data_type": "TYPE_FP32", "dims": [3], "input_data_file": name})
        ]
        with pytest.raises(ProbeRequestError) as failed:
            probe_inputs(cfg, tmp_path)
        assert str(failed.value) == message
    cfg["model_warmup"] = [
        warmup(X={"data_type": "TYPE_STRING", "dims": [1], "input_data_file": "plain.txt"})
    ]
    with pytest.raises(ProbeRequestError, match="expected 2 length-prefixed string element"):
        probe_inputs(cfg, tmp_path)


# ---------------------------------------------------------------------------------- judging
def test_judging_rule() -> None:
    assert judge(None) == (True, "OK", "")
    refused = TritonRequestError("INVALID_ARG", "input 'IMAGE', row 0: expected an encoded image")
    assert judge(refused) == (True, "INVALID_ARG", refused.message)
    dead = TritonRequestError("INTERNAL", "Stub process 'm_0' is not healthy.")
    assert judge(dead) == (False, "INTERNAL", "Stub process 'm_0' is not healthy.")
    assert judge(TritonRequestError("UNAVAILABLE", "x"))[:2] == (False, "UNAVAILABLE")
    assert judge(TritonRequestError("DEADLINE_EXCEEDED", "x"))[:2] == (False, "DEADLINE_EXCEEDED")
    unreachable = ServerError("cannot reach the server")
    unreachable.__cause__ = ConnectionRefusedError(111, "refused")
    assert judge(unreachable)[:2] == (False, "UNREACHABLE")
    slow = ServerError("cannot reach the server: timed out")
    slow.__cause__ = TimeoutError("timed out")
    assert judge(slow)[:2] == (False, "TIMEOUT")


# --------------------------------------------------------------- probe() over a stand-in client
CONFIGS: Dict[str, Dict[str, Any]] = {
    "add_sub": config(0, INPUT0=("TYPE_FP32", [4]), INPUT1=("TYPE_FP32", [4])),
    "image": config(8, IMAGE=("TYPE_STRING", [1])),
    "dead": config(8, X=("TYPE_FP32", [-1])),
}
INDEX = [
    {"name": "add_sub", "version": "1", "state": "READY"},
    {"name": "dead", "version": "1", "state": "READY"},
    {"name": "image", "version": "1", "state": "READY"},
    {"name": "broken", "version": "1", "state": "UNAVAILABLE", "reason": "SyntaxError"},
]


class StandIn:
    """What probe() uses of the client: the index, configs, infer, close."""

    sent: List[Any] = []
    closed = 0

    def __init__(self, url: str, protocol: Optional[str] = None, *, timeout: float) -> None:
        self.url, self.protocol, self.timeout = url, protocol, timeout

    def repository_index(self) -> List[Dict[str, Any]]:
        if "down" in self.url:
            error = ServerError("repository index: cannot reach the server at down:1")
            raise error
        return INDEX

    def model_config(self, model: str, version: str = "") -> Dict[str, Any]:
        return {**CONFIGS[model], "name": model}

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], **kwargs: Any) -> List[Any]:
        StandIn.sent.append((model, {n: a.shape for n, a in inputs.items()}, self.protocol))
        if model == "image":
            raise TritonRequestError("INVALID_ARG", "input 'IMAGE', row 0: not an image")
        if model == "dead":
            raise TritonRequestError("INTERNAL", "Stub process 'dead_0' is not healthy.")
        if model == "hung":
            raise TritonRequestError("DEADLINE_EXCEEDED", "Deadline Exceeded")
        if model == "slow":
            error = ServerError("cannot reach the server at h:1 (http): timed out. Is it running")
            raise error from TimeoutError("timed out")
        return []

    def close(self) -> None:
        StandIn.closed += 1


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    StandIn.sent, StandIn.closed = [], 0
    monkeypatch.setattr(runner, "_ProbeClient", StandIn)
    yield StandIn


def test_probe_sends_one_request_per_ready_model_and_judges(stand_in: type) -> None:
    report = probe("localhost:8000", timeout=2)
    assert report.protocol == "http"  # a bare host:port is the HTTP port
    assert [(r.name, r.ready, r.answered, r.status) for r in report.results] == [
        ("add_sub", True, True, "OK"),
        ("dead", True, False, "INTERNAL"),
        ("image", True, True, "INVALID_ARG"),
    ]
    assert all(r.latency is not None and r.latency >= 0 for r in report.results)
    assert StandIn.sent == [
        ("add_sub", {"INPUT0": (4,), "INPUT1": (4,)}, "http"),
        ("dead", {"X": (1, 1)}, "http"),
        ("image", {"IMAGE": (1, 1)}, "http"),
    ]
    assert (report.ok, report.exit_code, StandIn.closed) == (False, 1, 1)
    assert [r.name for r in report.failed] == ["dead"]


def test_named_models_unknown_or_not_ready_fail_without_a_request(stand_in: type) -> None:
    report = probe("grpc://localhost:8001", ["image", "broken", "nope", "image"])
    assert report.protocol == "grpc"
    assert [(r.name, r.ready, r.answered, r.status, r.latency) for r in report.results] == [
        ("image", True, True, "INVALID_ARG", report.results[0].latency),
        ("broken", False, False, "NOT_READY", None),
        ("nope", False, False, "NOT_FOUND", None),
    ]
    assert report.results[1].message == "state UNAVAILABLE: SyntaxError"
    assert report.results[2].message == (
        "the server has no model 'nope'; its models: add_sub, broken, dead, image"
    )
    assert [m for m, _, _ in StandIn.sent] == ["image"]


def test_a_model_that_does_not_answer_in_time_is_named_as_such(
    stand_in: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(CONFIGS, "hung", config(0, X=("TYPE_FP32", [1])))
    monkeypatch.setitem(CONFIGS, "slow", config(0, X=("TYPE_FP32", [1])))
    ready = [{"name": n, "version": "1", "state": "READY"} for n in ("hung", "slow")]
    monkeypatch.setattr(sys.modules[__name__], "INDEX", ready)
    report = probe("localhost:8000", timeout=1.5)
    assert [(r.name, r.answered, r.status, r.message) for r in report.results] == [
        ("hung", False, "DEADLINE_EXCEEDED", "no answer within --timeout 1.5 s"),
        ("slow", False, "TIMEOUT", "no answer within --timeout 1.5 s"),
    ]


def test_a_server_that_does_not_answer_is_a_report_error(stand_in: type) -> None:
    report = probe("http://down:1")
    assert report.results == [] and report.exit_code == 1
    assert report.error == "repository index: cannot reach the server at down:1"
    assert report.render_text() == (
        "FAIL  server http://down:1 (http): repository index: cannot reach the server at down:1\n"
    )


def test_usage_errors() -> None:
    with pytest.raises(ProbeUsageError, match="unknown scheme 'ftp'"):
        probe("ftp://host:1")
    with pytest.raises(ProbeUsageError, match="says grpc but --protocol is http"):
        probe("grpc://host:1", protocol="http")
    with pytest.raises(ProbeUsageError, match=r"--timeout 0\.0: expected a number of seconds"):
        probe("host:1", timeout=0.0)


# ------------------------------------------------------------------------------- the command
def test_cli_prints_one_line_per_model_and_exits_1_naming_the_dead_one(
    stand_in: type, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", "--url", "localhost:8000"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("ok    add_sub  ") and lines[0].endswith(" ms  answered")
    assert lines[1].startswith("FAIL  dead  ")
    assert lines[1].endswith(
        " did not answer (listed READY): [INTERNAL] Stub process 'dead_0' is not healthy."
    )
    assert lines[2].endswith(
        "answered: refused the probe input (INVALID_ARG: input 'IMAGE', row 0: not an image)"
    )
    assert lines[3] == "2 of 3 model(s) answered at localhost:8000"


def test_cli_exit_0_and_json(stand_in: type, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["probe", "--url", "h:1", "--protocol", "grpc", "-m", "add_sub", "-m", "image"]
    assert main([*argv, "--json", "--timeout", "3"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["ok"], document["protocol"], document["error"]) == (True, "grpc", "")
    assert [(m["name"], m["answered"], m["status"]) for m in document["models"]] == [
        ("add_sub", True, "OK"),
        ("image", True, "INVALID_ARG"),
    ]
    assert all(isinstance(m["latency_ms"], float) for m in document["models"])
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 of 2 model(s) answered at h:1"


def test_cli_bad_options_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--url", "ftp://h:1"]) == 2
    assert capsys.readouterr().err.startswith("tritonpy: error: server URL 'ftp://h:1': unknown")
    assert main(["probe", "--timeout", "-1"]) == 2
    assert "--timeout -1.0: expected a number of seconds above 0" in capsys.readouterr().err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("scheme", ["http", "grpc"])
def test_cli_no_server_exits_1(scheme: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{scheme}://127.0.0.1:{closed_port()}"
    assert main(["probe", "--url", url, "--timeout", "2"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL  server {url} ({scheme}): ")
    assert "cannot reach the server" in out or "failed to connect" in out.lower(), out


def test_missing_tritonclient_is_one_line_and_exit_2() -> None:
    code = (
        "import sys\n"
        "for name in ('tritonclient', 'tritonclient.http', 'tritonclient.grpc'):\n"
        "    sys.modules[name] = None\n"
        "from tritonpy.cli import main\n"
        "sys.exit(main(['probe', '--url', 'localhost:1']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "tritonpy: error: tritonpy probe needs tritonclient[http] (not installed): "
        "pip install 'tritonpy[client]'"
    ]


# ------------------------------------------------------------------ every kind of model
# the messages below are the real 24.10 server's (tests/integration/test_probe_kinds.py)
NO_CORRID = (
    "inference request to model 'seq_sum_direct' must specify a non-zero or non-empty "
    "correlation ID"
)
SERVER_REFUSALS = [
    NO_CORRID,
    f"in ensemble 'kind_ens_seq', {NO_CORRID}",
    "inference request for sequence 77 to model 'seq_sum_oldest' must specify the START flag "
    "on the first request of the sequence",
    "inference request to model 'seq_sum_direct' must specify batch-size 1 due to "
    "requirements of sequence batcher",
    "[request id: <id_unknown>] unexpected shape for input 'INPUT0' for model 'add_sub'. "
    "Expected [4], got [3]. ",
    "[request id: <id_unknown>] expected 2 inputs but got 1 inputs for model 'add_sub'.",
    "The schema can not convert input 'INPUT0' to tensor with proper shape",
    "HTTP end point doesn't support models with decoupled transaction policy",
]


@pytest.mark.parametrize("message", SERVER_REFUSALS)
def test_the_servers_refusals_are_no_answer(message: str) -> None:
    assert server_refused(message)
    assert judge(TritonRequestError("INVALID_ARG", message))[:2] == (False, "INVALID_ARG")
    assert judge(TritonRequestError(UNKNOWN_CODE, message))[0] is False


def test_a_streams_error_without_code_is_judged_by_its_message() -> None:
    own = TritonRequestError(UNKNOWN_CODE, "word 0 is BAD; send words other than BAD")
    assert judge(own) == (True, UNKNOWN_CODE, own.message)
    dead = TritonRequestError(UNKNOWN_CODE, "Stub process 'square_0_0' is not healthy.")
    assert judge(dead)[0] is False
    crashed = "Failed to process the request(s) for model 'm_0_0', message: ValueError: x"
    assert judge(TritonRequestError(UNKNOWN_CODE, crashed))[0] is False
    # the model's own INVALID_ARG still counts (it ran): not a server message
    assert not server_refused("input 'IMAGE', row 0: expected an encoded image")


def test_a_dead_stub_is_named_by_its_model() -> None:
    models = ["kind_bls_callee", "kind_bls_caller", "square", "square_big"]
    bls = (
        "Failed to process the request(s) for model 'kind_bls_caller_0_0', message: "
        "TritonModelException: Stub process 'kind_bls_callee_0_0' is not healthy.\n\nAt:\n"
    )
    assert dead_stub(bls, models) == "kind_bls_callee"
    assert dead_stub("in ensemble 'e', Stub process 'square_big_0_1' is not healthy.", models) == (
        "square_big"
    )
    assert dead_stub("Stub process 'cf_image_0' is not healthy.", ["cf_image"]) == "cf_image"
    assert dead_stub("Stub process 'gone_0' is not healthy.", models) == "gone_0"
    assert dead_stub("input 'X': bad", models) is None


def test_fail_lines_name_the_member_or_callee_and_the_servers_refusal() -> None:
    member = ProbeResult(
        "pipe",
        True,
        False,
        0.002,
        "INTERNAL",
        "in ensemble 'pipe', Stub process 'sq_0_0' is not healthy.",
        dead_stub="sq",
        dead_stub_role="member",
    )
    assert member.render() == (
        "FAIL  pipe  2.0 ms  did not answer (listed READY): the stub process of its ensemble "
        "member 'sq' is dead: [INTERNAL] in ensemble 'pipe', Stub process 'sq_0_0' is not "
        "healthy."
    )
    callee = ProbeResult(
        "c",
        True,
        False,
        0.001,
        "INTERNAL",
        "x\n\nAt:\n  model.py(19)",
        dead_stub="b",
        dead_stub_role="callee",
    )
    assert callee.render().endswith(
        "the stub process of its BLS callee 'b' is dead: [INTERNAL] x At: model.py(19)"
    )
    refused = ProbeResult("q", True, False, 0.001, "INVALID_ARG", NO_CORRID, refused_by_server=True)
    assert refused.render().startswith(
        "FAIL  q  1.0 ms  not probed (listed READY): the server refused the probe's request "
        f"before the model ran: [INVALID_ARG] {NO_CORRID} (give the model a model_warmup"
    )
    streamed = ProbeResult("s", True, True, 0.001, "OK", request="stream: the final flag")
    assert streamed.render() == "ok    s  1.0 ms  answered (stream: the final flag)"
    assert refused.to_json()["refused_by_server"] is True
    assert member.to_json()["dead_stub"] == "sq" and streamed.to_json()["dead_stub"] is None


SEQUENCE = {
    "direct": {},
    "control_input": [
        {"name": "CORRID", "control": [{"kind": "CONTROL_SEQUENCE_CORRID", "data_type": "X"}]}
    ],
}


def sequence_config(id_type: str) -> Dict[str, Any]:
    batching = json.loads(json.dumps(SEQUENCE).replace('"X"', json.dumps(id_type)))
    return {**config(4, VALUE=("TYPE_INT32", [1])), "sequence_batching": batching}


def test_model_kinds_follow_ensembles_and_corrid_types() -> None:
    configs = {
        "seq": {**sequence_config("TYPE_UINT64"), "name": "seq"},
        "plain": config(0, X=("TYPE_FP32", [1])),
        "ens": {
            "name": "ens",
            "platform": "ensemble",
            "ensemble_scheduling": {"step": [{"model_name": "plain"}, {"model_name": "seq"}]},
        },
    }
    kind = model_kind(configs["ens"], configs.__getitem__)
    assert (kind.sequence, kind.sequence_model, kind.string_id) == (True, "seq", False)
    assert model_kind(configs["ens"]).sequence is False  # without a reader: its own config
    assert model_kind(configs["plain"]).describe() == "plain"
    string = model_kind(sequence_config("TYPE_STRING"))
    assert string.string_id and str(fresh_sequence_id(string)).startswith("tritonpy-")
    small = model_kind(sequence_config("TYPE_INT32"))
    ids = {fresh_sequence_id(small) for _ in range(50)}
    assert len(ids) == 50 and all(0 < i < 2**31 for i in ids)  # type: ignore[operator]


def test_a_sequence_model_gets_a_one_request_sequence(
    stand_in: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(CONFIGS, "seq", sequence_config("TYPE_UINT64"))
    monkeypatch.setattr(
        sys.modules[__name__], "INDEX", [{"name": "seq", "version": "1", "state": "READY"}]
    )
    sequences: List[Any] = []
    original = StandIn.infer

    def infer(self: Any, model: str, inputs: Any, **kwargs: Any) -> List[Any]:
        sequences.append(kwargs.get("sequence"))
        return original(self, model, inputs, **kwargs)

    monkeypatch.setattr(StandIn, "infer", infer)
    probe("localhost:8000")
    report = probe("localhost:8000")
    (result,) = report.results
    assert result.answered and result.request.startswith("infer in sequence ")
    assert [(s.start, s.end) for s in sequences] == [(True, True), (True, True)]
    assert sequences[0].id != sequences[1].id and all(s.id > 0 for s in sequences)


def test_cli_help_says_how_each_kind_is_probed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["probe", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "A decoupled model gets a stream and answers with its first response" in help_text
    assert "a sequence model (or an ensemble over one) gets a one-request sequence" in help_text
    assert "A bare host:port --url is HTTP here (the port Kubernetes probes use)" in help_text
