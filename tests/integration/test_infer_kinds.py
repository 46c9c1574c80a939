"""tritonpy infer on every kind of model, against a real tritonserver (24.10): a decoupled
model's responses printed one by one (text and JSON lines, gRPC and HTTP generate_stream), a
sequence driven request by request from the shell (--sequence-id, --sequence-start,
--sequence-end; numeric and string ids; a decoupled sequence model; an ensemble over a sequence
model), a one-request sequence by default; a BLS error re-raised by its caller shows one code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, List, Tuple

import pytest

from tritonpy.cli import main
from tritonpy.server import TritonServer

pytestmark = pytest.mark.integration

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("infer_kinds") / "repo"
    repository_builder(repo, "square", source=HERE.parent / "runtime" / "nvidia_examples")
    repository_builder(repo, "cf_stream", source=HERE / "streaming_models")
    repository_builder(repo, "cf_bls_calls", "cf_target_scale", source=HERE / "bls_models")
    repository_builder(
        repo,
        "seq_sum_direct",
        "seq_sum_oldest",
        "kind_seq_stream",
        "kind_ens_seq",
        source=HERE / "kind_models",
    )
    return triton_server_factory(repo)


def infer(capsys: pytest.CaptureFixture[str], *argv: str) -> Tuple[int, List[str], str]:
    status = main(["infer", *argv])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def urls(server: TritonServer) -> List[str]:
    return [f"grpc://{server.grpc_url}", server.http_url]


def test_a_decoupled_models_responses_are_printed_one_by_one(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in urls(server):
        status, out, _ = infer(capsys, "square", "--url", url, "-i", "IN=[3]")
        assert status == 0
        assert out == [
            *[line for i in range(3) for line in (f"response {i}", "OUT (INT32, shape [1]): [9]")],
            "3 response(s), the stream ended with the final flag",
        ]
        status, out, _ = infer(capsys, "square", "--url", url, "-i", "IN=[0]")
        assert (status, out) == (0, ["0 response(s), the stream ended with the final flag"])
        status, out, _ = infer(capsys, "cf_stream", "--url", url, "-i", "TEXT=hello world")
        assert out == [
            "response 0",
            "WORD (BYTES, shape [1]): ['hello']",
            "INDEX (INT32, shape [1]): [0]",
            "response 1",
            "WORD (BYTES, shape [1]): ['world']",
            "INDEX (INT32, shape [1]): [1]",
            "2 response(s), the stream ended with the final flag",
        ]


def test_a_streams_json_is_json_lines(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in urls(server):
        status, out, _ = infer(capsys, "square", "--url", url, "-i", "IN=[2]", "--json")
        documents = [json.loads(line) for line in out]
        assert status == 0
        assert [(d["index"], d["outputs"][0]["data"]) for d in documents[:2]] == [
            (0, [4]),
            (1, [4]),
        ]
        assert all(d["model"] == "square" for d in documents)
        assert documents[2] == {"model": "square", "responses": 2, "final": True}


def test_an_error_inside_a_stream_comes_after_the_responses_before_it(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = infer(capsys, "cf_stream", "-i", "TEXT=a b CRASH", "--url", server.http_url)
    assert status == 1
    assert out[-1] == "2 response(s), then the stream ended with an error:"
    assert "ZeroDivisionError while running infer(): division by zero" in err
    status, out, err = infer(capsys, "square", "-i", "IN=[-1]", "--url", server.grpc_url)
    assert (status, out) == (1, [])
    assert "IN must be >= 0, got -1" in err


def test_a_sequence_is_driven_request_by_request(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in urls(server):
        steps = [("5", "--sequence-start"), ("3", None), ("2", "--sequence-end")]
        sums = []
        for value, flag in steps:
            argv = ["seq_sum_direct", "--url", url, "-i", f"VALUE=[{value}]"]
            argv += ["--sequence-id", "1001"] + ([flag] if flag else [])
            status, out, err = infer(capsys, *argv)
            assert (status, err) == (0, ""), err
            sums.append(out)
        assert sums == [[f"SUM (INT32, shape [1, 1]): [[{s}]]"] for s in (5, 8, 10)]
        # string ids on the model that reads request.correlation_id()
        for value, flag, total in (("1", "--sequence-start", 1), ("4", "--sequence-end", 5)):
            argv = ["seq_sum_oldest", "--url", url, "-i", f"VALUE=[{value}]", "-o", "SUM"]
            status, out, _ = infer(capsys, *argv, "--sequence-id", "user-7", flag)
            assert (status, out) == (0, [f"SUM (INT32, shape [1, 1]): [[{total}]]"])


def test_a_request_without_sequence_options_is_a_one_request_sequence(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for model in ("seq_sum_direct", "kind_ens_seq"):
        status, out, err = infer(capsys, model, "--url", server.grpc_url, "-i", "VALUE=[7]")
        assert (status, out) == (0, ["SUM (INT32, shape [1, 1]): [[7]]"])
        assert err.startswith(f"tritonpy: model '{model}' is a sequence model (sequence ")
        assert "with START and END; drive a sequence yourself with --sequence-id ID" in err
    status, out, err = infer(
        capsys, "seq_sum_direct", "--url", server.grpc_url, "-i", "VALUE=[7]", "--json"
    )
    document = json.loads(out[0])
    assert status == 0 and document["outputs"][0]["data"] == [[7]]
    assert document["sequence"]["start"] is document["sequence"]["end"] is True
    assert isinstance(document["sequence"]["id"], int) and document["sequence"]["id"] > 0


def test_a_decoupled_sequence_model_streams_over_grpc(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"grpc://{server.grpc_url}"
    base = ["kind_seq_stream", "--url", url, "--sequence-id", "42"]
    status, out, _ = infer(capsys, *base, "-i", "VALUE=[2]", "--sequence-start")
    assert (status, out[1::2]) == (
        0,
        ["SUM (INT32, shape [1]): [1]", "SUM (INT32, shape [1]): [2]"],
    )
    status, out, _ = infer(capsys, *base, "-i", "VALUE=[1]", "--sequence-end")
    assert out == [
        "response 0",
        "SUM (INT32, shape [1]): [3]",
        "1 response(s), the stream ended with the final flag",
    ]
    status, out, err = infer(capsys, *base[:1], "--url", server.http_url, "-i", "VALUE=[1]")
    assert status == 1 and "HTTP generate_stream carries no correlation id" in err


def test_sequence_options_that_do_not_fit_are_refused(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--url", server.grpc_url]
    status, _, err = infer(capsys, "seq_sum_direct", *url, "-i", "VALUE=[1]", "--sequence-end")
    assert status == 1 and "--sequence-start and --sequence-end need --sequence-id ID" in err
    status, _, err = infer(capsys, "square", *url, "-i", "IN=[1]", "--sequence-id", "3")
    assert status == 1 and "model 'square' is no sequence model" in err
    # the server's own refusal: a sequence's first request needs START
    argv = ["seq_sum_direct", *url, "-i", "VALUE=[1]", "--sequence-id", "999"]
    status, _, err = infer(capsys, *argv)
    assert status == 1
    assert "must specify the START flag on the first request of the sequence" in err


def test_a_bls_error_re_raised_by_its_caller_shows_one_code(
    server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in urls(server):
        argv = ["cf_bls_calls", "--url", url, "-i", "CASE=raise-error", "-i", "X=[2]"]
        status, _, err = infer(capsys, *argv)
        assert status == 1
        assert err.strip() == (
            "[INTERNAL] call to model 'cf_target_scale' failed: input 'X': expected values "
            ">= 0, got -2.0"
        )
