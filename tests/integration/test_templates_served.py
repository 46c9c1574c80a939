"""The text_stream, bls_router, online_normalizer and minimal templates, rendered as
``tritonpy new`` renders them, on a real tritonserver: the same answers as under the harness,
over HTTP and gRPC.

One server for the module: ``reader`` (text_stream), ``reviews`` with its members
``reviews_short`` and ``reviews_long`` (bls_router), ``norm`` (online_normalizer, a sequence
model) and ``hello`` (minimal, what ``tritonpy new NAME`` renders without --template, its own
test file beside its config.pbtxt).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Union

import numpy as np
import pytest

from tritonpy._runtime.errors import TritonRequestError
from tritonpy.client import UNKNOWN_CODE, InferClient, SequenceControl, stream_infer
from tritonpy.server import TritonServer
from tritonpy.templates import render_template
from tritonpy.testing import ModelHarness
from tritonpy.testing._repository import RepositoryHarness

pytestmark = pytest.mark.integration

Result = Union[Dict[str, np.ndarray], TritonRequestError]
LONG = "The screen is not bad at all. The battery is great and charging is fast. Shipping was slow."


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("templates") / "repo"
    render_template("text_stream", "reader", repo)
    render_template("bls_router", "reviews", repo)
    render_template("minimal", "hello", repo)
    render_template("online_normalizer", "norm", repo)
    return repo


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], repository: Path) -> TritonServer:
    return triton_server_factory(repository, startup_timeout=180)


@pytest.fixture(scope="module")
def harness(repository: Path) -> Iterator[RepositoryHarness]:
    with RepositoryHarness(repository) as repo:
        yield repo


def texts(*values: str) -> np.ndarray:
    array = np.empty((len(values), 1), dtype=object)
    array[:, 0] = [v.encode() for v in values]
    return array


def test_the_rendered_repository_serves_every_model(server: TritonServer) -> None:
    assert server.models_ready() == [
        "hello",
        "norm",
        "reader",
        "reviews",
        "reviews_long",
        "reviews_short",
    ]


# -- bls_router ------------------------------------------------------------------------------

ROUTER_CASES = {
    "short": texts("great and fast", "awful"),
    "long": texts(LONG),
    "mixed": texts("love it", LONG, "it is a phone"),
}


def server_infer(server: TritonServer, protocol: str, model: str, inputs: Any) -> Result:
    client = InferClient(server.http_url if protocol == "http" else server.grpc_url, protocol)
    try:
        return {o.name: o.array for o in client.infer(model, inputs, None)}
    except TritonRequestError as exc:
        return exc
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("case", sorted(ROUTER_CASES))
def test_bls_router_answers_as_under_the_harness(
    harness: RepositoryHarness, server: TritonServer, protocol: str, case: str
) -> None:
    inputs = {"TEXT": ROUTER_CASES[case]}
    want = harness.infer("reviews", inputs)
    got = server_infer(server, protocol, "reviews", inputs)
    assert not isinstance(got, TritonRequestError), got
    assert sorted(got) == sorted(want) == ["LABEL", "ROUTE", "SCORE"]
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        assert got[name].tolist() == want[name].tolist(), name
    if case == "mixed":
        routes = [b"reviews_short", b"reviews_long", b"reviews_short"]
        assert got["ROUTE"].ravel().tolist() == routes


# -- text_stream -----------------------------------------------------------------------------


def harness_stream(harness: RepositoryHarness, text: str) -> Any:
    try:
        responses = harness.infer_stream("reader", {"TEXT": np.array([text], object)})
        return [r["CHUNK"][0] for r in responses]
    except TritonRequestError as exc:
        return exc


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("text", ["One. Two! Three? Four", "Grüße aus Köln. 東京は晴れ? Ja."])
def test_text_stream_sends_one_response_per_sentence_as_under_the_harness(
    harness: RepositoryHarness, server: TritonServer, protocol: str, text: str
) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    result = stream_infer(url, "reader", {"TEXT": np.array([text.encode()], object)})
    assert result.error is None, result.error
    got: List[bytes] = [r["CHUNK"].ravel()[0] for r in result.responses]
    assert got == harness_stream(harness, text)
    assert [int(r["INDEX"].ravel()[0]) for r in result.responses] == list(range(len(got)))


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_text_stream_refuses_empty_text_with_the_harness_message(
    harness: RepositoryHarness, server: TritonServer, protocol: str
) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    result = stream_infer(url, "reader", {"TEXT": np.array([b"   "], object)})
    want = harness_stream(harness, "   ")
    assert isinstance(want, TritonRequestError) and want.code == "INVALID_ARG"
    assert result.responses == []
    assert result.error is not None
    # a stream carries the message of an error response, not its code (Triton 24.10)
    assert result.error.code == UNKNOWN_CODE
    assert want.message in result.error.message


def test_text_stream_stops_when_the_client_cancels(server: TritonServer) -> None:
    text = " ".join(f"Sentence {i}." for i in range(200))
    result = stream_infer(
        server.grpc_url, "reader", {"TEXT": np.array([text.encode()], object)}, cancel_after=2
    )
    assert result.cancelled
    assert 2 <= len(result.responses) < 200


# -- minimal ---------------------------------------------------------------------------------

MINIMAL_CASES = {
    "one row": texts("hello"),
    "rows": texts("Grüße aus Köln", "東京", ""),
    "not utf-8": np.array([[b"\xff"]], dtype=object),
}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("case", sorted(MINIMAL_CASES))
def test_minimal_answers_as_under_the_harness(
    harness: RepositoryHarness, server: TritonServer, protocol: str, case: str
) -> None:
    inputs = {"TEXT": MINIMAL_CASES[case]}
    try:
        want: Result = harness.infer("hello", inputs)
    except TritonRequestError as exc:
        want = exc
    got = server_infer(server, protocol, "hello", inputs)
    if isinstance(want, TritonRequestError):
        assert case == "not utf-8"
        assert isinstance(got, TritonRequestError), got
        assert (got.code, want.code) == ("INVALID_ARG", "INVALID_ARG")
        assert want.message in got.message
        return
    assert not isinstance(got, TritonRequestError), got
    assert got["UPPER"].dtype == want["UPPER"].dtype
    assert got["UPPER"].tolist() == want["UPPER"].tolist()
    expected = [[text.upper()] for text in (row[0].decode() for row in inputs["TEXT"])]
    assert [[v.decode() for v in row] for row in got["UPPER"].tolist()] == expected


# -- online_normalizer ------------------------------------------------------------------------

# two sequences interleaved: a numeric id and a string one, each normalised on its own
SEQUENCES = {
    41: [[1.0, 10.0], [3.0, 10.0], [2.0, 40.0], [6.0, 20.0]],
    "camera-7": [[100.0, -1.0], [50.0, -3.0], [75.0, -2.0]],
}


def _interleaved() -> List[Any]:
    """(id, vector, start, end) in the order sent: one request of each sequence in turn."""
    order = []
    for index in range(max(len(values) for values in SEQUENCES.values())):
        for sequence, values in SEQUENCES.items():
            if index < len(values):
                order.append((sequence, values[index], index == 0, index == len(values) - 1))
    return order


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_online_normalizer_keeps_each_sequence_apart_as_under_the_harness(
    harness: RepositoryHarness, server: TritonServer, protocol: str
) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    client = InferClient(url, protocol)
    model = harness.harness("norm")
    assert isinstance(model, ModelHarness)
    try:
        for sequence, vector, start, end in _interleaved():
            inputs = {"VALUE": np.array([vector], np.float32)}
            control = SequenceControl(sequence, start=start, end=end)
            got = {o.name: o.array for o in client.infer("norm", inputs, None, sequence=control)}
            flags = (1 if start else 0) | (2 if end else 0)
            want = model.infer(inputs, correlation_id=sequence, flags=flags)
            assert got["COUNT"].tolist() == want["COUNT"].tolist()
            np.testing.assert_allclose(got["NORMALIZED"], want["NORMALIZED"], rtol=1e-6)
    finally:
        client.close()
