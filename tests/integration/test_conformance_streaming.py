"""Conformance of streaming, async infer and request parameters: each case runs through
ModelHarness and through a real tritonserver (gRPC streaming and HTTP ``generate_stream`` for
streams; HTTP and gRPC inference for the rest), with identical outputs and messages.

What the wire carries, measured on 24.10: an error response inside a stream reaches a gRPC or
``generate_stream`` client as its message only (no code), so stream codes are asserted on the
harness and messages compared everywhere; a decoupled model refuses plain (non-streaming)
HTTP and gRPC inference whatever it would send.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import UNKNOWN_CODE, InferClient, stream_infer
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "streaming_models"
STREAM_PROTOCOLS = ("grpc", "http")

Parts = List[Dict[str, Any]]
Outcome = Tuple[List[List[Any]], Optional[Tuple[str, str]]]


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer]) -> TritonServer:
    return triton_server_factory(MODELS, startup_timeout=180)


def url(server: TritonServer, protocol: str) -> str:
    return server.http_url if protocol == "http" else server.grpc_url


def values(parts: Parts) -> List[List[Any]]:
    """Each part as sorted [(name, flat values)], blind to the dtype width JSON loses."""
    return [
        [(name, np.asarray(part[name]).reshape(-1).tolist()) for name in sorted(part)]
        for part in parts
    ]


def harness_stream(model: str, inputs: Mapping[str, Any], **kwargs: Any) -> Outcome:
    """The parts ModelHarness returns and the error that ended the stream (code, message).
    For an error, the parts sent before it are read from the fake's response sender (the
    harness raises without them)."""
    with ModelHarness(MODELS / model) as harness:
        try:
            return values(harness.infer_stream(inputs, **kwargs)), None
        except TritonRequestError as exc:
            error = (exc.code, exc.message)
        request, _ = harness._build_request(inputs, None, kwargs.get("parameters"), "")
        harness._execute([request])
        sent = [r for r, _ in request._sender.sent if r is not None and not r.has_error()]
        parts = [{t.name(): t.as_numpy() for t in r.output_tensors()} for r in sent]
        return values(parts), error


def server_stream(
    server: TritonServer, protocol: str, model: str, inputs: Mapping[str, Any], **kwargs: Any
) -> Outcome:
    result = stream_infer(url(server, protocol), model, inputs, protocol=protocol, **kwargs)
    error = result.error
    return values(result.responses), None if error is None else (error.code, error.message)


def text(value: Union[str, bytes]) -> np.ndarray:
    raw = value.encode() if isinstance(value, str) else value
    return np.array([raw], dtype=object)


def words(outcome: Outcome) -> List[bytes]:
    return [dict(part)["WORD"][0] for part in outcome[0]]


# -- streaming ---------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_each_yield_is_one_response(server: TritonServer, protocol: str) -> None:
    inputs = {"TEXT": text("one two three")}
    local = harness_stream("cf_stream", inputs)
    assert words(local) == [b"one", b"two", b"three"] and local[1] is None
    assert server_stream(server, protocol, "cf_stream", inputs) == local


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_an_empty_stream_has_no_response(server: TritonServer, protocol: str) -> None:
    inputs = {"TEXT": text("")}
    assert harness_stream("cf_stream", inputs) == ([], None)
    assert server_stream(server, protocol, "cf_stream", inputs) == ([], None)


@pytest.mark.parametrize(
    ("sentence", "code", "message"),
    [
        ("a b BAD c", "INVALID_ARG", "word 2 is BAD; send words other than BAD"),
        ("a CRASH", "INTERNAL", "ZeroDivisionError while running infer(): division by zero"),
    ],
    ids=["input-error", "internal"],
)
@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_an_error_mid_stream_follows_the_parts_sent(
    server: TritonServer, protocol: str, sentence: str, code: str, message: str
) -> None:
    inputs = {"TEXT": text(sentence)}
    parts, error = harness_stream("cf_stream", inputs)
    assert error == (code, message)
    assert (parts, (UNKNOWN_CODE, message)) == server_stream(server, protocol, "cf_stream", inputs)


def test_a_bad_input_ends_the_stream_before_any_part(server: TritonServer) -> None:
    inputs = {"TEXT": text(b"\xc3(")}  # not UTF-8: gRPC only (generate_stream takes JSON)
    parts, error = harness_stream("cf_stream", inputs)
    assert parts == [] and error is not None and error[0] == "INVALID_ARG"
    assert server_stream(server, "grpc", "cf_stream", inputs) == ([], (UNKNOWN_CODE, error[1]))


def test_cancellation_mid_stream_closes_the_generator(server: TritonServer) -> None:
    inputs = {"TEXT": text("SLOW a b c d e f")}
    status = {"TEXT": text("STATUS")}
    with ModelHarness(MODELS / "cf_stream") as harness:
        got = harness.infer_stream(inputs, cancel_after=2, errors="return")
        local = values(got[:-1])
        # then the client's own cancellation, as tritonclient's callback after stop_stream
        assert (got[-1].code, got[-1].message) == ("CANCELLED", "Locally cancelled by application!")
        local_closed = values(harness.infer_stream(status))
    result = stream_infer(server.grpc_url, "cf_stream", inputs, protocol="grpc", cancel_after=2)
    assert result.cancelled and result.error is None
    assert values(result.responses) == local
    assert [dict(p)["WORD"] for p in local] == [[b"SLOW"], [b"a"]]
    # the model saw the cancellation before its third part and closed the generator there
    assert dict(local_closed[0])["WORD"] == [b"2"]
    remote_closed = server_stream(server, "grpc", "cf_stream", status)
    assert remote_closed == (local_closed, None)


def test_a_decoupled_model_refuses_plain_inference(server: TritonServer) -> None:
    refusals = {
        "grpc": "ModelInfer RPC doesn't support models with decoupled transaction policy",
        "http": "HTTP end point doesn't support models with decoupled transaction policy",
    }
    for protocol, message in refusals.items():
        client = InferClient(url(server, protocol), protocol)
        try:
            with pytest.raises(TritonRequestError) as caught:
                client.infer("cf_stream", {"TEXT": text("one")})
        finally:
            client.close()
        assert (caught.value.code, caught.value.message) == ("UNSUPPORTED", message)


# -- async -------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_async_generator_streams(server: TritonServer, protocol: str) -> None:
    for count in (3, 0):
        inputs = {"N": np.array([count], np.int32)}
        local = harness_stream("cf_async_stream", inputs)
        assert local == ([[("I", [i])] for i in range(count)], None)
        assert server_stream(server, protocol, "cf_async_stream", inputs) == local


@pytest.mark.parametrize(
    ("count", "code", "message", "parts"),
    [
        (-1, "INVALID_ARG", "N is -1; send a count >= 0", 0),
        (7, "INTERNAL", "RuntimeError while running infer(): seven stops at three", 3),
    ],
    ids=["input-error", "internal"],
)
@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_async_generator_errors(
    server: TritonServer, protocol: str, count: int, code: str, message: str, parts: int
) -> None:
    inputs = {"N": np.array([count], np.int32)}
    local = harness_stream("cf_async_stream", inputs)
    assert local == ([[("I", [i])] for i in range(parts)], (code, message))
    assert server_stream(server, protocol, "cf_async_stream", inputs) == (
        local[0],
        (UNKNOWN_CODE, message),
    )


def send_concurrently(
    server: TritonServer,
    protocol: str,
    model: str,
    requests: List[Dict[str, np.ndarray]],
    parameters: Optional[List[Dict[str, Any]]] = None,
) -> List[Any]:
    """Every request at once (so the dynamic batcher may merge them): outputs or the error."""
    results: List[Any] = [None] * len(requests)

    def send(index: int) -> None:
        client = InferClient(url(server, protocol), protocol)
        try:
            params = parameters[index] if parameters else None
            outputs = client.infer(model, requests[index], parameters=params)
            results[index] = {o.name: o.array.tolist() for o in outputs}
        except TritonRequestError as exc:
            results[index] = (exc.code, exc.message)
        finally:
            client.close()

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def plain(result: Any) -> Any:
    if isinstance(result, TritonRequestError):
        return (result.code, result.message)
    return {name: value.tolist() for name, value in result.items()}


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_async_infer_merged_batch_and_per_request_errors(
    server: TritonServer, protocol: str
) -> None:
    requests = [
        {"X": np.ones((1, 2), np.float32)},
        {"X": -np.ones((1, 2), np.float32)},
        {"X": np.full((2, 2), 2, np.float32)},
        {"X": np.full((1, 2), 13, np.float32)},
    ]
    with ModelHarness(MODELS / "cf_async") as harness:
        local = [plain(r) for r in harness.infer_requests(requests)]
    assert local == [
        {"Y": [[3.0, 3.0]]},
        ("INVALID_ARG", "X has negative values; send values >= 0"),
        {"Y": [[6.0, 6.0], [6.0, 6.0]]},
        ("INTERNAL", "RuntimeError while running infer(): 13 is unlucky"),
    ]
    assert send_concurrently(server, protocol, "cf_async", requests) == local


# -- parameters --------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_request_parameters_reach_infer_per_row(server: TritonServer, protocol: str) -> None:
    requests = [{"X": np.zeros((2, 1), np.int32)}, {"X": np.ones((1, 1), np.int32)}]
    parameters: List[Dict[str, Any]] = [{"offset": 5, "tag": "a", "flag": True}, {"offset": -1}]
    with ModelHarness(MODELS / "cf_params") as harness:
        local = [
            plain(harness.infer(inputs, parameters=params))
            for inputs, params in zip(requests, parameters)
        ]
    assert local == [
        {"Y": [[5], [5]], "ECHO": [[b'{"flag": true, "offset": 5, "tag": "a"}']] * 2},
        {"Y": [[0]], "ECHO": [[b'{"offset": -1}']]},
    ]
    assert send_concurrently(server, protocol, "cf_params", requests, parameters) == local


@pytest.mark.parametrize("protocol", STREAM_PROTOCOLS)
def test_response_parameters_are_refused_by_24_10(server: TritonServer, protocol: str) -> None:
    (result,) = send_concurrently(
        server, protocol, "cf_params", [{"X": np.zeros((1, 1), np.int32)}], [{"respond": True}]
    )
    code, message = result
    assert code == "INTERNAL"
    assert message.startswith("response parameters ['rows']: this Triton's Python backend")


def test_harness_refuses_response_parameters_as_24_10_does() -> None:
    with ModelHarness(MODELS / "cf_params") as harness:
        with pytest.raises(TritonRequestError) as caught:
            harness.infer({"X": np.zeros((1, 1), np.int32)}, parameters={"respond": True})
    assert caught.value.code == "INTERNAL"
    assert caught.value.message.startswith("response parameters ['rows']")


@pytest.mark.parametrize("model", sorted(p.name for p in MODELS.iterdir() if p.is_dir()))
def test_auto_completed_policy_matches_the_server(server: TritonServer, model: str) -> None:
    """Two-line config.pbtxt files: the server's auto-completed decoupled policy, batch size
    and tensors are the harness's."""
    client = InferClient(server.http_url, "http")
    try:
        served = client.model_config(model)
    finally:
        client.close()
    with ModelHarness(MODELS / model) as harness:
        local = harness.config

    def summary(config: Dict[str, Any]) -> Tuple[Any, ...]:
        policy = config.get("model_transaction_policy") or {}
        names = tuple(t["name"] for t in config.get("input", []) + config.get("output", []))
        return (bool(policy.get("decoupled")), int(config["max_batch_size"]), names)

    assert summary(served) == summary(local)
    assert summary(local)[0] == model.endswith("stream")
