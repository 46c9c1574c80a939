"""Conformance of the fake pb_utils on plain pb_utils models (tests/integration/plain_models):
each case runs through ModelHarness and through a real tritonserver over HTTP and gRPC
(streams: gRPC), and outputs, error codes and messages must be identical."""

from __future__ import annotations

import queue
import re
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import InferClient
from tritonpy.server import TritonServer
from tritonpy.testing import ClientCancelledError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "plain_models"
PROTOCOLS = ("http", "grpc")

Inputs = Dict[str, np.ndarray]
Result = Union[Dict[str, List[Any]], Tuple[str, str]]


def one(value: int) -> np.ndarray:
    return np.array([value], np.int32)


def bls(target: str, count: int, use_async: bool, stream: Optional[bool] = None) -> Inputs:
    inputs = {
        "TARGET": np.array([target.encode()], object),
        "COUNT": one(count),
        "ASYNC": np.array([use_async]),
    }
    if stream is not None:  # exec(decoupled=stream) whatever the target is
        inputs["STREAM"] = np.array([stream])
    return inputs


F32 = np.float32
# (id, model, requests sent in this order to one model instance)
CASES: List[Tuple[str, str, List[Inputs]]] = [
    ("instance-name", "pl_instance", [{"X": np.ones(2, F32)}, {"X": -np.ones(2, F32)}]),
    ("fixed-width-bytes", "pl_sbytes", [{"TEXT": np.array([b"ab", b"c\x00d"], object)}]),
    ("sender-non-decoupled", "pl_sender", [{"MODE": one(m)} for m in (0, 1, 2, 3, 4, 9)]),
    ("relative-import", "pl_relative", [{"X": np.array([1, 2], np.int32)}]),
    (
        "shape-errors",
        "pl_shapes",
        [
            {"A": np.ones(3, F32), "B": np.ones(2, F32), "C": np.ones(1, F32)},
            {"C": np.ones(1, F32), "B": np.ones(2, F32), "A": np.ones(3, F32)},
            {"A": np.ones(2, F32), "C": np.ones(1, F32), "B": np.ones(3, F32)},
        ],
    ),
    ("request-accessors", "pl_surface", [{"OP": np.array([b"request"], object)}]),
    ("model-loading-api", "pl_surface", [{"OP": np.array([b"models"], object)}]),
    (
        "metric-family",
        "pl_surface",
        [
            {"OP": np.array([op.encode()], object)}
            # not metric_names: refusing a family (another kind, a bad name) in execute aborted
            # tritonserver 24.10 now and then (boost lock_exception, measured)
            for op in ("metrics", "metric_buckets", "metric_deleted")
        ],
    ),
    ("logger", "pl_surface", [{"OP": np.array([b"logger"], object)}]),
    ("reschedule-iterative", "pl_reschedule", [{"KEY": one(1)}, {"KEY": one(2)}]),
    ("decoupled-refused", "pl_decoupled", [{"COUNT": one(1), "MODE": one(0)}]),
    (
        "bls",
        "pl_bls",
        [
            bls("pl_decoupled", 3, False),
            bls("pl_decoupled", 2, True),
            bls("pl_instance", 2, False),
            bls("pl_instance", 3, True),
            bls("nope", 1, False),
            bls("nope", 1, True),
            bls("nope", 1, False, stream=True),
            bls("pl_decoupled", 2, False, stream=False),
            bls("pl_decoupled", 2, True, stream=False),
            bls("pl_instance", 2, False, stream=True),
        ],
    ),
]

#: the server names the endpoint in this one message; the harness gives HTTP's
DECOUPLED_GRPC = "ModelInfer RPC doesn't support models with decoupled transaction policy"
DECOUPLED_HTTP = "HTTP end point doesn't support models with decoupled transaction policy"


#: the models each model calls (BLS) or loads: the harness registers them as targets
TARGETS = {"pl_bls": ("pl_decoupled", "pl_instance"), "pl_surface": ("pl_instance",)}


def plain(outputs: Dict[str, np.ndarray]) -> Dict[str, List[Any]]:
    return {name: [str(array.dtype), array.tolist()] for name, array in outputs.items()}


def run_harness(model: str, requests: List[Inputs]) -> List[Result]:
    results: List[Result] = []
    targets = {name: MODELS / name for name in TARGETS.get(model, ())}
    with ModelHarness(MODELS / model, targets=targets) as harness:
        for inputs in requests:
            try:
                results.append(plain(harness.infer(inputs)))
            except TritonRequestError as exc:
                results.append((exc.code, exc.message))
    return results


def run_server(
    server: TritonServer, protocol: str, model: str, requests: List[Inputs]
) -> List[Result]:
    url = server.http_url if protocol == "http" else server.grpc_url
    client = InferClient(url, protocol)
    results: List[Result] = []
    try:
        for inputs in requests:
            try:
                outputs = client.infer(model, inputs)
                results.append(plain({o.name: o.array for o in outputs}))
            except TritonRequestError as exc:
                message = exc.message.replace(DECOUPLED_GRPC, DECOUPLED_HTTP)
                results.append((exc.code, message))
    finally:
        client.close()
    return results


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("plain-server") / "server.log"


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], server_log: Path) -> TritonServer:
    return triton_server_factory(MODELS, startup_timeout=180, log_file=server_log)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_real_server_agrees_with_the_harness(
    server: TritonServer, protocol: str, case: Tuple[str, str, List[Inputs]]
) -> None:
    _, model, requests = case
    assert run_server(server, protocol, model, requests) == run_harness(model, requests)


# -- streams (gRPC) ---------------------------------------------------------------------------


def stream_server(
    server: TritonServer, inputs: Inputs, cancel_after: Optional[int] = None
) -> List[Any]:
    """What a gRPC streaming client receives: the OUT values, then ("error", message) for an
    error response; with ``cancel_after``, the stream is stopped with cancel_requests=True
    after that many responses, and what the callback gets then follows, as (code, message)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(server.grpc_url)
    answers: queue.Queue[Any] = queue.Queue()
    client.start_stream(callback=lambda result, error: answers.put((result, error)))
    tensors = []
    for name, array in inputs.items():
        tensor = grpcclient.InferInput(name, list(array.shape), "INT32")
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    client.async_stream_infer("pl_decoupled", tensors, enable_empty_final_response=True)
    got: List[Any] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            result, error = answers.get(timeout=60)
            if error is not None:
                got.append(("error", error.message()))
                break
            out = result.as_numpy("OUT")
            if out is not None:
                got.append(out.tolist())
            if result.get_response().parameters["triton_final_response"].bool_param:
                break
            if cancel_after is not None and len(got) == cancel_after:
                break
    finally:
        client.stop_stream(cancel_requests=cancel_after is not None)
        client.close()
    while cancel_after is not None and not answers.empty():
        result, error = answers.get()
        got.append((error.status(), error.message()) if error is not None else result)
    return got


def stream_harness(inputs: Inputs, cancel_after: Optional[int] = None) -> List[Any]:
    with ModelHarness(MODELS / "pl_decoupled") as harness:
        parts = harness.infer_stream(inputs, cancel_after=cancel_after, errors="return")
    return [
        (p.code, p.message)
        if isinstance(p, ClientCancelledError)
        else ("error", p.message)
        if isinstance(p, TritonRequestError)
        else p["OUT"].tolist()
        for p in parts
    ]


STREAMS = [
    ("final-on-last", 2, 0, [[0], [1]]),
    ("flags-only-final", 3, 1, [[0], [1], [2]]),
    ("no-response", 0, 4, []),
    ("error-first", 0, 2, [("error", "stopped after 0")]),
]


@pytest.mark.parametrize("case", STREAMS, ids=[s[0] for s in STREAMS])
def test_streams_agree(server: TritonServer, case: Tuple[str, int, int, List[Any]]) -> None:
    _, count, mode, expected = case
    inputs = {"COUNT": one(count), "MODE": one(mode)}
    assert stream_harness(inputs) == expected
    assert stream_server(server, inputs) == expected


def test_error_mid_stream_after_parts(server: TritonServer) -> None:
    inputs = {"COUNT": one(2), "MODE": one(2)}
    expected = [[0], [1], ("error", "stopped after 2")]
    assert stream_harness(inputs) == expected
    assert stream_server(server, inputs) == expected


def test_cancel_mid_stream(server: TritonServer) -> None:
    # mode 3: after each response the model waits until the request is cancelled
    inputs = {"COUNT": one(5), "MODE": one(3)}
    # the part received, then the client's own cancellation (tritonclient's callback gets it
    # from stop_stream(cancel_requests=True)); what the model sends later never arrives
    expected = [[0], ("StatusCode.CANCELLED", "Locally cancelled by application!")]
    assert stream_server(server, inputs, cancel_after=1) == expected
    assert stream_harness(inputs, cancel_after=1) == [[0], ("CANCELLED", expected[1][1])]


# -- the logger ---------------------------------------------------------------------------------

LOG_LINE = re.compile(r'^([IWE])\d{4} [\d:.]+ +\d+ (model\.py:\d+\] ".*surface.*")$')


def test_logger_lines_agree(server: TritonServer, server_log: Path) -> None:
    """What pb_utils.Logger writes to the server log: level, model.py line and message (the
    stub sends log lines to the server asynchronously: wait for the last one)."""
    inputs = {"OP": np.array([b"logger"], object)}
    with ModelHarness(MODELS / "pl_surface") as harness:
        pb.clear_logs()
        harness.infer(inputs)
        expected = [r.server_line() for r in pb.log_records if r.level != pb.LogLevel.VERBOSE]
    assert len(expected) == 5

    def surface_lines() -> List[str]:
        lines = server_log.read_text(errors="replace").splitlines()
        return [f"{m.group(1)} {m.group(2)}" for m in map(LOG_LINE.match, lines) if m]

    # earlier cases ran the same op: wait until their lines are all there, then for ours
    deadline = time.monotonic() + 30
    before, settled = surface_lines(), False
    while not settled and time.monotonic() < deadline:
        time.sleep(0.5)
        now = surface_lines()
        settled, before = now == before and len(now) % len(expected) == 0, now
    client = InferClient(server.http_url, "http")
    client.infer("pl_surface", inputs)
    client.close()
    found = surface_lines()
    while len(found) < len(before) + len(expected) and time.monotonic() < deadline:
        time.sleep(0.2)
        found = surface_lines()
    assert found[len(before) :] == expected
