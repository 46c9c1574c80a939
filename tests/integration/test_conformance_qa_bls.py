"""Conformance of BLS on Triton's own QA BLS models (tests/integration/qa_bls_models: this
repository's renditions of the server's ``qa/python_models`` BLS models, r24.10; its README
says what each stands for). Each case runs through RepositoryHarness and a real tritonserver
24.10 (gRPC and HTTP; a decoupled model over a gRPC stream): outputs, error codes and
messages must be identical, and the facts the server showed are pinned as well.

What the server showed, and the harness now reproduces: BLS ``parameters=`` reach the callee
(its ``request.parameters()`` is their JSON); a model name (and output names) given as bytes
work; ``InferenceRequest`` without a model name, inputs or output names raises pybind11's
TypeError; a JSON string as parameters is refused; a decoupled callee's data response that
carries the FINAL flag is its last (no empty response follows); BLS from ``initialize()``
makes the model fail to load with "BLS is only supported during the 'execute' function.".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple, Union

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.client import InferClient, stream_infer
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness, ModelLoadError
from tritonpy.testing._repository import RepositoryHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "qa_bls_models"
SERVED = [
    "qa_bls_parameters",
    "qa_bls_by_name",
    "qa_addsub_int32",
    "qa_bls_misuse",
    "qa_final_data",
    "qa_bls_final_relay",
    "qa_bls_final_relay_async",
]
REFUSED = "BLS is only supported during the 'execute' function."
Result = Union[Dict[str, np.ndarray], TritonRequestError]


def by_name(name: bytes) -> Dict[str, np.ndarray]:
    return {
        "MODEL_NAME": np.array([name], object),
        "INPUT0": np.arange(16, dtype=np.int32).reshape(1, 16),
        "INPUT1": np.ones((1, 16), np.int32),
    }


#: (case, model, inputs)
CASES: List[Tuple[str, str, Dict[str, np.ndarray]]] = [
    ("parameters-3-levels", "qa_bls_parameters", {"NUMBER_PARAMETERS": np.array([3], np.uint8)}),
    ("parameters-none", "qa_bls_parameters", {"NUMBER_PARAMETERS": np.array([0], np.uint8)}),
    ("name-as-bytes", "qa_bls_by_name", by_name(b"qa_addsub_int32")),
    ("name-unknown", "qa_bls_by_name", by_name(b"qa_no_such_model")),
    ("request-misuse", "qa_bls_misuse", {"X": np.array([1], np.int32)}),
]
STREAMS = ["qa_bls_final_relay", "qa_bls_final_relay_async", "qa_final_data"]
WAITS = {"WAIT_SECONDS": np.array([[0.05], [0.0]], np.float32)}


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, repository_builder: Any) -> Path:
    built: Path = repository_builder(tmp_path_factory.mktemp("qa_bls"), *SERVED, source=MODELS)
    return built


@pytest.fixture(scope="module")
def repo(repository: Path) -> Iterator[RepositoryHarness]:
    with RepositoryHarness(repository) as harness:
        yield harness


@pytest.fixture(scope="module")
def server(triton_server_factory: Callable[..., TritonServer], repository: Path) -> TritonServer:
    return triton_server_factory(repository, startup_timeout=180)


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


def same(got: Result, want: Result) -> None:
    if isinstance(want, TritonRequestError) or isinstance(got, TritonRequestError):
        assert isinstance(got, TritonRequestError), f"server answered {got}"
        assert isinstance(want, TritonRequestError), f"server failed: {got}"
        assert (got.code, got.message) == (want.code, want.message)
        return
    assert sorted(got) == sorted(want)
    for name in want:
        assert (got[name].dtype, got[name].shape) == (want[name].dtype, want[name].shape), name
        assert got[name].tolist() == want[name].tolist(), name


@pytest.mark.parametrize("protocol", ["grpc", "http"])
@pytest.mark.parametrize(("case", "model", "inputs"), CASES, ids=[c[0] for c in CASES])
def test_real_server_agrees_with_the_harness(
    repo: RepositoryHarness,
    server: TritonServer,
    protocol: str,
    case: str,
    model: str,
    inputs: Dict[str, np.ndarray],
) -> None:
    same(run_server(server, protocol, model, inputs), run_harness(repo, model, inputs))


def test_bls_parameters_reach_the_callee(repo: RepositoryHarness) -> None:
    out = repo.infer("qa_bls_parameters", {"NUMBER_PARAMETERS": np.array([3], np.uint8)})
    expected = {}
    for level in (3, 2, 1):
        expected.update({f"bool_{level}": True, f"int_{level}": level, f"str_{level}": str(level)})
    assert json.loads(out["PARAMETERS_AGGREGATED"][0]) == expected
    assert out["PARAMETERS_SEEN"].tolist() == [b"{}"]  # the client sent none


def test_the_harness_pins_what_the_server_showed(repo: RepositoryHarness) -> None:
    lines = repo.infer("qa_bls_misuse", {"X": np.array([1], np.int32)})["MESSAGES"].tolist()
    got = dict(line.decode().split(" -> ", 1) for line in lines)
    for case in ("no-arguments", "no-model-name", "no-inputs", "no-output-names"):
        assert got[case].startswith("TypeError: __init__(): incompatible constructor arguments")
    assert got["parameters-json-text"] == (
        "TritonModelException: Expect N8pybind114dictE, got <class 'str'>"
    )
    assert got["bytes-names"] == 'seen {"a":1}'
    assert got["parameters-seen"] == 'seen {"z":2,"a":"two","m":false}'
    added = repo.infer("qa_bls_by_name", by_name(b"qa_addsub_int32"))
    assert added["OUTPUT0"].tolist() == [list(range(1, 17))]


@pytest.mark.parametrize("model", STREAMS)
def test_a_final_data_response_is_the_last_under_both(
    repo: RepositoryHarness, server: TritonServer, model: str
) -> None:
    want = repo.infer_stream(model, WAITS)
    assert [r["DUMMY_OUT"].tolist() for r in want] == [[0.0, 0.0]]  # no empty response after
    got = stream_infer(server.grpc_url, model, WAITS)
    assert got.error is None and got.final
    assert [sorted(r) for r in got.responses] == [sorted(r) for r in want]
    assert [r["DUMMY_OUT"].tolist() for r in got.responses] == [[0.0, 0.0]]


def test_bls_in_initialize_fails_the_load_under_both(
    tmp_path: Path, repository_builder: Any
) -> None:
    built = repository_builder(tmp_path, "qa_bls_in_initialize", "qa_final_data", source=MODELS)
    with pytest.raises(ModelLoadError) as harness_error:
        ModelHarness(built / "qa_bls_in_initialize")
    assert str(harness_error.value) == REFUSED
    server = TritonServer(built, startup_timeout=120)
    try:
        with pytest.raises(ModelLoadError) as server_error:
            server.start()
    finally:
        server.stop()
    failure = server_error.value.failures["qa_bls_in_initialize"]
    assert f"TritonModelException: {REFUSED}" in failure
