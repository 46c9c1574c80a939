"""Conformance of BLS (Model.call / call_async / call_stream): each case runs through
RepositoryHarness (every model of tests/integration/bls_models a BLS target of the others) and
through a real tritonserver over HTTP and gRPC; outputs, codes and messages must be identical.

What the real 24.10 server showed, and the harness now reproduces: a BLS error reaches the
caller as INTERNAL whatever code the target used; refusals by the server read ``Model <name> -
Error when running inference: ...``; a decoupled target's error response sent after some parts
does not reach the caller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Union

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing._repository import RepositoryHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "bls_models"
Result = Union[Dict[str, np.ndarray], TritonRequestError]


def calls(case: str, *x: float) -> Dict[str, np.ndarray]:
    return {"CASE": np.array([case.encode()], object), "X": np.array(x, np.float32)}


def scale_error(value: float) -> str:
    return f"input 'X': expected values >= 0, got {value}"


def refused(model: str, message: str) -> str:
    return f"Model {model} - Error when running inference: {message}"


# (id, model, inputs, expected outputs {name: list} or (code, message))
CASES: List[Any] = [
    ("numpy", "cf_bls_calls", calls("numpy", 1, 2.5), {"Y": [2.0, 5.0], "INFO": [b"N=[2] int32"]}),
    ("list", "cf_bls_calls", calls("list", 3, 4), {"Y": [6.0, 8.0], "INFO": [b"Y"]}),
    ("text", "cf_bls_calls", calls("text", 0), {"INFO": [b"object [b'HELLO!']"]}),
    ("stream", "cf_bls_calls", calls("stream", 3), {"Y": [0.0, 1.0, 2.0], "INFO": [b"3"]}),
    ("stream-error", "cf_bls_calls", calls("stream", -2), {"Y": [0.0, 1.0], "INFO": [b"2"]}),
    (
        "target-error",
        "cf_bls_calls",
        calls("error", 1),
        {"INFO": [f"INTERNAL: {scale_error(-1.0)}".encode()]},
    ),
    (
        "target-error-raised",
        "cf_bls_calls",
        calls("raise-error", 2),
        ("INTERNAL", f"call to model 'cf_target_scale' failed: {scale_error(-2.0)}"),
    ),
    (
        "missing-model",
        "cf_bls_calls",
        calls("missing", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_no_such_model",
                        "Failed for execute the inference request. Model 'cf_no_such_model' "
                        "is not ready.",
                    )
                ).encode()
            ]
        },
    ),
    (
        "wrong-dtype",
        "cf_bls_calls",
        calls("wrong-dtype", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_target_scale",
                        "[request id: <id_unknown>] inference input 'X' data-type is 'FP64', "
                        "but model 'cf_target_scale' expects 'FP32'",
                    )
                ).encode()
            ]
        },
    ),
    (
        "wrong-output",
        "cf_bls_calls",
        calls("wrong-output", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_target_scale",
                        "unexpected inference output 'NOPE' for model 'cf_target_scale'",
                    )
                ).encode()
            ]
        },
    ),
    (
        "unknown-input",
        "cf_bls_calls",
        calls("unknown-input", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_target_negate",
                        "[request id: <id_unknown>] expected 1 inputs but got 2 inputs for model "
                        "'cf_target_negate'. Got input(s) ['Z','X'], but missing required "
                        "input(s) ]. Please provide all required input(s).",
                    )
                ).encode()
            ]
        },
    ),
    (
        "unexpected-input",
        "cf_bls_calls",
        calls("unexpected-input", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_target_shout",
                        "unexpected inference input 'Z' for model 'cf_target_shout'",
                    )
                ).encode()
            ]
        },
    ),
    (
        "call-decoupled",
        "cf_bls_calls",
        calls("call-decoupled", 1),
        {
            "INFO": [
                (
                    "INTERNAL: "
                    + refused(
                        "cf_target_count",
                        "Model cf_target_count is using the decoupled. The current BLS request "
                        "call doesn't support models using the decoupled transaction policy. "
                        "Please use 'decoupled=True' argument to the 'exec' or 'async_exec' "
                        "calls for decoupled models.'",
                    )
                ).encode()
            ]
        },
    ),
    (
        "route-scale",
        "cf_bls_router",
        {"X": np.array([1, 2], np.float32)},
        {"Y": [2.0, 4.0], "ROUTE": [b"cf_target_scale"]},
    ),
    (
        "route-negate",
        "cf_bls_router",
        {"X": np.array([1, -5], np.float32)},
        {"Y": [-1.0, 5.0], "ROUTE": [b"cf_target_negate"]},
    ),
    ("async-gather", "cf_bls_async", {"X": np.array([1, 3], np.float32)}, {"Y": [1.0, 3.0]}),
    (
        "async-error",
        "cf_bls_async",
        {"X": np.array([-1], np.float32)},
        ("INTERNAL", f"call to model 'cf_target_scale' failed: {scale_error(-1.0)}"),
    ),
]
IDS = [case[0] for case in CASES]


def check(result: Result, expected: Any) -> None:
    if isinstance(expected, tuple):
        assert isinstance(result, TritonRequestError), f"expected an error, got {result}"
        assert (result.code, result.message) == expected
        return
    assert not isinstance(result, TritonRequestError), f"unexpected error: {result}"
    for name, values in expected.items():
        assert result[name].ravel().tolist() == values, name


@pytest.fixture(scope="module")
def repo() -> Iterator[RepositoryHarness]:
    with RepositoryHarness(MODELS) as harness:
        yield harness


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer]) -> TritonServer:
    return triton_server_factory(MODELS, startup_timeout=180)


def run_harness(repo: RepositoryHarness, model: str, inputs: Dict[str, np.ndarray]) -> Result:
    try:
        return repo.infer(model, inputs)
    except TritonRequestError as exc:
        return exc


def run_server(server: TritonServer, protocol: str, model: str, inputs: Any) -> Result:
    client = InferClient(server.http_url if protocol == "http" else server.grpc_url, protocol)
    try:
        return {o.name: o.array for o in client.infer(model, inputs, None)}
    except TritonRequestError as exc:
        return exc
    finally:
        client.close()


@pytest.mark.parametrize(("case", "model", "inputs", "expected"), CASES, ids=IDS)
def test_harness_gives_the_expected_results(
    repo: RepositoryHarness, case: str, model: str, inputs: Any, expected: Any
) -> None:
    check(run_harness(repo, model, inputs), expected)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(("case", "model", "inputs", "expected"), CASES, ids=IDS)
def test_real_server_agrees_with_the_harness(
    repo: RepositoryHarness,
    server: TritonServer,
    protocol: str,
    case: str,
    model: str,
    inputs: Any,
    expected: Any,
) -> None:
    want = run_harness(repo, model, inputs)
    got = run_server(server, protocol, model, inputs)
    if isinstance(want, TritonRequestError) or isinstance(got, TritonRequestError):
        assert isinstance(got, TritonRequestError), f"server answered {got}"
        assert isinstance(want, TritonRequestError), f"server failed: {got}"
        assert (got.code, got.message) == (want.code, want.message)
        return
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert got[name].shape == want[name].shape, name
        assert got[name].tolist() == want[name].tolist(), name


# -- streams: a streaming model relaying the parts of a streaming target -------------------------
# A tritonpy generator that raises sends its error as a response of its own, then a flags-only
# FINAL: the 24.10 BLS caller's stream ends after the parts already sent (the error response
# is dropped on the BLS path). A target that flags the error itself FINAL leaves a 24.10 BLS
# caller waiting forever (measured); the harness refuses that with a ModelBugError
# (tests/runtime/test_calls.py).

STREAMS: List[Any] = [
    ("relay", "cf_bls_relay", "one two three", [b"ONE", b"TWO", b"THREE"]),
    ("relay-async", "cf_bls_relay_async", "ab cd", [b"ba", b"dc"]),
    ("relay-target-error", "cf_bls_relay", "one bad two", [b"ONE"]),
]


def text(value: str) -> Dict[str, np.ndarray]:
    return {"TEXT": np.array([value.encode()], object)}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize(("case", "model", "value", "words"), STREAMS, ids=[s[0] for s in STREAMS])
def test_streamed_bls_agrees(
    repo: RepositoryHarness,
    server: TritonServer,
    protocol: str,
    case: str,
    model: str,
    value: str,
    words: List[bytes],
) -> None:
    from tritonpy.client import stream_infer

    parts = repo.infer_stream(model, text(value))
    assert [p["WORD"].ravel().tolist() for p in parts] == [[w] for w in words]
    url = server.http_url if protocol == "http" else server.grpc_url
    result = stream_infer(url, model, text(value), protocol=protocol)
    assert result.error is None
    assert [p["WORD"].ravel().tolist() for p in result.responses] == [[w] for w in words]
